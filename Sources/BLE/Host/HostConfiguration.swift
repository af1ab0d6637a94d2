import BLEHCI
import BLEWire


/// What the controller told us about itself during initialisation.
public struct ControllerInfo: Sendable {
    public var address: BDAddress
    public var version: LocalVersionInformation?
    public var supportedCommands: LocalSupportedCommands?
    public var features: LocalSupportedFeatures?
    public var leFeatures: LESupportedFeatures?
    /// LE ACL data buffers the host may fill before Number Of Completed Packets returns credits.
    public var aclBufferLength: Int
    public var aclBufferCount: Int
}

/// Tunables of the host stack; defaults follow the spec's recommendations.
public struct HostConfiguration: Sendable {
    /// Time allowed for any HCI command to be answered (Command Complete or Status).
    public var commandTimeout: Duration = .seconds(5)
    /// ATT transaction timeout, Core spec Vol 3 Part F §3.3.3.
    public var attTransactionTimeout: Duration = .seconds(30)
    /// The ATT_MTU we offer in MTU exchanges (517 fits the longest attribute value plus headers).
    public var preferredATTMTU: Int = 517
    /// Connection parameters for LE Create Connection (units of 1.25 ms / 10 ms, Vol 4 Part E §7.8.12).
    public var connectionIntervalMin: UInt16 = 24 // 30 ms
    public var connectionIntervalMax: UInt16 = 40 // 50 ms
    public var supervisionTimeout: UInt16 = 420 // 4.2 s
    public var maxLatency: UInt16 = 0
    /// Scan timing in units of 0.625 ms (Vol 4 Part E §7.8.10).
    public var scanInterval: UInt16 = 0x0060 // 60 ms
    public var scanWindow: UInt16 = 0x0030 // 30 ms
    /// How long a dynamic read or write may wait for the application before the server answers
    /// Unlikely Error (the central's own transaction timeout is 30 s).
    public var applicationResponseTimeout: Duration = .seconds(10)
    /// Capacity of each notification stream delivered to the application.
    public var notificationBufferLimit: Int = 65_536
    /// When set, every new link (either role) asks for this LL payload size with LE Set Data
    /// Length (27...251 octets, Vol 4 Part E §7.8.33), as Zephyr and Android do by default.
    public var preferredDataLength: Int?
    /// When set, every new link asks for this PHY with LE Set PHY (Vol 4 Part E §7.8.49).
    public var preferredPHY: LEPHY?

    public init() {}
}

import BLEHCI
import BLEWire


/// What the controller told us about itself during initialisation.
public struct ControllerInfo: Sendable {
    /// The controller's public BD_ADDR (Read BD_ADDR, Core spec Vol 4 Part E §7.4.6); what centrals
    /// see when a peripheral advertises with `OwnAddress.public`.
    public var address: BDAddress
    /// HCI/LMP versions and manufacturer (Read Local Version Information, Vol 4 Part E §7.4.1);
    /// nil when the controller did not answer it.
    public var version: LocalVersionInformation?
    /// Which HCI commands the controller implements (Read Local Supported Commands, Vol 4 Part E
    /// §7.4.2), used to choose e.g. LE Read Buffer Size v2; nil when the controller did not answer it.
    public var supportedCommands: LocalSupportedCommands?
    /// The controller's LMP features (Read Local Supported Features, Vol 4 Part E §7.4.3); nil
    /// when the controller did not answer it.
    public var features: LocalSupportedFeatures?
    /// The controller's LE features, such as Data Length Extension or the 2M PHY (LE Read Local
    /// Supported Features, Vol 4 Part E §7.8.3); nil when the controller did not answer it.
    public var leFeatures: LESupportedFeatures?
    /// The longest ACL data payload the controller accepts in one packet, in octets (LE Read Buffer
    /// Size, Vol 4 Part E §7.8.2, or the shared Read Buffer Size, §7.4.5, when LE reports none).
    public var aclBufferLength: Int
    /// LE ACL data buffers the host may fill before Number Of Completed Packets returns credits.
    public var aclBufferCount: Int
    /// How many advertising sets the controller can run at once (LE Read Number of Supported
    /// Advertising Sets, Vol 4 Part E §7.8.58); nil when the host does not drive it with the
    /// extended commands (then it has one, legacy advertising).
    public var advertisingSets: Int?
    /// The most advertising, scan response or periodic data one set may hold, in octets (LE
    /// Read Maximum Advertising Data Length, §7.8.57); nil as `advertisingSets`.
    public var maximumAdvertisingDataLength: Int?

    /// Where `aclBufferLength` and `aclBufferCount` come from: the controller's LE buffers, or
    /// the ACL buffers it shares with BR/EDR when LE Read Buffer Size reports none (Vol 4 Part E
    /// §7.8.2) or is not there.
    public var aclBuffersShared = false
    /// The BR/EDR ACL buffers (Read Buffer Size, §7.4.5): length and count; nil when the
    /// controller does not list the command, reports none (an LE-only controller) or did not answer.
    public var brEdrACLBuffers: (length: Int, count: Int)?
    /// The ISO data buffers (LE Read Buffer Size v2, §7.8.2): length and count; nil without v2.
    public var isoBuffers: (length: Int, count: Int)?
    /// Entries the Filter Accept List holds (LE Read Filter Accept List Size, §7.8.14); nil when
    /// the controller did not say.
    public var filterAcceptListSize: Int?
    /// Entries the resolving list holds (LE Read Resolving List Size, §7.8.41); nil when the
    /// controller has no resolving list or did not say.
    public var resolvingListSize: Int?
    /// The longest LL data PDU payload and time each way (LE Read Maximum Data Length, §7.8.46);
    /// nil when the controller has no Data Length Extension or did not say.
    public var maximumDataLength: LEMaximumDataLength?
    /// Entries the Periodic Advertiser List holds (§7.8.73); nil when the host does not drive the
    /// controller with the extended commands or the controller did not say.
    public var periodicAdvertiserListSize: Int?

    /// Whether the controller lists Bluetooth 5's advertising, scanning and connecting commands:
    /// every one the host uses (LE Set Advertising Set Random Address, the extended advertising
    /// parameters, data, scan response and enable commands, LE Set Extended Scan Parameters and
    /// Enable, LE Extended Create Connection) and LE Read Number of Supported Advertising Sets
    /// (Vol 4 Part E §7.8.52–§7.8.58, §7.8.64–§7.8.66), which
    /// `AdvertisingCommandSet.extendedWhenSupported` then uses.
    public var supportsExtendedAdvertisingCommands: Bool {
        guard let c = supportedCommands else { return false }
        return c.leSetAdvertisingSetRandomAddress && c.extendedAdvertising && c.extendedScanning
    }

    /// Whether a host configured with `commandSet` drives this controller with the extended
    /// commands.
    public func usesExtendedCommands(_ commandSet: AdvertisingCommandSet) -> Bool {
        commandSet == .extendedWhenSupported && supportsExtendedAdvertisingCommands
    }

    /// Whether periodic advertising can run on an advertising set (§7.8.61–§7.8.63 listed).
    public var supportsPeriodicAdvertising: Bool {
        guard let c = supportedCommands else { return false }
        return c.leSetPeriodicAdvertisingParameters && c.leSetPeriodicAdvertisingData && c.leSetPeriodicAdvertisingEnable
    }

    /// The PHYs the controller's LE features list: LE 1M always, LE 2M (bit 8) and LE Coded (bit
    /// 11) when it has them (Vol 6 Part B §4.6).
    public var supportedPHYs: LEPHYSet { (leFeatures ?? []).phys }
}

/// Which of a controller's two sets of advertising, scanning and connecting commands the host
/// drives it with. A controller takes one set or the other, not both, until it is reset (Core
/// spec Vol 4 Part E §3.1.1), so the choice is made once, when the host opens the controller.
public enum AdvertisingCommandSet: Sendable, Hashable {
    /// Bluetooth 4's commands (LE Set Advertising Parameters, LE Set Scan Parameters, LE Create
    /// Connection, §7.8.5–§7.8.12), which every LE controller has: legacy advertising PDUs on the
    /// LE 1M PHY only.
    case legacy
    /// Bluetooth 5's commands (LE Set Extended Advertising Parameters ... LE Extended Create
    /// Connection, §7.8.53–§7.8.66) when the controller lists them
    /// (`ControllerInfo.supportsExtendedAdvertisingCommands`), the legacy ones otherwise: scans
    /// then hear extended advertisements (long data, the LE Coded PHY) as well as legacy ones.
    case extendedWhenSupported
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
    /// Longest connection interval we accept, in 1.25 ms units (40 = 50 ms, range 6...3200,
    /// Vol 6 Part B §4.5.1); the controller picks an interval between the minimum and this.
    public var connectionIntervalMax: UInt16 = 40 // 50 ms
    /// How long a link may go without a packet before it is considered lost, in 10 ms units
    /// (420 = 4.2 s, range 10...3200); must exceed (1 + maxLatency) × connectionIntervalMax × 2 (§7.8.12).
    public var supervisionTimeout: UInt16 = 420 // 4.2 s
    /// Peripheral latency: connection events the peripheral may skip when it has nothing to send
    /// (0...499, Vol 4 Part E §7.8.12); 0 makes it answer every event.
    public var maxLatency: UInt16 = 0
    /// Scan timing in units of 0.625 ms (Vol 4 Part E §7.8.10).
    public var scanInterval: UInt16 = 0x0060 // 60 ms
    /// How long the controller listens within each scan interval, in 0.625 ms units (0x0030 = 30 ms);
    /// at most `scanInterval` (Vol 4 Part E §7.8.10), so 30 of every 60 ms by default.
    public var scanWindow: UInt16 = 0x0030 // 30 ms
    /// How long a dynamic read or write may wait for the application before the server answers
    /// Unlikely Error (the central's own transaction timeout is 30 s).
    public var applicationResponseTimeout: Duration = .seconds(10)
    /// Capacity of each notification stream delivered to the application.
    public var notificationBufferLimit: Int = 65_536
    /// When set, every new link (either role) asks for this LL payload size with LE Set Data
    /// Length (27...251 octets, Vol 4 Part E §7.8.33), as Zephyr and Android do by default.
    public var preferredDataLength: Int?
    /// How many Enhanced ATT bearers (Core spec Vol 3 Part G §5.3: L2CAP enhanced credit-based
    /// channels on SPSM 0x0027) the GATT client opens (at most 5), besides the unenhanced bearer,
    /// when a link it made as central becomes encrypted and the server's Server Supported
    /// Features offer EATT (§7.4, read once per server in the host's life); independent requests
    /// then run in parallel, one per bearer. 0 opens none and leaves Client Supported Features
    /// bit 1 clear (§7.2).
    public var enhancedATTBearers: Int = 2
    /// When set, every new link asks for this PHY with LE Set PHY (Vol 4 Part E §7.8.49).
    public var preferredPHY: LEPHY?
    /// The PHYs a scan or a connection attempt listens on for advertisements when it names none
    /// (`Central.scan(phys:)`, `Central.connect(phys:)`): LE 1M, or with the extended commands LE
    /// Coded as well or alone.
    public var listeningPHYs: LEPHYSet = .le1M
    /// The advertising, scanning and connecting commands the host uses (`AdvertisingCommandSet`):
    /// by default Bluetooth 5's where the controller has them.
    public var advertisingCommands: AdvertisingCommandSet = .extendedWhenSupported

    /// Whether our GATT server offers Enhanced ATT (Core spec Vol 3 Part G §5.3): Server Supported
    /// Features (§7.4) says "EATT Supported" and the host accepts Enhanced ATT bearers, enhanced
    /// credit-based channels on SPSM 0x0027 (Vol 3 Part A §4.25), on encrypted links. Off by
    /// default: SPSM 0x0027 is then refused like any SPSM nobody listens on.
    public var offersEnhancedATT = false

    /// Pairing, bonding and how the GATT client raises security (Core spec Vol 3 Part H).
    public var security = SecuritySettings()

    /// Where the GATT client keeps what discovery learned of each server between connections
    /// (the attribute cache of Core spec Vol 3 Part G §2.5.2); nil keeps nothing beyond a link.
    public var gattCache: (any GATTCacheStore)?

    /// Makes a configuration with the defaults above; change the fields you need before opening.
    public init() {}
}

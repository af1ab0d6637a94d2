import BLE
import BLERuntime
import BLEWire

/// Everything a `ble bench` side needs to know, with bumble-bench's defaults: the central runs
/// `gatt-client` and `send`, the peripheral `gatt-server` and `receive`.
public struct BenchConfiguration: Sendable {
    /// Which side of the link this is.
    public enum Role: String, CaseIterable, Sendable {
        /// Connects (to `peripheral`).
        case central
        /// Advertises and waits for a connection.
        case peripheral
    }

    /// Where the packets travel (bumble-bench's `--mode`; its RFCOMM and ISO modes are not LE
    /// data channels this stack offers).
    public enum Mode: String, CaseIterable, Sendable {
        /// Write to the peer's TX, be notified on its RX.
        case gattClient = "gatt-client"
        /// Serve the speed service: writes to TX come in, RX notifies.
        case gattServer = "gatt-server"
        /// Open an LE credit-based channel on the PSM.
        case l2capClient = "l2cap-client"
        /// Accept one on the PSM.
        case l2capServer = "l2cap-server"
    }

    public var role: Role
    public var mode: Mode
    /// The scenario and its packet options.
    public var run: BenchRunOptions
    /// The ATT MTU the GATT client asks for (`--att-mtu`, 23...517).
    public var attMTU = 517
    /// The L2CAP modes' SPSM (`--l2cap-psm`).
    public var psm = BenchProfile.psm
    /// The L2CAP modes' MTU, MPS and credits (`--l2cap-mtu`, `--l2cap-mps`, `--l2cap-max-credits`).
    public var channelParameters = BenchProfile.channelParameters
    /// Central: whom to connect to, an address (`XX:XX:XX:XX:XX:XX`, random unless `/public`)
    /// or an advertised name (`--peripheral`).
    public var peripheral = BenchProfile.peripheralAddress.description
    /// Central: the connection interval to ask for (`--connection-interval`, milliseconds);
    /// nil keeps the stack's default range.
    public var connectionInterval: Duration?
    /// Central: the PHY to ask for once connected (`--phy`).
    public var phy: LEPHY?
    /// The LL payload to ask for once connected (`--extended-data-length`, its TX octets).
    public var dataLength: Int?
    /// Peripheral: the advertising interval (`--le-advertise`).
    public var advertisingInterval: Duration = .milliseconds(100)
    /// Our static random address: bumble-bench's default for the role.
    public var ownAddress: BDAddress
    /// How long the central tries to connect (and to find a peripheral named by name).
    public var connectTimeout: Duration = .seconds(30)
    /// Pauses around the run, as bumble-bench makes them.
    public var postConnectionWait = BenchProfile.postConnectionWait
    public var lingerTime = BenchProfile.lingerTime

    /// A side with bumble-bench's defaults for `role`.
    public init(role: Role) {
        self.role = role
        switch role {
        case .central:
            mode = .gattClient
            run = BenchRunOptions(scenario: .send)
            ownAddress = BenchProfile.centralAddress
        case .peripheral:
            mode = .gattServer
            run = BenchRunOptions(scenario: .receive)
            ownAddress = BenchProfile.peripheralAddress
        }
    }

    /// The host configuration: the stack's defaults with the connection interval asked for
    /// (both ends of the range, in 1.25 ms units, Core spec Vol 4 Part E §7.8.12) and the data length.
    public var hostConfiguration: HostConfiguration {
        var c = HostConfiguration()
        if let interval = connectionInterval {
            let units = UInt16(clamping: Int((interval.benchSeconds * 1000 / 1.25).rounded()))
            c.connectionIntervalMin = min(max(units, 6), 3200)
            c.connectionIntervalMax = c.connectionIntervalMin
            // The supervision timeout must exceed twice the interval (§7.8.12); keep 4.2 s unless too short.
            let needed = UInt16(clamping: Int(c.connectionIntervalMax) * 125 * 2 / 1000 + 1)
            c.supervisionTimeout = max(c.supervisionTimeout, min(needed, 3200))
        }
        return c
    }
}

extension BenchConfiguration {
    /// Runs this side, central or peripheral, on the controller behind `transport` (closed at the end).
    public func run(transport: any HCITransport, clock: any BLEClock, log: @escaping @Sendable (String) -> Void) async throws -> BenchResult {
        switch role {
        case .central: return try await BenchCentral.run(self, transport: transport, clock: clock, log: log)
        case .peripheral: return try await BenchPeripheral.run(self, transport: transport, clock: clock, log: log)
        }
    }
}

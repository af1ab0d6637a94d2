import BLE
import BLEWire

/// A peripheral `ble serve` can run: its services, its advertisement, and what it does while
/// centrals are connected.
public protocol ServeProfile: Sendable {
    /// The profile with its defaults, as `ble serve NAME` starts it before `configure`.
    init()
    /// The name `ble serve` takes (`heart-rate`, `echo`).
    static var name: String { get }
    /// One line for `ble serve --help`.
    static var summary: String { get }
    /// Adds the services; called once before advertising starts.
    mutating func install(on manager: PeripheralManager) async throws
    /// What to advertise, given the device name.
    func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?)
    /// Runs until cancelled: produces notifications, indications, simulated values.
    func run(on manager: PeripheralManager, log: ServeLog) async throws
    /// Takes the options only this profile understands (e.g. `--source` for accel); throws
    /// `ServeOptionError` for one it cannot use.
    mutating func configure(_ options: ServeProfileOptions) throws
    /// Whether the profile reads stdin; the keyboard then cannot toggle advertising.
    var usesStandardInput: Bool { get }
    /// Asks the profile to change its database, as `ble serve` does on SIGUSR1; false when the
    /// profile has no database change. The change happens in `run`, after those asked before.
    func requestDatabaseChange(_ trigger: DatabaseChangeTrigger) -> Bool
}

extension ServeProfile {
    /// Most profiles take no options of their own.
    public mutating func configure(_ options: ServeProfileOptions) throws {}
    /// Most profiles do not read stdin.
    public var usesStandardInput: Bool { false }
    /// Most profiles never change their database.
    public func requestDatabaseChange(_ trigger: DatabaseChangeTrigger) -> Bool { false }
}

/// The profiles `ble serve` knows, by name, with a line for `--help`.
public let serveProfiles: [(name: String, summary: String)] = [
    (TestServeProfile.name, TestServeProfile.summary),
    (HeartRateServeProfile.name, HeartRateServeProfile.summary),
    (BatteryServeProfile.name, BatteryServeProfile.summary),
    (EchoServeProfile.name, EchoServeProfile.summary), (SampleServeProfile.name, SampleServeProfile.summary),
    (AccelerometerServeProfile.name, AccelerometerServeProfile.summary),
]

/// Flags for a connectable general-discoverable LE-only device (Core Supplement Part A §1.3).
public let discoverableFlags: AdvertisingData.Flags = [.leGeneralDiscoverable, .brEdrNotSupported]

/// Four little-endian bytes of a counter.
func counterBytes(_ n: UInt32) -> [UInt8] {
    [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
}

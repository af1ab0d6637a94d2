import BLE
import BLEHost
import BLEWire

/// A peripheral `ble serve` can run: its services, its advertisement, and what it does while
/// centrals are connected.
protocol ServeProfile: Sendable {
    init()
    static var name: String { get }
    static var summary: String { get }
    /// Adds the services; called once before advertising starts.
    mutating func install(on manager: PeripheralManager) async throws
    /// What to advertise, given the device name.
    func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?)
    /// Runs until cancelled: produces notifications, indications, simulated values.
    func run(on manager: PeripheralManager, log: ServeLog) async throws
    /// Takes the options only this profile understands (e.g. `--source` for accel).
    mutating func configure(_ arguments: ParsedArguments) throws
    /// Whether the profile reads stdin; the keyboard then cannot toggle advertising.
    var usesStandardInput: Bool { get }
}

extension ServeProfile {
    mutating func configure(_ arguments: ParsedArguments) throws {}
    var usesStandardInput: Bool { false }
}

/// The profiles `ble serve` knows, by name, with a line for `--help`.
let serveProfiles: [(name: String, summary: String)] = [
    (TestProfile.name, TestProfile.summary),
    (HeartRateProfile.name, HeartRateProfile.summary),
    (BatteryProfile.name, BatteryProfile.summary),
    (EchoServeProfile.name, EchoServeProfile.summary), (SampleServeProfile.name, SampleServeProfile.summary),
    (AccelerometerServeProfile.name, AccelerometerServeProfile.summary),
]

/// Flags for a connectable general-discoverable LE-only device (Core Supplement Part A §1.3).
let discoverableFlags: AdvertisingData.Flags = [.leGeneralDiscoverable, .brEdrNotSupported]

/// Four little-endian bytes of a counter.
func counterBytes(_ n: UInt32) -> [UInt8] {
    [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
}

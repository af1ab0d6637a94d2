import BLE
import BLEVirtual
import BLEProfiles
import BLEWire

/// The peripherals of the built-in virtual world: one `ble serve` profile each, advertising on a
/// `VirtualWorld` from fixed addresses: the four seed systems of docs/SYSTEMS.md (echo, sample, heart
/// rate, accelerometer) and the battery and test profiles. `ble demo` runs the seed systems'
/// central flows against them, and `--hci virtual` puts them on the shared radio so every
/// command has something to talk to.
public struct DemoPeripherals: Sendable {
    /// One peripheral of the world.
    public struct Entry: Sendable {
        /// Its device name.
        public let name: String
        /// The `ble serve` profile it runs.
        public let profile: String
        /// Its public address.
        public let address: BDAddress
        /// Its peripheral manager.
        public let manager: PeripheralManager
    }

    /// The peripherals, in lineup order.
    public let entries: [Entry]
    let runners: [Task<Void, Never>]

    /// The profiles the world starts, with their device names and addresses.
    static let lineup: [(profile: any DemoStartable.Type, name: String, address: UInt64)] = [
        (EchoServeProfile.self, "EchoServer", 0x00_5A_B1_00_00_01),
        (SampleServeProfile.self, "M5Stack", 0x00_5A_B1_00_00_02),
        (HeartRateServeProfile.self, "HRM", 0x00_5A_B1_00_00_03),
        (AccelerometerServeProfile.self, AccelerometerProfile.localName, 0x00_5A_B1_00_00_04),
        (BatteryServeProfile.self, "Battery", 0x00_5A_B1_00_00_05),
        (TestServeProfile.self, "TestDevice", 0x00_5A_B1_00_00_06),
    ]

    /// Starts every peripheral of the lineup in `world` (advertising, running its profile).
    /// `setup` is what the profiles may differ in from `ble serve`'s defaults.
    public static func start(in world: VirtualWorld, setup: DemoSetup = DemoSetup()) async throws -> DemoPeripherals {
        var entries: [Entry] = []
        var runners: [Task<Void, Never>] = []
        for (type, name, raw) in lineup {
            let address = BDAddress(rawValue: raw)
            let (manager, _) = try await world.addPeripheralManager(name: name, address: address)
            runners.append(try await type.startServing(on: manager, name: name, setup: setup))
            entries.append(Entry(name: name, profile: type.profileName, address: address, manager: manager))
        }
        return DemoPeripherals(entries: entries, runners: runners)
    }

    /// Stops every profile and closes the peripherals.
    public func stop() async {
        runners.forEach { $0.cancel() }
        for e in entries { await e.manager.close() }
    }
}

/// What the demo world's peripherals are configured with, where they differ from `ble serve`'s
/// defaults (the options `ble serve` would take on its command line).
public struct DemoSetup: Sendable {
    /// The echo server's `--files` directory: `ble demo` lets it serve the image it wrote, and
    /// `ble ui` the picture of its `/echo` screen; otherwise the shared `--hci virtual` world
    /// serves no files, like `ble serve echo`.
    public var echoFiles: ServedDirectory?

    /// `ble serve`'s defaults unless given: no files served.
    public init(echoFiles: ServedDirectory? = nil) {
        self.echoFiles = echoFiles
    }
}

/// A serve profile the demo world can start without knowing its type statically.
protocol DemoStartable: Sendable {
    static var profileName: String { get }
    /// The profile as configured by `setup` (`Self()` unless the profile has a setting there).
    static func demoProfile(_ setup: DemoSetup) -> Self
    /// Installs the profile, starts advertising, and runs it in a task on the host's clock.
    static func startServing(on manager: PeripheralManager, name: String, setup: DemoSetup) async throws -> Task<Void, Never>
}

extension DemoStartable where Self: ServeProfile {
    static var profileName: String { name }

    static func demoProfile(_ setup: DemoSetup) -> Self { Self() }

    static func startServing(on manager: PeripheralManager, name: String, setup: DemoSetup) async throws -> Task<Void, Never> {
        var profile = demoProfile(setup)
        try await profile.install(on: manager)
        let (data, response) = profile.advertisement(name: name)
        try await manager.startAdvertising(data.shorteningLocalName(toFit: AdvertisingData.legacyLimit), scanResponse: response)
        let running = profile
        let log = ServeLog.silent
        return Task(executorPreference: manager.clock.taskExecutor) { try? await running.run(on: manager, log: log) }
    }
}

extension EchoServeProfile: DemoStartable {
    static func demoProfile(_ setup: DemoSetup) -> EchoServeProfile { EchoServeProfile(files: setup.echoFiles) }
}
extension SampleServeProfile: DemoStartable {}
extension AccelerometerServeProfile: DemoStartable {}
extension HeartRateServeProfile: DemoStartable {}
extension BatteryServeProfile: DemoStartable {}
extension TestServeProfile: DemoStartable {}

/// `--hci virtual` (or BLE_HCI=virtual): the shared in-process radio gets the demo
/// peripherals before the command's own controller joins it, configured by `setup` (`ble ui`
/// gives its echo server the demo picture to serve). A later call before the world opens
/// replaces an earlier one.
public func installDemoPeripheralsInSharedWorld(setup: DemoSetup = DemoSetup()) async {
    await VirtualWorld.setSharedSetup { world in
        do {
            _ = try await DemoPeripherals.start(in: world, setup: setup)
        } catch {
            throw BLEError.transport("virtual radio: the demo peripherals did not start: \(error)")
        }
    }
}

import BLE
import BLEHost
import BLEVirtualRadio
import BLEWire
import Foundation

/// `ble demo`: the stack end to end on the built-in virtual radio, with nothing attached. Three
/// peripherals (the `ble serve` profiles heart-rate, battery and test) and one central run in
/// this process on one virtual medium; the central scans, connects to each and uses it, and the
/// account of what happened is printed. The seed systems of SEEDS.md replace these profiles as
/// they land.
struct DemoCommand: BLECommand {
    static let name = "demo"
    static let abstract = "Run both roles on the built-in virtual radio and print what happens (no hardware needed)."
    static let usage = "demo"
    static let positionalNames: [String] = []
    static let minPositionals = 0
    static let options: [OptionSpec] = []

    init(_ args: ParsedArguments) throws {}

    func run() async throws {
        let started = ContinuousClock.now
        let radioTime = try await VirtualWorld.run { world in
            try await Self.runDemo(in: world)
            return world.clock.now()
        }
        let wall = ContinuousClock.now - started
        print("\n(\(Self.format(radioTime)) of virtual radio time in \(Self.format(wall)) of real time)")
    }

    static func format(_ d: Duration) -> String {
        let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        return String(format: "%.2f s", seconds)
    }

    /// The demo itself, in `world` (virtual time): the peripherals of DemoPeripherals, and one
    /// central that uses each of them.
    static func runDemo(in world: VirtualWorld) async throws {
        print("virtual radio: one medium, all in this process, in virtual time\n")
        let demo = try await DemoPeripherals.start(in: world)
        for e in demo.entries {
            print("peripheral  \(e.name.padding(12)) \(e.address)  advertising \(e.profile)")
        }
        let (central, _) = try await world.addCentral(address: BDAddress(rawValue: 0x00_5A_B1_00_00_10))
        print("central     \(central.controllerInfo.address)  scanning for 2 s\n")
        var found: [String: ScannedDevice] = [:]
        for try await device in central.scan(timeout: .seconds(2)) {
            guard let name = device.advertisement.localName, found[name] == nil else { continue }
            found[name] = device
            print("found       \(name.padding(12)) \(device.address)  rssi \(device.rssi.map(String.init) ?? "?")  \(device.advertisement.summary)")
        }
        guard let hrm = found["HRM"], let battery = found["Battery"], let test = found["TestDevice"] else {
            throw BLEError.timeout("the demo peripherals were not all found (found: \(found.keys.sorted()))")
        }

        print("\n— heart-rate monitor")
        let h = try await central.connect(hrm.address, timeout: .seconds(5))
        let mtu = try await h.exchangeMTU()
        print("connected   \(hrm.address), ATT MTU \(mtu)")
        let hrService = try await service(HeartRateProfile.service, on: h)
        let hrCharacteristics = try await h.discoverCharacteristics(for: hrService)
        if let location = hrCharacteristics.first(where: { $0.uuid == HeartRateProfile.bodySensorLocation }) {
            let value = try await h.readValue(for: location)
            print("read        Body Sensor Location = \(value.first.map { $0 == 1 ? "Chest" : "code \($0)" } ?? "?")")
        }
        if let measurement = hrCharacteristics.first(where: { $0.uuid == HeartRateProfile.measurement }) {
            let values = await h.notifications(for: measurement)
            try await h.setNotifyValue(true, for: measurement)
            var n = 0
            for await value in values {
                print("notified    Heart Rate Measurement \(value.hexString) → \(Self.bpm(value).map { "\($0) bpm" } ?? "?")")
                n += 1
                if n == 3 { break }
            }
        }
        try await h.disconnect()
        print("disconnected")

        print("\n— battery")
        let b = try await central.connect(battery.address, timeout: .seconds(5))
        let levels = try await b.readValues(ofType: BatteryProfile.level)
        print("read        Battery Level = \(levels.first?.value.first.map { "\($0) %" } ?? "?")")
        try await b.disconnect()

        print("\n— test device")
        let t = try await central.connect(test.address, timeout: .seconds(5))
        let testService = try await service(TestProfile.service, on: t)
        let characteristics = try await t.discoverCharacteristics(for: testService)
        func c(_ uuid: BluetoothUUID) throws -> GATTCharacteristic {
            guard let found = characteristics.first(where: { $0.uuid == uuid }) else { throw BLEError.invalidArgument("no \(uuid)") }
            return found
        }
        let long = try await t.readValue(for: try c(TestProfile.long))
        print("read long   \(long.count) bytes over ATT MTU \(t.mtu) (Read + Read Blob)")
        let message = Array("hello from the demo, written as a long write of more than one PDU".utf8)
        try await t.writeValue(message, for: try c(TestProfile.rw))
        let back = try await t.readValue(for: try c(TestProfile.rw))
        print("long write  \(message.count) bytes, read back \(back == message ? "equal" : "DIFFERENT")")
        do {
            _ = try await t.readValue(for: try c(TestProfile.encrypted))
        } catch let error as BLEError {
            print("refused     encrypted value: \(error)")
        }
        let indications = await t.notifications(for: try c(TestProfile.indicate))
        try await t.setNotifyValue(true, for: try c(TestProfile.indicate))
        var received = 0
        for await value in indications {
            print("indicated   counter \(value.hexString) (confirmed)")
            received += 1
            if received == 2 { break }
        }
        try await t.disconnect()

        print("\ndone: 3 peripherals found, 3 connections, reads, long write, notifications and indications on the virtual radio")
        await central.close()
        await demo.stop()
    }

    private static func service(_ uuid: BluetoothUUID, on p: Peripheral) async throws -> GATTService {
        guard let s = try await p.discoverServices([uuid]).first else { throw BLEError.invalidArgument("no service \(uuid)") }
        return s
    }

    /// Heart Rate Measurement value (HRS §3.1): flags bit 0 selects UInt8 or UInt16 little-endian.
    static func bpm(_ value: [UInt8]) -> Int? {
        guard let flags = value.first else { return nil }
        if flags & 0x01 == 0 { return value.count >= 2 ? Int(value[1]) : nil }
        return value.count >= 3 ? Int(value[1]) | Int(value[2]) << 8 : nil
    }
}

import BLESystems
import BLEVirtual
import CoreBluetooth
@testable import CoreBluetoothExamples
import XCTest
import Synchronization

/// A `ble serve` profile on the shared virtual radio, as `ble serve PROFILE --hci virtual` runs it.
struct ServedProfile: Sendable {
    let manager: PeripheralManager
    let device: VirtualDevice
    let runner: Task<Void, Never>

    static func start<P: ServeProfile>(_ type: P.Type, name: String, at position: VirtualMedium.Position = .origin) async throws -> ServedProfile {
        let (manager, device) = try await VirtualWorld.shared.addPeripheralManager(name: name, at: position)
        var profile = P()
        try await profile.install(on: manager)
        let (data, response) = profile.advertisement(name: name)
        try await manager.startAdvertising(data.shorteningLocalName(toFit: 31), scanResponse: response)
        let running = profile
        let runner = Task<Void, Never> { try? await running.run(on: manager, log: ServeLog.silent) }
        return ServedProfile(manager: manager, device: device, runner: runner)
    }

    func stop() async {
        runner.cancel()
        await VirtualWorld.shared.radio.remove(device.id)
        await manager.close()
    }
}

/// The seed systems' CoreBluetooth-style apps (Examples/) against the `ble serve` profiles and
/// against each other, on the shared virtual radio, each run until it says it is done.
final class ExamplesTests: XCTestCase {
    /// Collects an app's lines and its exit status.
    final class Run: @unchecked Sendable {
        private let lock = Mutex(())
        private var lines: [String] = []
        private var status: Int32?
        var output: [String] { lock.withLock { _ in lines } }
        var exitStatus: Int32? { lock.withLock { _ in status } }

        func attach(_ app: ExampleApp) {
            app.output = { [self] line in
                lock.withLock { _ in lines.append(line) }
                TestEvents.happened()
            }
            app.finish = { [self] code in
                lock.withLock { _ in status = code }
                TestEvents.happened()
            }
        }
    }

    override func setUp() {
        setenv("BLE_HCI", "virtual", 1)
    }

    override func tearDown() {
        unsetenv("BLE_HCI")
    }

    func testEchoCentralGetsItsTextBack() throws {
        let served = try blocking { try await ServedProfile.start(EchoServeProfile.self, name: "EchoServer") }
        defer { try? blocking { await served.stop() } }
        let app = EchoCentral(message: "hello over CoreBluetooth", queue: DispatchQueue(label: "echo"))
        let run = Run()
        run.attach(app)
        app.start()
        wait("the echo", seconds: 30) { run.exitStatus != nil }
        XCTAssertEqual(run.exitStatus, 0, "\(run.output)")
        XCTAssertTrue(run.output.contains { $0.hasPrefix("received text:") && $0.contains("hello over CoreBluetooth") }, "\(run.output)")
        XCTAssertEqual(run.output.last, "closed")
    }

    func testSampleCentralStepsThroughTheM5Stack() throws {
        let served = try blocking { try await ServedProfile.start(SampleServeProfile.self, name: "M5Stack") }
        defer { try? blocking { await served.stop() } }
        let app = SampleCentral(notifications: 2, queue: DispatchQueue(label: "sample"))
        let run = Run()
        run.attach(app)
        app.start()
        wait("two notifications", seconds: 30) { run.exitStatus != nil }
        XCTAssertEqual(run.exitStatus, 0, "\(run.output)")
        XCTAssertEqual(run.output.first, "state: poweredOn")
        XCTAssertTrue(run.output.contains("connected: true"))
        XCTAssertTrue(run.output.contains { $0.contains("\"Hello World\"") }, "\(run.output)")
        XCTAssertTrue(run.output.contains("wrote: ok"))
        XCTAssertTrue(run.output.contains("notifying: true"))
        XCTAssertEqual(run.output.filter { $0.contains("\"Notify Data") }.count, 2, "\(run.output)")
    }

    func testHeartRateMonitorShowsMeasurements() throws {
        let served = try blocking { try await ServedProfile.start(HeartRateServeProfile.self, name: "HRM") }
        defer { try? blocking { await served.stop() } }
        let app = HeartRateMonitor(measurements: 3, queue: DispatchQueue(label: "hrm"))
        let run = Run()
        run.attach(app)
        app.start()
        wait("three measurements", seconds: 30) { run.exitStatus != nil }
        XCTAssertEqual(run.exitStatus, 0, "\(run.output)")
        XCTAssertEqual(run.output.filter { $0.hasPrefix("heart rate: ") }.count, 3, "\(run.output)")
        XCTAssertTrue(run.output.contains { $0.hasPrefix("body sensor location: ") }, "\(run.output)")
        XCTAssertEqual(HeartRateMonitor.describe(measurement: [0x19, 0x48, 0x00, 0x02, 0x00, 0x00, 0x04]),
                       "heart rate: 72 bpm, energy 2 kJ, RR 1.000 s")
        XCTAssertEqual(HeartRateMonitor.describe(measurement: [0x06, 72]), "heart rate: 72 bpm, contact")
    }

    /// S3's RSSI gate: a monitor 100 m away (0 dBm − 40 dB − 20·log10(100) dB = −80 dBm) is
    /// refused once, with its RSSI, and taken once it is brought next to the app (−40 dBm), since
    /// every advertisement is judged again.
    func testHeartRateMonitorRefusesAWeakMonitorAndTakesItOnceItComesCloser() throws {
        let name = "FarHRM"
        let served = try blocking { try await ServedProfile.start(HeartRateServeProfile.self, name: name, at: VirtualMedium.Position(x: 100, y: 0)) }
        defer { try? blocking { await served.stop() } }
        let app = HeartRateMonitor(measurements: 1, nameContains: name, queue: DispatchQueue(label: "hrm.far"))
        let run = Run()
        run.attach(app)
        app.start()
        let refusal = "not connecting to \(name): signal -80 dBm is weaker than -70 dBm; waiting for it to come closer"
        wait("the refusal") { run.output.contains(refusal) }
        XCTAssertFalse(run.output.contains { $0.hasPrefix("connected") }, "\(run.output)")
        try blocking { await VirtualWorld.shared.radio.move(served.device.id, to: .origin) }
        wait("a measurement from the monitor brought closer", seconds: 30) { run.exitStatus != nil }
        XCTAssertEqual(run.exitStatus, 0, "\(run.output)")
        XCTAssertEqual(run.output.filter { $0 == refusal }.count, 1, "refused once, not on every advertisement: \(run.output)")
        XCTAssertTrue(run.output.contains("\(name) now -40 dBm"), "\(run.output)")
        XCTAssertTrue(run.output.contains("connected to \(name)"), "\(run.output)")
        XCTAssertEqual(run.output.filter { $0.hasPrefix("heart rate: ") }.count, 1, "\(run.output)")
    }

    /// A gate set on the command line (`--min-rssi`) takes the monitor that the default refuses.
    func testHeartRateMonitorTakesAWeakMonitorWithALowerGate() throws {
        let name = "WeakHRM"
        let served = try blocking { try await ServedProfile.start(HeartRateServeProfile.self, name: name, at: VirtualMedium.Position(x: 100, y: 0)) }
        defer { try? blocking { await served.stop() } }
        let arguments = try HeartRateMonitorArguments(["1", name, "--min-rssi", "-90"])
        let app = HeartRateMonitor(arguments, queue: DispatchQueue(label: "hrm.weak"))
        let run = Run()
        run.attach(app)
        app.start()
        wait("a measurement at -80 dBm", seconds: 30) { run.exitStatus != nil }
        XCTAssertEqual(run.exitStatus, 0, "\(run.output)")
        XCTAssertFalse(run.output.contains { $0.hasPrefix("not connecting") }, "\(run.output)")
        XCTAssertTrue(run.output.contains { $0.hasPrefix("monitor: \(name) -80 dBm at ") }, "\(run.output)")
        XCTAssertEqual(run.output.filter { $0.hasPrefix("heart rate: ") }.count, 1, "\(run.output)")
    }

    func testHeartRateMonitorArguments() throws {
        XCTAssertEqual(try HeartRateMonitorArguments([]).minimumRSSI, -70)
        let full = try HeartRateMonitorArguments(["3", "CBHR", "--min-rssi", "-127"])
        XCTAssertEqual(full.measurements, 3)
        XCTAssertEqual(full.nameContains, "CBHR")
        XCTAssertEqual(full.minimumRSSI, -127)
        XCTAssertEqual(try HeartRateMonitorArguments(["--min-rssi=-90", "2"]).minimumRSSI, -90)
        XCTAssertEqual(try HeartRateMonitorArguments(["--min-rssi=-90", "2"]).measurements, 2)
        for (bad, message) in [(["--min-rssi"], "--min-rssi needs a value in dBm"),
                               (["--min-rssi", "-128"], "--min-rssi expects dBm between -127 and 20, got '-128'"),
                               (["--min-rssi=x"], "--min-rssi expects dBm between -127 and 20, got 'x'"),
                               (["--rssi", "-90"], "unknown option --rssi"),
                               (["three"], "MEASUREMENTS must be a whole number, got 'three'"),
                               (["1", "a", "b"], "too many arguments")] {
            XCTAssertThrowsError(try HeartRateMonitorArguments(bad), "\(bad)") { error in
                XCTAssertEqual("\(error)", message)
            }
        }
    }

    /// How many scans the S4 central makes before it gives up with nothing listed.
    func testAccelerometerCentralCountsWholeScanRounds() {
        let rounds = AccelerometerCentral.rounds
        XCTAssertEqual(rounds(5, 0), 1, "the default: one scan")
        XCTAssertEqual(rounds(5, 3), 1, "at least one")
        XCTAssertEqual(rounds(1.5, 25), 16)
        XCTAssertEqual(rounds(0.1, 0.3), 3, "no round lost to rounding")
        XCTAssertEqual(rounds(0, 10), 1, "no scan time: one round, not a loop")
        XCTAssertEqual(rounds(1, .infinity), .max, "for ever")
        XCTAssertEqual(rounds(1, .nan), 1)
        XCTAssertEqual(rounds(1, -4), 1)
        XCTAssertEqual(rounds(1e-300, 1e300), .max)
    }

    func testAccelerometerCentralChartsTheServeProfile() throws {
        let served = try blocking { try await ServedProfile.start(AccelerometerServeProfile.self, name: "BLE001") }
        defer { try? blocking { await served.stop() } }
        let app = AccelerometerCentral(samples: 3, scanSeconds: 1.5, giveUpSeconds: 25, queue: DispatchQueue(label: "accel"))
        let run = Run()
        run.attach(app)
        app.start()
        wait("three samples", seconds: 30) { run.exitStatus != nil }
        XCTAssertEqual(run.exitStatus, 0, "\(run.output)")
        XCTAssertTrue(run.output.contains { $0.hasSuffix("BLE001 -40 dBm") }, "\(run.output)")
        XCTAssertEqual(run.output.filter { $0.hasPrefix("x ") }.count, 3, "\(run.output)")
    }

    /// Both sides of S4 in CoreBluetooth style, in one process.
    func testAccelerometerPeripheralAndCentralTalk() throws {
        let peripheral = AccelerometerPeripheral(queue: DispatchQueue(label: "accel.peripheral"))
        let peripheralRun = Run()
        peripheralRun.attach(peripheral)
        peripheral.start()
        wait("advertising") { peripheralRun.output.contains("advertising as BLE001") }
        let central = AccelerometerCentral(samples: 5, scanSeconds: 1.5, giveUpSeconds: 25, queue: DispatchQueue(label: "accel.central"))
        let centralRun = Run()
        centralRun.attach(central)
        central.start()
        wait("five samples", seconds: 30) { centralRun.exitStatus != nil }
        XCTAssertEqual(centralRun.exitStatus, 0, "\(centralRun.output)")
        XCTAssertEqual(centralRun.output.filter { $0.hasPrefix("x ") }.count, 5, "\(centralRun.output)")
        wait("the peripheral sees the subscription end") { peripheralRun.output.contains { $0.hasPrefix("unsubscribed: ") } }
        XCTAssertTrue(peripheralRun.output.contains { $0.hasPrefix("subscribed: ") })
        peripheral.manager.stopAdvertising()
    }
}

import BLESystems
import BLEVirtual
import CoreBluetooth
import CoreBluetoothExamples
import XCTest

/// A `ble serve` profile on the shared virtual radio, as `ble serve PROFILE --hci virtual` runs it.
struct ServedProfile: Sendable {
    let manager: PeripheralManager
    let device: VirtualDevice
    let runner: Task<Void, Never>

    static func start<P: ServeProfile>(_ type: P.Type, name: String) async throws -> ServedProfile {
        let (manager, device) = try await VirtualWorld.shared.addPeripheralManager(name: name)
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
        private let lock = NSLock()
        private var lines: [String] = []
        private var status: Int32?
        var output: [String] { lock.lock(); defer { lock.unlock() }; return lines }
        var exitStatus: Int32? { lock.lock(); defer { lock.unlock() }; return status }

        func attach(_ app: ExampleApp) {
            app.output = { [self] line in lock.lock(); lines.append(line); lock.unlock() }
            app.finish = { [self] code in lock.lock(); status = code; lock.unlock() }
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

    func testAccelerometerCentralChartsTheServeProfile() throws {
        let served = try blocking { try await ServedProfile.start(AccelerometerServeProfile.self, name: "BLE001") }
        defer { try? blocking { await served.stop() } }
        let app = AccelerometerCentral(samples: 3, scanSeconds: 1.5, queue: DispatchQueue(label: "accel"))
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
        let central = AccelerometerCentral(samples: 5, scanSeconds: 1.5, queue: DispatchQueue(label: "accel.central"))
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

import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The CoreBluetooth-style seed apps (Examples/, `import CoreBluetooth`) against Bumble peers over
/// rootcanal, and a Bumble central against the CoreBluetooth accelerometer peripheral.
final class CoreBluetoothInteropTests: XCTestCase {
    func uniqueName(_ prefix: String) -> String { prefix + String(UInt32.random(in: 100_000...999_999)) }

    /// Runs an example executable to its end with `BLE_HCI` on rootcanal.
    func runExample(_ name: String, _ arguments: [String], environment env: InteropEnvironment, timeout: TimeInterval = 60) throws -> ProcessResult {
        try ProcessRunner.run(try BLETool.executableURL(named: name), arguments: arguments,
                              environment: ["BLE_HCI": env.rootcanal], timeout: timeout)
    }

    func lines(_ result: ProcessResult) -> [String] { result.stdout.split(separator: "\n").map(String.init) }

    func testHeartRateMonitorAgainstABumbleSensor() throws {
        // Inside the full suite rootcanal reports the sensor as weak as -112 dBm: the gate goes
        // down to the weakest RSSI a report can carry, as a test of `ble heart-rate` would set it.
        let env = try InteropEnvironment.current()
        let name = uniqueName("CBHR")
        _ = try startPeer("heart_rate_sensor.py", arguments: ["--name", name, "--interval", "0.2"], environment: env)
        // This test's sensor only: another test's 180D advertiser on the shared rootcanal must not be taken.
        let result = try runExample("cb-heart-rate", ["3", name, "--min-rssi", "-127"], environment: env)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertEqual(lines(result).filter { $0.hasPrefix("heart rate: ") }.count, 3, "\(result)")
        XCTAssertTrue(lines(result).contains("body sensor location: Chest"), "\(result)")
        XCTAssertFalse(lines(result).contains { $0.hasPrefix("not connecting") }, "\(result)")
    }

    func testEchoCentralAgainstABumbleEchoServer() throws {
        let env = try InteropEnvironment.current()
        _ = try startPeer("echo_server.py", arguments: ["--name", uniqueName("CBEcho")], environment: env)
        let text = "hello from CoreBluetooth " + String(repeating: "x", count: 300)
        let result = try runExample("cb-echo", [text], environment: env)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertTrue(lines(result).contains { $0.hasPrefix("received text:") && $0.contains(text) }, "\(result)")
    }

    /// A peer that advertises its service and puts its name only in the scan response, as the
    /// first seed's own app met it, and ignores every scan request 200 ms of every 500 ms (two
    /// or three of its advertisements in a row go without a scan response, as scan requests lost
    /// on the air): `didDiscover` must come with the scan response merged, so `peripheral.name`
    /// is the name in every run. Each run is a new process (a new host and controller on
    /// rootcanal) started right after the previous one disconnected from the peer.
    func testEveryBackToBackRunDiscoversTheNameFromTheScanResponse() throws {
        let env = try InteropEnvironment.current()
        let name = uniqueName("CBEchoSR")
        _ = try startPeer("echo_server.py", arguments: ["--name", name, "--name-in-scan-response", "--ignore-scan-requests", "200/300"],
                          environment: env)
        for run in 1...10 {
            let result = try runExample("cb-echo", ["run \(run)"], environment: env)
            XCTAssertTrue(result.succeeded, "run \(run): \(result)")
            let discovered = lines(result).first { $0.hasPrefix("discovered ") }
            XCTAssertTrue(discovered?.hasPrefix("discovered \(name) (") ?? false, "run \(run): \(discovered ?? "no discovery"); \(result)")
        }
    }

    func testSampleCentralAgainstABumbleM5Stack() throws {
        let env = try InteropEnvironment.current()
        _ = try startPeer("sample_peripheral.py", arguments: ["--name", uniqueName("CBM5"), "--interval", "0.2"], environment: env)
        let result = try runExample("cb-sample", ["2"], environment: env)
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = lines(result)
        XCTAssertTrue(out.contains("connected: true"), "\(result)")
        XCTAssertTrue(out.contains { $0.contains("\"Hello World\"") }, "\(result)")
        XCTAssertTrue(out.contains("wrote: ok"), "\(result)")
        XCTAssertEqual(out.filter { $0.contains("\"Notify Data") }.count, 2, "\(result)")
    }

    func testAccelerometerCentralAgainstABumblePeripheral() throws {
        let env = try InteropEnvironment.current()
        _ = try startPeer("accel_peripheral.py", arguments: ["--name", "BLE" + uniqueName("")], environment: env)
        let result = try runExample("cb-accel-central", ["3"], environment: env)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertEqual(lines(result).filter { $0.hasPrefix("x ") }.count, 3, "\(result)")
    }

    /// A Bumble central subscribes to the CoreBluetooth accelerometer peripheral and gets samples.
    func testBumbleCentralAgainstTheCoreBluetoothAccelerometer() throws {
        let env = try InteropEnvironment.current()
        let process = Process()
        process.executableURL = try BLETool.executableURL(named: "cb-accel-peripheral")
        process.arguments = ["60"]
        process.environment = ProcessInfo.processInfo.environment.merging(["BLE_HCI": env.rootcanal]) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        addTeardownBlock {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
        let central = try startPeer("accel_central.py", arguments: ["--pick", "BLE001", "--first", "--count", "5"], environment: env)
        for index in 0..<5 {
            let sample = try central.waitForEvent("sample", timeout: 30)
            XCTAssertEqual(sample.int("index"), index)
            XCTAssertEqual(sample.string("value")?.count, 24, "12 bytes: three Float32")
        }
        try central.waitForEvent("unsubscribed", timeout: 20)
    }
}

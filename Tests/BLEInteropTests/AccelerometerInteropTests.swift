import BLEProfiles
import Foundation
import XCTest

/// docs/SYSTEMS.md S4 against Bumble over rootcanal, both directions: a Bumble central against our
/// `ble serve accel`, and our `ble accel` against a Bumble accelerometer
/// (peers/accel_peripheral.py, accel_central.py).
final class AccelerometerInteropTests: XCTestCase {
    /// A name no other device on the shared rootcanal has; it contains "BLE".
    func uniqueName() -> String { "BLE" + String(UInt32.random(in: 100_000...999_999)) }

    func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    func serve(_ env: InteropEnvironment, arguments: [String] = []) throws -> ServeProcess {
        let process = try ServeProcess(profile: "accel", name: uniqueName(), arguments: arguments, environment: env)
        addTeardownBlock { process.stop() }
        return process
    }

    func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ble-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)")
    }

    func testBumbleCentralReadsWritesAndReceivesSamplesAt5Hz() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env)
        let central = try startPeer("accel_central.py", arguments: [
            "--target", peripheral.address.description, "--read", "--write", "01", "--count", "10",
        ], environment: env)
        let read = try central.waitForEvent("read", timeout: 30)
        XCTAssertEqual(read.string("value"), String(repeating: "00", count: 12), "readable; zeros before the first sample")
        let write = try central.waitForEvent("write_error", timeout: 10)
        XCTAssertEqual(write.int("error"), 0x03, "Write Not Permitted")
        var arrivals: [Date] = []
        for i in 0..<10 {
            let sample = try central.waitForEvent("sample", timeout: 10)
            let bytes = try XCTUnwrap(sample.bytes("value"))
            let decoded = try AccelerometerSample(decoding: bytes)
            XCTAssertEqual(Double(decoded.z), 1, accuracy: 0.5, "sample \(i): simulated gravity on z")
            arrivals.append(sample.receivedAt)
        }
        let span = arrivals[9].timeIntervalSince(arrivals[0])
        XCTAssertGreaterThan(span, 1.2, "5 Hz: nine intervals of 0.2 s, got \(span) s")
        XCTAssertLessThan(span, 3.5)
        try central.waitForEvent("done", timeout: 20)

        try peripheral.waitFor("read")
        try peripheral.waitFor("write") { ($0["refused"] as? String)?.contains("0x03") == true }
        try peripheral.waitFor("subscribed") { $0["subscribers"] as? Int == 1 }
        try peripheral.waitFor("unsubscribed") { $0["subscribers"] as? Int == 0 }
    }

    /// `--source FILE`: the lines' samples in order, a comment line skipped; once the file is
    /// used up the peripheral says so and stays up.
    func testSamplesFromAFileArriveInOrder() throws {
        let env = try InteropEnvironment.current()
        let file = temporaryFile("samples.txt")
        let text = "# x y z\n" + (0..<12).map { "\($0) -\($0).5 1" }.joined(separator: "\n") + "\n"
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let peripheral = try serve(env, arguments: ["--source", file.path])
        let central = try startPeer("accel_central.py", arguments: ["--target", peripheral.address.description, "--count", "12"], environment: env)
        for i in 0..<12 {
            let sample = try central.waitForEvent("sample", timeout: 30)
            let decoded = try AccelerometerSample(decoding: try XCTUnwrap(sample.bytes("value")))
            XCTAssertEqual(decoded, AccelerometerSample(x: Float(i), y: -Float(i) - 0.5, z: 1))
        }
        try central.waitForEvent("done", timeout: 20)
        let ended = try peripheral.waitFor("sourceEnded", timeout: 10)
        XCTAssertEqual(ended["sent"] as? Int, 12)
        XCTAssertEqual(ended["skipped"] as? Int, 1, "the comment line")
        XCTAssertNil(peripheral.exitStatus, "still serving after the file ended")
    }

    func testNoAdvertiseKeepsThePeripheralSilent() throws {
        let env = try InteropEnvironment.current()
        let peripheral = try serve(env, arguments: ["--no-advertise"])
        try peripheral.waitFor("advertising") { $0["enabled"] as? Bool == false }
        let scan = try BLETool.run(["scan", "--json", "--timeout", "3", "--hci", env.rootcanal], timeout: 30)
        XCTAssertTrue(scan.succeeded, "\(scan)")
        XCTAssertFalse(scan.stdout.contains(peripheral.address.description), "not advertising: \(scan.stdout)")
    }

    /// Our central with an address, --json and --plot against a Bumble accelerometer: each
    /// object equals the sample the peripheral says it sent, and the SVG has x, y and z.
    func testOurCentralChartsABumbleAccelerometer() throws {
        let env = try InteropEnvironment.current()
        let accel = try startPeer("accel_peripheral.py", arguments: ["--name", uniqueName()], environment: env)
        let plot = temporaryFile("session.svg")
        defer { try? FileManager.default.removeItem(at: plot) }
        let result = try BLETool.run(["accel", "\(accel.address)/random", "--count", "10", "--json", "--plot", plot.path, "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        let received = try lines(result.stdout).map { line in
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
        }
        XCTAssertEqual(received.count, 10, "one object per sample, nothing else: \(result.stdout)")
        let sent = accel.events.filter { $0.name == "sample" }
        XCTAssertGreaterThanOrEqual(sent.count, 10)
        for (i, (ours, theirs)) in zip(received, sent).enumerated() {
            XCTAssertEqual(Set(ours.keys), ["x", "y", "z"])
            // Float32 on the wire: equal as Float (JSON parsers may differ in the last bit of a Double).
            for axis in ["x", "y", "z"] {
                XCTAssertEqual((ours[axis] as? Double).map(Float.init), theirs[axis]?.doubleValue.map(Float.init), "\(axis) of sample \(i)")
            }
        }
        let svg = try String(contentsOf: plot, encoding: .utf8)
        XCTAssertTrue(svg.hasPrefix("<svg "), svg)
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 3, "x, y and z")
        XCTAssertTrue(svg.contains("10 samples"), svg)
    }

    /// Without an address and not on a terminal: scan 5 s, list the *ble* names, take the first
    /// that advertises 0011 (a Bumble peripheral whose name contains "ble" does not).
    func testOurCentralTakesTheFirstBleDeviceAdvertisingTheService() throws {
        let env = try InteropEnvironment.current()
        let decoy = try startPeer("peripheral.py", arguments: ["--name", "Bumble" + String(UInt32.random(in: 1000...9999))], environment: env)
        let accel = try startPeer("accel_peripheral.py", arguments: ["--name", uniqueName()], environment: env)
        let result = try BLETool.run(["accel", "--count", "3", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = lines(result.stdout)
        XCTAssertTrue(out.contains { $0.contains(decoy.address.description) && $0.hasSuffix("(no 0011 advertised)") }, result.stdout)
        XCTAssertTrue(out.contains { $0.hasPrefix("chose       ") && $0.contains(accel.address.description) }, result.stdout)
        XCTAssertEqual(out.filter { $0.hasPrefix("sample      ") }.count, 3, result.stdout)
        XCTAssertFalse(decoy.events.contains { $0.name == "connected" }, "the decoy is listed, not connected to")
    }
}

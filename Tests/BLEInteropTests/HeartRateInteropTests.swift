import BLEProfiles
import BLEWire
import Foundation
import XCTest

/// docs/SYSTEMS.md S3 against Bumble over rootcanal, both directions: a Bumble monitor against our
/// `ble serve heart-rate`, and our `ble heart-rate` against a Bumble sensor that cycles through
/// every flag variant (peers/heart_rate_sensor.py, heart_rate_monitor.py).
final class HeartRateInteropTests: XCTestCase {
    /// A name no other device on the shared rootcanal has.
    func uniqueName(_ prefix: String) -> String { prefix + String(UInt32.random(in: 100_000...999_999)) }

    func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try lines(text).map { line in
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    func testBumbleMonitorReadsControlsAndReceivesAll24VariantsFromOurSensor() throws {
        let env = try InteropEnvironment.current()
        let sensor = try ServeProcess(profile: "heart-rate", name: uniqueName("HR"), environment: env)
        addTeardownBlock { sensor.stop() }
        let monitor = try startPeer("heart_rate_monitor.py", arguments: ["--target", sensor.address.description, "--count", "24"], environment: env)

        let location = try monitor.waitForEvent("read", timeout: 30)
        XCTAssertEqual(location.string("value"), "01")
        XCTAssertEqual(location.string("location"), "chest")
        try monitor.waitForEvent("wrote", timeout: 10) { $0.string("value") == "01" }
        let refused = try monitor.waitForEvent("write_error", timeout: 10)
        XCTAssertEqual(refused.string("value"), "02")
        XCTAssertEqual(refused.int("error"), 0x80, "Control Point Value Not Supported")

        var flags: Set<Int> = []
        for i in 0..<24 {
            let event = try monitor.waitForEvent("measurement", timeout: 20)
            // Measurement i of the cycle; Energy Expended i, counted from the reset (0x01)
            // the monitor wrote before subscribing.
            let expected = HeartRateVariantCycle.measurement(at: UInt64(i), energyExpended: UInt16(i))
            XCTAssertEqual(event.string("value"), expected.encoded().hexString, "measurement \(i)")
            XCTAssertEqual(event.int("bpm"), Int(expected.beatsPerMinute))
            flags.insert(event.int("flags") ?? -1)
        }
        XCTAssertEqual(flags.count, 24, "every flag combination: \(flags.sorted())")
        try monitor.waitForEvent("done", timeout: 20)
        try sensor.waitFor("subscription") { $0["notifications"] as? Bool == true }
        try sensor.waitFor("disconnected", timeout: 20)
    }

    /// Our monitor with --json against a Bumble sensor sending every variant (8-bit and 16-bit
    /// rates above 255, 1–3 RR intervals): each object equals what the sensor says it sent.
    func testOurMonitorDecodesEveryVariantOfABumbleSensor() throws {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", uniqueName("BHR"), "--interval", "0.2"], environment: env)
        let result = try BLETool.run(["heart-rate", "\(sensor.address)/random", "--count", "24", "--json", "--hci", env.rootcanal], timeout: 90)
        XCTAssertTrue(result.succeeded, "\(result)")
        let received = try jsonLines(result.stdout)
        XCTAssertEqual(received.count, 24, "one object per measurement and nothing else on stdout: \(result.stdout)")
        let sent = sensor.events.filter { $0.name == "measurement" }
        XCTAssertGreaterThanOrEqual(sent.count, 24)
        for (i, (ours, theirs)) in zip(received, sent).enumerated() {
            XCTAssertEqual(Set(ours.keys), ["bpm", "contact", "energyKJ", "rrIntervals"])
            XCTAssertEqual(ours["bpm"] as? Int, theirs.int("bpm"), "bpm of \(i)")
            XCTAssertEqual(ours["contact"] as? String, theirs.string("contact"), "contact of \(i)")
            XCTAssertEqual(ours["energyKJ"] as? Int, theirs.int("energyKJ"), "energy of \(i)")
            XCTAssertTrue((ours["energyKJ"] is NSNull) == (theirs["energyKJ"] == .null), "energy present in both or neither (\(i))")
            let theirRR: [Double] = {
                guard case let .array(values)? = theirs["rrIntervals"] else { return [] }
                return values.compactMap(\.doubleValue)
            }()
            XCTAssertEqual(ours["rrIntervals"] as? [Double], theirRR, "RR intervals in seconds of \(i)")
        }
        XCTAssertEqual(Set(sent.prefix(24).compactMap { $0.int("variant") }).count, 24, "the sensor went through every variant")
    }

    /// Without an address, on a pipe: plain lines; when the sensor hangs up the monitor scans
    /// again and follows the next one.
    func testOurMonitorScansAgainAfterTheSensorDisconnects() async throws {
        let env = try InteropEnvironment.current()
        let first = try startPeer("heart_rate_sensor.py", arguments: ["--name", uniqueName("BHR"), "--interval", "0.3", "--count", "3"], environment: env)
        let run = Task { try await BLETool.run(["heart-rate", "--count", "5", "--hci", env.rootcanal], timeout: 120) }
        // The first sensor sends three measurements, disconnects its centrals and exits.
        try await first.event("done", timeout: 60)
        let second = try startPeer("heart_rate_sensor.py", arguments: ["--name", uniqueName("BHR"), "--interval", "0.3"], environment: env)
        let result = try await run.value
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = lines(result.stdout)
        XCTAssertEqual(out.filter { $0.hasPrefix("measurement ") }.count, 5, result.stdout)
        XCTAssertEqual(out.filter { $0.hasPrefix("location    Chest") }.count, 2, result.stdout)
        XCTAssertTrue(out.contains { $0.hasPrefix("disconnected \(first.address)") && $0.hasSuffix("scanning again") }, result.stdout)
        XCTAssertEqual(out.filter { $0.hasPrefix("connecting  ") }.map { $0.contains(first.address.description) }, [true, false], result.stdout)
        XCTAssertTrue(out.contains { $0.hasPrefix("connecting  ") && $0.contains(second.address.description) }, result.stdout)
        XCTAssertTrue(out.first?.hasPrefix("scanning") == true)
    }

    /// A named monitor heard weaker than the gate is refused with its RSSI and status 1.
    func testANamedMonitorBelowTheGateIsRefusedWithItsRSSI() throws {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", uniqueName("BHR")], environment: env)
        // Nothing on rootcanal is heard at +20 dBm.
        let result = try BLETool.run(["heart-rate", "\(sensor.address)/random", "--min-rssi", "20", "--count", "1", "--hci", env.rootcanal], timeout: 60)
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("refusing to connect to"), result.stderr)
        XCTAssertTrue(result.stderr.contains("dBm is weaker than 20 dBm (--min-rssi)"), result.stderr)
        XCTAssertFalse(sensor.events.contains { $0.name == "connected" }, "no connection was made")
    }
}

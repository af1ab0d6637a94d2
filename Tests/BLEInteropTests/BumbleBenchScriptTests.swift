import Foundation
import XCTest

/// The Bumble halves of `scripts/bench.sh --compare`, run with tiny counts
/// so they cannot rot unnoticed: each must finish and print its figure in the form the script
/// reads. Nothing here is timed; the figures' values are not judged, only their shape and the
/// counts they must agree with.
final class BumbleBenchScriptTests: XCTestCase {
    static let scripts = InteropEnvironment.repositoryRoot.appendingPathComponent("scripts/lib")

    /// The venv's Python (`BLE_TEST_PYTHON`, else `.venv/bin/python`); skips without Bumble.
    func python() throws -> URL {
        let python = URL(fileURLWithPath: ProcessInfo.processInfo.environment["BLE_TEST_PYTHON"]
            ?? InteropEnvironment.repositoryRoot.appendingPathComponent(".venv/bin/python").path)
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw XCTSkip("no \(python.path): run scripts/test.sh, which sets up .venv with Bumble")
        }
        return python
    }

    func runScript(_ name: String, _ arguments: [String], timeout: TimeInterval = 120) throws -> String {
        let result = try ProcessRunner.run(try python(), arguments: [Self.scripts.appendingPathComponent(name).path] + arguments,
                                           environment: ["PYTHONHASHSEED": "0"], timeout: timeout)
        XCTAssertTrue(result.succeeded, "\(name) \(arguments): \(result)")
        return result.stdout
    }

    /// The captures of `pattern`'s first match in `text`, or nil.
    func captures(_ pattern: String, in text: String) -> [String]? {
        guard let regex = try? NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines]),
              let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) else { return nil }
        return (1..<match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).map { String(text[$0]) } }
    }

    func testTheNotificationCostScriptPrintsNotificationsPerCPUSecond() throws {
        for buffer in [251, 27] {
            let out = try runScript("bumble_notify_cost.py", ["--count", "5", "--acl-buffer", "\(buffer)"])
            XCTAssertNotNil(captures("^bumble raw: 5 notifications of 244 B, \(buffer)-byte ACL buffers, Bumble → Bumble", in: out), out)
            let rate = try XCTUnwrap(captures(#"^  [0-9]+\.[0-9]{3} s CPU: ([0-9]+) notifications per CPU-second$"#, in: out), out)
            XCTAssertGreaterThan(Int(rate[0]) ?? 0, 0, out)
        }
    }

    /// Our side of the same figure, `ble-bench raw`, on both kinds of executor bench.sh measures
    /// (a virtual-time world, and Swift's default ones in real time): every mode finishes and
    /// prints its rate in the form bench.sh reads, and says where it ran (read from the world's
    /// clock, not from the flag).
    func testBLEBenchRawRunsOnBothExecutorsAndPrintsItsRate() throws {
        let bench = try BLETool.executableURL(named: "ble-bench")
        for (flags, executors) in [([String](), "in a virtual-time world"), (["--real-time"], "on Swift's default executors")] {
            for mode in ["notification", "write-without-response", "indication"] {
                let result = try ProcessRunner.run(bench, arguments: ["raw", "--count", "50", "--acl-buffer", "27", "--mode", mode] + flags, timeout: 120)
                XCTAssertTrue(result.succeeded, "\(mode) \(flags): \(result)")
                let out = result.stdout
                XCTAssertNotNil(captures(#"^raw host cost, no air-time model: 50 [a-z ]+ of 244 B, 27-byte ACL buffers, Swift → Swift \(both hosts in this process, "# + executors + #"\)$"#, in: out), out)
                let rate = try XCTUnwrap(captures(#"^  [0-9]+\.[0-9]{3} s CPU: ([0-9]+) [a-z ]+ per CPU-second$"#, in: out), out)
                XCTAssertGreaterThan(Int(rate[0]) ?? 0, 0, out)
            }
        }
    }

    func testTheNotificationCostScriptRefusesABufferOutsideTheLERange() throws {
        let result = try ProcessRunner.run(try python(), arguments: [Self.scripts.appendingPathComponent("bumble_notify_cost.py").path,
                                                                     "--acl-buffer", "26"], timeout: 60)
        XCTAssertEqual(result.status, 2, "\(result)")
        XCTAssertTrue(result.stderr.contains("--acl-buffer takes 27 to 251"), "\(result)")
    }

    /// `ble-bench scan-events` writes the bytes `ble-bench scan` feeds; Bumble's host eats them.
    func testTheScanCostScriptReplaysTheEventsOfBLEBench() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-scan-events-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let events = directory.appendingPathComponent("events").path
        let dump = try ProcessRunner.run(try BLETool.executableURL(named: "ble-bench"), arguments: ["scan-events", "--out", events], timeout: 120)
        XCTAssertTrue(dump.succeeded, "\(dump)")

        let out = try runScript("bumble_scan_cost.py", ["--events", events, "--count", "200"])
        let parts = try XCTUnwrap(captures(#"^bumble scan: ([0-9]+) advertising reports in ([0-9]+) HCI events, ([0-9]+) malformed events, ([0-9]+) devices delivered to the consumer \(([0-9]+) different\)$"#, in: out), out)
        let n = parts.compactMap { Int($0) }
        XCTAssertEqual(n.count, 5, out)
        guard n.count == 5 else { return }
        XCTAssertGreaterThanOrEqual(n[0], 200, "the run reaches its count: \(out)")
        XCTAssertLessThan(n[0], 200 + 25, "and stops at the event that reaches it: \(out)")
        XCTAssertLessThanOrEqual(n[1], n[0] + n[2], out)
        XCTAssertGreaterThan(n[3], 0, "devices reach the consumer: \(out)")
        XCTAssertLessThanOrEqual(n[4], n[3], out)
        XCTAssertNotNil(captures(#"^  [0-9]+\.[0-9]{3} s CPU: [0-9]+ reports per CPU-second$"#, in: out), out)

        let garbage = directory.appendingPathComponent("garbage")
        try Data([0x01, 0x00, 0xFF, 0x00, 0x04]).write(to: garbage)
        let refused = try ProcessRunner.run(try python(), arguments: [Self.scripts.appendingPathComponent("bumble_scan_cost.py").path,
                                                                      "--events", garbage.path], timeout: 60)
        XCTAssertEqual(refused.status, 2, "a truncated file is refused: \(refused)")
    }

    /// Bumble's client against `ble serve heart-rate` on a `ble radio`: every figure printed,
    /// each count the length of its opcode list, targeted discovery fewer than full.
    func testTheRoundTripScriptCountsBumblesRequestsAgainstOurHeartRateServer() throws {
        let ble = try BLETool.executableURL()
        let out = try runScript("round_trips.py", ["--ble", ble.path, "--bumble-only"], timeout: 240)
        var counts: [String: Int] = [:]
        for way in ["full", "targeted"] {
            for scenario in ["cold", "reconnect", "bonded"] {
                let parts = try XCTUnwrap(captures(#"^round trips: bumble \#(way) \#(scenario) ([0-9]+) \[([0-9a-fx ]*)\]$"#, in: out),
                                          "\(way) \(scenario): \(out)")
                let listed = parts.count > 1 ? parts[1].split(separator: " ").count : 0
                XCTAssertEqual(Int(parts[0]), listed, "the count is the opcodes listed: \(out)")
                counts["\(way) \(scenario)"] = listed
            }
        }
        for scenario in ["cold", "reconnect", "bonded"] {
            let full = counts["full \(scenario)"] ?? 0, targeted = counts["targeted \(scenario)"] ?? 0
            XCTAssertGreaterThan(targeted, 0, "subscribing takes at least the CCCD write: \(out)")
            XCTAssertLessThan(targeted, full, "targeted discovery asks less than full: \(out)")
        }
    }
}

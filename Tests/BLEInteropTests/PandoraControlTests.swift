import Foundation
import XCTest

/// `ble pandora`'s control server (docs/PANDORA.md) against bad input from its bridge: a
/// stand-in bridge (peers/pandora_control_probe.py, standard library only) sends malformed
/// lines, unknown calls, arguments of the wrong type or range, unknown connections and
/// channels, a reused request id, answers nobody waits for; every request gets its gRPC
/// status, and the server keeps serving (the stack on `--hci virtual`).
final class PandoraControlTests: XCTestCase {
    private func runProbe(_ mode: String? = nil) throws -> ProcessResult {
        let env = try InteropEnvironment.current()
        return try BLETool.run(["pandora", "--hci", "virtual", "--port", "1",
                                "--python", env.python.path, "--bridge", env.peers.appendingPathComponent("pandora_control_probe.py").path],
                               environment: mode.map { ["BLE_PANDORA_PROBE": $0] } ?? [:], timeout: 60)
    }

    private func probes(_ result: ProcessResult) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for line in result.stdout.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["event"] as? String == "probe", let name = object["name"] as? String else { continue }
            out[name] = object
        }
        return out
    }

    /// The gRPC status of the first error reply of a probe, or "ok" for a result.
    private func status(_ probe: [String: Any]?) -> String? {
        guard let replies = probe?["replies"] as? [[String: Any]], let last = replies.last else { return nil }
        if let error = last["error"] as? [String: Any] { return error["code"] as? String }
        if last["result"] != nil || last["end"] != nil { return "ok" }
        return nil
    }

    func testBadRequestsGetTheirStatusAndTheServerKeepsServing() throws {
        let result = try runProbe()
        XCTAssertTrue(result.stdout.contains("\"probe-done\""), "\(result)")
        // The bridge going away ends ble pandora with an error that says so (its exit or its
        // closed connection, whichever ble sees first).
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("the Pandora bridge exited with status 0")
                      || result.stderr.contains("the Pandora bridge closed its control connection"), "\(result)")
        let p = probes(result)
        let expected: [(String, String)] = [
            ("address", "ok"),
            ("unknown op", "UNIMPLEMENTED"),
            ("connection not a number", "INVALID_ARGUMENT"),
            ("unknown connection", "NOT_FOUND"),
            ("bad address", "INVALID_ARGUMENT"),
            ("bad level", "INVALID_ARGUMENT"),
            ("bad hex", "INVALID_ARGUMENT"),
            ("bad interval", "INVALID_ARGUMENT"),
            ("bad own address type", "INVALID_ARGUMENT"),
            ("unknown channel", "NOT_FOUND"),
            ("basic channel", "NOT_FOUND"),
            ("directed advertising", "UNIMPLEMENTED"),
            ("id in use", "ALREADY_EXISTS"),
            ("cancelled scan", "CANCELLED"),
            ("second onPairing", "FAILED_PRECONDITION"),
            ("cancelled onPairing", "CANCELLED"),
            ("not json with an id", "INVALID_ARGUMENT"),
            ("reset after a cancelled one", "ok"),
            ("factory reset", "ok"),
            ("address after reset", "ok"),
        ]
        for (name, want) in expected {
            XCTAssertEqual(status(p[name]), want, "\(name): \(String(describing: p[name]))")
        }
        // The lines that were not requests were reported, not answered.
        XCTAssertTrue(result.stderr.contains("ignoring a control line"), "\(result)")
        XCTAssertTrue(result.stderr.contains("an answer to pairing event 4242, which nobody waits for"), "\(result)")
        // The controller's address, before and after FactoryReset (a new controller of the
        // virtual radio, as rootcanal gives a new connection one: a new address).
        for name in ["address", "address after reset"] {
            let result = (p[name]?["replies"] as? [[String: Any]])?.last?["result"] as? [String: Any]
            XCTAssertNotNil((result?["address"] as? String).flatMap { $0.count == 17 ? $0 : nil }, "\(name): \(String(describing: result))")
        }
    }

    func testAConnectionWithoutTheTokenIsClosedAndAnOverlongLineEndsTheBridgesConnection() throws {
        let wrong = try runProbe("wrong-token")
        XCTAssertEqual(probes(wrong)["wrong token"]?["closed"] as? Bool, true, "\(wrong)")
        XCTAssertFalse(wrong.stdout.contains("serving Pandora"), "\(wrong)")

        let long = try runProbe("long-line")
        XCTAssertEqual(probes(long)["long line"]?["closed"] as? Bool, true, "\(long)")
        XCTAssertTrue(long.stderr.contains("a control line over"), "\(long)")
        XCTAssertEqual(long.status, 1, "\(long)")
    }
}

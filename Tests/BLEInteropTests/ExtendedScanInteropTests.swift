import Foundation
import XCTest

/// `ble scan` on rootcanal, a controller with Bluetooth 5's extended scanning commands, against a
/// Bumble extended advertiser (`peers/extended_advertiser.py`): one advertising set whose data
/// (212 octets) no legacy advertisement can carry, on the LE 1M and on the LE Coded primary PHY.
/// The scan uses LE Set Extended Scan Parameters / Enable (the capture shows no legacy scan
/// command), and each line carries the whole data, the set and both PHYs.
final class ExtendedScanInteropTests: XCTestCase {
    func uniqueName() -> String { "BX" + String(UInt32.random(in: 10_000_000...99_999_999)) }

    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    /// Scans for `name` with `--phy phys` (and `extra` arguments): its JSON lines and the run.
    func scan(_ name: String, phys: String, _ env: InteropEnvironment, extra: [String] = []) throws -> (lines: [[String: Any]], result: ProcessResult) {
        let result = try BLETool.run(["scan", "--json", "--timeout", "5", "--name", name, "--phy", phys, "--hci", env.rootcanal] + extra,
                                     timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        return (try jsonLines(result.stdout), result)
    }

    func check(_ lines: [[String: Any]], peer: PeerProcess, data: String, primary: String, sid: Int) {
        XCTAssertFalse(lines.isEmpty, "the extended advertiser was not heard")
        for line in lines {
            XCTAssertEqual(line["address"] as? String, peer.address.description)
            XCTAssertEqual(line["extended"] as? Bool, true)
            XCTAssertEqual(line["data"] as? String, data, "the whole 212 octets, reassembled")
            XCTAssertEqual(line["sid"] as? Int, sid)
            XCTAssertEqual(line["primaryPHY"] as? String, primary)
            XCTAssertEqual(line["secondaryPHY"] as? String, "2M")
            XCTAssertEqual(line["connectable"] as? Bool, false)
            XCTAssertNil(line["truncated"])
        }
    }

    func testScanHearsALongExtendedAdvertisementOnLE1M() throws {
        let env = try InteropEnvironment.current()
        let name = uniqueName()
        let peer = try startPeer("extended_advertiser.py", arguments: ["--name", name, "--phy", "1m", "--sid", "5"], environment: env)
        let data = try XCTUnwrap(try peer.waitForEvent("advertising").string("data"))
        XCTAssertEqual(data.count, 2 * 212)
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("ble-ext-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let (lines, _) = try scan(name, phys: "1m", env, extra: ["--capture", capture])
        check(lines, peer: peer, data: data, primary: "1M", sid: 5)
        XCTAssertEqual(lines.first?["name"] as? String, name)
        XCTAssertEqual((lines.first?["manufacturerData"] as? String)?.prefix(6), "590000")
        // The commands the scan sent: the extended ones (LE Set Extended Scan Parameters 0x2041,
        // Enable 0x2042), never the legacy ones (LE Set Scan Parameters 0x200B, Enable 0x200C).
        guard let tshark = ProcessRunner.which("tshark") else { throw XCTSkip("tshark is not installed") }
        func count(_ opcode: String) throws -> Int {
            let r = try ProcessRunner.run(tshark, arguments: ["-r", capture, "-Y", "bthci_cmd.opcode == \(opcode)"], timeout: 60)
            XCTAssertTrue(r.succeeded, "\(r)")
            return r.stdout.split(separator: "\n").count
        }
        XCTAssertGreaterThan(try count("0x2041"), 0)
        XCTAssertGreaterThan(try count("0x2042"), 0)
        XCTAssertEqual(try count("0x200b"), 0)
        XCTAssertEqual(try count("0x200c"), 0)
    }

    func testScanOnTheCodedPHYHearsALongRangeAdvertiser() throws {
        let env = try InteropEnvironment.current()
        let name = uniqueName()
        let peer = try startPeer("extended_advertiser.py", arguments: ["--name", name, "--phy", "coded", "--sid", "9"], environment: env)
        let data = try XCTUnwrap(try peer.waitForEvent("advertising").string("data"))
        let (lines, _) = try scan(name, phys: "1m,coded", env)
        check(lines, peer: peer, data: data, primary: "coded", sid: 9)
    }

    /// The text line shows the set and PHYs after the summary.
    func testTheScanLineShowsTheSetAndPHYs() throws {
        let env = try InteropEnvironment.current()
        let name = uniqueName()
        _ = try startPeer("extended_advertiser.py", arguments: ["--name", name, "--phy", "coded", "--sid", "3"], environment: env)
        let result = try BLETool.run(["scan", "--timeout", "4", "--name", name, "--phy", "coded", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertTrue(result.stdout.contains("[SID 3 Coded/2M]"), result.stdout)
    }

    /// `ble gatt` connects to a connectable extended set (LE Extended Create Connection) on the
    /// LE Coded primary PHY with `--phy coded`, and on LE 1M by default (its auxiliary packets on
    /// LE 2M), and reads Bumble's database: the Device Name is the set's name.
    func testGattConnectsToAConnectableExtendedSetOnTheCodedAndThe1MPHY() throws {
        let env = try InteropEnvironment.current()
        for phy in ["coded", "1m"] {
            let name = uniqueName()
            let peer = try startPeer("extended_advertiser.py", arguments: ["--name", name, "--phy", phy, "--connectable", "--length", "60"],
                                     environment: env)
            let result = try BLETool.run(["gatt", "\(peer.address)/random", "--json", "--phy", phy, "--hci", env.rootcanal], timeout: 60)
            XCTAssertTrue(result.succeeded, "\(phy): \(result)")
            XCTAssertTrue(result.stdout.contains("\"utf8\":\"\(name)\""), "\(phy): the Device Name read back: \(result.stdout.prefix(600))")
            try peer.waitForEvent("connected", timeout: 10)
        }
    }
}


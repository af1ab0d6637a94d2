import Foundation
import XCTest

/// `ble`'s central commands against Bumble peripherals over rootcanal: the stack as a user runs
/// it, talking to an implementation nobody here wrote.
final class CentralCommandInteropTests: XCTestCase {
    static let custom = "7e1f0001-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let long = "7e1f0002-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let rw = "7e1f0003-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let notify = "7e1f0004-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let indicate = "7e1f0005-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let wnr = "7e1f0006-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let included = "7e1f0007-8d0b-4c1e-9a00-5b1e00c0ffee"

    /// A name no other device on the shared rootcanal has (10 bytes fit the advertisement whole).
    func uniqueName() -> String { "BP" + String(UInt32.random(in: 10_000_000...99_999_999)) }

    func ble(_ arguments: [String], _ environment: InteropEnvironment, timeout: TimeInterval = 60) throws -> ProcessResult {
        try BLETool.run(arguments + ["--hci", environment.rootcanal], timeout: timeout)
    }

    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw XCTSkip("not a JSON object: \(line)")
            }
            return object
        }
    }

    func jsonObject(_ text: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(text)")
    }

    func testScanFindsThePeripheralWithItsAdvertisingDataAndScanResponse() throws {
        let env = try InteropEnvironment.current()
        let name = uniqueName()
        let peer = try startPeer("peripheral.py", arguments: ["--name", name], environment: env)
        let result = try ble(["scan", "--json", "--timeout", "6", "--name", name], env)
        XCTAssertTrue(result.succeeded, "\(result)")
        let lines = try jsonLines(result.stdout)
        XCTAssertFalse(lines.isEmpty, "the peripheral was not found: \(result)")
        for line in lines {
            XCTAssertEqual(line["address"] as? String, peer.address.description)
            XCTAssertEqual(line["addressType"] as? String, "random")
            XCTAssertEqual(line["name"] as? String, name)
            XCTAssertEqual(line["manufacturerData"] as? String, "5900010203")
            XCTAssertEqual(line["txPower"] as? Int, 4)
            XCTAssertNotNil(line["rssi"] as? Int)
        }
        // Active scanning merges the scan response (128-bit service, appearance) into the advertisement.
        let merged = try XCTUnwrap(lines.last)
        XCTAssertEqual(merged["serviceUUIDs"] as? [String], ["180D", "180F", Self.custom])
        XCTAssertEqual(merged["appearance"] as? Int, 0x0341)
        XCTAssertEqual(merged["manufacturer"] as? String, "Nordic Semiconductor ASA")
    }

    func testPassiveScanAndFilters() throws {
        let env = try InteropEnvironment.current()
        let name = uniqueName()
        let peer = try startPeer("peripheral.py", arguments: ["--name", name], environment: env)
        let passive = try ble(["scan", "--json", "--passive", "--timeout", "3", "--name", name], env)
        let seen = try jsonLines(passive.stdout)
        XCTAssertFalse(seen.isEmpty, "\(passive)")
        XCTAssertEqual(seen.first?["serviceUUIDs"] as? [String], ["180D", "180F"], "no scan request, so no scan response")

        let byService = try ble(["scan", "--json", "--timeout", "3", "--service", "180F"], env)
        XCTAssertTrue(try jsonLines(byService.stdout).contains { $0["address"] as? String == peer.address.description })
        let otherService = try ble(["scan", "--json", "--timeout", "2", "--service", "1812", "--name", name], env)
        XCTAssertEqual(otherService.stdout, "", "no device advertises 1812")
        let tooWeak = try ble(["scan", "--json", "--timeout", "2", "--min-rssi", "20", "--name", name], env)
        XCTAssertEqual(tooWeak.stdout, "", "nothing is heard at +20 dBm")
    }

    func testGattDumpShowsTheWholeDatabaseWithThe128BitService() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let result = try ble(["gatt", "\(peer.address)/random", "--json"], env)
        XCTAssertTrue(result.succeeded, "\(result)")
        let db = try jsonObject(result.stdout)
        let services = try XCTUnwrap(db["services"] as? [[String: Any]])
        XCTAssertEqual(services.compactMap { $0["uuid"] as? String }, ["1800", "1801", "180D", "180F", Self.custom])
        XCTAssertEqual(services[2]["name"] as? String, "Heart Rate")
        let custom = services[4]
        let includes = try XCTUnwrap(custom["includes"] as? [[String: Any]])
        XCTAssertEqual(includes.first?["uuid"] as? String, Self.included, "the 128-bit included service UUID is read back")
        let characteristics = try XCTUnwrap(custom["characteristics"] as? [[String: Any]])
        XCTAssertEqual(characteristics.compactMap { $0["uuid"] as? String }, [Self.long, Self.rw, Self.notify, Self.indicate, Self.wnr])
        let long = try XCTUnwrap((characteristics[0]["value"] as? [String: Any])?["hex"] as? String)
        XCTAssertEqual(long, (0..<512).map { String(format: "%02x", $0 % 256) }.joined())
        let rwDescriptors = try XCTUnwrap(characteristics[1]["descriptors"] as? [[String: Any]])
        XCTAssertEqual(((rwDescriptors.first?["value"]) as? [String: Any])?["utf8"] as? String, "read/write test value")
        XCTAssertEqual(characteristics[0]["properties"] as? [String], ["read"])

        let tree = try ble(["gatt", "\(peer.address)/random"], env)
        XCTAssertTrue(tree.stdout.contains("Service 180D Heart Rate"), tree.stdout)
        XCTAssertTrue(tree.stdout.contains("Characteristic 2A37 Heart Rate Measurement"), tree.stdout)
        XCTAssertTrue(tree.stdout.contains("Includes \(Self.included)"), tree.stdout)
    }

    func testReadLongReturnsAll512Bytes() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        // Without the address type: the tool scans to learn it.
        let result = try ble(["read", peer.address.description, Self.long, "--json"], env)
        XCTAssertTrue(result.succeeded, "\(result)")
        let object = try jsonObject(result.stdout)
        XCTAssertEqual(object["hex"] as? String, (0..<512).map { String(format: "%02x", $0 % 256) }.joined())
        XCTAssertNil(object["utf8"], "512 bytes 00..ff are not valid UTF-8")
        let byHandle = try ble(["read", "\(peer.address)/random", "0x0016", "--json"], env)
        XCTAssertEqual(try jsonObject(byHandle.stdout)["hex"] as? String, "55", "Battery Level by handle")
    }

    func testLongWriteOf300BytesReadsBackEqual() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let value = (0..<300).map { String(format: "%02x", ($0 * 7) % 256) }.joined()
        // ATT MTU 23: 300 bytes need prepared writes (Vol 3 Part G §4.9.4).
        let write = try ble(["write", "\(peer.address)/random", Self.rw, value, "--hex", "--mtu", "23"], env)
        XCTAssertTrue(write.succeeded, "\(write)")
        let logged = try peer.waitForEvent("write", timeout: 10) { $0.string("method") == "prepared" }
        XCTAssertEqual(logged.int("length"), 300)
        let read = try ble(["read", "\(peer.address)/random", Self.rw, "--json"], env)
        XCTAssertEqual(try jsonObject(read.stdout)["hex"] as? String, value)

        let text = try ble(["write", "\(peer.address)/random", Self.rw, "hello again"], env)
        XCTAssertTrue(text.succeeded, "\(text)")
        let readText = try ble(["read", "\(peer.address)/random", Self.rw, "--json"], env)
        XCTAssertEqual(try jsonObject(readText.stdout)["utf8"] as? String, "hello again")
    }

    func testWriteWithoutResponse() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let write = try ble(["write", "\(peer.address)/random", Self.wnr, "0102ff", "--hex", "--without-response"], env)
        XCTAssertTrue(write.succeeded, "\(write)")
        let logged = try peer.waitForEvent("write", timeout: 10) { $0.string("method") == "command" }
        XCTAssertEqual(logged.string("value"), "0102ff")
    }

    func testNotificationsArriveInOrder() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let result = try ble(["subscribe", "\(peer.address)/random", Self.notify, "--count", "5", "--json"], env)
        XCTAssertTrue(result.succeeded, "\(result)")
        let values = try jsonLines(result.stdout).compactMap { $0["hex"] as? String }
        XCTAssertEqual(values, ["01000000", "02000000", "03000000", "04000000", "05000000"])
        let subscription = try peer.waitForEvent("subscription") { $0.bool("notify") == true }
        XCTAssertEqual(subscription.string("uuid"), Self.notify)
    }

    func testIndicationsArriveAndAreConfirmed() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let result = try ble(["subscribe", "\(peer.address)/random", Self.indicate, "--count", "3", "--json"], env)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertEqual(try jsonLines(result.stdout).compactMap { $0["hex"] as? String }, ["01000000", "02000000", "03000000"])
        // The peer sends the next indication only after our confirmation of the previous one.
        for counter in 1...3 {
            try peer.waitForEvent("indicated", timeout: 10) { $0.int("counter") == counter }
        }
    }

    func testErrorsGoToStderrWithNonZeroStatus() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("peripheral.py", environment: env)
        let refused = try ble(["read", "\(peer.address)/random", Self.wnr], env)
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stdout, "")
        XCTAssertTrue(refused.stderr.contains("Read Not Permitted (0x02)"), refused.stderr)
        let missing = try ble(["read", "\(peer.address)/random", "2A99"], env)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no characteristic 2A99"), missing.stderr)
        let usage = try ble(["read", "not-an-address", "2A19"], env)
        XCTAssertEqual(usage.status, 64)
        XCTAssertTrue(usage.stderr.contains("is not an address"), usage.stderr)
        // A controller spec that names no controller is a usage error too, with the usage line.
        let badSpec = try BLETool.run(["scan", "--hci", "bogus", "--timeout", "1"], timeout: 30)
        XCTAssertEqual(badSpec.status, 64, "\(badSpec)")
        XCTAssertTrue(badSpec.stderr.contains("invalid transport 'bogus'") && badSpec.stderr.contains("USAGE: ble scan"), badSpec.stderr)
    }

    /// `--capture` writes btsnoop that Debian's tshark dissects without a malformed packet.
    func testCaptureIsDissectedByTsharkWithoutMalformedPackets() throws {
        let env = try InteropEnvironment.current()
        guard let tshark = ProcessRunner.which("tshark") else { throw XCTSkip("tshark is not installed") }
        let peer = try startPeer("peripheral.py", environment: env)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let value = String(repeating: "ab", count: 100)
        let runs: [[String]] = [
            ["scan", "--timeout", "2", "--json"],
            ["read", "\(peer.address)/random", Self.long],
            ["write", "\(peer.address)/random", Self.rw, value, "--hex"],
            ["subscribe", "\(peer.address)/random", Self.indicate, "--count", "2"],
        ]
        for (i, arguments) in runs.enumerated() {
            let file = directory.appendingPathComponent("run\(i).btsnoop").path
            let result = try ble(arguments + ["--capture", file], env)
            XCTAssertTrue(result.succeeded, "\(arguments): \(result)")
            let malformed = try ProcessRunner.run(tshark, arguments: ["-r", file, "-Y", "_ws.malformed"], timeout: 60)
            XCTAssertEqual(malformed.stdout, "", "tshark found malformed packets in \(arguments)")
            let all = try ProcessRunner.run(tshark, arguments: ["-r", file], timeout: 60)
            XCTAssertTrue(all.succeeded, "\(all)")
            XCTAssertTrue(all.stdout.contains("HCI_CMD"), "commands are in the capture: \(all.stdout.prefix(400))")
            XCTAssertTrue(all.stdout.contains("HCI_EVT"), "events are in the capture")
            if i > 0 { XCTAssertTrue(all.stdout.contains("ATT"), "ATT traffic is in the capture") }
        }
    }

    /// H4 over a UART: a pseudo-terminal bridged to rootcanal by socat stands in for a dongle.
    func testSerialTransportThroughAPseudoTerminal() throws {
        let env = try InteropEnvironment.current()
        guard let socat = ProcessRunner.which("socat") else { throw XCTSkip("socat is not installed") }
        let name = uniqueName()
        let peer = try startPeer("peripheral.py", arguments: ["--name", name], environment: env)
        let link = FileManager.default.temporaryDirectory.appendingPathComponent("ble-pty-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let bridge = Process()
        bridge.executableURL = socat
        bridge.arguments = ["PTY,link=\(link),raw,echo=0", "TCP:\(env.host):\(env.port)"]
        bridge.standardOutput = FileHandle.nullDevice
        bridge.standardError = FileHandle.nullDevice
        try bridge.run()
        defer {
            kill(bridge.processIdentifier, SIGTERM)
            bridge.waitUntilExit()
        }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: link) { usleep(50_000) }
        let result = try BLETool.run(["scan", "--json", "--timeout", "5", "--name", name, "--hci", "serial:\(link)"], timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertTrue(try jsonLines(result.stdout).contains { $0["address"] as? String == peer.address.description }, result.stdout)
    }
}

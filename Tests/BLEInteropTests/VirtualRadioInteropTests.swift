import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `ble radio --listen`: the virtual radio served over TCP, with Swift
/// (`ble --hci tcp:...`) and Bumble (`tcp-client:...`) hosts meeting on it. Each test starts its
/// own radio on a free port, so nothing here touches the shared rootcanal; the rig is still
/// needed for the venv's Bumble, so the tests skip under a plain `swift test`.
final class VirtualRadioInteropTests: XCTestCase {
    static func uuid(_ n: Int) -> String { String(format: "8f3c%04x-6c5a-4d2e-9b1f-2f0a1c3b4d5e", n) }

    /// A radio for this test and an environment whose "rootcanal" is that radio, so
    /// `ServeProcess` and `PeerProcess` attach to it unchanged.
    func startRadio() throws -> (RadioProcess, InteropEnvironment) {
        let base = try InteropEnvironment.current()
        let radio = try RadioProcess()
        addTeardownBlock { radio.stop() }
        let env = InteropEnvironment(rootcanal: "tcp:127.0.0.1:\(radio.port)", host: "127.0.0.1", port: radio.port,
                                     python: base.python, peers: base.peers)
        return (radio, env)
    }

    func bumbleTool(_ name: String, _ env: InteropEnvironment) throws -> URL {
        let tool = env.python.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: tool.path) else { throw XCTSkip("\(name) is not in the venv") }
        return tool
    }

    /// Swift peripheral and Swift central, two `ble` processes, through the TCP radio.
    func testSwiftCentralReadsAndDumpsSwiftPeripheral() throws {
        let (radio, env) = try startRadio()
        // The peripheral keeps its own identity (ServeProcess gives it its own bonds directory):
        // sharing the central's would give both one IRK, which pairing refuses as a reflected key.
        let peripheral = try ServeProcess(profile: "test", environment: env)
        addTeardownBlock { peripheral.stop() }
        let target = "\(peripheral.address)/random"

        let read = try BLETool.run(["read", target, Self.uuid(3), "--json", "--hci", env.rootcanal], timeout: 30)
        XCTAssertTrue(read.succeeded, "ble read: \(read)")
        XCTAssertTrue(read.stdout.contains("\"utf8\":\"hello\""), "the read/write value: \(read.stdout)")

        let gatt = try BLETool.run(["gatt", target, "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(gatt.succeeded, "ble gatt: \(gatt)")
        XCTAssertTrue(gatt.stdout.contains(Self.uuid(1)), "the test service is listed: \(gatt.stdout)")
        XCTAssertTrue(gatt.stdout.contains("\"read only\""), "values are read: \(gatt.stdout)")
        XCTAssertTrue(gatt.stdout.contains("described characteristic"), "descriptors are read: \(gatt.stdout)")

        try peripheral.waitFor("connected")
        try peripheral.waitFor("disconnected")
        // Three hosts came and went or stayed: the peripheral, the reader and the dumper.
        try radio.waitForCount("disconnected", count: 2)
        XCTAssertGreaterThanOrEqual(radio.count("connected"), 3)
    }

    /// A Bumble peripheral on the radio is found by `ble scan` and dumped by `ble gatt`.
    func testSwiftCentralScansAndDumpsBumblePeripheral() throws {
        let (_, env) = try startRadio()
        let peer = try startPeer("peripheral.py", environment: env)

        let scan = try BLETool.run(["scan", "--timeout", "3", "--hci", env.rootcanal], timeout: 30)
        XCTAssertTrue(scan.succeeded, "ble scan: \(scan)")
        XCTAssertTrue(scan.stdout.contains(peer.address.description), "the Bumble peer is found: \(scan.stdout)")

        let gatt = try BLETool.run(["gatt", "\(peer.address)/random", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(gatt.succeeded, "ble gatt: \(gatt)")
        XCTAssertTrue(gatt.stdout.contains("180D Heart Rate"), "Heart Rate is listed: \(gatt.stdout)")
        XCTAssertTrue(gatt.stdout.contains("180F Battery Service"), "Battery is listed: \(gatt.stdout)")
        XCTAssertTrue(gatt.stdout.contains("\"BumblePeer\""), "the device name is read: \(gatt.stdout)")
    }

    /// `bumble-gatt-dump` (a Bumble host as central) dumps `ble serve test` through the radio.
    func testBumbleGattDumpReadsSwiftPeripheral() throws {
        let (_, env) = try startRadio()
        let dump = try bumbleTool("bumble-gatt-dump", env)
        let peripheral = try ServeProcess(profile: "test", environment: env)
        addTeardownBlock { peripheral.stop() }
        let result = try ProcessRunner.run(dump, arguments: [env.bumbleTransport, peripheral.address.description], timeout: 60)
        XCTAssertTrue(result.succeeded, "bumble-gatt-dump: \(result)")
        let text = (result.stdout + result.stderr).lowercased()
        for n in [1, 2, 3, 6, 7, 9] {
            XCTAssertTrue(text.contains(Self.uuid(n)), "\(Self.uuid(n)) is dumped: \(text.suffix(3000))")
        }
        XCTAssertTrue(text.contains(Array("described characteristic".utf8).hexString), "the user description is read")
        XCTAssertTrue(text.contains((0..<512).map { String(format: "%02x", $0 % 256) }.joined()), "the 512-byte value is read whole")
    }

    /// Bumble meets Bumble on the radio: `bumble-scan` sees the peer, `bumble-gatt-dump` dumps it.
    func testBumbleCentralScansAndDumpsBumblePeripheral() throws {
        let (_, env) = try startRadio()
        let dump = try bumbleTool("bumble-gatt-dump", env)
        let scanTool = try bumbleTool("bumble-scan", env)
        let peer = try startPeer("peripheral.py", environment: env)

        // bumble-scan runs until stopped: give it a few seconds, then it is terminated.
        let scan = try ProcessRunner.run(scanTool, arguments: [env.bumbleTransport], timeout: 4)
        let scanned = scan.stdout.replacingOccurrences(of: "\u{1B}", with: "")
        XCTAssertTrue(scanned.contains(peer.address.description), "bumble-scan finds the peer: \(scan)")

        let result = try ProcessRunner.run(dump, arguments: [env.bumbleTransport, peer.address.description], timeout: 60)
        XCTAssertTrue(result.succeeded, "bumble-gatt-dump: \(result)")
        let text = result.stdout + result.stderr
        XCTAssertTrue(text.contains("180D (Heart Rate)"), "Heart Rate is dumped: \(text.suffix(3000))")
        XCTAssertTrue(text.contains("7E1F0001-8D0B-4C1E-9A00-5B1E00C0FFEE"), "the custom service is dumped")
    }
}

/// `ble radio --listen tcp:127.0.0.1:0 --json` as a child process; `init` returns once it printed
/// the port the kernel chose.
final class RadioProcess: BLEToolProcess, @unchecked Sendable {
    private(set) var port: UInt16 = 0

    init() throws {
        try super.init(["radio", "--listen", "tcp:127.0.0.1:0", "--json"])
        let listening = try waitForCount("listening", count: 1, timeout: 30)
        guard let number = listening["port"] as? Int, let port = UInt16(exactly: number), port != 0 else {
            stop()
            throw ServeError("ble radio printed no port: \(listening)")
        }
        self.port = port
    }
}

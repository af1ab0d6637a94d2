import Foundation
import XCTest

/// Self-tests of the interop harness: Bumble talks to Bumble over the rootcanal that
/// scripts/test.sh started, with no Swift stack involved. When these fail, the rig is broken,
/// not the stack.
final class PeerSelfTests: XCTestCase {
    static let long = "7e1f0002-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let rw = "7e1f0003-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let notify = "7e1f0004-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let indicate = "7e1f0005-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let custom = "7e1f0001-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let included = "7e1f0007-8d0b-4c1e-9a00-5b1e00c0ffee"

    func testStaticRandomAddressesAreStaticAndUnique() {
        var seen = Set<StaticRandomAddress>()
        for _ in 0..<1000 {
            let address = InteropEnvironment.nextStaticRandomAddress()
            XCTAssertEqual(address.bytes.count, 6)
            XCTAssertEqual(address.bytes[0] & 0xC0, 0xC0, "\(address) is not a static random address")
            XCTAssertEqual(StaticRandomAddress(address.description), address)
            XCTAssertTrue(seen.insert(address).inserted, "\(address) handed out twice")
        }
    }

    func testPeerEventParsing() {
        let event = PeerEvent(line: #"{"event":"write","handle":32,"value":"0aff","ok":true}"#)
        XCTAssertEqual(event.name, "write")
        XCTAssertEqual(event.int("handle"), 32)
        XCTAssertEqual(event.bytes("value"), [0x0A, 0xFF])
        XCTAssertEqual(event.bool("ok"), true)
        XCTAssertEqual(PeerEvent(line: "not json").name, "_text")
    }

    /// The harness end to end: peripheral.py advertises, central.py connects through rootcanal,
    /// discovers the database (with the 128-bit included service) and reads the 512-byte value.
    func testBumbleCentralReadsPeripheralDatabase() throws {
        let environment = try InteropEnvironment.current()
        let peripheral = try startPeer("peripheral.py", environment: environment)
        let central = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description,
            "--read", Self.long, "--read", Self.rw, "--read", Self.notify,
        ], environment: environment)

        let include = try central.waitForEvent("include", timeout: 30)
        XCTAssertEqual(include.string("service"), Self.custom)
        XCTAssertEqual(include.string("uuid"), Self.included)
        let discovered = try central.waitForEvent("discovered", timeout: 30)
        XCTAssertEqual(discovered.int("services"), 5)

        let long = try central.waitForEvent("read", timeout: 30) { $0.string("uuid") == Self.long }
        XCTAssertEqual(long.int("length"), 512)
        XCTAssertEqual(long.bytes("value"), (0..<512).map { UInt8($0 % 256) })
        let rw = try central.waitForEvent("read") { $0.string("uuid") == Self.rw }
        XCTAssertEqual(rw.bytes("value"), Array("hello".utf8))
        let refused = try central.waitForEvent("read_error") { $0.string("uuid") == Self.notify }
        XCTAssertEqual(refused.int("error"), 0x02, "Read Not Permitted")
        try central.waitForEvent("done", timeout: 30)
        XCTAssertEqual(central.waitForExit(timeout: 10), 0)

        let connected = try peripheral.waitForEvent("connected")
        XCTAssertEqual(connected.string("peer"), central.address.description)
        try peripheral.waitForEvent("disconnected", timeout: 10)
    }

    /// Writes (plain, prepared, without response) are logged by the peripheral with their method.
    func testPeripheralLogsWrites() throws {
        let environment = try InteropEnvironment.current()
        let peripheral = try startPeer("peripheral.py", environment: environment)
        let long = String(repeating: "5a", count: 300)
        let central = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description,
            "--write", "\(Self.rw)=\(long)", "--write", "\(Self.rw)=776f726c64",
            "--write-command", "7e1f0006-8d0b-4c1e-9a00-5b1e00c0ffee=0102",
        ], environment: environment)
        try central.waitForEvent("done", timeout: 30)

        let prepared = try peripheral.waitForEvent("write") { $0.string("method") == "prepared" }
        XCTAssertEqual(prepared.int("length"), 300)
        XCTAssertEqual(prepared.string("value"), long)
        let plain = try peripheral.waitForEvent("write") { $0.string("method") == "request" }
        XCTAssertEqual(plain.bytes("value"), Array("world".utf8))
        let command = try peripheral.waitForEvent("write") { $0.string("method") == "command" }
        XCTAssertEqual(command.bytes("value"), [1, 2])
    }

    /// Notifications and confirmed indications flow; uses the async API.
    func testNotificationsAndIndicationsReachBumbleCentral() async throws {
        let environment = try InteropEnvironment.current()
        let peripheral = try startPeer("peripheral.py", environment: environment)
        let central = try startPeer("central.py", arguments: [
            "--target", peripheral.address.description,
            "--subscribe", Self.notify, "--subscribe", Self.indicate, "--count", "3",
        ], environment: environment)

        for counter in 1...3 {
            let value = [UInt8(counter), 0, 0, 0]
            let notification = try await central.event("notification", timeout: 30) { $0.bytes("value") == value }
            XCTAssertEqual(notification.string("uuid"), Self.notify)
            let indication = try await central.event("indication", timeout: 30) { $0.bytes("value") == value }
            XCTAssertEqual(indication.string("uuid"), Self.indicate)
        }
        try await central.event("done", timeout: 30)
        // The peripheral reports an indication only once its confirmation arrived.
        try await peripheral.event("indicated") { $0.int("counter") == 3 }
    }

    /// An active scan sees the advertising data and the scan response of peripheral.py.
    func testScannerSeesAdvertisingDataAndScanResponse() throws {
        let environment = try InteropEnvironment.current()
        let peripheral = try startPeer("peripheral.py", environment: environment)
        let scanner = try startPeer("scanner.py", arguments: [
            "--target", peripheral.address.description, "--until-found", "--duration", "20",
        ], environment: environment)
        let advertisement = try scanner.waitForEvent("advertisement", timeout: 20) { $0.bool("scan_response") == false }
        XCTAssertEqual(advertisement.string("data"),
                       "02010605030d180f180b0942756d626c6550656572020a0406ff5900010203")
        XCTAssertEqual(advertisement.bool("connectable"), true)
        let response = try scanner.waitForEvent("advertisement", timeout: 20) { $0.bool("scan_response") == true }
        XCTAssertEqual(response.string("data"), "1107eeffc0001e5b009a1e4c0b8d01001f7e03194103")
    }

    /// drop_during_discovery.py answers the MTU exchange, then drops instead of answering.
    func testDropPeerDropsOnFirstDiscoveryRequest() throws {
        let environment = try InteropEnvironment.current()
        let dropper = try startPeer("drop_during_discovery.py", environment: environment)
        let central = try startPeer("central.py", arguments: ["--target", dropper.address.description],
                                    environment: environment)
        let disconnected = try central.waitForEvent("disconnected", timeout: 30)
        XCTAssertEqual(disconnected.int("reason"), 0x13)
        try central.waitForEvent("error", timeout: 10)
        XCTAssertEqual(central.waitForExit(timeout: 10), 1)
        let request = try dropper.waitForEvent("request")
        XCTAssertNotEqual(request.int("opcode"), 0x02, "the MTU exchange is answered, not dropped")
    }

    /// A peer that cannot start reports why instead of hanging.
    func testPeerFailureIsReported() throws {
        let environment = try InteropEnvironment.current()
        XCTAssertThrowsError(try PeerProcess("central.py", arguments: ["--no-such-option"],
                                             environment: environment, readyTimeout: 20)) { error in
            XCTAssertTrue("\(error)".contains("did not become READY"), "\(error)")
        }
    }

    /// The `ble` tool is found next to the tests and runs (whatever it prints for --help).
    func testBLEToolRuns() throws {
        guard (try? BLETool.executableURL()) != nil else {
            throw XCTSkip("the ble executable is not built")
        }
        let result = try BLETool.run(["--help"], timeout: 20)
        XCTAssertFalse(result.timedOut, "\(result)")
    }
}

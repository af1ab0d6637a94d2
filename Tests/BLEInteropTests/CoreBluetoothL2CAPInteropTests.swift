import Foundation
import XCTest

/// L2CAP channels through the CoreBluetooth API against Bumble over rootcanal: the
/// `cb-l2cap` example (`CBPeripheral.openL2CAPChannel`, the channel's run-loop scheduled
/// streams) opens a channel to a Bumble CoC echo listener, writes 64 KB and checks the echo.
final class CoreBluetoothL2CAPInteropTests: XCTestCase {
    func testCBL2CAPChannelEchoes64KBThroughABumbleListener() throws {
        let env = try InteropEnvironment.current()
        let name = "CBCoC" + String(UInt32.random(in: 100_000...999_999))
        let peer = try startPeer("l2cap_peer.py", arguments: ["--role", "server", "--echo", "--name", name, "--psm", "0x80",
                                                               "--mtu", "2048", "--mps", "247", "--credits", "8"], environment: env)
        let result = try ProcessRunner.run(try BLETool.executableURL(named: "cb-l2cap"), arguments: [name, "0x80", "65536"],
                                           environment: ["BLE_HCI": env.rootcanal], timeout: 90)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertTrue(lines.contains("channel open on PSM 128"), "\(result)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("sent 65536 bytes, received 65536: the echo matches") }, "\(result)")
        let opened = try peer.waitForEvent("channel", timeout: 10)
        XCTAssertEqual(opened.int("psm"), 0x80)
        XCTAssertEqual(opened.int("peer_mtu"), 4096, "the MTU the CoreBluetooth side offers")
        let closed = try peer.waitForEvent("closed", timeout: 20)
        XCTAssertEqual(closed.int("bytes"), 65536)
        XCTAssertEqual(closed.string("sha256"), L2CAPInteropTests.sha256Hex(L2CAPInteropTests.file), "Bumble received the pattern byte for byte")
        print("cb-l2cap ↔ Bumble echo:\n\(result.stdout)")
    }
}

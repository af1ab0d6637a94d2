import Foundation
import XCTest

/// docs/SYSTEMS.md S2 over rootcanal, both directions: `ble serve sample` against Bumble's sample
/// central (`peers/sample_central.py`), and `ble sample` against Bumble's M5Stack-style
/// peripheral (`peers/sample_peripheral.py`).
final class SampleInteropTests: XCTestCase {
    static let readWrite = "e3737b3f-a08d-405b-b32d-35a8f6c64c5d"
    static let notify = "c9da2ce8-d119-40d5-90f7-ef24627e8193"

    func testBumbleSampleCentralAgainstServeSample() throws {
        let env = try InteropEnvironment.current()
        let server = try ServeProcess(profile: "sample", name: "M5Stack", environment: env)
        addTeardownBlock { server.stop() }
        let central = try startPeer("sample_central.py", arguments: [
            "--target", server.address.description, "--number", "42", "--count", "3",
        ], environment: env)
        let initial = try central.waitForEvent("read", timeout: 30)
        XCTAssertEqual(initial.string("text"), "Hello World")
        XCTAssertEqual(initial.string("value"), Array("Hello World".utf8).map { String(format: "%02x", $0) }.joined())
        try central.waitForEvent("wrote") { $0.string("text") == "Write Data 042" }
        let readBack = try central.waitForEvent("read")
        XCTAssertEqual(readBack.string("text"), "Write Data 042", "the write replaced the value")
        try central.waitForEvent("subscribed")
        var texts: [String] = []
        for _ in 0..<3 {
            texts.append(try central.waitForEvent("notification", timeout: 10).string("text") ?? "")
        }
        XCTAssertEqual(texts, ["Notify Data 001", "Notify Data 002", "Notify Data 003"])
        try central.waitForEvent("done", timeout: 30)

        let written = try server.waitFor("write")
        XCTAssertEqual(written["utf8"] as? String, "Write Data 042", "ble serve logs the write")
        try server.waitFor("subscription") { $0["notifications"] as? Bool == true }
        try server.waitForCount("notified", count: 3)
        try server.waitFor("disconnected")
    }

    func testBleSampleAgainstTheBumblePeripheral() throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("sample_peripheral.py", environment: env)
        let result = try BLETool.run(["sample", peer.address.description, "--number", "7", "--count", "3", "--hci", env.rootcanal], timeout: 60)
        XCTAssertTrue(result.succeeded, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.map { String($0.prefix(1)) }, ["1", "2", "3", "4", "5", "5", "6", "7", "8", "9", "9", "9", "8", " "], result.stdout)
        XCTAssertEqual(lines[0], "1 state          poweredOn")
        XCTAssertTrue(lines[1].contains("M5Stack") && lines[1].contains(peer.address.description), lines[1])
        XCTAssertTrue(lines[4].contains(Self.readWrite) && lines[4].contains("properties 0x0A"), lines[4])
        XCTAssertTrue(lines[5].contains(Self.notify) && lines[5].contains("properties 0x10"), lines[5])
        XCTAssertEqual(lines[6], "6 read           \(Self.readWrite): 48656c6c6f20576f726c64 \"Hello World\"")
        XCTAssertTrue(lines[7].contains("\"Write Data 007\" with response; reads back"), lines[7])
        XCTAssertTrue(lines[9].hasSuffix("\"Notify Data 001\""), lines[9])
        XCTAssertTrue(lines[11].hasSuffix("\"Notify Data 003\""), lines[11])
        XCTAssertEqual(lines[13], "  disconnected")

        let write = try peer.waitForEvent("write", timeout: 10)
        XCTAssertEqual(write.string("text"), "Write Data 007")
        try peer.waitForEvent("subscription") { $0.bool("notify") == true }
        try peer.waitForEvent("subscription") { $0.bool("notify") == false }
        XCTAssertEqual(try peer.waitForEvent("disconnected", timeout: 10).int("reason"), 19)
    }
}

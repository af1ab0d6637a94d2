import BLETestSupport
import Foundation
import XCTest

/// `ble gatt` through the attribute cache (Core spec Vol 3 Part G §2.5.2) against a Bumble
/// 0.0.236 heart-rate sensor over rootcanal: the second dump finds Bumble's Database Hash
/// (§7.3) unchanged and sends no discovery request, and prints the same tree.
final class GATTCacheDumpInteropTests: XCTestCase {
    /// Discovery's own opcodes: Read By Group Type, Find By Type Value, Find Information.
    static let discoveryOnly: Set<UInt8> = [0x10, 0x06, 0x04]

    func testTheSecondDumpOfABumbleServerComesFromTheCache() throws {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", "BGC\(UInt32.random(in: 100_000...999_999))", "--interval", "0.5"],
                                   environment: env)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-gatt-dump-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let target = "\(sensor.address)/random"

        func dump(_ name: String) throws -> (tree: [String], requests: [UInt8]) {
            let file = dir.appendingPathComponent("\(name).btsnoop")
            let result = try BLETool.run(["gatt", target, "--no-values", "--hci", env.rootcanal, "--gatt-cache", dir.appendingPathComponent("gatt").path,
                                          "--capture", file.path],
                                         environment: ["BLE_BONDS": dir.appendingPathComponent("bonds").path], timeout: 90)
            XCTAssertTrue(result.succeeded, "ble gatt (\(name)): \(result)")
            let counted = try ATTRoundTrips(btsnoop: Array(try Data(contentsOf: file)))
            return (result.stdout.split(separator: "\n").map(String.init), counted.requests)
        }
        let cold = try dump("cold")
        XCTAssertFalse(Set(cold.requests).isDisjoint(with: Self.discoveryOnly), "cold: \(cold.requests)")
        XCTAssertFalse(cold.tree.contains { $0.hasPrefix("Layout from the GATT cache") })
        try sensor.waitForEvent("disconnected", timeout: 20)

        let warm = try dump("warm")
        XCTAssertTrue(Set(warm.requests).isDisjoint(with: Self.discoveryOnly), "warm: \(warm.requests)")
        XCTAssertLessThanOrEqual(warm.requests.count, 2, "the hash read and the Service Changed subscription: \(warm.requests)")
        XCTAssertEqual(warm.tree.last, "Layout from the GATT cache (Database Hash unchanged): no discovery requests")
        XCTAssertEqual(Array(warm.tree.dropLast()), cold.tree, "the same tree")
        print("ble gatt against Bumble: cold \(cold.requests.count) requests, from the cache \(warm.requests.count)")
    }
}

import BLETestSupport
import Foundation
import XCTest

/// `ble read` and `ble write` against a bonded Bumble 0.0.236 heart-rate sensor over rootcanal
/// that indicates Service Changed (Core Vol 3 Part G §7.1) for the Heart Rate Service before it
/// answers (`--service-changed-on-access`): the answer is not used, the characteristic is found
/// again and the request sent once more; a sensor that does it on every request makes the
/// command exit 1 with one line on stderr.
///
/// `ble read` knows the Service Changed characteristic from the bonded attribute cache, which a
/// `ble subscribe` filled (its `completeCaching`); the sensor forces the indication, since it
/// keeps no CCCD across connections.
final class ReadWriteServiceChangedInteropTests: XCTestCase {
    struct Bonded {
        let sensor: PeerProcess
        let target: String
        let common: [String]
    }

    func bondedSensor(changedAccesses: Int) throws -> Bonded {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", "BRW\(UInt32.random(in: 100_000...999_999))", "--interval", "0.2",
                                                                        "--bondable", "--location", "3",
                                                                        "--service-changed-on-access", "\(changedAccesses)"],
                                   environment: env)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-rw-sc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let target = "\(sensor.address)/random"
        let common = ["--hci", env.rootcanal, "--bonds", dir.appendingPathComponent("bonds").path,
                      "--gatt-cache", dir.appendingPathComponent("gatt").path]
        let pair = try BLETool.run(["pair", target] + common, timeout: 60)
        XCTAssertTrue(pair.succeeded, "\(pair)")
        try sensor.waitForEvent("disconnected", timeout: 20)
        let subscribe = try BLETool.run(["subscribe", target, "2A37", "--count", "2", "--timeout", "30"] + common, timeout: 90)
        XCTAssertTrue(subscribe.succeeded, "\(subscribe)")
        try sensor.waitForEvent("disconnected", timeout: 20)
        return Bonded(sensor: sensor, target: target, common: common)
    }

    func testReadAsksAgainAfterAServiceChangedThatCameBeforeTheAnswer() throws {
        let b = try bondedSensor(changedAccesses: 1)
        let read = try BLETool.run(["read", b.target, "2A38", "--json"] + b.common, timeout: 60)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertTrue(read.stdout.contains("\"hex\":\"03\""), read.stdout)
        try b.sensor.waitForEvent("disconnected", timeout: 20)
        XCTAssertEqual(b.sensor.events.filter { $0.name == "service_changed" }.count, 1, "\(b.sensor.events)")
        XCTAssertEqual(b.sensor.events.filter { $0.name == "read" }.count, 2, "read, then read again: \(b.sensor.events)")
    }

    func testReadAndWriteReportAServerThatChangesUnderEveryRequest() throws {
        let b = try bondedSensor(changedAccesses: 100)
        for arguments in [["read", b.target, "2A38"], ["write", b.target, "2A39", "01", "--hex"]] {
            let result = try BLETool.run(arguments + b.common, timeout: 60)
            XCTAssertEqual(result.status, 1, "\(result)")
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, result.stderr)
            XCTAssertTrue(lines.first?.hasPrefix("ble: GATT: the server's database changed (handles 0x") == true, result.stderr)
            XCTAssertTrue(lines.first?.hasSuffix("during the request; no answer to it was used") == true, result.stderr)
            try b.sensor.waitForEvent("disconnected", timeout: 20)
        }
        XCTAssertEqual(b.sensor.events.filter { $0.name == "read" }.count, 2, "\(b.sensor.events)")
        XCTAssertEqual(b.sensor.events.filter { $0.name == "control_point" }.count, 2, "\(b.sensor.events)")
    }
}

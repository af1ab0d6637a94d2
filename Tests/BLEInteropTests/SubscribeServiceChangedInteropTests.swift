import BLETestSupport
import Foundation
import XCTest

/// `ble subscribe` follows its characteristic across a Service Changed indication (Core spec
/// Vol 3 Part G §7.1) from a Bumble 0.0.236 heart-rate sensor over rootcanal: the indication
/// covers the Heart Rate Service, so the subscription finds 2A37 again and writes its CCCD again,
/// and the values keep coming.
final class SubscribeServiceChangedInteropTests: XCTestCase {
    func testSubscribeSubscribesAgainAfterAServiceChangedThatCoversIt() throws {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", "BSC\(UInt32.random(in: 100_000...999_999))", "--interval", "0.2",
                                                                        "--service-changed-after", "5"],
                                   environment: env)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-sub-sc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let result = try BLETool.run(["subscribe", "\(sensor.address)/random", "2A37", "--count", "9", "--timeout", "30", "--hci", env.rootcanal,
                                      "--gatt-cache", dir.appendingPathComponent("gatt").path],
                                     environment: ["BLE_BONDS": dir.appendingPathComponent("bonds").path], timeout: 90)
        XCTAssertTrue(result.succeeded, "\(result)")
        XCTAssertTrue(result.stderr.contains("service changed: subscribed again to 2A37"), result.stderr)
        let values = result.stdout.split(separator: "\n").filter { !$0.hasPrefix("subscribed to") }
        XCTAssertEqual(values.count, 9, result.stdout)
        let changed = try sensor.waitForEvent("service_changed", timeout: 20)
        XCTAssertNotNil(changed.int("start"))
        let subscriptions = sensor.events.filter { $0.name == "subscription" && $0.string("uuid") == "2A37" && $0.bool("notify") == true }
        XCTAssertGreaterThanOrEqual(subscriptions.count, 2, "the CCCD was written again: \(sensor.events)")
    }
}

/// `ble subscribe`'s kept-subscription fallback against a bonded Bumble 0.0.236 heart-rate
/// sensor over rootcanal. Our client leaves a bonded server subscribed at exit and, the next
/// time, writes nothing, expecting the server to have kept the CCCD (Core spec Vol 3 Part G
/// §3.3.3.3). Bumble keeps none; with no value within 3 s the CCCD is written after all and the
/// values come. Without the fallback the second run would see no value and time out.
final class SubscribeKeptSubscriptionFallbackInteropTests: XCTestCase {
    func testABondedServerThatForgotTheCCCDIsSubscribedAgainAfterTheGrace() throws {
        let env = try InteropEnvironment.current()
        let sensor = try startPeer("heart_rate_sensor.py", arguments: ["--name", "BKS\(UInt32.random(in: 100_000...999_999))", "--interval", "0.2", "--bondable"],
                                   environment: env)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-sub-kept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let target = "\(sensor.address)/random"
        let bonds = dir.appendingPathComponent("bonds").path
        let common = ["--hci", env.rootcanal, "--bonds", bonds, "--gatt-cache", dir.appendingPathComponent("gatt").path]

        let pair = try BLETool.run(["pair", target] + common, timeout: 60)
        XCTAssertTrue(pair.succeeded, "\(pair)")
        try sensor.waitForEvent("disconnected", timeout: 20)

        let first = try BLETool.run(["subscribe", target, "2A37", "--count", "2", "--timeout", "30"] + common, timeout: 90)
        XCTAssertTrue(first.succeeded, "\(first)")
        try sensor.waitForEvent("disconnected", timeout: 20)
        let subscribedFirst = sensor.events.filter { $0.name == "subscription" && $0.bool("notify") == true }.count
        XCTAssertEqual(subscribedFirst, 1, "the first run wrote the CCCD")
        XCTAssertFalse(sensor.events.contains { $0.name == "subscription" && $0.bool("notify") == false },
                       "a bonded server is left subscribed at exit")

        let second = try BLETool.run(["subscribe", target, "2A37", "--count", "2", "--timeout", "30"] + common, timeout: 90)
        XCTAssertTrue(second.succeeded, "values after the fallback: \(second)")
        XCTAssertEqual(second.stdout.split(separator: "\n").filter { !$0.hasPrefix("subscribed to") }.count, 2, second.stdout)
        let subscribedSecond = sensor.events.filter { $0.name == "subscription" && $0.bool("notify") == true }.count
        XCTAssertEqual(subscribedSecond, 2, "the CCCD was written again once no value came")
    }
}

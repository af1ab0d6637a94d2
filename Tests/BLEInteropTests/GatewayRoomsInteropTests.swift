import BLEProfiles
import Foundation
import XCTest

/// `ble gateway` against a real Mosquitto (docs/GATEWAY.md): two gateways on one broker, one on
/// the in-process virtual radio and one on rootcanal with a Bumble heart-rate sensor; a
/// subscriber sees both rooms, a command reaches the gateway it names and is answered there,
/// and a heart-rate belt's values reach the broker exactly as the belt sent them.
final class GatewayRoomsInteropTests: XCTestCase {
    /// The virtual radio's demo heart-rate monitor (`DemoPeripherals`).
    static let demoHRM = "00:5A:B1:00:00:03"

    func testTwoGatewaysOnOneBrokerEachServeTheirOwnRoom() async throws {
        let env = try InteropEnvironment.current()
        let broker = try await startMosquitto()
        let client = MosquittoClientOptions(broker: broker)
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/+/status", "ble/+/adv/+", "ble/+/reply", "ble/+/dev/+/+"], qos: 1)
        addTeardownBlock { watch.stop() }
        let beltName = "GWHR" + String(UInt32.random(in: 100_000...999_999))
        let belt = try startPeer("heart_rate_sensor.py", arguments: ["--name", beltName, "--interval", "0.25"], environment: env)
        let beltAddress = belt.address.description
        _ = try startGateway("room-a", broker: broker, arguments: ["--hci", "virtual"])
        _ = try startGateway("room-b", broker: broker, arguments: ["--hci", env.rootcanal])

        try await watch.waitFor("room-a online", timeout: 20) { $0.topic == "ble/room-a/status" && $0.text == "online" }
        try await watch.waitFor("room-b online", timeout: 20) { $0.topic == "ble/room-b/status" && $0.text == "online" }
        let demo = try await watch.waitFor(topic: "ble/room-a/adv/\(Self.demoHRM)", timeout: 20)
        XCTAssertEqual(demo.json?["name"] as? String, "HRM")
        XCTAssertEqual(demo.json?["gateway"] as? String, "room-a")
        let heard = try await watch.waitFor(topic: "ble/room-b/adv/\(beltAddress)", timeout: 30)
        XCTAssertEqual(heard.json?["name"] as? String, beltName)
        XCTAssertEqual(heard.json?["addressType"] as? String, "random")
        XCTAssertEqual(heard.json?["gateway"] as? String, "room-b")
        XCTAssertNotNil(heard.json?["rssi"] as? Int)
        XCTAssertFalse(watch.messages.contains { $0.topic == "ble/room-a/adv/\(beltAddress)" }, "the virtual room cannot hear rootcanal's belt")
        XCTAssertFalse(watch.messages.contains { $0.topic == "ble/room-b/adv/\(Self.demoHRM)" }, "rootcanal's room cannot hear the virtual radio")

        // A command to room-b only: room-b answers it, and the belt's values arrive as sent.
        let command = #"{"id":"b1","op":"subscribe","address":"\#(beltAddress)/random","characteristic":"2A37"}"#
        let published = try await mosquittoPublish(client, topic: "ble/room-b/cmd", .text(command), qos: 1)
        XCTAssertEqual(published.status, 0, "\(published)")
        let reply = try await watch.waitFor(topic: "ble/room-b/reply", timeout: 40)
        XCTAssertEqual(reply.json?["id"] as? String, "b1")
        XCTAssertEqual(reply.json?["ok"] as? Bool, true, reply.text)
        XCTAssertEqual(reply.json?["topic"] as? String, "ble/room-b/dev/\(beltAddress)/2A37")
        let valueTopic = "ble/room-b/dev/\(beltAddress)/2A37"
        let values = try await watch.waitForCount(6, timeout: 30) { $0.topic == valueTopic }
        let sent = belt.events.filter { $0.name == "measurement" }.compactMap { $0.string("value") }
        XCTAssertGreaterThanOrEqual(sent.count, 6)
        XCTAssertEqual(values.prefix(6).compactMap { $0.json?["hex"] as? String }, Array(sent.prefix(6)),
                       "every measurement, in order, byte for byte")
        for v in values.prefix(6) {
            let hex = try XCTUnwrap(v.json?["hex"] as? String)
            let decoded = try HeartRateMeasurement(decoding: try XCTUnwrap([UInt8](hexString: hex)))
            let heartRate = try XCTUnwrap(v.json?["heartRate"] as? [String: Any], v.text)
            XCTAssertEqual(heartRate["bpm"] as? Int, Int(decoded.beatsPerMinute))
            XCTAssertEqual(v.json?["gateway"] as? String, "room-b")
        }
        XCTAssertFalse(watch.messages.contains { $0.topic == "ble/room-a/reply" }, "room-a got no command and sent no reply")

        // The virtual room's belt through room-a.
        let second = #"{"id":"a1","op":"subscribe","address":"\#(Self.demoHRM)","characteristic":"2A37"}"#
        _ = try await mosquittoPublish(client, topic: "ble/room-a/cmd", .text(second), qos: 1)
        let replyA = try await watch.waitFor(topic: "ble/room-a/reply", timeout: 30)
        XCTAssertEqual(replyA.json?["id"] as? String, "a1")
        XCTAssertEqual(replyA.json?["ok"] as? Bool, true, replyA.text)
        let demoValues = try await watch.waitForCount(2, timeout: 20) { $0.topic == "ble/room-a/dev/\(Self.demoHRM)/2A37" }
        for v in demoValues { XCTAssertNotNil((v.json?["heartRate"] as? [String: Any])?["bpm"] as? Int, v.text) }
    }

    /// `kill -9`: the gateway says nothing, and the broker's Last Will turns its status offline.
    func testAKilledGatewayShowsOfflineThroughTheBrokersWill() async throws {
        let broker = try await startMosquitto()
        let client = MosquittoClientOptions(broker: broker)
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/+/status"], qos: 1)
        addTeardownBlock { watch.stop() }
        let gateway = try startGateway("doomed", broker: broker, arguments: ["--hci", "virtual"])
        try await watch.waitFor("online", timeout: 20) { $0.topic == "ble/doomed/status" && $0.text == "online" }
        gateway.kill9()
        try await watch.waitFor("offline from the will", timeout: 20) { $0.topic == "ble/doomed/status" && $0.text == "offline" }
        // Retained: a newcomer sees it too.
        let late = try await MosquittoSubscription.start(client, topics: ["ble/doomed/status"], qos: 1)
        addTeardownBlock { late.stop() }
        let kept = try await late.waitFor(topic: "ble/doomed/status")
        XCTAssertEqual(kept.text, "offline")
        XCTAssertTrue(kept.retained)
    }

    /// A clean stop says offline itself, retained.
    func testAStoppedGatewaySaysOffline() async throws {
        let broker = try await startMosquitto()
        let client = MosquittoClientOptions(broker: broker)
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/+/status"], qos: 1)
        addTeardownBlock { watch.stop() }
        let gateway = try startGateway("tidy", broker: broker, arguments: ["--hci", "virtual"])
        try await watch.waitFor("online", timeout: 20) { $0.topic == "ble/tidy/status" && $0.text == "online" }
        gateway.stop()
        try await watch.waitFor("offline", timeout: 20) { $0.topic == "ble/tidy/status" && $0.text == "offline" }
    }
}

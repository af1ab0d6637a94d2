import BLEProfiles
import Foundation
import XCTest

/// The broker restarted while a belt's values stream through a gateway: the gateway reconnects
/// with back-off, subscribes to its commands again, and no QoS 1 value is lost (the queue's
/// bound is far from reached in the seconds the broker is away).
final class GatewayBrokerRestartTests: XCTestCase {
    func testABrokerRestartMidStreamLosesNoNotification() async throws {
        let broker = try await startMosquitto(.anonymous.withPersistence())
        var client = MosquittoClientOptions(broker: broker)
        // A persistent session at QoS 1: the broker keeps what arrives for it while it reconnects.
        client.clientID = "restart-watcher-\(UInt32.random(in: 1...999_999))"
        client.persistentSession = true
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/+/dev/+/+", "ble/+/reply", "ble/+/status"], qos: 1)
        addTeardownBlock { watch.stop() }
        let gateway = try startGateway("restart", broker: broker, arguments: ["--hci", "virtual"])
        try await watch.waitFor("online", timeout: 20) { $0.topic == "ble/restart/status" && $0.text == "online" }
        try await gateway.waitForLog("connected to mqtt")
        let heard = try await MosquittoSubscription.start(MosquittoClientOptions(broker: broker), topics: ["ble/restart/adv/00:5A:B1:00:00:03"], qos: 1)
        addTeardownBlock { heard.stop() }
        try await heard.waitFor(topic: "ble/restart/adv/00:5A:B1:00:00:03", timeout: 20)
        let command = #"{"id":"r1","op":"subscribe","address":"00:5A:B1:00:00:03","characteristic":"2A37"}"#
        _ = try await mosquittoPublish(MosquittoClientOptions(broker: broker), topic: "ble/restart/cmd", .text(command), qos: 1)
        let reply = try await watch.waitFor(topic: "ble/restart/reply", timeout: 30)
        XCTAssertEqual(reply.json?["ok"] as? Bool, true, reply.text)
        let topic = "ble/restart/dev/00:5A:B1:00:00:03/2A37"
        let before = try await watch.waitForCount(3, timeout: 20) { $0.topic == topic }.count

        try await broker.restart()
        // The gateway saw the loss and came back (its second `connected to`), and the watcher
        // subscribed again.
        try await gateway.waitForLog("lost", timeout: 20)
        try await watch.waitUntilSubscribed(count: 2, timeout: 30)
        try await watch.waitFor("online again", timeout: 30) { $0.topic == "ble/restart/status" && $0.text == "online" }
        let values = try await watch.waitForCount(before + 5, timeout: 40) { $0.topic == topic }

        // At least once: a value whose acknowledgement the restart swallowed may come twice,
        // the same message (its `time` too); it counts once.
        var seen = Set<String>()
        let distinct = values.filter { seen.insert($0.text).inserted }
        let bpms = distinct.compactMap { ($0.json?["heartRate"] as? [String: Any])?["bpm"] as? Int }
        XCTAssertEqual(bpms.count, distinct.count, "every value decoded")
        // The demo belt sends measurement n of `HeartRateVariantCycle` as its n-th: the values
        // seen must be consecutive measurements, none missing, none twice.
        let cycle = (0..<400).map { Int(HeartRateVariantCycle.measurement(at: UInt64($0), energyExpended: 0).beatsPerMinute) }
        let first = try XCTUnwrap(bpms.first)
        let starts = cycle.indices.filter { cycle[$0] == first && $0 + bpms.count <= cycle.count }
        XCTAssertTrue(starts.contains { s in Array(cycle[s..<(s + bpms.count)]) == bpms },
                      "consecutive measurements across the restart, none lost: \(bpms)")
    }
}

import Foundation
import XCTest

/// What keeps one command publisher from taking a room's radio and devices (docs/GATEWAY.md
/// #security): a bound on links, idle links closed, a subscription asked for twice made once,
/// and two gateways that share one `--id` told about it while they back off.
final class GatewayLimitsTests: XCTestCase {
    static let demo = ["00:5A:B1:00:00:01", "00:5A:B1:00:00:02", "00:5A:B1:00:00:03", "00:5A:B1:00:00:05", "00:5A:B1:00:00:06"]

    func testLinksAreBoundedAndIdleOnesClosed() async throws {
        let broker = try await startMosquitto()
        let client = MosquittoClientOptions(broker: broker)
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/limits/reply", "ble/limits/status/stats", "ble/limits/adv/+"], qos: 1)
        addTeardownBlock { watch.stop() }
        _ = try startGateway("limits", broker: broker, arguments: ["--hci", "virtual", "--max-links", "2", "--link-idle", "6"])
        for device in Self.demo.prefix(3) { try await watch.waitFor(topic: "ble/limits/adv/\(device)", timeout: 20) }
        for (n, device) in Self.demo.prefix(2).enumerated() {
            _ = try await mosquittoPublish(client, topic: "ble/limits/cmd", .text(#"{"id":"c\#(n)","op":"connect","address":"\#(device)"}"#), qos: 1)
            let r = try await reply(watch, "c\(n)")
            XCTAssertEqual(r["ok"] as? Bool, true, "\(r)")
        }
        _ = try await mosquittoPublish(client, topic: "ble/limits/cmd", .text(#"{"id":"third","op":"connect","address":"\#(Self.demo[2])"}"#), qos: 1)
        let third = try await reply(watch, "third")
        XCTAssertEqual(third["code"] as? String, "too-many-links", "\(third)")
        // Unused for 6 s and not subscribed: both closed, and a new link may be made.
        try await watch.waitFor("no links left", timeout: 40) { m in
            m.topic == "ble/limits/status/stats" && m.json?["links"] as? Int == 0
        }
        _ = try await mosquittoPublish(client, topic: "ble/limits/cmd", .text(#"{"id":"again","op":"connect","address":"\#(Self.demo[2])"}"#), qos: 1)
        let again = try await reply(watch, "again")
        XCTAssertEqual(again["ok"] as? Bool, true, "\(again)")
    }

    func testASubscriptionAskedForTwiceAtOnceIsMadeOnce() async throws {
        let broker = try await startMosquitto()
        let client = MosquittoClientOptions(broker: broker)
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/twice/reply", "ble/twice/dev/+/+", "ble/twice/adv/+"], qos: 1)
        addTeardownBlock { watch.stop() }
        _ = try startGateway("twice", broker: broker, arguments: ["--hci", "virtual"])
        try await watch.waitFor(topic: "ble/twice/adv/00:5A:B1:00:00:03", timeout: 20)
        for id in ["s1", "s2"] {
            _ = try await mosquittoPublish(client, topic: "ble/twice/cmd",
                                           .text(#"{"id":"\#(id)","op":"subscribe","address":"00:5A:B1:00:00:03","characteristic":"2A37"}"#), qos: 1)
        }
        let first = try await reply(watch, "s1")
        let second = try await reply(watch, "s2")
        XCTAssertEqual([first["already"] as? Bool, second["already"] as? Bool].compactMap { $0 }, [true], "one made it, the other found it: \(first) \(second)")
        let values = try await watch.waitForCount(4, timeout: 20) { $0.topic == "ble/twice/dev/00:5A:B1:00:00:03/2A37" }
        let texts = values.map(\.text)
        XCTAssertEqual(Set(texts).count, texts.count, "each value published once, not once per command: \(texts)")
    }

    func testTwoGatewaysWithOneIDAreToldAndBackOff() async throws {
        let broker = try await startMosquitto()
        let first = try startGateway("twin", broker: broker, arguments: ["--hci", "virtual"])
        try await first.waitForLog("connected to mqtt")
        let second = try startGateway("twin", broker: broker, arguments: ["--hci", "virtual"])
        let told = try await first.waitForLog("another client", timeout: 20)
        XCTAssertTrue(told.contains("ble-gateway-twin"), told)
        // Each takeover is short-lived: the waits keep doubling instead of starting over at 1 s,
        // in whichever of the two it shows first.
        let doubled: @Sendable ([String]) -> String? = { lines in
            lines.first { $0.contains("another client") && $0.hasSuffix("trying again in 4.0 seconds") }
        }
        let seen = await withTaskGroup(of: String?.self) { group in
            for gateway in [first, second] { group.addTask { try? await gateway.waitForLog("a 4 s wait", timeout: 30, found: doubled) } }
            for await line in group where line != nil {
                group.cancelAll()
                return line
            }
            return nil
        }
        XCTAssertNotNil(seen, "doubling: \((first.log + second.log).filter { $0.contains("trying again") })")
    }

    private func reply(_ watch: MosquittoSubscription, _ id: String) async throws -> [String: Any] {
        let m = try await watch.waitFor("the reply to \(id)", timeout: 30) { $0.json?["id"] as? String == id }
        return try XCTUnwrap(m.json)
    }
}

/// A message the broker will not take (bigger than its Maximum Packet Size) is dropped and
/// counted, and the queue it was in goes on: the next reply still arrives.
final class GatewayOversizeTests: XCTestCase {
    func testAReplyTooBigForTheBrokerIsDroppedAndTheNextOneArrives() async throws {
        let broker = try await startMosquitto(.anonymous.withMaxPacketSize(1500))
        let client = MosquittoClientOptions(broker: broker)
        let watch = try await MosquittoSubscription.start(client, topics: ["ble/small/reply", "ble/small/status/stats", "ble/small/adv/+"], qos: 1)
        addTeardownBlock { watch.stop() }
        _ = try startGateway("small", broker: broker, arguments: ["--hci", "virtual"])
        for device in ["00:5A:B1:00:00:05", "00:5A:B1:00:00:06"] { try await watch.waitFor(topic: "ble/small/adv/\(device)", timeout: 20) }
        // TestDevice's whole database with its values is several kilobytes.
        _ = try await mosquittoPublish(client, topic: "ble/small/cmd", .text(#"{"id":"big","op":"gatt","address":"00:5A:B1:00:00:06"}"#), qos: 1)
        try await watch.waitFor("the drop counted", timeout: 30) { m in
            m.topic == "ble/small/status/stats" && ((m.json?["dropped"] as? [String: Any])?["publishFailed"] as? Int ?? 0) >= 1
        }
        // After the drop, the replies' queue still moves.
        _ = try await mosquittoPublish(client, topic: "ble/small/cmd", .text(#"{"id":"after","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#), qos: 1)
        let after = try await watch.waitFor("the reply after the big one", timeout: 30) { $0.json?["id"] as? String == "after" }
        XCTAssertEqual(after.json?["hex"] as? String, "64")
        XCTAssertFalse(watch.messages.contains { $0.json?["id"] as? String == "big" })
    }
}

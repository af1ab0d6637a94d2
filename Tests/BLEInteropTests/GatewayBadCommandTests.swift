import Foundation
import XCTest

/// Every bad command of the issue and docs/GATEWAY.md#errors, against a real broker: each gets a
/// typed error reply under its `id`, and changes nothing else: the gateway goes on serving.
final class GatewayBadCommandTests: XCTestCase {
    func testEveryBadCommandGetsATypedErrorAndChangesNothing() async throws {
        let broker = try await startMosquitto()
        let client = MosquittoClientOptions(broker: broker)
        // A retained command waiting on the broker before the gateway starts is never delivered
        // to it (it would otherwise run again on every gateway that subscribes later).
        let stale = #"{"id":"stale","op":"connect","address":"00:5A:B1:00:00:05"}"#
        _ = try await mosquittoPublish(client, topic: "ble/lab/cmd", .text(stale), qos: 1, retain: true)
        let watch = try await MosquittoSubscription.start(MosquittoClientOptions(broker: broker, mqtt5: true),
                                                         topics: ["ble/lab/reply", "ble/lab/status", "ble/lab/status/stats", "ble-reply/#"], qos: 1)
        addTeardownBlock { watch.stop() }
        // Links kept for the whole test, however slow the machine (the link count is checked).
        _ = try startGateway("lab", broker: broker, arguments: ["--hci", "virtual", "--link-idle", "600"])
        try await watch.waitFor("online", timeout: 20) { $0.topic == "ble/lab/status" && $0.text == "online" }
        // One published retained while the gateway listens keeps its RETAIN flag, and is refused.
        let retained = #"{"id":"retained","op":"connect","address":"00:5A:B1:00:00:05"}"#
        _ = try await mosquittoPublish(client, topic: "ble/lab/cmd", .text(retained), qos: 1, retain: true)
        try await expectRefusal(watch, id: "retained", code: "retained-command")
        _ = try await mosquittoPublish(client, topic: "ble/lab/cmd", .empty, qos: 1, retain: true)

        // Heard first (a command about a device not heard yet is `unknown-device`).
        let heard = try await MosquittoSubscription.start(client, topics: ["ble/lab/adv/+"], qos: 1)
        addTeardownBlock { heard.stop() }
        for device in ["00:5A:B1:00:00:03", "00:5A:B1:00:00:05", "00:5A:B1:00:00:06"] {
            try await heard.waitFor(topic: "ble/lab/adv/\(device)", timeout: 20)
        }
        try await sendCommand(client, #"{"id":"warm","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#)
        let warm = try await reply(watch, id: "warm", timeout: 30)
        XCTAssertEqual(warm["ok"] as? Bool, true, "\(warm)")

        let cases: [(id: String, payload: String, code: String)] = [
            ("unknown-device", #"{"id":"unknown-device","op":"read","address":"AA:BB:CC:DD:EE:01/random","characteristic":"2A19"}"#, "unknown-device"),
            // Heard as public: the same 48 bits as a random address are a device never heard.
            ("other-type", #"{"id":"other-type","op":"connect","address":"00:5A:B1:00:00:06/random"}"#, "unknown-device"),
            ("read-only", #"{"id":"read-only","op":"write","address":"00:5A:B1:00:00:05","characteristic":"2A19","hex":"00"}"#, "not-writable"),
            ("no-notify", #"{"id":"no-notify","op":"subscribe","address":"00:5A:B1:00:00:03","characteristic":"2A38"}"#, "not-subscribable"),
            ("no-such", #"{"id":"no-such","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A37"}"#, "no-characteristic"),
            ("not-subscribed", #"{"id":"not-subscribed","op":"unsubscribe","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#, "not-subscribed"),
            ("not-connected", #"{"id":"not-connected","op":"disconnect","address":"00:5A:B1:00:00:06"}"#, "not-connected"),
            ("op", #"{"id":"op","op":"erase","address":"00:5A:B1:00:00:05"}"#, "unknown-op"),
            ("no-op", #"{"id":"no-op","address":"00:5A:B1:00:00:05"}"#, "missing-field"),
            ("typo", #"{"id":"typo","op":"read","address":"00:5A:B1:00:00:05","charateristic":"2A19"}"#, "unknown-field"),
            ("type", #"{"id":"type","op":"read","address":5,"characteristic":"2A19"}"#, "wrong-type"),
            ("address", #"{"id":"address","op":"read","address":"00:5A:B1:00:00","characteristic":"2A19"}"#, "bad-address"),
            ("uuid", #"{"id":"uuid","op":"read","address":"00:5A:B1:00:00:05","characteristic":"battery"}"#, "bad-uuid"),
            ("hex", #"{"id":"hex","op":"write","address":"00:5A:B1:00:00:05","characteristic":"2A19","hex":"abc"}"#, "bad-hex"),
            ("long", #"{"id":"long","op":"write","address":"00:5A:B1:00:00:05","characteristic":"2A19","hex":""# + String(repeating: "00", count: 513) + #""}"#, "value-too-long"),
            ("array", #"["id","op"]"#, "not-an-object"),
        ]
        for c in cases { try await sendCommand(client, c.payload) }
        for c in cases where c.id != "array" { try await expectRefusal(watch, id: c.id, code: c.code) }
        try await expectRefusal(watch, id: nil, code: "not-an-object")

        // Malformed JSON: no id to be found, answered under null.
        try await sendCommand(client, #"{"id":"broken","op":"read""#)
        try await expectRefusal(watch, id: nil, code: "malformed-json")
        // 10 MB: refused by size before it is parsed.
        let big = FileManager.default.temporaryDirectory.appendingPathComponent("gw-big-\(getpid()).json")
        let body = #"{"id":"big","op":"write","address":"00:5A:B1:00:00:05","characteristic":"2A19","hex":""# + String(repeating: "0", count: 10_000_000) + #""}"#
        try Data(body.utf8).write(to: big)
        addTeardownBlock { try? FileManager.default.removeItem(at: big) }
        let sent = try await mosquittoPublish(client, topic: "ble/lab/cmd", .file(big), qos: 1, timeout: 30)
        XCTAssertEqual(sent.status, 0, "\(sent)")
        try await expectRefusal(watch, id: nil, code: "too-large")
        // A response topic under the gateways' prefix would let a command forge another's topics.
        _ = try await mosquittoPublish(client, topic: "ble/lab/cmd", .text(#"{"id":"forge","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#),
                                       qos: 1, responseTopic: "ble/other/status")
        try await expectRefusal(watch, id: "forge", code: "bad-response-topic")
        _ = try await mosquittoPublish(client, topic: "ble/lab/cmd", .text(#"{"id":"elsewhere","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#),
                                       qos: 1, responseTopic: "clients/42/reply")
        try await expectRefusal(watch, id: "elsewhere", code: "bad-response-topic")

        // MQTT 5 request/response: the reply goes to the response topic with the correlation data.
        _ = try await mosquittoPublish(client, topic: "ble/lab/cmd", .text(#"{"id":"rr","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#),
                                       qos: 1, responseTopic: "ble-reply/42", correlationData: "req-77")
        let answer = try await watch.waitFor(topic: "ble-reply/42", timeout: 30)
        XCTAssertEqual(answer.json?["id"] as? String, "rr")
        XCTAssertEqual(answer.json?["hex"] as? String, "64")
        XCTAssertEqual(answer.correlationData, "req-77")

        // Nothing else changed: the gateway serves, and counted what it refused.
        try await sendCommand(client, #"{"id":"after","op":"read","address":"00:5A:B1:00:00:05","characteristic":"2A19"}"#)
        let after = try await reply(watch, id: "after", timeout: 30)
        XCTAssertEqual(after["hex"] as? String, "64")
        let stats = try await watch.waitFor("stats counting the refusals", timeout: 20) { m in
            guard m.topic == "ble/lab/status/stats", let commands = m.json?["commands"] as? [String: Any] else { return false }
            // 14 refused before anything was done; 7 carried out and failed.
            return (commands["refused"] as? Int ?? 0) >= 14 && (commands["failed"] as? Int ?? 0) >= 7
        }
        XCTAssertEqual(stats.json?["links"] as? Int, 2, "the battery and the heart-rate monitor; no link to an unknown device: \(stats.text)")
        XCTAssertEqual(stats.json?["subscriptions"] as? Int, 0)
        XCTAssertFalse(watch.messages.contains { $0.json?["id"] as? String == "stale" }, "a stale retained command is never delivered")
    }

    private func sendCommand(_ client: MosquittoClientOptions, _ payload: String) async throws {
        let result = try await mosquittoPublish(client, topic: "ble/lab/cmd", .text(payload), qos: 1)
        XCTAssertEqual(result.status, 0, "\(result)")
    }

    private func reply(_ watch: MosquittoSubscription, id: String?, timeout: TimeInterval = 20) async throws -> [String: Any] {
        let m = try await watch.waitFor("the reply to \(id ?? "null")", timeout: timeout) { m in
            guard m.topic == "ble/lab/reply", let json = m.json else { return false }
            return id.map { json["id"] as? String == $0 } ?? (json["id"] is NSNull)
        }
        return try XCTUnwrap(m.json)
    }

    private func expectRefusal(_ watch: MosquittoSubscription, id: String?, code: String) async throws {
        let r = try await reply(watch, id: id, timeout: 30)
        XCTAssertEqual(r["ok"] as? Bool, false, "\(r)")
        XCTAssertEqual(r["code"] as? String, code, "\(id ?? "null"): \(r)")
        XCTAssertFalse((r["error"] as? String ?? "").isEmpty, "\(r)")
    }
}

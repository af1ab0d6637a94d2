import BLEHTTP
import BLEGateway
import BLEMQTT
import Foundation
import XCTest
@testable import BLESystems

/// `ble ui --broker`'s routes with messages handed in as the broker would deliver them (the
/// client is never started: nothing here needs a broker).
final class UIBrokerAppTests: XCTestCase {
    /// The demo heart-rate monitor.
    static let hrm = "00:5A:B1:00:00:03"

    /// A GET's status and body.
    func get(_ app: UIBrokerApp, _ target: String) async -> (status: Int, text: String)? {
        Self.body(await app.handle(HTTPRequest(method: "GET", target: target)))
    }

    /// An app on a broker nobody runs (never started).
    func makeApp(prefix: String = "ble") throws -> UIBrokerApp {
        try UIBrokerApp(mqtt: MQTTConfiguration(broker: MQTTBrokerURL(host: "127.0.0.1", port: 1, usesTLS: false), clientID: "ble-ui-test"),
                        prefix: prefix, token: "abc123")
    }

    /// Hands `payload` on `topic` to `app` as the client would.
    static func feed(_ app: UIBrokerApp, _ topic: String, _ payload: String) {
        app.receive(MQTTMessage(topic: topic, payload: Array(payload.utf8)), now: 1_800_000_000_000)
    }

    /// `XCTUnwrap` for an `await`ed value (an autoclosure cannot await).
    func unwrap<T>(_ value: T?) throws -> T { try XCTUnwrap(value) }

    /// A response's status and body; nil for an event stream or no answer.
    static func body(_ reply: UIReply?) -> (status: Int, text: String)? {
        guard case let .response(r)? = reply else { return nil }
        return (r.status.code, String(decoding: r.body, as: UTF8.self))
    }

    /// The `data:` lines of the first `count` events of `stream`.
    static func events(_ stream: AsyncStream<[UInt8]>, count: Int) async -> [String] {
        var out: [String] = []
        for await event in stream {
            let text = String(decoding: event, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) { out.append(String(line.dropFirst(6))) }
            if out.count >= count { break }
        }
        return out
    }

    func testTheRootLeadsToTheGatewaysPageWhoseHeaderNamesNoRadioScreen() async throws {
        let app = try makeApp()
        defer { app.stop() }
        guard case let .response(redirect)? = await app.handle(HTTPRequest(method: "GET", target: "/")) else { return XCTFail("no answer") }
        XCTAssertEqual(redirect.status.code, 303)
        XCTAssertEqual(redirect.headers.first { $0.name == "Location" }?.value, "/gateways?token=abc123")
        let page = try await unwrap(get(app, "/gateways"))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.text.contains(#"<a href="/gateways?token=abc123">Gateways</a>"#), page.text)
        XCTAssertFalse(page.text.contains(#"href="/echo"#), "no radio screens in broker mode")
        XCTAssertTrue(page.text.contains("/static/broker.js?token=abc123"))
        let script = try await unwrap(get(app, "/static/broker.js"))
        XCTAssertTrue(script.text.contains("/api/broker-events"))
        // The device screens are the radio mode's, with the command panel.
        let hr = try await unwrap(get(app, "/heart-rate/00:5A:B1:00:00:03%2Fpublic"))
        XCTAssertTrue(hr.text.contains(#"id="hr-monitor""#) && hr.text.contains(#"data-characteristic="2A37""#), hr.text)
        let bad = try await unwrap(get(app, "/accel/nonsense"))
        XCTAssertEqual(bad.status, 404)
    }

    func testTheOverviewAndAHeartRatePageOpenedLateShowWhatTheBrokerSent() async throws {
        let app = try makeApp()
        defer { app.stop() }
        Self.feed(app, "ble/lab/status", "online")
        Self.feed(app, "ble/lab/adv/\(Self.hrm)", #"{"name":"HRM","rssi":-40,"serviceUUIDs":["180D"],"addressType":"public"}"#)
        for bpm in [70, 71] {
            Self.feed(app, "ble/lab/dev/\(Self.hrm)/2A37", #"{"heartRate":{"bpm":\#(bpm),"contact":false,"rr":[]},"time":180000000\#(bpm)000}"#)
        }
        Self.feed(app, "ble/lab/adv/\(Self.hrm)", "not json")
        let overview = try await unwrap(get(app, "/api/broker"))
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(overview.text.utf8)) as? [String: Any])
        XCTAssertEqual(object["connected"] as? Bool, false)
        XCTAssertEqual(object["ignored"] as? Int, 1)
        let device = try XCTUnwrap((object["devices"] as? [[String: Any]])?.first)
        XCTAssertEqual(device["strongest"] as? String, "lab")
        XCTAssertEqual((device["heartRate"] as? [String: Any])?["bpm"] as? Int, 71)

        guard case let .events(stream)? = await app.handle(HTTPRequest(method: "GET", target: "/api/heart-rate-events/\(Self.hrm)%2Fpublic")) else {
            return XCTFail("no stream")
        }
        // The kept measurements first, then a new one as it arrives.
        Self.feed(app, "ble/lab/dev/\(Self.hrm)/2A37", #"{"heartRate":{"bpm":72,"contact":true,"rr":[0.5]}}"#)
        let events = await Self.events(stream, count: 3)
        XCTAssertEqual(events.count, 3)
        let bpms = events.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["bpm"] as? Int }
        XCTAssertEqual(bpms, [70, 71, 72])
        XCTAssertTrue(events[2].contains(#""type":"measurement""#) && events[2].contains(#""contact":"detected""#), events[2])
    }

    func testACommandForADeviceNoOnlineGatewayHearsIsRefusedWithoutPublishing() async throws {
        let app = try makeApp()
        defer { app.stop() }
        Self.feed(app, "ble/lab/status", "offline")
        Self.feed(app, "ble/lab/adv/\(Self.hrm)", #"{"name":"HRM","rssi":-40}"#)
        func post(_ body: String) async -> (status: Int, text: String)? {
            Self.body(await app.handle(HTTPRequest(method: "POST", target: "/api/broker/command", body: Array(body.utf8))))
        }
        let offline = await post(#"{"address":"00:5A:B1:00:00:03/public","characteristic":"2A37"}"#)
        XCTAssertEqual(offline?.status, 404)
        XCTAssertTrue(offline?.text.contains("no online gateway") == true, "\(String(describing: offline))")
        for body in [#"{"address":"00:5A:B1:00:00:03/public","characteristic":"2A37","op":"write"}"#, #"{"address":"nope","characteristic":"2A37"}"#,
                     #"{"address":"00:5A:B1:00:00:03/public","characteristic":"not a uuid"}"#] {
            let answer = await post(body)
            XCTAssertEqual(answer?.status, 400, body)
        }
    }

    func testTheReplyTopicIsUnderTheGatewaysReplyRoot() throws {
        let topics = try GatewayTopics(prefix: "home/ble", name: "lab")
        for (prefix, id, expected) in [("ble", "ble-ui-00ff", "ble-reply/ble-ui-00ff"), ("home/ble", "a/+#b", "home/ble-reply/ab"), ("ble", "", "ble-reply/ui")] {
            let topic = UIBrokerApp.replyTopic(prefix: prefix, clientID: id)
            XCTAssertEqual(topic, expected)
            if prefix == "home/ble" { XCTAssertTrue(topics.allowsResponseTopic(topic), topic) }
        }
    }
}

import Foundation
import XCTest

/// The MQTT broker harness itself (Support/MosquittoBroker.swift, MosquittoClients.swift)
/// against the real Eclipse Mosquitto: a round trip in each mode, the refusals, and a persistent
/// session's queued message across a broker restart. Skipped without `BLE_TEST_MOSQUITTO`.
final class MosquittoBrokerSelfTests: XCTestCase {
    /// A message to `selftest/#` reaches the subscriber: JSON text, bytes with NUL, and MQTT 5's
    /// response topic and correlation data, each on its topic.
    func testAnonymousRoundTrip() async throws {
        let broker = try await startMosquitto(.anonymous)
        XCTAssertEqual(broker.url, "mqtt://127.0.0.1:\(broker.port)")
        let subscription = try await MosquittoSubscription.start(.init(broker: broker, mqtt5: true), topics: ["selftest/#"], qos: 1)
        defer { subscription.stop() }
        let options = MosquittoClientOptions(broker: broker)

        let sent = try await mosquittoPublish(options, topic: "selftest/json", #"{"id":"C4:12:34:56:78:9A","rssi":-40}"#, qos: 1)
        XCTAssertTrue(sent.succeeded, "mosquitto_pub: \(sent)")
        let json = try await subscription.waitFor(topic: "selftest/json")
        XCTAssertEqual(json.json?["rssi"] as? Int, -40, "\(json)")
        XCTAssertEqual(json.qos, 1)

        let bytes = Data([0x00, 0xFF, 0x0A, 0x09, 0x41])
        let binary = try await mosquittoPublish(options, topic: "selftest/bytes", .data(bytes))
        XCTAssertTrue(binary.succeeded, "mosquitto_pub: \(binary)")
        let received = try await subscription.waitFor(topic: "selftest/bytes")
        XCTAssertEqual(received.payload, bytes)

        let request = try await mosquittoPublish(options, topic: "selftest/request", "ping",
                                                 responseTopic: "selftest/reply", correlationData: "c-17")
        XCTAssertTrue(request.succeeded, "mosquitto_pub: \(request)")
        let asked = try await subscription.waitFor(topic: "selftest/request")
        XCTAssertEqual(asked.text, "ping")
        XCTAssertEqual(asked.responseTopic, "selftest/reply")
        XCTAssertEqual(asked.correlationData, "c-17")
    }

    /// With a password file, the wrong password and no password are refused (publisher and
    /// subscriber), the right one gets a message through.
    func testPasswordRefusesWrongPasswordAndAcceptsTheRightOne() async throws {
        let broker = try await startMosquitto(.password(user: "gateway", password: "s3cret pass"))
        var wrong = MosquittoClientOptions(broker: broker)
        wrong.credentials = .init(user: "gateway", password: "wrong")
        let refused = try await mosquittoPublish(wrong, topic: "selftest/x", "no")
        XCTAssertFalse(refused.succeeded, "a wrong password is refused: \(refused)")
        XCTAssertTrue(refused.stderr.contains("not authorised"), "\(refused)")
        var anonymous = MosquittoClientOptions(broker: broker)
        anonymous.credentials = nil
        let anonymousResult = try await mosquittoPublish(anonymous, topic: "selftest/x", "no")
        XCTAssertFalse(anonymousResult.succeeded, "no password is refused: \(anonymousResult)")
        do {
            let subscription = try await MosquittoSubscription.start(wrong, topics: ["selftest/#"])
            subscription.stop()
            XCTFail("mosquitto_sub with a wrong password subscribed")
        } catch let error as MosquittoClientError {
            XCTAssertTrue(error.description.contains("not authorised"), "\(error)")
        }

        let subscription = try await MosquittoSubscription.start(.init(broker: broker), topics: ["selftest/#"])
        defer { subscription.stop() }
        let accepted = try await mosquittoPublish(.init(broker: broker), topic: "selftest/x", "yes")
        XCTAssertTrue(accepted.succeeded, "the right password is accepted: \(accepted)")
        let message = try await subscription.waitFor(topic: "selftest/x")
        XCTAssertEqual(message.text, "yes")
    }

    /// Over TLS (with a password as well), clients that trust the test CA get a message
    /// through; a client without the CA is refused the handshake.
    func testTLSRoundTripWithTheCAFile() async throws {
        let broker = try await startMosquitto(.tls.withPassword(user: "gateway", password: "tls-pass"))
        XCTAssertEqual(broker.url, "mqtts://localhost:\(broker.port)")
        let caFile = try XCTUnwrap(broker.caFile)
        XCTAssertTrue(FileManager.default.fileExists(atPath: caFile.path))

        let subscription = try await MosquittoSubscription.start(.init(broker: broker), topics: ["selftest/tls"], qos: 1)
        defer { subscription.stop() }
        let sent = try await mosquittoPublish(.init(broker: broker), topic: "selftest/tls", "secure", qos: 1)
        XCTAssertTrue(sent.succeeded, "mosquitto_pub over TLS: \(sent)")
        let message = try await subscription.waitFor(topic: "selftest/tls")
        XCTAssertEqual(message.text, "secure")

        var untrusting = MosquittoClientOptions(broker: broker)
        untrusting.caFile = nil
        let plain = try await mosquittoPublish(untrusting, topic: "selftest/tls", "plain")
        XCTAssertFalse(plain.succeeded, "plain MQTT to the TLS listener fails: \(plain)")
    }

    /// A persistent session (`-c -i`, QoS 1) keeps its subscription while its client is away,
    /// and the broker keeps the message published meanwhile across a restart on the same port.
    func testRestartKeepsAQueuedMessageOfAPersistentSession() async throws {
        let broker = try await startMosquitto(.anonymous.withPersistence())
        let port = broker.port
        let session = MosquittoClientOptions(broker: broker, clientID: "selftest-session", persistentSession: true)
        let first = try await MosquittoSubscription.start(session, topics: ["selftest/queued/#"], qos: 1)
        first.stop()

        let sent = try await mosquittoPublish(.init(broker: broker), topic: "selftest/queued/1", "while away", qos: 1)
        XCTAssertTrue(sent.succeeded, "mosquitto_pub: \(sent)")
        try await broker.restart()
        XCTAssertEqual(broker.port, port)
        let log = broker.logTail(lines: 400)
        XCTAssertTrue(log.contains("terminating"), "the broker ended on SIGTERM, saving its database: \(log)")

        let second = try await MosquittoSubscription.start(session, topics: ["selftest/queued/#"], qos: 1)
        defer { second.stop() }
        let message = try await second.waitFor(topic: "selftest/queued/1")
        XCTAssertEqual(message.text, "while away")
        XCTAssertEqual(message.qos, 1)

        broker.kill()
        XCTAssertFalse(broker.isRunning)
        try await broker.restart()
        XCTAssertEqual(broker.port, port)
        XCTAssertTrue(MosquittoBroker.connects(port: port), "a killed broker comes back on its port")
    }
}

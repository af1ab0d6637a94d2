import BLEMQTT
import Foundation
import Synchronization

/// The consumer end of `ble-bench gateway`: one MQTT client subscribed to every gateway's
/// `PREFIX/+/dev/#` and `PREFIX/+/adv/#` (and `PREFIX/+/reply` and `PREFIX/+/status`, for the
/// commands the bench sends as a user would), which counts messages per gateway and hands each value to the
/// ledger, whose send time gives the end-to-end latency.
///
/// Messages are handled on the client's network thread as they arrive (a count, a topic split,
/// a hex field read), so the latency includes no queue of the bench's own.
final class BenchSubscriber: Sendable {
    /// What one gateway's topics delivered while counting.
    struct Counts: Sendable {
        var values = 0, advertisements = 0
        /// Values whose payload held no benchmark value, or one the ledger did not know.
        var unmatched = 0
    }

    let client: MQTTClient
    private let inbox: Inbox

    /// A subscriber to `prefix`'s gateways, named `names` (their index in it numbers them).
    init(broker: MQTTBrokerURL, prefix: String, names: [String], ledger: NotificationLedger) throws {
        let inbox = Inbox(prefix: prefix, names: names, ledger: ledger)
        self.inbox = inbox
        var configuration = MQTTConfiguration(broker: broker, clientID: "ble-bench-subscriber-\(getpid())")
        // The broker's in-flight window towards us (Receive Maximum): room for a burst.
        configuration.maximumInFlight = 1000
        client = try MQTTClient(configuration) { inbox.handle($0) }
        for filter in ["\(prefix)/+/dev/#", "\(prefix)/+/adv/#", "\(prefix)/+/reply", "\(prefix)/+/status"] {
            try client.subscribe(filter, qos: 1)
        }
    }

    /// Connects, and waits (at most `timeout` seconds) for the session; throws when it is not up.
    func start(timeout: Double = 5) async throws {
        client.start()
        let deadline = monotonicSeconds() + timeout
        while !inbox.isSubscribed {
            guard monotonicSeconds() < deadline else {
                throw GatewayBenchError.failed("the subscriber could not connect to \(client.configuration.broker)\(inbox.lastProblem.map { ": \($0)" } ?? "")")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // The SUBSCRIBEs went out with the CONNACK's handling: give the broker a moment for them.
        try await Task.sleep(for: .milliseconds(200))
    }

    /// Counts from now on (what was counted before is forgotten).
    func startCounting() { _ = inbox.setCounting(true) }

    /// Stops counting; returns the counts per gateway.
    func stopCounting() -> [Counts] { inbox.setCounting(false) }

    /// Advertisement topics seen (to clear their retained messages on a broker that is not ours).
    var advertisementTopics: Set<String> { inbox.advertisementTopics }

    /// Waits (at most `timeout` seconds) until gateway `number` says `online` on its `status`:
    /// its session is up and it takes commands (one sent before would be lost: MQTT keeps no
    /// message for a topic nobody subscribes to).
    func waitOnline(_ number: Int, timeout: Double) async throws -> Bool {
        let deadline = monotonicSeconds() + timeout
        while !inbox.isOnline(number) {
            guard monotonicSeconds() < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Waits (at most `timeout` seconds) until `topic` (a device's advertisement) has been
    /// published: the gateway has heard the device and can connect to it.
    func waitPublished(_ topic: String, timeout: Double) async throws -> Bool {
        let deadline = monotonicSeconds() + timeout
        while !inbox.advertisementTopics.contains(topic) {
            guard monotonicSeconds() < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Sends `payload` (a command with `"id": id`) on `topic` and waits at most `timeout` seconds
    /// for the reply carrying that id; nil when none came.
    func command(_ payload: String, id: String, on topic: String, timeout: Double) async throws -> [String: Any]? {
        try client.publish(MQTTMessage(topic: topic, payload: Array(payload.utf8), qos: 1))
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if let reply = inbox.takeReply(id) {
                return (try? JSONSerialization.jsonObject(with: Data(reply))) as? [String: Any]
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    func stop() { client.stop() }
}

/// What the subscriber's network thread updates.
private final class Inbox: Sendable {
    private struct State {
        var subscribed = false
        var lastProblem: String?
        var counting = false
        var counts: [BenchSubscriber.Counts]
        var replies: [String: [UInt8]] = [:]
        var advertisementTopics: Set<String> = []
        var online: Set<Int> = []
    }

    private let state: Mutex<State>
    private let prefix: String
    private let numbers: [String: Int]
    private let ledger: NotificationLedger

    init(prefix: String, names: [String], ledger: NotificationLedger) {
        self.prefix = prefix + "/"
        numbers = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        self.ledger = ledger
        state = Mutex(State(counts: Array(repeating: BenchSubscriber.Counts(), count: names.count)))
    }

    var isSubscribed: Bool { state.withLock { $0.subscribed } }
    var lastProblem: String? { state.withLock { $0.lastProblem } }
    var advertisementTopics: Set<String> { state.withLock { $0.advertisementTopics } }
    func isOnline(_ gateway: Int) -> Bool { state.withLock { $0.online.contains(gateway) } }

    func setCounting(_ on: Bool) -> [BenchSubscriber.Counts] {
        state.withLock { s in
            defer {
                s.counting = on
                if on { s.counts = Array(repeating: BenchSubscriber.Counts(), count: s.counts.count) }
            }
            return s.counts
        }
    }

    func takeReply(_ id: String) -> [UInt8]? {
        state.withLock { $0.replies.removeValue(forKey: id) }
    }

    func handle(_ event: MQTTEvent) {
        switch event {
        case .connected: state.withLock { $0.subscribed = true }
        case let .disconnected(reason, _): state.withLock { $0.lastProblem = reason }
        case .acknowledged: break
        case let .message(m): received(m)
        }
    }

    private func received(_ m: MQTTMessage) {
        let now = monotonicSeconds()
        guard m.topic.hasPrefix(prefix) else { return }
        let levels = m.topic.dropFirst(prefix.count).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard levels.count >= 2, let gateway = numbers[String(levels[0])] else { return }
        switch levels[1] {
        case "dev":
            let matched = Self.hexField(m.payload).map { ledger.arrived($0, at: now) != nil } ?? false
            state.withLock { s in
                guard s.counting else { return }
                s.counts[gateway].values += 1
                if !matched { s.counts[gateway].unmatched += 1 }
            }
        case "adv":
            // A retained message delivered on subscribing is an old one, not one published now.
            guard !m.retain else { return }
            state.withLock { s in
                if !m.payload.isEmpty { s.advertisementTopics.insert(m.topic) }
                if s.counting { s.counts[gateway].advertisements += 1 }
            }
        case "status" where levels.count == 2:
            let online = m.payload == Array("online".utf8)
            state.withLock { s in
                if online { s.online.insert(gateway) } else { s.online.remove(gateway) }
            }
        case "reply":
            guard let id = (try? JSONSerialization.jsonObject(with: Data(m.payload))) .flatMap({ ($0 as? [String: Any])?["id"] as? String }) else { return }
            state.withLock { $0.replies[id] = m.payload }
        default:
            break
        }
    }

    /// The bytes of the `"hex":"…"` field of a value's JSON (docs/GATEWAY.md#payloads), read
    /// in place: no JSON parse on the hot path.
    static func hexField(_ payload: [UInt8]) -> [UInt8]? {
        let key = Array("\"hex\":\"".utf8)
        guard payload.count > key.count else { return nil }
        var start: Int?
        for i in 0...(payload.count - key.count) where payload[i] == key[0] {
            if payload[i..<(i + key.count)].elementsEqual(key) {
                start = i + key.count
                break
            }
        }
        guard var i = start else { return nil }
        var bytes: [UInt8] = []
        func digit(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while i + 1 < payload.count, let hi = digit(payload[i]), let lo = digit(payload[i + 1]) {
            bytes.append(hi << 4 | lo)
            i += 2
        }
        return i < payload.count && payload[i] == UInt8(ascii: "\"") ? bytes : nil
    }
}

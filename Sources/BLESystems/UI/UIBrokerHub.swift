import BLEHTTP
import BLEMQTT
import Synchronization

/// The state of `ble ui --broker` between the MQTT client's thread and the pages: the
/// `UIBrokerModel`, whether the broker is up, the pages' event streams and the commands waiting
/// for their replies, under one lock. Messages are applied as the client hands them over
/// (parsing one is bounded by the model's payload limit, so the network thread never waits
/// long); each page stream is bounded and gets the newest events when its browser is slow.
final class UIBrokerHub: Sendable {
    /// What a page stream carries.
    enum Kind: Sendable, Equatable {
        /// The whole picture (`broker` events), at most every `UIBrokerApp.overviewInterval`.
        case overview
        /// One device's heart-rate measurements (`heart-rate` events, as `/heart-rate/ADDRESS`'s script reads them).
        case heartRate(String)
        /// One device's accelerometer samples (`accel` events, as `/accel/ADDRESS`'s script reads them).
        case acceleration(String)
    }

    /// One page's stream.
    struct Listener {
        /// What it carries.
        var kind: Kind
        /// Where its events go.
        var continuation: AsyncStream<[UInt8]>.Continuation
    }

    /// Everything under the lock.
    struct State {
        /// What the gateways said.
        var model: UIBrokerModel
        /// Whether a broker session is up.
        var connected = false
        /// The broker connection in words: connecting, connected, or why it went down.
        var brokerStatus = "connecting"
        /// Changed since the last overview sent.
        var dirty = true
        /// The pages' streams, by identifier.
        var listeners: [UInt64: Listener] = [:]
        /// The last stream identifier given.
        var nextID: UInt64 = 0
        /// Commands sent, by their identifier, waiting for the reply's payload.
        var pending: [String: CheckedContinuation<[UInt8]?, Never>] = [:]
        /// Devices whose accelerometer pages are paused (`POST /api/accel/pause`).
        var paused: Set<String> = []
        /// Set by `stop`: nothing new starts.
        var stopped = false
    }

    /// The most page streams at once (the server's connection limit is lower still).
    static let maximumListeners = 64
    /// The most commands waiting for replies at once.
    static let maximumPending = 16
    /// Events a value stream holds for a slow page: the replayed history and some.
    static let valueBuffer = 400
    /// Accelerometer samples a page opened later is given (the chart's 30 s at 5 Hz).
    static let replayedSamples = 150

    /// The state, under its lock.
    let state: Mutex<State>
    /// The broker, as the page names it.
    let broker: String
    /// Where this UI's command replies arrive.
    let replyTopic: String

    /// A hub over `model`, naming `broker` to the pages and taking replies on `replyTopic`.
    init(model: UIBrokerModel, broker: String, replyTopic: String) {
        state = Mutex(State(model: model))
        self.broker = broker
        self.replyTopic = replyTopic
    }

    // MARK: From the client

    /// One event of the MQTT client; `now` is Unix milliseconds.
    func handle(_ event: MQTTEvent, now: Int) {
        switch event {
        case .connected:
            state.withLock { $0.connected = true; $0.brokerStatus = "connected"; $0.dirty = true }
        case let .disconnected(reason, retryIn):
            state.withLock { $0.connected = false; $0.brokerStatus = "\(reason); trying again in \(retryIn)"; $0.dirty = true }
        case let .message(m):
            receive(m, now: now)
        case .acknowledged:
            break
        }
    }

    /// A message: a reply to one of this UI's commands, or a gateway's topic for the model.
    func receive(_ m: MQTTMessage, now: Int) {
        if m.topic == replyTopic {
            reply(m)
            return
        }
        state.withLock { s in
            let update = s.model.receive(topic: m.topic, payload: m.payload, now: now)
            switch update {
            case .unchanged:
                return
            case let .heartRate(address, value):
                let event = UIHeartRateApp.event("measurement", UIBrokerModel.fields(value))
                for l in s.listeners.values where l.kind == .heartRate(address) { l.continuation.yield(event) }
            case let .acceleration(address, value):
                // Paused: not sent (decided under the lock, as the pause is: no sample follows its event).
                guard !s.paused.contains(address) else { break }
                let event = UIAccelApp.event("sample", UIBrokerModel.fields(value) + [("recorded", .int(s.model.accelerationCount(address)))])
                for l in s.listeners.values where l.kind == .acceleration(address) { l.continuation.yield(event) }
            case .gateway, .device, .ignored:
                break
            }
            s.dirty = true
        }
    }

    /// A reply on this UI's topic: handed to the command waiting for it, if any.
    private func reply(_ m: MQTTMessage) {
        // The correlation data is the command's identifier; a reply without it names it in `id`.
        let id = m.correlationData.map { String(decoding: $0, as: UTF8.self) }
            ?? UIBrokerPayloads.object(m.payload).flatMap { UIBrokerPayloads.string($0["id"]) }
        guard let id, m.payload.count <= UIBrokerApp.maximumReply else { return }
        let waiting = state.withLock { $0.pending.removeValue(forKey: id) }
        waiting?.resume(returning: m.payload)
    }

    // MARK: To the pages

    /// The whole picture as `GET /api/broker` answers it.
    func overviewJSON() -> String {
        state.withLock { s in
            JSON.object([("broker", .string(broker)), ("connected", .bool(s.connected)), ("brokerStatus", .string(s.brokerStatus))]
                        + s.model.overviewFields()).text
        }
    }

    /// Sends the overview to its streams if anything changed since the last time.
    func flush() {
        let listeners = state.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            guard s.dirty else { return [] }
            s.dirty = false
            return s.listeners.values.filter { $0.kind == .overview }.map(\.continuation)
        }
        guard !listeners.isEmpty else { return }
        let event = ServerSentEvents.event(overviewJSON(), name: "broker")
        for l in listeners { l.yield(event) }
    }

    /// A new page stream of `kind`: what is known now (the overview, or the device's kept
    /// values and its pause), then every change. Nil past `maximumListeners` or once stopped.
    func listen(_ kind: Kind) -> AsyncStream<[UInt8]>? {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(kind == .overview ? 1 : Self.valueBuffer))
        let overview = kind == .overview ? ServerSentEvents.event(overviewJSON(), name: "broker") : nil
        let id = state.withLock { s -> UInt64? in
            guard !s.stopped, s.listeners.count < Self.maximumListeners else { return nil }
            s.nextID += 1
            s.listeners[s.nextID] = Listener(kind: kind, continuation: continuation)
            // The replay under the lock, so no value falls between it and the live ones.
            switch kind {
            case .overview:
                if let overview { continuation.yield(overview) }
            case let .heartRate(address):
                for m in s.model.heartRates(address) { continuation.yield(UIHeartRateApp.event("measurement", UIBrokerModel.fields(m))) }
            case let .acceleration(address):
                let paused = s.paused.contains(address)
                continuation.yield(UIAccelApp.event("paused", [("paused", .bool(paused))]))
                if !paused {
                    let count = s.model.accelerationCount(address)
                    for a in s.model.accelerations(address).suffix(Self.replayedSamples) {
                        continuation.yield(UIAccelApp.event("sample", UIBrokerModel.fields(a) + [("recorded", .int(count))]))
                    }
                }
            }
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return nil
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) } }
        return stream
    }

    /// Pauses or resumes the accelerometer pages of `address`, telling them.
    func setPaused(_ address: String, _ paused: Bool) {
        state.withLock { s in
            if paused { s.paused.insert(address) } else { s.paused.remove(address) }
            let event = UIAccelApp.event("paused", [("paused", .bool(paused))])
            for l in s.listeners.values where l.kind == .acceleration(address) { l.continuation.yield(event) }
        }
    }

    // MARK: Commands

    /// Registers command `id`, runs `send` (which publishes it), and waits for its reply's
    /// payload; nil when `send` throws (the error goes to `failed`), when too many commands
    /// wait, or when no reply comes before `expire(id)` is called or the hub stops.
    func request(_ id: String, send: () -> Bool) async -> [UInt8]? {
        await withCheckedContinuation { (c: CheckedContinuation<[UInt8]?, Never>) in
            let accepted = state.withLock { s -> Bool in
                guard !s.stopped, s.pending.count < Self.maximumPending else { return false }
                s.pending[id] = c
                return true
            }
            guard accepted else { return c.resume(returning: nil) }
            if !send() { expire(id) }
        }
    }

    /// Gives up waiting for command `id`'s reply.
    func expire(_ id: String) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.resume(returning: nil)
    }

    /// Ends every page stream and every wait; nothing starts after it.
    func stop() {
        let (listeners, pending) = state.withLock { s in
            s.stopped = true
            defer { s.listeners = [:]; s.pending = [:] }
            return (Array(s.listeners.values), Array(s.pending.values))
        }
        listeners.forEach { $0.continuation.finish() }
        pending.forEach { $0.resume(returning: nil) }
    }
}

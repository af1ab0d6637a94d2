import BLE
import BLEHTTP
import Synchronization

/// The bookkeeping of the screens that follow one device (`/heart-rate/ADDRESS`,
/// `/accel/ADDRESS`): one flow per address whatever the number of pages, started by the first
/// page and stopped when the last one leaves; each page is given what happened so far (the
/// newest event of each kind of state, then the newest of the others), then every event as it
/// is decided. A page that reads slowly keeps the newest events and loses older ones, never
/// holding the radio. `Extra` is what a screen keeps per session besides (the accelerometer's
/// pause).
final class UIDeviceFlows<Extra: Sendable>: Sendable {
    struct Session: Sendable {
        /// Which flow this is: a flow that ends after its session was replaced (the last page
        /// left, a new one came) must not touch the new session.
        let generation: UInt64
        /// Set by the first page, so that a second one arriving at once does not start another.
        var started = false
        var task: Task<Void, Never>?
        var viewers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        /// The newest event of each kind of state, by kind.
        var state: [String: [UInt8]] = [:]
        /// The newest of the other events (measurements, samples).
        var recent: [[UInt8]] = []
        var extra: Extra

        /// Keeps `event` (under `key`, or among the recent ones, at most `recentLimit`) and sends
        /// it to every page. Called under the sessions' lock, so every page gets the events in
        /// the order they were decided; a yield never waits.
        mutating func keep(_ event: [UInt8], key: String?, recentLimit: Int) {
            if let key {
                state[key] = event
            } else {
                recent.append(event)
                if recent.count > recentLimit { recent.removeFirst(recent.count - recentLimit) }
            }
            viewers.values.forEach { $0.yield(event) }
        }
    }

    /// The kinds of state a page opened later is given, in this order.
    private let replayedState: [String]
    /// How many of the newest other events it is given.
    let replayedRecent: Int
    private let extra: Extra
    private let sessions = Mutex<[DeviceAddress: Session]>([:])
    private let nextViewer = Atomic<UInt64>(0)
    /// Set by `stop` (under the sessions' lock): no flow starts after it.
    private let stopped = Atomic<Bool>(false)

    /// Flows whose late pages get the `replayedState` kinds and `replayedRecent` other events;
    /// each new session starts with `extra`.
    init(replayedState: [String], replayedRecent: Int, extra: Extra) {
        self.replayedState = replayedState
        self.replayedRecent = replayedRecent
        self.extra = extra
    }

    /// A page's stream for `address`: what happened so far, then every event. The first page
    /// calls `start` with the new session's generation (the caller starts the flow and gives
    /// its task to `attach`). After `stop`, or when `limit` sessions of other devices are live
    /// (the page then gets `refusal` first), no flow starts and the stream ends.
    func watch(_ address: DeviceAddress, limit: Int = .max, refusal: [UInt8] = [], start: (UInt64) -> Void) -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(replayedRecent + 16))
        let id = nextViewer.add(1, ordering: .relaxed).newValue
        let starts = sessions.withLock { s -> UInt64?? in
            guard !stopped.load(ordering: .relaxed) else { return nil }
            if s[address] == nil, s.count >= limit {
                continuation.yield(refusal)
                return nil
            }
            var session = s[address] ?? Session(generation: id, extra: extra)
            for key in replayedState { if let e = session.state[key] { continuation.yield(e) } }
            session.recent.forEach { continuation.yield($0) }
            session.viewers[id] = continuation
            let starts = session.started ? nil : session.generation
            session.started = true
            s[address] = session
            return .some(starts)
        }
        guard let starts else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.leave(address, id) }
        continuation.yield(ServerSentEvents.keepAlive)
        if let generation = starts { start(generation) }
        return stream
    }

    /// Gives the session of `generation` its flow's task; a session already gone (its last
    /// page left meanwhile, or `stop`) has the task cancelled instead.
    func attach(_ task: Task<Void, Never>, to address: DeviceAddress, generation: UInt64) {
        let stale = sessions.withLock { s -> Bool in
            guard s[address]?.generation == generation else { return true }
            s[address]?.task = task
            return false
        }
        if stale { task.cancel() }
    }

    /// Runs `body` on the session of `address` under the sessions' lock (only the one of
    /// `generation`, when given); nil when there is none.
    func update<R: Sendable>(_ address: DeviceAddress, generation: UInt64? = nil, _ body: (inout Session) -> R) -> R? {
        sessions.withLock { s -> R? in
            guard var session = s[address], generation == nil || session.generation == generation else { return nil }
            let result = body(&session)
            s[address] = session
            return result
        }
    }

    /// Sends `event` to the pages of the session of `generation`, and keeps it for pages opened
    /// later: under `key` (the newest of each kind of state), or among the recent ones. `once`:
    /// only if nothing is kept under `key` yet.
    func send(_ address: DeviceAddress, _ generation: UInt64, key: String?, _ event: [UInt8], once: Bool = false) {
        let limit = replayedRecent
        _ = update(address, generation: generation) { session in
            if once, let key, session.state[key] != nil { return }
            session.keep(event, key: key, recentLimit: limit)
        }
    }

    /// Runs `body` with the addresses followed now, under the sessions' lock (so none starts
    /// or ends meanwhile; a lock `body` takes comes after this one).
    func withFollowed<R: Sendable>(_ body: (_ followed: (DeviceAddress) -> Bool) -> R) -> R {
        sessions.withLock { s in body { s[$0] != nil } }
    }

    /// The flow ended by itself: the pages' streams end, and a page opened later starts anew.
    func finish(_ address: DeviceAddress, _ generation: UInt64) {
        let viewers = sessions.withLock { s -> [AsyncStream<[UInt8]>.Continuation] in
            guard let session = s[address], session.generation == generation else { return [] }
            s[address] = nil
            return Array(session.viewers.values)
        }
        viewers.forEach { $0.finish() }
    }

    /// Ends every flow and every page's stream; no flow starts after it.
    func stop() {
        let all = sessions.withLock { s -> [Session] in
            stopped.store(true, ordering: .relaxed)
            defer { s = [:] }
            return Array(s.values)
        }
        for s in all {
            s.task?.cancel()
            s.viewers.values.forEach { $0.finish() }
        }
    }

    private func leave(_ address: DeviceAddress, _ id: UInt64) {
        let ending = sessions.withLock { s -> Task<Void, Never>?? in
            s[address]?.viewers[id] = nil
            guard let session = s[address], session.viewers.isEmpty else { return nil }
            s[address] = nil
            return .some(session.task)
        }
        // The last page went away: the flow stops (and disconnects).
        if case let .some(task) = ending { task?.cancel() }
    }
}

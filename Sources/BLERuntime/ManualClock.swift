import Synchronization

/// A clock that moves only when told to: tests advance it past a protocol timer (a command
/// timeout, a connect deadline, the ATT transaction timeout) without waiting in real time.
public final class ManualClock: BLEClock {
    private struct Sleeper {
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        let condition: @Sendable ([Duration]) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var now: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        var watchers: [UInt64: Watcher] = [:]
        /// Watchers whose bound ran out before they were registered.
        var expired: Set<UInt64> = []

        var deadlines: [Duration] { sleepers.values.map(\.deadline) }

        /// The watchers whose condition now holds, taken out.
        mutating func satisfiedWatchers() -> [Watcher] {
            let d = deadlines
            let met = watchers.filter { $0.value.condition(d) }
            for id in met.keys { watchers[id] = nil }
            return Array(met.values)
        }
    }

    private let state = Mutex(State())

    /// A clock at time zero with nobody sleeping.
    public init() {}

    /// The time the test has advanced the clock to (zero at first).
    public func now() -> Duration { state.withLock { $0.now } }

    /// Number of tasks sleeping on this clock (lets a test wait until a timer is armed).
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline anyone sleeps until.
    public var nextDeadline: Duration? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    /// Sleeps until `advance(by:)` reaches `deadline` (at once if it has), or throws
    /// `CancellationError`.
    public func sleep(until deadline: Duration) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let (resumeNow, met) = state.withLock { s -> (Bool, [Watcher]) in
                    if Task.isCancelled || deadline <= s.now { return (true, []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    return (false, s.satisfiedWatchers())
                }
                for w in met { w.continuation.resume(returning: true) }
                if resumeNow {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let (s, met) = state.withLock { ($0.sleepers.removeValue(forKey: id), $0.satisfiedWatchers()) }
            s?.continuation.resume(throwing: CancellationError())
            for w in met { w.continuation.resume(returning: true) }
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let (due, met) = state.withLock { s -> ([Sleeper], [Watcher]) in
            s.now += duration
            let now = s.now
            let due = s.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { s.sleepers[id] = nil }
            return (Array(due.values), s.satisfiedWatchers())
        }
        for s in due { s.continuation.resume() }
        for w in met { w.continuation.resume(returning: true) }
    }

    /// Waits until `condition` holds of the deadlines slept until now (checked as each sleeper
    /// comes or goes: an event, not a poll), or `bound` of real time passes (false): how a test
    /// waits until a timer is armed.
    @discardableResult
    public func waitForSleepers(within bound: Duration, _ condition: @escaping @Sendable ([Duration]) -> Bool) async -> Bool {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        let expiry = Task {
            try? await Task.sleep(for: bound)
            let w = state.withLock { s -> Watcher? in
                guard let w = s.watchers.removeValue(forKey: id) else { s.expired.insert(id); return nil }
                return w
            }
            w?.continuation.resume(returning: false)
        }
        defer {
            expiry.cancel()
            _ = state.withLock { $0.expired.remove(id) }
        }
        return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let answer = state.withLock { s -> Bool? in
                if condition(s.deadlines) { return true }
                if s.expired.contains(id) { return false }
                s.watchers[id] = Watcher(condition: condition, continuation: c)
                return nil
            }
            if let answer { c.resume(returning: answer) }
        }
    }
}

import Synchronization

/// A clock that moves only when told to: tests advance it past a protocol timer (a command
/// timeout, a connect deadline, the ATT transaction timeout) without waiting in real time.
public final class ManualClock: BLEClock {
    private struct Sleeper {
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
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
                let resumeNow = state.withLock { s -> Bool in
                    if Task.isCancelled || deadline <= s.now { return true }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    return false
                }
                if resumeNow {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let s = state.withLock { $0.sleepers.removeValue(forKey: id) }
            s?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.now += duration
            let now = s.now
            let due = s.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { s.sleepers[id] = nil }
            return Array(due.values)
        }
        for s in due { s.continuation.resume() }
    }
}

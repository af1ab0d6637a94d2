import BLERuntime
import Foundation
import Synchronization

/// Virtual time for a whole simulated world: one clock and one executor together. Every task of
/// the world (hosts, radio, the test or demo driving them) runs on this executor's single
/// thread; whenever that thread has nothing left to run, the clock jumps straight to the
/// earliest sleeper's deadline and wakes it. A 10-second scan timeout therefore passes in
/// microseconds, and the order of events depends only on the code, not on the machine's speed or
/// load (issue 4, "Time").
///
/// Use it through `run(_:)`, which starts the world's first task with this executor as its
/// preference. Library code that starts unstructured tasks passes the clock's `taskExecutor`
/// (`Task(executorPreference:)`), so they stay in the world too. Code in the world must sleep on
/// this clock, never on `Task.sleep`: a real-time sleep would let virtual time run ahead.
public final class VirtualTime: TaskExecutor, BLEClock, @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`; `thread` is set once in init.
    private struct Sleeper {
        let deadline: Duration
        let sequence: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var jobs: [UnownedJob] = []
        var head = 0
        var now: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextSequence: UInt64 = 0
        var finished = false
        var jumps = 0
    }

    private let condition = NSCondition()
    private var state = State()
    /// Virtual time never passes this point: a world whose next deadline lies beyond it (a
    /// periodic timer with nobody waiting for the end) has every sleeper woken with
    /// `VirtualTimeError.limitReached`, so the world unwinds with an error instead of spinning
    /// forever or hanging.
    public let limit: Duration

    /// - Parameter limit: how far virtual time may run (default one day).
    public init(limit: Duration = .seconds(86_400)) {
        self.limit = limit
        // The thread holds the clock until `finish()` lets it exit.
        let thread = Thread { self.runLoop() }
        thread.name = "VirtualTime"
        thread.start()
    }

    /// Runs `body` as the world's first task, in virtual time, and returns its result. The
    /// calling task itself runs `body` with this executor as its preference, so cancelling the
    /// caller cancels the world's work. When it returns, every task still sleeping on this clock
    /// is woken with `CancellationError` and the executor hands any later work to the global
    /// executor, so nothing is left hanging.
    public static func run<T: Sendable>(limit: Duration = .seconds(86_400),
                                        _ body: @escaping @Sendable (VirtualTime) async throws -> T) async throws -> T {
        let time = VirtualTime(limit: limit)
        defer { time.finish() }
        return try await withTaskExecutorPreference(time) { try await body(time) }
    }

    // MARK: BLEClock

    public func now() -> Duration {
        condition.lock()
        defer { condition.unlock() }
        return state.now
    }

    /// The executor tasks of this world must prefer.
    public var taskExecutor: (any TaskExecutor)? { self }

    /// How many times the clock has jumped (for tests and the benchmark's diagnostics).
    public var jumps: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.jumps
    }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    public func sleep(until deadline: Duration) async throws {
        let id = locked { s -> UInt64 in
            s.nextSequence += 1
            return s.nextSequence
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                condition.lock()
                let cancelled = Task.isCancelled || state.finished
                let due = deadline <= state.now
                if !cancelled && !due {
                    state.sleepers[id] = Sleeper(deadline: deadline, sequence: id, continuation: c)
                    condition.signal()
                }
                condition.unlock()
                if cancelled { c.resume(throwing: CancellationError()) } else if due { c.resume() }
            }
        } onCancel: {
            condition.lock()
            let s = state.sleepers.removeValue(forKey: id)
            condition.unlock()
            s?.continuation.resume(throwing: CancellationError())
        }
    }

    // MARK: TaskExecutor

    public func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        if state.finished {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        state.jobs.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }

    // MARK: The world's thread

    /// Real seconds of complete idleness before the world reports itself stalled.
    static let stallReport: TimeInterval = 30

    private func runLoop() {
        let me = asUnownedTaskExecutor()
        var stallReported = false
        var overdue: [CheckedContinuation<Void, any Error>] = []
        while true {
            condition.lock()
            var job: UnownedJob?
            var woken: [CheckedContinuation<Void, any Error>] = []
            while job == nil && woken.isEmpty && overdue.isEmpty {
                if state.head < state.jobs.count {
                    job = state.jobs[state.head]
                    state.head += 1
                    if state.head > 1024 && state.head * 2 > state.jobs.count {
                        state.jobs.removeFirst(state.head)
                        state.head = 0
                    }
                } else if state.finished {
                    condition.unlock()
                    return
                } else if let due = jumpToNextDeadline() {
                    woken = due
                } else if !state.sleepers.isEmpty {
                    // Everything left sleeps past the limit: fail them all.
                    overdue = state.sleepers.values.sorted { $0.sequence < $1.sequence }.map(\.continuation)
                    state.sleepers = [:]
                    break
                } else if !condition.wait(until: Date(timeIntervalSinceNow: Self.stallReport)) && !stallReported
                            && state.head >= state.jobs.count && state.sleepers.isEmpty && !state.finished {
                    // Nothing runs and nothing sleeps: only work from outside the world can
                    // wake it. Say so once (a deadlock in the world looks like this).
                    stallReported = true
                    FileHandle.standardError.write(Data("VirtualTime: no task has run for \(Int(Self.stallReport)) s and none sleeps on the clock; the world waits for something outside it (or is deadlocked)\n".utf8))
                }
            }
            condition.unlock()
            for c in overdue { c.resume(throwing: VirtualTimeError.limitReached(limit)) }
            overdue = []
            // Resuming enqueues the sleepers' tasks (on this executor, in deadline order).
            for c in woken { c.resume() }
            job?.runSynchronously(on: me)
        }
    }

    /// Called with the lock held and no job queued: moves `now` to the earliest deadline (not
    /// past `limit`) and removes the sleepers due then, in (deadline, arrival) order.
    private func jumpToNextDeadline() -> [CheckedContinuation<Void, any Error>]? {
        guard let next = state.sleepers.values.min(by: { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }),
              next.deadline <= limit else { return nil }
        if next.deadline > state.now {
            state.now = next.deadline
            state.jumps += 1
        }
        let due = state.sleepers.values.filter { $0.deadline <= state.now }.sorted { $0.sequence < $1.sequence }
        for s in due { state.sleepers[s.sequence] = nil }
        return due.map(\.continuation)
    }

    /// Ends the world: sleepers get `CancellationError`, queued and later jobs go to the global
    /// executor, and the thread exits.
    public func finish() {
        condition.lock()
        guard !state.finished else {
            condition.unlock()
            return
        }
        state.finished = true
        let pending = Array(state.jobs[state.head...])
        state.jobs = []
        state.head = 0
        let sleepers = Array(state.sleepers.values)
        state.sleepers = [:]
        condition.signal()
        condition.unlock()
        for job in pending { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        for s in sleepers { s.continuation.resume(throwing: CancellationError()) }
    }
}

/// Why a sleep on a `VirtualTime` clock failed.
public enum VirtualTimeError: Error, Equatable, CustomStringConvertible {
    /// The world's next deadline lies beyond the clock's limit.
    case limitReached(Duration)

    public var description: String {
        switch self {
        case let .limitReached(limit): return "virtual time reached its limit of \(limit) with the world still waiting"
        }
    }
}

import BLERuntime
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Virtual time for a whole simulated world: one clock and one executor together. Every task of
/// the world (hosts, radio, the test or demo driving them) runs on this executor's single
/// thread; whenever that thread has nothing left to run, the clock jumps straight to the
/// earliest sleeper's deadline and wakes it. A 10-second scan timeout therefore passes in
/// microseconds, and the order of events depends only on the code, not on the machine's speed or
/// load.
///
/// Use it through `run(_:)`, which starts the world's first task with this executor as its
/// preference. Library code that starts unstructured tasks passes the clock's `taskExecutor`
/// (`Task(executorPreference:)`), so they stay in the world too. Code in the world must sleep on
/// this clock, never on `Task.sleep`: a real-time sleep would let virtual time run ahead.
public final class VirtualTime: TaskExecutor, BLEClock {
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
        /// Work outside the world that the clock waits for instead of jumping
        /// (`beginOutsideWork`): while it is above zero, an idle world waits for work.
        var outsideWork = 0
        /// The world's thread found nothing to do and waits on its latch: only then does new
        /// work need to signal it (no system call per job while the world is busy).
        var idle = false
        /// Called once the world's thread next finds nothing to do (`whenIdle`, for tests).
        var idleWaiters: [@Sendable () -> Void] = []

        var hasNothingToDo: Bool { head >= jobs.count && sleepers.isEmpty && !finished && outsideWork == 0 }
        /// Nothing to run, and time is held for outside work: only its end lets the world go on.
        var waitsOnlyForOutsideWork: Bool { head >= jobs.count && !finished && outsideWork > 0 }
        /// How many times the world reported itself stalled (for tests).
        var stallReports = 0

        /// Marks the thread awake again; true if it was idle and so needs a signal.
        mutating func wakeIfIdle() -> Bool {
            defer { idle = false }
            return idle
        }
    }

    /// What the world's thread does next: decided with the lock held, carried out without it
    /// (resuming a continuation enqueues a job, which takes the lock again).
    private enum Step {
        case run(UnownedJob)
        case wake([CheckedContinuation<Void, any Error>])
        case failPastLimit([CheckedContinuation<Void, any Error>])
        /// Nothing to do: the `whenIdle` callbacks to make, then a wait for work.
        case waitForWork([@Sendable () -> Void])
        case exit
    }

    private let state = Mutex(State())
    private let thread = VirtualTimeThread()
    /// Virtual time never passes this point: a world whose next deadline lies beyond it (a
    /// periodic timer with nobody waiting for the end) has every sleeper woken with
    /// `VirtualTimeError.limitReached`, so the world unwinds with an error instead of spinning
    /// forever or hanging.
    public let limit: Duration

    /// Real time of complete idleness before the world reports itself stalled (once).
    public let stallReport: Duration

    /// - Parameters:
    ///   - limit: how far virtual time may run (default one day).
    ///   - stallReport: real time with nothing to run after which the world says on standard
    ///     error that it waits for something outside it (default 30 s).
    public init(limit: Duration = .seconds(86_400), stallReport: Duration = .seconds(30)) {
        self.limit = limit
        self.stallReport = stallReport
        // The thread holds the clock until `finish()` lets it exit.
        thread.start(name: "VirtualTime") { self.runLoop() }
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
        state.withLock { $0.now }
    }

    /// The executor tasks of this world must prefer.
    public var taskExecutor: (any TaskExecutor)? { self }

    /// How many times the clock has jumped (for tests and the benchmark's diagnostics).
    public var jumps: Int {
        state.withLock { $0.jumps }
    }

    /// How many times the world has reported itself stalled on standard error (at most once
    /// per world; for tests).
    public var stallReports: Int {
        state.withLock { $0.stallReports }
    }

    /// Calls `body` once the world's thread finds nothing to run and waits for work (now, if
    /// it already does): for tests that must act only once the world is idle, instead of
    /// guessing how long that takes. `body` runs on the world's thread or the caller's, and
    /// must not block.
    func whenIdle(_ body: @escaping @Sendable () -> Void) {
        let idle = state.withLock { s -> Bool in
            if !s.idle { s.idleWaiters.append(body) }
            return s.idle
        }
        if idle { body() }
    }

    /// Holds time still: until the matching `endOutsideWork`, a world with nothing to run waits
    /// for work instead of jumping to the next deadline (a file read on a Dispatch thread takes
    /// no virtual time, and a 30-second timeout must not run out during it). The held work must
    /// not wait on this clock: time cannot pass until it ends (the world then reports itself
    /// stalled after `stallReport`).
    public func beginOutsideWork() {
        state.withLock { $0.outsideWork += 1 }
    }

    /// Lets time move again once no outside work is left, waking an idle world so it can jump.
    public func endOutsideWork() {
        let signal = state.withLock { s -> Bool in
            assert(s.outsideWork > 0, "endOutsideWork without a matching beginOutsideWork")
            s.outsideWork = max(0, s.outsideWork - 1)
            return s.outsideWork == 0 && s.wakeIfIdle()
        }
        if signal { thread.signal() }
    }

    private enum Parking {
        case parked(signal: Bool)
        case due
        case cancelled
    }

    public func sleep(until deadline: Duration) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextSequence += 1
            return s.nextSequence
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                // `Task.isCancelled` is read under the lock the cancellation handler also takes:
                // a cancel from another thread either lands before this (the sleep ends at
                // once) or finds the sleeper parked and removes it, never in between.
                let parking = state.withLock { s -> Parking in
                    if Task.isCancelled || s.finished { return .cancelled }
                    if deadline <= s.now { return .due }
                    s.sleepers[id] = Sleeper(deadline: deadline, sequence: id, continuation: c)
                    return .parked(signal: s.wakeIfIdle())
                }
                switch parking {
                case .cancelled: c.resume(throwing: CancellationError())
                case .due: c.resume()
                case let .parked(signal): if signal { thread.signal() }
                }
            }
        } onCancel: {
            let s = state.withLock { $0.sleepers.removeValue(forKey: id) }
            s?.continuation.resume(throwing: CancellationError())
        }
    }

    // MARK: TaskExecutor

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = state.withLock { s -> (accepted: Bool, signal: Bool) in
            if s.finished { return (false, false) }
            s.jobs.append(job)
            return (true, s.wakeIfIdle())
        }
        if !queued.accepted {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        } else if queued.signal {
            thread.signal()
        }
    }

    // MARK: The world's thread

    private func runLoop() {
        let me = asUnownedTaskExecutor()
        var stallReported = false
        while true {
            switch state.withLock({ nextStep(&$0) }) {
            case let .run(job):
                job.runSynchronously(on: me)
            case let .wake(due):
                // Resuming enqueues the sleepers' tasks (on this executor, in deadline order).
                for c in due { c.resume() }
            case let .failPastLimit(overdue):
                for c in overdue { c.resume(throwing: VirtualTimeError.limitReached(limit)) }
            case .exit:
                return
            case let .waitForWork(idleWaiters):
                for body in idleWaiters { body() }
                guard !thread.wait(timeout: stallReport), !stallReported else { break }
                // Nothing runs and nothing sleeps (or time is held): only work from outside the
                // world can wake it. Say so once (a deadlock in the world looks like this).
                let stall = state.withLock { s -> String? in
                    let seconds = stallReport.components.seconds
                    let report: String
                    if s.hasNothingToDo {
                        report = "no task has run for \(seconds) s and none sleeps on the clock; the world waits for something outside it (or is deadlocked)"
                    } else if s.waitsOnlyForOutsideWork {
                        report = "no task has run for \(seconds) s and time is held for \(s.outsideWork) outside work (whileOutsideWork); the world waits for it to end (a deadlock if it waits on this clock)"
                    } else {
                        return nil
                    }
                    s.stallReports += 1
                    return report
                }
                if let stall {
                    stallReported = true
                    Self.writeToStandardError("VirtualTime: \(stall)\n")
                }
            }
        }
    }

    /// Called with the lock held: the next queued job, else the sleepers due at the next
    /// deadline, else (everything left sleeps past the limit) all sleepers to fail, else a wait.
    private func nextStep(_ s: inout State) -> Step {
        if s.head < s.jobs.count {
            let job = s.jobs[s.head]
            s.head += 1
            if s.head > 1024 && s.head * 2 > s.jobs.count {
                s.jobs.removeFirst(s.head)
                s.head = 0
            }
            return .run(job)
        }
        if s.finished { return .exit }
        if s.outsideWork > 0 { return goIdle(&s) }
        if let due = jumpToNextDeadline(&s) { return .wake(due) }
        if !s.sleepers.isEmpty {
            let overdue = s.sleepers.values.sorted { $0.sequence < $1.sequence }.map(\.continuation)
            s.sleepers = [:]
            return .failPastLimit(overdue)
        }
        return goIdle(&s)
    }

    /// Called with the lock held: the thread is about to wait for work.
    private func goIdle(_ s: inout State) -> Step {
        s.idle = true
        defer { s.idleWaiters = [] }
        return .waitForWork(s.idleWaiters)
    }

    /// Called with the lock held and no job queued: moves `now` to the earliest deadline (not
    /// past `limit`) and removes the sleepers due then, in (deadline, arrival) order.
    private func jumpToNextDeadline(_ s: inout State) -> [CheckedContinuation<Void, any Error>]? {
        guard let next = s.sleepers.values.min(by: { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }),
              next.deadline <= limit else { return nil }
        if next.deadline > s.now {
            s.now = next.deadline
            s.jumps += 1
        }
        let now = s.now
        let due = s.sleepers.values.filter { $0.deadline <= now }.sorted { $0.sequence < $1.sequence }
        for sleeper in due { s.sleepers[sleeper.sequence] = nil }
        return due.map(\.continuation)
    }

    /// The stall report goes straight to file descriptor 2: no Foundation, no buffering to lose
    /// if the process is then killed for hanging.
    private static func writeToStandardError(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }

    /// Ends the world: sleepers get `CancellationError`, queued and later jobs go to the global
    /// executor, and the thread exits.
    public func finish() {
        let ended = state.withLock { s -> (jobs: [UnownedJob], sleepers: [Sleeper])? in
            guard !s.finished else { return nil }
            s.finished = true
            s.idle = false
            let pending = Array(s.jobs[s.head...])
            s.jobs = []
            s.head = 0
            let sleepers = Array(s.sleepers.values)
            s.sleepers = [:]
            return (pending, sleepers)
        }
        guard let ended else { return }
        thread.signal()
        for job in ended.jobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        for s in ended.sleepers { s.continuation.resume(throwing: CancellationError()) }
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

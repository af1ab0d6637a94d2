#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The OS thread a `VirtualTime` world runs on, and the wake-up that thread sleeps on while the
/// world has nothing to do. Plain pthreads, not Foundation's `Thread` and `NSCondition`: the
/// virtual radio is part of the sans-IO core and must not pull Foundation into every program
/// that simulates a world.
///
/// The wake-up is a latch, not a bare condition variable: `signal()` sets a flag that the next
/// `wait(timeout:)` consumes, so a signal sent between the world deciding it is idle and it
/// starting to wait is never lost. The world's own state lives behind its `Mutex`; this lock
/// only guards the flag.
final class VirtualTimeThread: @unchecked Sendable {
    // @unchecked: `signalled` is only touched with `mutex` held; the pointers are set once.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var signalled = false

    /// A lowered latch; `start(name:_:)` starts the thread.
    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if canImport(Glibc)
        // Time-outs measured on the monotonic clock: a wall-clock step (NTP, a suspended
        // laptop) must not fire or postpone the stall report.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Raises the latch and wakes the thread if it waits.
    func signal() {
        pthread_mutex_lock(mutex)
        signalled = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until the latch is raised (lowering it again) or `timeout` has passed on the
    /// monotonic clock. Returns false on a time-out.
    func wait(timeout: Duration) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(attoseconds / 1_000_000_000)
        #if canImport(Glibc)
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += Int(seconds) + (deadline.tv_nsec + nanoseconds) / 1_000_000_000
        deadline.tv_nsec = (deadline.tv_nsec + nanoseconds) % 1_000_000_000
        while !signalled {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        #else
        // Darwin has no pthread_condattr_setclock; its relative wait is measured on a clock
        // that does not follow wall-clock steps either.
        var remaining = timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)
        while !signalled {
            if pthread_cond_timedwait_relative_np(condition, mutex, &remaining) == ETIMEDOUT { break }
        }
        #endif
        let raised = signalled
        signalled = false
        return raised
    }

    /// The closure a new thread runs, passed through pthread_create's one raw pointer.
    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts a detached thread (named `name` where the platform lets us) that runs `body` once
    /// (nobody joins it: the world ends by letting `body` return).
    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { raw in
            guard let raw else { return nil }
            // Unnamed on glibc: its Swift module hides pthread_setname_np, and declaring the C
            // function ourselves would rely on an unsupported calling convention.
            let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
            start.body()
            return nil
        }
        #else
        var thread: pthread_t?
        let entry: @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? = { raw in
            let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
            _ = pthread_setname_np(start.name)
            start.body()
            return nil
        }
        #endif
        let result = pthread_create(&thread, nil, entry, start)
        // Only the OS running out of threads gets here; a world without its thread could never
        // run a task, so there is nothing to fall back on.
        precondition(result == 0, "VirtualTime: pthread_create failed (\(result))")
        #if canImport(Glibc)
        pthread_detach(thread)
        #else
        if let thread { pthread_detach(thread) }
        #endif
    }
}

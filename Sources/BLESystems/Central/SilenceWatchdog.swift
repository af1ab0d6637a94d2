import BLERuntime
import Synchronization

/// Fails with `CentralFlowError.silent` when `limit` passes on the host's clock without a
/// `touch()`: the flows' "every operation ends", without a real-time sleep, so it also runs in
/// virtual time.
final class SilenceWatchdog: Sendable {
    private let lastHeard: Mutex<Duration>
    private let clock: any BLEClock
    private let limit: Duration
    private let what: String

    init(clock: any BLEClock, limit: Duration, waitingFor what: String) {
        self.clock = clock
        self.limit = limit
        self.what = what
        lastHeard = Mutex(clock.now())
    }

    /// Something arrived: the limit counts from now.
    func touch() {
        let now = clock.now()
        lastHeard.withLock { $0 = now }
    }

    /// Does not return: throws `.silent` once the limit has passed since the last touch, or
    /// `CancellationError`.
    func watch() async throws {
        while true {
            let deadline = lastHeard.withLock { $0 } + limit
            if clock.now() >= deadline { throw CentralFlowError.silent(waitingFor: what, limit: limit) }
            try await clock.sleep(until: deadline)
        }
    }
}

/// Runs `body` while `watchdog` watches; the first to finish wins and the other is cancelled.
func withWatchdog<T: Sendable>(_ watchdog: SilenceWatchdog, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await watchdog.watch()
            throw CancellationError()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}

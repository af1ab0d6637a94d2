/// Where the stack's time comes from (ARCHITECTURE.md: "time comes from a clock"). The one clock
/// protocol of the stack: hosts and the virtual radio both run on it, so one clock can drive a
/// whole world.
///
/// Protocol state machines take `now` as a `Duration` since the clock's origin and return
/// deadlines in the same terms; the host actor sleeps on this clock until the earliest one.
/// Production uses `SystemClock`; tests and the virtual radio supply a virtual one that jumps
/// to the next deadline (`VirtualTime`) or one moved by hand (`ManualClock`).
public protocol BLEClock: Sendable {
    /// Time elapsed since this clock's origin.
    func now() -> Duration
    /// Suspends until `deadline` (measured from the origin) or throws `CancellationError`.
    func sleep(until deadline: Duration) async throws
    /// The executor the stack's own tasks must prefer: nil in real time; in virtual time the
    /// world's executor (`VirtualTime`), so that every task stays inside the simulation.
    var taskExecutor: (any TaskExecutor)? { get }
    /// Work outside the clock's world has begun (a file read on another thread, a real socket):
    /// a virtual clock holds time still until the matching `endOutsideWork`, so the world's
    /// timeouts do not run out while it waits for something that takes no time in it. Real-time
    /// clocks do nothing. Use `whileOutsideWork(_:)`, which pairs the two.
    func beginOutsideWork()
    /// The work `beginOutsideWork` announced is over.
    func endOutsideWork()
}

extension BLEClock {
    /// No executor preference: real-time clocks let tasks run anywhere.
    public var taskExecutor: (any TaskExecutor)? { nil }

    /// Real time passes anyway: nothing to hold.
    public func beginOutsideWork() {}

    /// Real time passes anyway: nothing to release.
    public func endOutsideWork() {}

    /// Runs `body`, work that waits on something outside the clock's world, with time held
    /// still meanwhile (`beginOutsideWork`); what `body` returns or throws.
    public func whileOutsideWork<T, E: Error>(_ body: () async throws(E) -> T) async throws(E) -> T {
        beginOutsideWork()
        defer { endOutsideWork() }
        return try await body()
    }

    /// Suspends for `duration` from now, or throws `CancellationError`.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration)
    }
}

/// Wall time from `ContinuousClock`, with its origin at creation.
public struct SystemClock: BLEClock {
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    /// A clock whose origin is now.
    public init() { origin = clock.now }

    /// Wall time since the clock was made (monotonic: never jumps back).
    public func now() -> Duration { clock.now - origin }

    /// Sleeps in real time until `deadline` after the origin (1 ms tolerance), or throws
    /// `CancellationError`.
    public func sleep(until deadline: Duration) async throws {
        try await clock.sleep(until: origin + deadline, tolerance: .milliseconds(1))
    }
}

import BLEVirtualRadio

/// Where the stack's time comes from (ARCHITECTURE.md: "time comes from a clock").
///
/// Protocol state machines take `now` as a `Duration` since the clock's origin and return
/// deadlines in the same terms; the host actor sleeps on this clock until the earliest one.
/// Production uses `SystemHostClock`; tests and the virtual radio supply a virtual one that jumps
/// to the next deadline.
public protocol HostClock: Sendable {
    /// Time elapsed since this clock's origin.
    func now() -> Duration
    /// Suspends until `deadline` (measured from the origin) or throws `CancellationError`.
    func sleep(until deadline: Duration) async throws
    /// The executor the host's own tasks must prefer: nil in real time; in virtual time the
    /// world's executor (`VirtualTime`), so that every task stays inside the simulation.
    var taskExecutor: (any TaskExecutor)? { get }
}

extension HostClock {
    public var taskExecutor: (any TaskExecutor)? { nil }

    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration)
    }
}

/// Wall time from `ContinuousClock`, with its origin at creation.
public struct SystemHostClock: HostClock {
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    public init() { origin = clock.now }

    public func now() -> Duration { clock.now - origin }

    public func sleep(until deadline: Duration) async throws {
        try await clock.sleep(until: origin + deadline, tolerance: .milliseconds(1))
    }
}

/// Virtual time drives hosts as well as the radio: one clock and one executor for the world.
extension VirtualTime: HostClock {}

/// The manual clock has the radio clock's shape too: one clock can drive hosts and radio.
extension ManualHostClock: VirtualRadioClock {
    public var taskExecutor: (any TaskExecutor)? { nil }
}

/// Carries a reference the host actor owns through a task that touches it only back on that
/// actor (tasks started with `Task(executorPreference:)` do not inherit the actor's isolation).
struct ActorOwned<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Real time drives a radio as well as hosts.
extension SystemHostClock: VirtualRadioClock {
    public var taskExecutor: (any TaskExecutor)? { nil }
}

import Synchronization

/// A counter several tasks share (the simulated Energy Expended, values received).
public final class Counter: Sendable {
    private let count = Mutex<Int>(0)

    /// A counter at 0.
    public init() {}

    /// The count now.
    public var value: Int { count.withLock { $0 } }
    /// Adds `n`; returns the new count.
    @discardableResult
    public func increment(by n: Int = 1) -> Int { count.withLock { $0 += n; return $0 } }
    /// Back to 0.
    public func reset() { count.withLock { $0 = 0 } }
}

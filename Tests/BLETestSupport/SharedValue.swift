import Synchronization

/// A value the threads and tasks of a test share, under a `Mutex`, behind a reference: for what
/// escaping closures capture (a `Mutex` cannot be captured; where the state lives in an object,
/// a `Mutex` there does it). `@unchecked` because some tests keep a `RunLoop` here, which is not
/// `Sendable`: it is only handed from the thread that runs it to the one that stops it.
public final class SharedValue<Value>: @unchecked Sendable {
    private final class Storage: @unchecked Sendable {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    private let storage: Storage
    private let mutex = Mutex(())

    public init(_ value: Value) { storage = Storage(value) }

    /// Runs `body` on the value under the lock.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let storage = self.storage
        return try mutex.withLock { _ throws -> R in try body(&storage.value) }
    }

    /// A copy of the value, read under the lock.
    public func get() -> Value { withLock { $0 } }

    /// Replaces the value under the lock.
    public func set(_ new: Value) { withLock { $0 = new } }
}

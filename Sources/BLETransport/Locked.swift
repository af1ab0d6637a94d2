import Foundation

/// A value behind a lock, for the few pieces of state transports share between a reader thread,
/// a write queue and callers' tasks. (`Synchronization.Mutex` would do, but needs macOS 15 and
/// the package still targets macOS 14.) Never hold it across an `await` or a blocking syscall.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

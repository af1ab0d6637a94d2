import Synchronization
import XCTest

/// A value the threads and tasks of a test share, under a `Mutex`, behind a reference: for what
/// escaping closures capture (a `Mutex` cannot be captured; where the state lives in an object,
/// a `Mutex` there does it). `@unchecked` because some tests keep a `RunLoop` here, which is not
/// `Sendable`: it is only handed from the thread that runs it to the one that stops it.
///
/// A change to the value is an event: `wait(_:within:until:)` returns once a condition holds of
/// it, checked at once and then after every `withLock` or `set` (no polling), bounded in real time.
public final class SharedValue<Value>: @unchecked Sendable {
    private struct Waiter {
        let condition: (Value) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private final class Storage: @unchecked Sendable {
        var value: Value
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        /// Waits given up (cancelled) before they were registered.
        var given: Set<UInt64> = []
        init(_ value: Value) { self.value = value }
    }

    private let storage: Storage
    private let mutex = Mutex(())

    public init(_ value: Value) { storage = Storage(value) }

    /// Runs `body` on the value under the lock, then wakes the waits whose condition now holds.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let storage = self.storage
        let (result, met) = try mutex.withLock { _ throws -> (R, [CheckedContinuation<Bool, Never>]) in
            let result = try body(&storage.value)
            guard !storage.waiters.isEmpty else { return (result, []) }
            let value = storage.value
            let met = storage.waiters.filter { $0.value.condition(value) }
            for id in met.keys { storage.waiters[id] = nil }
            return (result, met.values.map(\.continuation))
        }
        for c in met { c.resume(returning: true) }
        return result
    }

    /// A copy of the value, read under the lock.
    public func get() -> Value { withLock { $0 } }

    /// Replaces the value under the lock.
    public func set(_ new: Value) { withLock { $0 = new } }

    /// Waits until `condition` holds of the value: checked now and after each change (an
    /// event, not a poll). After `bound` of real time it fails the test at the caller's line,
    /// saying what was awaited, and returns false. `condition` runs under the lock: it must not
    /// touch this value again.
    @discardableResult
    public func wait(_ what: String = "the condition", within bound: Duration,
                     file: StaticString = #filePath, line: UInt = #line,
                     until condition: @escaping @Sendable (Value) -> Bool) async -> Bool {
        let id = newID()
        let timer = expiry(after: bound) { [weak self] in self?.giveUp(id) }
        defer { timer.cancel() }
        let met = await becomes(id, condition)
        if !met { XCTFail("\(what) still did not hold after \(bound)", file: file, line: line) }
        return met
    }

    /// True once `condition` holds of the value (checked now and after each change); false when
    /// the task is cancelled first. No bound of its own and no test failure: for `firstOf`.
    public func becomes(_ condition: @escaping @Sendable (Value) -> Bool) async -> Bool {
        await becomes(newID(), condition)
    }

    private func newID() -> UInt64 {
        let storage = self.storage
        return mutex.withLock { _ -> UInt64 in
            storage.nextID += 1
            return storage.nextID
        }
    }

    private func becomes(_ id: UInt64, _ condition: @escaping @Sendable (Value) -> Bool) async -> Bool {
        let storage = self.storage
        let met = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let answer = mutex.withLock { _ -> Bool? in
                    if condition(storage.value) { return true }
                    if storage.given.remove(id) != nil { return false }
                    storage.waiters[id] = Waiter(condition: condition, continuation: c)
                    return nil
                }
                if let answer { c.resume(returning: answer) }
            }
        } onCancel: {
            giveUp(id)
        }
        _ = mutex.withLock { _ in storage.given.remove(id) }
        return met
    }

    /// The wait `id` ends false; if it is not registered yet, it ends false when it registers.
    private func giveUp(_ id: UInt64) {
        let storage = self.storage
        let gone = mutex.withLock { _ -> Waiter? in
            guard let w = storage.waiters.removeValue(forKey: id) else { storage.given.insert(id); return nil }
            return w
        }
        gone?.continuation.resume(returning: false)
    }
}

import BLE
import Synchronization

/// Waits that must end when the link does: a side waiting for the peer to open a channel or to
/// connect would otherwise wait forever for a peer that has gone.
enum BenchWaiting {
    /// The first channel a peer opens on `listener`, or `BenchError.linkEnded` once `ended` returns.
    static func firstChannel(of listener: L2CAPListener, until ended: @escaping @Sendable () async -> Void) async throws -> LECreditBasedChannel {
        let channel = await withTaskGroup(of: LECreditBasedChannel?.self) { group in
            group.addTask {
                for await channel in listener { return channel }
                return nil
            }
            group.addTask {
                await ended()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        try Task.checkCancellation()
        guard let channel else { throw BenchError.linkEnded(waiting: "the peer to open an L2CAP channel") }
        return channel
    }
}

/// A value behind a lock, shared by reference between the tasks of one run (a `Mutex` cannot
/// be captured by the closures of a task group or handed to a helper by value).
final class BenchLocked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with the value, under the lock.
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }
}

import BLE
import Synchronization

/// What asked a `ble serve` profile to change its database.
public enum DatabaseChangeTrigger: Sendable, Hashable {
    /// A central wrote the profile's command value (`ble serve test`: `db-change`).
    case write(ConnectedCentral)
    /// `ble serve` received this signal (`"SIGUSR1"`).
    case signal(String)
}

/// Requests to change a profile's database, in the order they came, for the profile's `run` to
/// take one at a time: each change starts after the one before it ended, so two requests never
/// race on the database. Copies of a profile share one.
///
/// At most `limit` requests wait: a central can send Write Commands faster than the database
/// changes, and what it sends must not grow the process without bound. Requests past the limit
/// are dropped and counted, and the reader is told how many before its next change.
final class DatabaseChangeRequests: Sendable {
    /// How many requests may wait for the reader.
    static let limit = 8
    /// The requests, for one reader.
    let requests: AsyncStream<DatabaseChangeTrigger>
    private let continuation: AsyncStream<DatabaseChangeTrigger>.Continuation
    private let dropped = Mutex(0)

    init() {
        (requests, continuation) = AsyncStream<DatabaseChangeTrigger>.makeStream(bufferingPolicy: .bufferingOldest(Self.limit))
    }

    /// Queues a request; the reader takes it after those before it. False when `limit`
    /// requests already wait (the request is dropped and counted).
    @discardableResult
    func request(_ trigger: DatabaseChangeTrigger) -> Bool {
        if case .dropped = continuation.yield(trigger) {
            dropped.withLock { $0 += 1 }
            return false
        }
        return true
    }

    /// The requests dropped since the last call, and none from then on.
    func takeDropped() -> Int {
        dropped.withLock { count in
            defer { count = 0 }
            return count
        }
    }
}

import BLE

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
final class DatabaseChangeRequests: Sendable {
    /// The requests, for one reader.
    let requests: AsyncStream<DatabaseChangeTrigger>
    private let continuation: AsyncStream<DatabaseChangeTrigger>.Continuation

    init() {
        (requests, continuation) = AsyncStream<DatabaseChangeTrigger>.makeStream()
    }

    /// Queues a request; the reader takes it after those before it.
    func request(_ trigger: DatabaseChangeTrigger) {
        continuation.yield(trigger)
    }
}

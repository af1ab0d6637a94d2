import BLEVirtual
import Synchronization

/// Events a system flow emitted, kept in order and also handed out as a stream so a test can
/// react to them while the flow runs.
final class EventLog<Event: Sendable>: Sendable {
    private let recorded = Mutex<[Event]>([])
    let stream: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    init() {
        (stream, continuation) = AsyncStream<Event>.makeStream()
    }

    var all: [Event] { recorded.withLock { $0 } }

    func emit(_ event: Event) {
        recorded.withLock { $0.append(event) }
        continuation.yield(event)
    }

    func finish() { continuation.finish() }
}

/// Starts `body` as a task of the world (so it runs in virtual time) and returns it.
func worldTask<T: Sendable>(_ world: VirtualWorld, _ body: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
    Task(executorPreference: world.clock.taskExecutor) { try await body() }
}

/// Everything that happens to a `PeripheralManager` from the moment the stream was made, in
/// order and unbounded: what `PeripheralManager.events` returns. Every stream sees every event.
/// It ends when the manager closes or its controller fails (after the events before), or when
/// the task reading it is cancelled; letting the stream and its iterators go tells the host to stop keeping events for
/// it.
///
/// Its own type rather than `AsyncStream<PeripheralManagerEvent>` for the cost per event (issue
/// 12: a Write Command's value reaches the application as a `.valueWritten` event, Core Vol 3
/// Part F §3.4.5.3): the iterator runs on the consumer's isolation (`next(isolation:)`), takes an
/// event that already waits without suspending or hopping executors, and sets up a cancellation
/// handler only when it has to wait. Read it from one task at a time, as an `AsyncStream`.
public struct PeripheralManagerEventStream: AsyncSequence, Sendable {
    /// One event of the manager.
    public typealias Element = PeripheralManagerEvent
    /// The stream ends instead of failing.
    public typealias Failure = Never

    @usableFromInline let source: PeripheralManagerEventSource

    init(_ queue: StreamQueue<PeripheralManagerEvent>) {
        source = PeripheralManagerEventSource(queue)
    }

    /// An iterator over the events; iterators of one stream share its events.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source)
    }

    /// Takes the events of a `PeripheralManagerEventStream` in order.
    public struct Iterator: AsyncIteratorProtocol {
        /// One event of the manager.
        public typealias Element = PeripheralManagerEvent
        /// The stream ends instead of failing.
        public typealias Failure = Never

        @usableFromInline let source: PeripheralManagerEventSource

        /// This iterator gave the end: it gives nothing more (the end is final).
        @usableFromInline var ended = false

        init(source: PeripheralManagerEventSource) {
            self.source = source
        }

        /// The next event, on the caller's isolation (what `for await` calls); nil once the
        /// manager has closed and every event was read, or once the reading task is cancelled.
        /// Inlinable so that an event already waiting is taken in the caller's own code.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> PeripheralManagerEvent? {
            guard !ended else { return nil }
            let next: PeripheralManagerEvent?
            switch source.take() {
            case let .value(event): return event
            case .end: next = nil
            case .wait: next = await source.wait()
            }
            if next == nil { ended = true }
            return next
        }

        /// The next event; nil once the manager has closed and every event was read, or once
        /// the reading task is cancelled.
        @inlinable
        public mutating func next() async -> PeripheralManagerEvent? {
            await next(isolation: nil)
        }
    }
}

/// The consumer's hold on one events queue, shared by a `PeripheralManagerEventStream` and its
/// iterators (what `NotificationSource` is for notifications): not generic, so the inlined
/// iterator calls this module's specialised queue; the last one to go abandons the queue.
@usableFromInline
final class PeripheralManagerEventSource: Sendable {
    let queue: StreamQueue<PeripheralManagerEvent>

    init(_ queue: StreamQueue<PeripheralManagerEvent>) {
        self.queue = queue
    }

    deinit { queue.abandon() }

    /// A buffered event, the end, or `.wait`, without suspending.
    @usableFromInline
    func take() -> StreamTake<PeripheralManagerEvent> { queue.take() }

    /// Waits on the caller's isolation for the next event (after `take()` said `.wait`):
    /// nil once the stream is over, or once the reading task is cancelled, which abandons the
    /// queue (as `AsyncStream`'s `onCancel` did). Inlinable, so that after the wait the consumer
    /// goes on in its own code with one executor check less.
    @inlinable
    nonisolated(nonsending) func wait() async -> PeripheralManagerEvent? {
        await withTaskCancellationHandler(operation: {
            await withUnsafeContinuation { (c: UnsafeContinuation<PeripheralManagerEvent?, Never>) in park(c) }
        }, onCancel: { abandon() })
    }

    /// Hands the waiting consumer's continuation to the queue.
    @usableFromInline
    func park(_ c: UnsafeContinuation<PeripheralManagerEvent?, Never>) { queue.park(c) }

    /// The reading task was cancelled: the queue is abandoned and a waiting read ends.
    @usableFromInline
    func abandon() { queue.abandon() }
}

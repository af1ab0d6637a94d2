import BLERuntime

/// A stream the host feeds and one consumer reads, in order: the values a server notifies or
/// indicates on one characteristic (`NotificationStream`, what `Peripheral.notifications(for:)`
/// returns) or everything that happens to a `PeripheralManager` (`PeripheralManagerEventStream`,
/// what `PeripheralManager.events` returns). It ends when its source does (the link goes down,
/// the manager closes; after what came before), or when the task reading it is cancelled.
/// Letting the stream and its iterators go tells the host to stop keeping values for it. Read it
/// from one task at a time, as an `AsyncStream`.
///
/// Its own type rather than `AsyncStream` for the cost per value: the iterator runs on the
/// consumer's isolation (`next(isolation:)`), takes a value that already waits without
/// suspending or hopping executors, and sets up a cancellation handler only when it has to wait.
/// Generic, and inlinable down to the queue's lock, so a consumer's loop is specialised for its
/// element in its own module and looks up no generic metadata per value.
public struct HostStream<Element: Sendable>: AsyncSequence, Sendable {
    /// The stream ends instead of failing.
    public typealias Failure = Never

    @usableFromInline let source: StreamSource<Element>

    init(_ queue: SingleConsumerQueue<Element>) {
        source = StreamSource(queue)
    }

    /// An iterator over the values; iterators of one stream share its values.
    @inlinable
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source)
    }

    /// Takes the values of a `HostStream` in order.
    public struct Iterator: AsyncIteratorProtocol {
        /// The stream ends instead of failing.
        public typealias Failure = Never

        @usableFromInline let source: StreamSource<Element>
        /// `source.queue`, which `source` keeps alive as long as this iterator: read without a
        /// retain and release per value.
        @usableFromInline unowned(unsafe) let queue: SingleConsumerQueue<Element>

        /// This iterator gave the end: it gives nothing more (the end is final).
        @usableFromInline var ended = false

        @inlinable
        init(source: StreamSource<Element>) {
            self.source = source
            self.queue = source.queue
        }

        /// The next value, on the caller's isolation (what `for await` calls); nil once the
        /// source has ended and every value was read, or once the reading task is cancelled.
        /// Inlinable so that a value already waiting is taken in the caller's own code, with no
        /// async call.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            guard !ended else { return nil }
            let next: Element?
            switch queue.take() {
            case let .value(value): return value
            case .end: next = nil
            case .wait: next = await source.wait()
            }
            if next == nil { ended = true }
            return next
        }

        /// The next value; nil once the source has ended and every value was read, or once the
        /// reading task is cancelled.
        @inlinable
        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }
    }
}

/// The values a server notifies or indicates on one characteristic (Core Vol 3 Part G §4.10,
/// §4.11), in the order they arrived: what `Peripheral.notifications(for:)` returns. It ends when
/// the link goes down (after the values that arrived before), or when the task reading it is
/// cancelled. At most `HostConfiguration.notificationBufferLimit` values wait for the consumer;
/// newer ones are dropped while that many wait (what `AsyncStream`'s `.bufferingOldest` does).
public typealias NotificationStream = HostStream<[UInt8]>

/// Everything that happens to a `PeripheralManager` from the moment the stream was made, in
/// order and unbounded: what `PeripheralManager.events` returns. Every stream sees every event.
/// It ends when the manager closes or its controller fails (after the events before), or when
/// the task reading it is cancelled.
public typealias PeripheralManagerEventStream = HostStream<PeripheralManagerEvent>

/// The consumer's hold on one queue, shared by a `HostStream` and its iterators. When the last
/// of them goes, the queue is abandoned (what `AsyncStream` did when its last reference went)
/// and the host forgets it.
@usableFromInline
final class StreamSource<Element: Sendable>: Sendable {
    @usableFromInline let queue: SingleConsumerQueue<Element>

    init(_ queue: SingleConsumerQueue<Element>) {
        self.queue = queue
    }

    deinit { queue.abandon() }

    /// Waits on the caller's isolation for the next value (after `take()` said `.wait`): nil
    /// once the stream is over, or once the reading task is cancelled, which abandons the queue
    /// (as `AsyncStream`'s `onCancel` did). Inlinable, so that after the wait the consumer goes
    /// on in its own code with one executor check less.
    @inlinable
    nonisolated(nonsending) func wait() async -> Element? {
        await withTaskCancellationHandler(operation: {
            await withUnsafeContinuation { (c: UnsafeContinuation<Element?, Never>) in queue.park(c) }
        }, onCancel: { queue.cancelRead() })
    }
}

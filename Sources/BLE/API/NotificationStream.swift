/// The values a server notifies or indicates on one characteristic (Core Vol 3 Part G §4.10,
/// §4.11), in the order they arrived: what `Peripheral.notifications(for:)` returns. It ends when
/// the link goes down (after the values that arrived before), or when the task reading it is
/// cancelled. At most `HostConfiguration.notificationBufferLimit` values wait for the consumer;
/// newer ones are dropped while that many wait (what `AsyncStream`'s `.bufferingOldest` does).
/// Letting the stream and its iterators go tells the host to stop keeping values for it.
///
/// Its own type rather than `AsyncStream<[UInt8]>` for the cost per value: the
/// iterator runs on the consumer's isolation (`next(isolation:)`), takes a value that already
/// waits without suspending or hopping executors, and sets up a cancellation handler only when it
/// has to wait. Read it from one task at a time, as an `AsyncStream`.
public struct NotificationStream: AsyncSequence, Sendable {
    /// One attribute value as the server sent it.
    public typealias Element = [UInt8]
    /// The stream ends instead of failing.
    public typealias Failure = Never

    @usableFromInline let source: NotificationSource

    init(_ queue: NotificationQueue) {
        source = NotificationSource(queue)
    }

    /// An iterator over the values; iterators of one stream share its values.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source)
    }

    /// Takes the values of a `NotificationStream` in order.
    public struct Iterator: AsyncIteratorProtocol {
        /// One attribute value as the server sent it.
        public typealias Element = [UInt8]
        /// The stream ends instead of failing.
        public typealias Failure = Never

        @usableFromInline let source: NotificationSource

        /// This iterator gave the end: it gives nothing more (the end is final).
        @usableFromInline var ended = false

        init(source: NotificationSource) {
            self.source = source
        }

        /// The next value, on the caller's isolation (what `for await` calls); nil once the link
        /// is gone and every value was read, or once the reading task is cancelled. Inlinable so
        /// that a value already waiting is taken in the caller's own code, with no async call.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> [UInt8]? {
            guard !ended else { return nil }
            let next: [UInt8]?
            switch source.take() {
            case let .value(value): return value
            case .end: next = nil
            case .wait: next = await source.wait()
            }
            if next == nil { ended = true }
            return next
        }

        /// The next value; nil once the link is gone and every value was read, or once the
        /// reading task is cancelled.
        @inlinable
        public mutating func next() async -> [UInt8]? {
            await next(isolation: nil)
        }
    }
}

/// The consumer's hold on one notification queue, shared by a `NotificationStream` and its
/// iterators: not generic, so the inlined iterator calls into this module's specialised queue
/// without looking up generic metadata. When the last of them goes, the queue is abandoned
/// (what `AsyncStream` did when its last reference went) and the host forgets it.
@usableFromInline
final class NotificationSource: Sendable {
    let queue: NotificationQueue

    init(_ queue: NotificationQueue) {
        self.queue = queue
    }

    deinit { queue.abandon() }

    /// A buffered value, the end, or `.wait`, without suspending.
    @usableFromInline
    func take() -> StreamTake<[UInt8]> { queue.take() }

    /// Waits on the caller's isolation for the next value (after `take()` said `.wait`):
    /// nil once the stream is over, or once the reading task is cancelled, which abandons the
    /// queue (as `AsyncStream`'s `onCancel` did). Inlinable, so that after the wait the consumer
    /// goes on in its own code with one executor check less.
    @inlinable
    nonisolated(nonsending) func wait() async -> [UInt8]? {
        await withTaskCancellationHandler(operation: {
            await withUnsafeContinuation { (c: UnsafeContinuation<[UInt8]?, Never>) in park(c) }
        }, onCancel: { abandon() })
    }

    /// Hands the waiting consumer's continuation to the queue.
    @usableFromInline
    func park(_ c: UnsafeContinuation<[UInt8]?, Never>) { queue.park(c) }

    /// The reading task was cancelled: the queue is abandoned and a waiting read ends.
    @usableFromInline
    func abandon() { queue.abandon() }
}

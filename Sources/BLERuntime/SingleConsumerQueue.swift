import Synchronization

/// What a `SingleConsumerQueue` does with a value that comes while `limit` values already wait.
public enum QueueOverflow: Sendable {
    /// The new value is dropped (`AsyncStream`'s `.bufferingOldest`).
    case dropNewest
    /// The oldest waiting value is dropped to make room (`.bufferingNewest`).
    case dropOldest
}

/// What cancelling the task that reads a `SingleConsumerQueue` does.
public enum ReaderCancellation: Sendable {
    /// The consumer has gone: the queue is abandoned (what waits is dropped, the producer's
    /// next `push` is refused, the termination handler runs). A stream that exists for one
    /// consumer: notifications, a manager's events, a scan's devices.
    case abandonsQueue
    /// Only that read ends, after what is queued; the queue stays open and serves the next
    /// reader. A transport's incoming frames, which outlive any one read loop.
    case endsRead
}

/// The values one producer hands to one consumer, in order: a lock, a `FIFOBuffer` and at most
/// one waiting reader. Every stream the stack feeds itself (a transport's incoming HCI frames,
/// a scan's devices, a characteristic's notifications, a peripheral manager's events) is one.
///
/// Its own type rather than `AsyncStream` for the cost per value: `AsyncStream`'s storage is
/// generic and unspecialised outside the standard library (the profile: its `yield` and
/// `removeFirst` cost more than the whole ATT layer per notification, and about a fifth of each
/// HCI packet went to metadata lookups inside it). This one is inlinable down to its lock, so it
/// is specialised for its element in the module that uses it.
///
/// - The producer's side (`push`, `close`) never waits. At most `limit` values wait (`Int.max`
///   for an unbounded queue); beyond it `overflow` decides which one goes.
/// - The consumer takes one value at a time (`take`, then `park` when it must wait: the
///   host-fed `HostStream`s, with no suspension for a value that already waits) or everything
///   that waits at once (`next(into:)`, `next()`, `read(_:)`: a burst costs one wake-up, not
///   one per value).
/// - After `close`, what is queued is still read, then the reader sees the end, or the error
///   `close` was given (once). When the consumer goes (`abandon`, or per `cancellation` when its
///   task is cancelled) what waits is dropped and `push` returns false, so the producer can
///   forget the queue.
///
/// One reader at a time: a second reader that waits while another already waits gets the end.
public final class SingleConsumerQueue<Element: Sendable>: Sendable {
    /// A reader that waits: for the value itself (`park`) or to be woken to take a batch.
    @usableFromInline
    enum Waiter: Sendable {
        case value(UnsafeContinuation<Element?, Never>)
        case wake(UnsafeContinuation<Bool, Never>)

        /// Ends the wait with nothing (the queue ended, or the reader must look again).
        @inlinable
        func resumeEmpty() {
            switch self {
            case let .value(c): c.resume(returning: nil)
            case let .wake(c): c.resume(returning: true)
            }
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var buffer = FIFOBuffer<Element>()
        /// A single-value reader that waits for the next value itself (`park`).
        @usableFromInline var valueWaiter: UnsafeContinuation<Element?, Never>? {
            didSet { refreshQueuesDirectly() }
        }
        /// A batch reader that waits to be woken.
        @usableFromInline var wakeWaiter: UnsafeContinuation<Bool, Never>?
        /// The `read` whose wait `wakeWaiter` is (its cancellation mark), so that cancelling
        /// it wakes that reader only; nil for a `next` reader's.
        @usableFromInline var wakeOwner: ObjectIdentifier?
        /// `close` was called: nothing more is queued.
        @usableFromInline var closed = false {
            didSet { refreshQueuesDirectly() }
        }
        /// The error `close` was given, until a batch reader has been told.
        @usableFromInline var failure: (any Error)?
        /// The consumer has gone.
        @usableFromInline var abandoned = false {
            didSet { refreshQueuesDirectly() }
        }
        /// A reader's task was cancelled (`.endsRead`): its read ends at the next look.
        @usableFromInline var readCancelled = false
        /// Called once each, when the queue is closed or abandoned.
        @usableFromInline var onTermination: [@Sendable () -> Void] = []
        /// Whether a pushed value is simply queued (when there is room), waking a batch reader
        /// that waits: the queue is open and no single-value reader waits for the value itself.
        /// Kept with the three it sums up, so `push` tests one flag (every HCI frame in and out
        /// is pushed, about twenty per 27-octet notification; `ble-bench raw`).
        @usableFromInline var queuesDirectly = true

        init() {}

        /// Whether the consumer will get nothing more than what waits: closed or abandoned (kept
        /// with those two, so the readers' and pushers' looks test one flag).
        @usableFromInline var ended = false

        /// The reader that waits, if one does (at most one of the two kinds).
        @inlinable var waiter: Waiter? {
            get {
                if let c = valueWaiter { return .value(c) }
                return wakeWaiter.map(Waiter.wake)
            }
            set {
                switch newValue {
                case let .value(c)?: (valueWaiter, wakeWaiter) = (c, nil)
                // A wait set here belongs to no `read` (that one sets the fields itself).
                case let .wake(c)?: (valueWaiter, wakeWaiter, wakeOwner) = (nil, c, nil)
                case nil: (valueWaiter, wakeWaiter) = (nil, nil)
                }
            }
        }

        @inlinable
        mutating func refreshQueuesDirectly() {
            ended = closed || abandoned
            queuesDirectly = !ended && valueWaiter == nil
        }

        /// The queue has just ended (closed or abandoned): takes the reader that waits and the
        /// termination handlers, for `finish` outside the lock.
        @inlinable
        mutating func takeEnding() -> Ending {
            defer {
                waiter = nil
                onTermination = []
            }
            return Ending(waiter: waiter, handlers: onTermination)
        }

        /// `push`'s common case under the lock: when the value is simply queued, the batch
        /// reader to wake (`.some(nil)` when none waits); nil when `push` must look closer
        /// (`pushing`): the queue ended, a single-value reader waits, or it may be full.
        @inlinable
        @inline(__always)
        mutating func queue(_ value: Element, limit: Int) -> UnsafeContinuation<Bool, Never>?? {
            // `storage.count` bounds the count from above: below `limit`, there is room.
            guard queuesDirectly && buffer.storage.count < limit else { return .none }
            buffer.append(value)
            defer { wakeWaiter = nil }
            return .some(wakeWaiter)
        }

        /// `push` when a single-value reader waits, the queue has ended or may be full.
        @inlinable
        @inline(never)
        mutating func pushing(_ value: Element, limit: Int, overflow: QueueOverflow) -> Waiter?? {
            if ended { return .none }
            if case let .value(c)? = waiter {
                // A reader parks only when nothing is queued: the value goes straight to it.
                waiter = nil
                return .some(.value(c))
            }
            if buffer.count < limit {
                buffer.append(value)
            } else {
                overflowing(value, overflow: overflow)
            }
            defer { waiter = nil }
            return .some(waiter)
        }

        /// `value` comes while the queue is full: it replaces the oldest, or is dropped.
        @inlinable
        @inline(never)
        mutating func overflowing(_ value: Element, overflow: QueueOverflow) {
            guard overflow == .dropOldest else { return }
            buffer.dropFirst(1)
            buffer.append(value)
        }
    }

    @usableFromInline let state = Mutex(State())
    /// The most values that wait for the consumer.
    public let limit: Int
    /// Which value goes when `limit` values wait and another comes.
    public let overflow: QueueOverflow
    /// What cancelling the reading task does.
    public let cancellation: ReaderCancellation

    /// An empty, open queue holding at most `limit` values (at least one).
    public init(limit: Int = .max, overflow: QueueOverflow = .dropNewest, cancellation: ReaderCancellation) {
        self.limit = max(1, limit)
        self.overflow = overflow
        self.cancellation = cancellation
    }

    // MARK: - The producer

    /// Hands `value` to the consumer: at once to a reader that waits for it, otherwise queued
    /// (as `overflow` says when full). False, with nothing queued, once the queue is closed or
    /// the consumer has gone (`isEnded`).
    @inlinable
    @discardableResult
    public func push(_ value: Element) -> Bool {
        // What `pushing` says when the common case does not apply (one lock either way: a
        // single-value reader parks here, and each of its values would cost a second lock; the
        // frame queue's `push`, read in batches, takes a second one for the rare case instead).
        var other: Waiter?? = .none
        let woken = state.withLock { s -> UnsafeContinuation<Bool, Never>?? in
            if let woken = s.queue(value, limit: limit) { return woken }
            other = s.pushing(value, limit: limit, overflow: overflow)
            return .none
        }
        guard let woken else { return woke(other, handing: value) }
        woken?.resume(returning: true)
        return true
    }

    /// Queues `value` as `overflow` says when `limit` values wait.
    @inlinable
    func enqueue(_ value: Element, in s: inout State) {
        if s.buffer.count < limit {
            s.buffer.append(value)
        } else {
            s.overflowing(value, overflow: overflow)
        }
    }

    /// Whether the queue takes no more values (closed, or the consumer has gone): the producer
    /// may forget it.
    @inlinable
    public var isEnded: Bool { state.withLock { $0.ended } }

    /// Hands `values` over in order under one lock, as `push` would one by one (a burst a
    /// controller sends at once, the devices of one advertising report). False, with nothing
    /// queued, once the queue is closed or abandoned.
    @inlinable
    @discardableResult
    public func push(contentsOf values: some Collection<Element>) -> Bool {
        guard !values.isEmpty else { return !isEnded }
        // Read where they are (an `Array` of them first would copy each value once more).
        let (waiter, handed) = state.withLock { s -> (Waiter??, Element?) in
            guard !s.ended else { return (.none, nil) }
            // A parked single-value reader (the queue is then empty) is handed the first value,
            // as `push` would; only the rest count against `limit`.
            if case .value? = s.waiter {
                for value in values.dropFirst() { enqueue(value, in: &s) }
                defer { s.waiter = nil }
                return (.some(s.waiter), values.first)
            }
            if values.count <= limit - s.buffer.count {
                s.buffer.append(contentsOf: values)
            } else {
                for value in values { enqueue(value, in: &s) }
            }
            defer { s.waiter = nil }
            return (.some(s.waiter), nil)
        }
        return woke(waiter, handing: handed)
    }

    /// `push(contentsOf:)` for values the caller gives up: when nothing waits and they fit, the
    /// array itself becomes the queue's storage (and `values` gets the queue's old, empty
    /// storage), so they are neither copied nor released here. `values` is left empty unless
    /// the queue refused them.
    @inlinable
    @discardableResult
    public func push(moving values: inout [Element]) -> Bool {
        guard !values.isEmpty else { return !isEnded }
        let first = values.first
        let (waiter, handed) = state.withLock { s -> (Waiter??, Bool) in
            guard !s.ended else { return (.none, false) }
            // As `push(contentsOf:)`: the first goes to a parked single-value reader.
            if case .value? = s.waiter {
                for value in values[1...] { enqueue(value, in: &s) }
                values.removeAll(keepingCapacity: true)
                defer { s.waiter = nil }
                return (.some(s.waiter), true)
            }
            if values.count <= limit - s.buffer.count {
                s.buffer.append(moving: &values)
            } else {
                for value in values { enqueue(value, in: &s) }
                values.removeAll(keepingCapacity: true)
            }
            defer { s.waiter = nil }
            return (.some(s.waiter), false)
        }
        return woke(waiter, handing: handed ? first : nil)
    }

    /// After values were queued: wakes the reader that waited, if one did (a single-value
    /// reader with `handed`); false when the queue refused them (`nil`).
    @inlinable
    func woke(_ waiter: Waiter??, handing handed: Element?) -> Bool {
        guard let waiter else { return false }
        switch waiter {
        case let .value(c)?: c.resume(returning: handed)
        case let .wake(c)?: c.resume(returning: true)
        case nil: break
        }
        return true
    }

    /// No more values: the consumer reads what is queued, then the end, or `error` thrown (to a
    /// batch reader). The first `close` decides; later ones, and a `close` after the consumer
    /// has gone, change nothing.
    @inlinable
    public func close(error: (any Error)? = nil) {
        finish(state.withLock { s -> Ending in
            guard !s.ended else { return Ending() }
            s.closed = true
            s.failure = error
            return s.takeEnding()
        })
    }

    /// What ending the queue leaves to do outside the lock: wake the reader that waited, run
    /// the termination handlers.
    @usableFromInline
    struct Ending: Sendable {
        @usableFromInline var waiter: Waiter?
        @usableFromInline var handlers: [@Sendable () -> Void] = []

        @inlinable
        init(waiter: Waiter? = nil, handlers: [@Sendable () -> Void] = []) {
            self.waiter = waiter
            self.handlers = handlers
        }
    }

    /// Wakes the reader that waited with the end, then runs the termination handlers in order.
    @inlinable
    func finish(_ ending: Ending) {
        ending.waiter?.resumeEmpty()
        for body in ending.handlers { body() }
    }

    /// Calls `body` once, when the queue is closed or abandoned (at once if it already is),
    /// after the handlers given before it.
    @inlinable
    public func onTermination(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.ended { return true }
            s.onTermination.append(body)
            return false
        }
        if now { body() }
    }

    /// Whether `close` has been called.
    @inlinable
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether the consumer has gone.
    @inlinable
    public var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Whether a reader waits now (tests wait for a reader to park).
    @inlinable
    public var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    // MARK: - The consumer

    /// The consumer has gone (released its stream, or cancelled per `.abandonsQueue`): what
    /// waits is dropped, with the error `close` left; a waiting read ends; `push` is refused
    /// from now on; the termination handler runs unless the queue was closed already.
    @inlinable
    public func abandon() {
        finish(state.withLock { s -> Ending in
            s.buffer.removeAll()
            s.failure = nil
            guard !s.abandoned else { return Ending() }
            s.abandoned = true
            return s.takeEnding()
        })
    }

    /// The reading task was cancelled: what `cancellation` says.
    @inlinable
    public func cancelRead() {
        switch cancellation {
        case .abandonsQueue:
            abandon()
        case .endsRead:
            // A waiting reader is woken (a single-value one with the end; a batch reader looks
            // again and sees its task cancelled); one that is running sees the flag at its next
            // look, which clears it, so it never outlives the read it was meant for.
            let waiter = state.withLock { s -> Waiter? in
                guard let waiter = s.waiter else {
                    s.readCancelled = true
                    return nil
                }
                s.waiter = nil
                return waiter
            }
            waiter?.resumeEmpty()
        }
    }

    /// The oldest value, the end, or "wait" (then `park`), without suspending: what a reader of
    /// single values does first. A cancelled reading task gets the end: per `.abandonsQueue` it
    /// abandons the queue; per `.endsRead` it gets what is queued first, and the queue stays
    /// as it was for the next reader.
    @inlinable
    public func take() -> QueueTake<Element> {
        let cancelled = Task.isCancelled
        if cancelled && cancellation == .abandonsQueue {
            abandon()
            return .end
        }
        return state.withLock { s -> QueueTake<Element> in
            if let value = s.buffer.removeFirst() {
                s.readCancelled = false
                return .value(value)
            }
            if s.readCancelled {
                s.readCancelled = false
                return .end
            }
            return s.ended || cancelled ? .end : .wait
        }
    }

    /// Parks a single-value reader's continuation after `take()` said `.wait` (inside its
    /// cancellation handler): resumed with the next value, or nil once the queue is over.
    /// The end covers a cancellation that came before the handler was in place (the handler
    /// then ran at once); a second concurrent reader gets nil rather than taking the first one's
    /// place.
    @inlinable
    public func park(_ c: UnsafeContinuation<Element?, Never>) {
        let now = state.withLock { s -> QueueTake<Element> in
            if let value = s.buffer.removeFirst() {
                s.readCancelled = false
                return .value(value)
            }
            if s.readCancelled {
                // The cancellation this read was to see (its handler ran before it parked).
                s.readCancelled = false
                return .end
            }
            if s.ended || s.waiter != nil { return .end }
            s.waiter = .value(c)
            return .wait
        }
        switch now {
        case let .value(v): c.resume(returning: v)
        case .end: c.resume(returning: nil)
        case .wait: break
        }
    }
}

/// What a reader of single values finds without suspending (`SingleConsumerQueue.take()`).
public enum QueueTake<Element> {
    /// The oldest queued value, now taken.
    case value(Element)
    /// The queue is over: closed and drained, or abandoned.
    case end
    /// Nothing queued yet: `park` to wait for it.
    case wait
}

import Synchronization

/// The values of one `Peripheral.notifications` stream that its consumer has not taken yet.
typealias NotificationQueue = StreamQueue<[UInt8]>

/// The values of one stream the host feeds (a `Peripheral.notifications` stream, a
/// `PeripheralManager.events` stream) that its consumer has not taken yet: what
/// `AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(limit))` keeps, without the
/// stream's generic storage on the hot path (the profile: its unspecialised `yield` and
/// `removeFirst` cost more than the whole ATT layer per notification; generic here, it is
/// specialised inside this module). Values come out in arrival order, at most `limit` buffered
/// (newer ones dropped while full, as `.bufferingOldest` does; `Int.max` for an unbounded
/// stream), then the end once the host finishes it and the rest is read.
///
/// The host keeps the queue; the consumer's sequence (`HostStream`: `NotificationStream`,
/// `PeripheralManagerEventStream`) keeps a source object that holds it. The consumer's side
/// (`take`, `park`, `abandon`) is inlinable, so it is specialised in the consumer's module. The sequence's iterator
/// first calls `take()`: a buffered value is taken under the lock with no suspension, no
/// executor hop and no cancellation record (`AsyncStream(unfolding:)` cost about
/// eight task switches and a cancellation handler per value); only a consumer that must
/// `wait()` installs a cancellation handler, and it waits on its own isolation. When the
/// consumer lets the sequence go, or cancels the task reading it, the queue is marked abandoned
/// and the host drops it at the next value or when the link closes — no task is started for it.
///
/// One reader at a time: a second reader that waits while another already waits gets the end.
@usableFromInline
final class StreamQueue<Element: Sendable>: Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var values: [Element] = []
        @usableFromInline var head = 0
        @usableFromInline var waiter: UnsafeContinuation<Element?, Never>?
        @usableFromInline var finished = false
        /// The consumer is gone (stream released or its reading task cancelled).
        @usableFromInline var abandoned = false

        init() {}
    }

    @usableFromInline let state = Mutex(State())
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether the consumer has gone: the host may forget this queue.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Whether a reader waits for the next value now (tests wait for a reader to park).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Hands a value to the consumer (at once if it waits); dropped when `limit` values are
    /// already waiting, or after `finish`. False when the consumer has gone (`isAbandoned`).
    @discardableResult
    func yield(_ value: Element) -> Bool {
        let (waiter, alive) = state.withLock { s -> (UnsafeContinuation<Element?, Never>?, Bool) in
            guard !s.abandoned else { return (nil, false) }
            guard !s.finished else { return (nil, true) }
            if let w = s.waiter {
                s.waiter = nil
                return (w, true)
            }
            if s.values.count - s.head < limit { s.values.append(value) }
            return (nil, true)
        }
        waiter?.resume(returning: value)
        return alive
    }

    /// No more values: the consumer reads what is buffered, then the stream ends.
    func finish() {
        let waiter = state.withLock { s -> UnsafeContinuation<Element?, Never>? in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The consumer went away (cancelled, or the stream was released): a waiting read ends.
    @inlinable
    func abandon() {
        let waiter = state.withLock { s -> UnsafeContinuation<Element?, Never>? in
            s.abandoned = true
            s.values = []
            s.head = 0
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Parks the consumer's continuation after `take()` said `.wait` (inside the consumer's
    /// cancellation handler): resumed with the next value, or nil once finished and drained or
    /// abandoned. Abandoned covers a cancellation that came before the handler was in place (the
    /// handler then ran at once); a second concurrent reader gets nil rather than taking the
    /// first one's place.
    @inlinable
    func park(_ c: UnsafeContinuation<Element?, Never>) {
        let now = state.withLock { s -> StreamTake<Element> in
            if s.head < s.values.count {
                let v = s.values[s.head]
                s.head += 1
                return .value(v)
            }
            if s.finished || s.abandoned || s.waiter != nil { return .end }
            s.waiter = c
            return .wait
        }
        switch now {
        case let .value(v): c.resume(returning: v)
        case .end: c.resume(returning: nil)
        case .wait: break
        }
    }

    /// A buffered value, the end, or "wait" (then `park`), without suspending: what the
    /// consumer's iterator does first. A cancelled reading task abandons the queue and gets the end.
    @inlinable
    func take() -> StreamTake<Element> {
        if Task.isCancelled {
            abandon()
            return .end
        }
        return state.withLock { s -> StreamTake<Element> in
            if s.head < s.values.count {
                let v = s.values[s.head]
                s.head += 1
                if s.head == s.values.count {
                    s.values.removeAll(keepingCapacity: true)
                    s.head = 0
                } else if s.head > 64 && s.head * 2 > s.values.count {
                    s.values.removeFirst(s.head)
                    s.head = 0
                }
                return .value(v)
            }
            return s.finished || s.abandoned ? .end : .wait
        }
    }
}

/// What the consumer's iterator finds without suspending (`StreamQueue.take()`).
@usableFromInline
enum StreamTake<Element> {
    /// The oldest buffered value, now taken.
    case value(Element)
    /// The stream is over: finished and drained, or abandoned.
    case end
    /// Nothing buffered yet: `wait()` for it.
    case wait
}

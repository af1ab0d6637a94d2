import Synchronization

/// The values of one `Peripheral.notifications` stream that its consumer has not taken yet.
typealias NotificationQueue = StreamQueue<[UInt8]>

/// The values of one stream the host feeds (a `Peripheral.notifications` stream, a
/// `PeripheralManager.events` stream) that its consumer has not taken yet: what
/// `AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(limit))` keeps, without the
/// stream's generic storage on the hot path (issue 12's profile: its unspecialised `yield` and
/// `removeFirst` cost more than the whole ATT layer per notification; generic here, it is
/// specialised inside this module). The stream the API returns is `AsyncStream(unfolding:)`
/// over `next()`, so its type and its behaviour are as before: values in arrival order, at
/// most `limit` buffered (newer ones dropped while full, as `.bufferingOldest` does; `Int.max`
/// for an unbounded stream), then the end once the host finishes it and the rest is read.
///
/// The host keeps the queue; the stream keeps a `Reader`. When the consumer lets the stream
/// go, or cancels the task reading it, the queue is marked abandoned and the host drops it at
/// the next value or when the link closes — no task is started for it.
final class StreamQueue<Element: Sendable>: Sendable {
    private struct State {
        var values: [Element] = []
        var head = 0
        var waiter: UnsafeContinuation<Element?, Never>?
        var finished = false
        /// The consumer is gone (stream released or its reading task cancelled).
        var abandoned = false
    }

    private let state = Mutex(State())
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether the consumer has gone: the host may forget this queue.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

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
    fileprivate func abandon() {
        let waiter = state.withLock { s -> UnsafeContinuation<Element?, Never>? in
            s.abandoned = true
            s.values = []
            s.head = 0
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    private enum Take {
        case value(Element)
        case end
        case wait
    }

    /// The oldest value waiting, or the next to come; nil once finished and drained.
    fileprivate func next() async -> Element? {
        switch take() {
        case let .value(v): return v
        case .end: return nil
        case .wait: break
        }
        return await withUnsafeContinuation { (c: UnsafeContinuation<Element?, Never>) in
            let now = state.withLock { s -> Take in
                if s.head < s.values.count {
                    let v = s.values[s.head]
                    s.head += 1
                    return .value(v)
                }
                if s.finished || s.abandoned { return .end }
                s.waiter = c
                return .wait
            }
            switch now {
            case let .value(v): c.resume(returning: v)
            case .end: c.resume(returning: nil)
            case .wait: break
            }
        }
    }

    private func take() -> Take {
        state.withLock { s -> Take in
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

    /// The consumer's end: an `AsyncStream` that reads this queue.
    func stream() -> AsyncStream<Element> {
        let reader = Reader(self)
        return AsyncStream(unfolding: { await reader.queue.next() }, onCancel: { reader.queue.abandon() })
    }

    /// Lives as long as the stream: when the consumer releases it, the queue is abandoned.
    private final class Reader: Sendable {
        let queue: StreamQueue
        init(_ queue: StreamQueue) { self.queue = queue }
        deinit { queue.abandon() }
    }
}

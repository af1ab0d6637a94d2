import Synchronization

// The batch reader's side of `SingleConsumerQueue`: everything that waits is taken at once
// (`next(into:)`, `next()`, `read(_:)`), so a burst costs one wake-up, not one per value; and a
// `read` loop's own cancellation mark.
extension SingleConsumerQueue {
    /// What a batch reader finds without suspending (`take(swappingWith:)`).
    @usableFromInline
    enum Batch {
        /// The values are in the array the reader gave.
        case values
        case end
        case failed(any Error)
        case empty
    }

    /// Takes every queued value into `spare` (emptied by the caller), or says why not.
    @inlinable
    func take(swappingWith spare: inout [Element]) -> Batch {
        state.withLock { s -> Batch in
            if !s.buffer.isEmpty {
                // The reader takes these and ends or, cancelled, checks for it before it waits
                // again: a flag left now would end the next reader's read.
                s.readCancelled = false
                s.buffer.removeAll(swappingWith: &spare)
                return .values
            }
            if s.readCancelled {
                s.readCancelled = false
                return .end
            }
            guard s.ended else { return .empty }
            if let error = s.failure {
                s.failure = nil
                return .failed(error)
            }
            return .end
        }
    }

    /// Suspends until values are queued, the queue ends, or the read was cancelled (`read`,
    /// the read's own mark; otherwise the queue's flag); false at once when another reader
    /// already waits (this one then gets the end).
    @inlinable
    func waitForValues(isolation: isolated (any Actor)?, read: ReadCancellation? = nil) async -> Bool {
        await withUnsafeContinuation(isolation: isolation) { (c: UnsafeContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool? in
                // Not `queuesDirectly`: ended (then no reader waits), or a single-value reader waits.
                if !s.queuesDirectly { return s.ended }
                if s.wakeWaiter != nil { return false }
                if !s.buffer.isEmpty || s.readCancelled { return true }
                if let read, read.isCancelled { return true }
                // The fields themselves: `queuesDirectly` stays as it is (`read` waits here).
                s.wakeWaiter = c
                s.wakeOwner = read.map(ObjectIdentifier.init)
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    /// Moves every queued value into `batch` (replacing its contents), oldest first, waiting
    /// until there is one; false once the queue is over and drained (or the read cancelled),
    /// throwing the error `close` was given, after the values queued before it. Runs on the
    /// caller's actor (`isolation`).
    @inlinable
    public func next(into batch: inout [Element], isolation: isolated (any Actor)? = #isolation) async throws -> Bool {
        batch.removeAll(keepingCapacity: true)
        while true {
            switch take(swappingWith: &batch) {
            case .values: return true
            case .end: return false
            case let .failed(error): throw error
            case .empty: break
            }
            if Task.isCancelled {
                cancelRead()
                continue
            }
            let woken = await withTaskCancellationHandler(operation: {
                await waitForValues(isolation: isolation)
            }, onCancel: { cancelRead() }, isolation: isolation)
            guard woken else { return false }
        }
    }

    /// Every value queued now, oldest first, waiting for at least one; nil once the queue is
    /// over and drained, or when the read is cancelled. Throws the error `close` was given,
    /// after the values queued before it.
    @inlinable
    public func next(isolation: isolated (any Actor)? = #isolation) async throws -> [Element]? {
        var batch: [Element] = []
        return try await next(into: &batch, isolation: isolation) ? batch : nil
    }

    /// Hands every batch to `body`, oldest first, until the queue is closed and drained (then
    /// returns) or fails (then throws the error `close` was given), or the reading task is
    /// cancelled (then returns: per `.endsRead` once what is queued has been handed over, per
    /// `.abandonsQueue` at once, what was queued dropped with the queue). What a read loop over
    /// `next` does, with one cancellation handler for the whole loop instead of one per wait: a
    /// reader wakes once per burst, and each wait is then one continuation and nothing more.
    /// Runs on the caller's actor (`isolation`), `body` within its turn.
    ///
    /// The batch array is recycled: the reader keeps the one it handed to `body` and, emptied
    /// (its capacity kept), swaps it for the queue's at the next take, so a steady stream of
    /// batches allocates no arrays. A `body` that keeps its batch keeps a copy as ever; the
    /// spare is then a new array. `body` may take values out of its batch (swap them for
    /// others): a value taken out is then referenced only by `body`, which can change it in
    /// place rather than copy it (the virtual radio rewriting an ACL header).
    @inlinable
    public func read(isolation: isolated (any Actor)? = #isolation, _ body: (inout [Element]) -> Void) async throws {
        let cancelled = ReadCancellation()
        try await withTaskCancellationHandler(operation: {
            var batch: [Element] = []
            while true {
                // Emptied outside the lock: releasing the values is not the pushers' wait. A
                // burst's array, far larger than what now comes, goes rather than stay for ever.
                if batch.capacity > Self.keptCapacity && batch.capacity > 4 * batch.count {
                    batch = []
                } else {
                    batch.removeAll(keepingCapacity: true)
                }
                switch take(swappingWith: &batch) {
                case .values:
                    body(&batch)
                    continue
                case .end: return
                case let .failed(error): throw error
                case .empty: break
                }
                if cancelled.isCancelled { return }
                guard await waitForValues(isolation: isolation, read: cancelled) else { return }
            }
        }, onCancel: { cancelRead(cancelled) }, isolation: isolation)
    }

    /// The most capacity a recycled batch array keeps whatever it held last; beyond it, an
    /// array more than four times the last batch is dropped.
    @inlinable
    public static var keptCapacity: Int { 64 }

    /// The queue as an `AsyncThrowingStream` of single values, for readers written against an
    /// `AsyncSequence` (a transport's `incoming`).
    public func stream() -> AsyncThrowingStream<Element, any Error> {
        let iterator = BatchIterator(queue: self)
        return AsyncThrowingStream(unfolding: { try await iterator.next() })
    }

    /// Hands out a batch value by value. Only ever touched by the stream's one consumer.
    private final class BatchIterator: @unchecked Sendable {
        let queue: SingleConsumerQueue<Element>
        var batch: [Element] = []
        var index = 0

        init(queue: SingleConsumerQueue<Element>) { self.queue = queue }

        func next() async throws -> Element? {
            if index >= batch.count {
                guard try await queue.next(into: &batch, isolation: nil) else { return nil }
                index = 0
            }
            defer { index += 1 }
            return batch[index]
        }
    }

    /// What cancels one `read`: set by its task's cancellation handler, looked at by the read
    /// before each wait (an atomic load, where asking the task costs a call into the runtime)
    /// and, under the lock, as it starts to wait. It belongs to that read alone, so with two
    /// readers the one whose task was cancelled ends and the other reads on.
    @usableFromInline
    final class ReadCancellation: Sendable {
        @usableFromInline let flag = Atomic<Bool>(false)

        @inlinable init() {}

        @inlinable var isCancelled: Bool { flag.load(ordering: .acquiring) }
    }

    /// `read`'s task was cancelled: per `.abandonsQueue` the queue is abandoned; per `.endsRead`
    /// that read is marked and, if it is the reader that waits, woken to end.
    @inlinable
    func cancelRead(_ read: ReadCancellation) {
        guard cancellation == .endsRead else { return abandon() }
        // Marked before the lock is taken: a read that starts to wait after this sees it there.
        read.flag.store(true, ordering: .releasing)
        let waiter = state.withLock { s -> UnsafeContinuation<Bool, Never>? in
            guard s.wakeWaiter != nil, s.wakeOwner == ObjectIdentifier(read) else { return nil }
            defer { s.wakeWaiter = nil }
            return s.wakeWaiter
        }
        waiter?.resume(returning: true)
    }
}

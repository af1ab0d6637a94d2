import BLEHCI
import Synchronization

/// The frames one end of an in-process transport has received and its reader not yet taken:
/// a lock, an array and at most one waiting reader. What `AsyncThrowingStream` does for
/// `incoming`, without its generic, unspecialised machinery (the profile: about a fifth
/// of every packet's cost went to metadata lookups inside it), and in batches: a reader that
/// wakes takes every frame that arrived meanwhile in one go, so a burst of ACL fragments costs
/// one task switch, not one per fragment.
///
/// One reader at a time (the transport contract's single consumer). Frames come out in the
/// order `push` took the lock. After `close`, the frames already queued are still read, then
/// the reader sees the end (or the error `close` was given).
public final class HCIFrameQueue: Sendable {
    private struct State {
        var frames: [H4Frame] = []
        var waiter: UnsafeContinuation<Void, Never>?
        var closed = false
        var error: (any Error)?
        /// The reader was cancelled while it waited: it ends as at a normal close.
        var cancelled = false
    }

    private let state = Mutex(State())

    /// An empty, open queue.
    public init() {}

    /// Appends a frame; false (and nothing queued) once the queue is closed.
    @discardableResult
    public func push(_ frame: H4Frame) -> Bool {
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>?? in
            guard !s.closed else { return .none }
            s.frames.append(frame)
            defer { s.waiter = nil }
            return .some(s.waiter)
        }
        guard let waiter else { return false }
        waiter?.resume()
        return true
    }

    /// Appends `frames` in order under one lock (a burst a controller sends at once); false (and
    /// nothing queued) once the queue is closed.
    @discardableResult
    public func push(contentsOf frames: some Collection<H4Frame>) -> Bool {
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>?? in
            guard !s.closed else { return .none }
            s.frames.append(contentsOf: frames)
            defer { s.waiter = nil }
            return .some(s.waiter)
        }
        guard let waiter else { return false }
        waiter?.resume()
        return true
    }

    /// Ends the queue: the reader gets what is queued, then nil, or `error` thrown. Idempotent
    /// (the first close decides how the queue ends).
    public func close(error: (any Error)? = nil) {
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>? in
            guard !s.closed else { return nil }
            s.closed = true
            s.error = error
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Whether `close` has been called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    private enum Take {
        /// The frames are in the array `take(swapping:)` was given.
        case frames
        case end
        case failed(any Error)
        case empty
    }

    /// Every frame queued now, oldest first, waiting for at least one; nil once the queue is
    /// closed and drained, or when the reading task is cancelled. Throws the error `close`
    /// was given, after the frames queued before it. Runs on the caller's actor (`isolation`),
    /// so an actor's read loop does not hop off and back per batch.
    public func next(isolation: isolated (any Actor)? = #isolation) async throws -> [H4Frame]? {
        while true {
            var batch: [H4Frame] = []
            switch take(swapping: &batch) {
            case .frames: return batch
            case .end: return nil
            case let .failed(error): throw error
            case .empty: break
            }
            if Task.isCancelled { return nil }
            await withTaskCancellationHandler(operation: {
                await waitForFrames(isolation: isolation)
            }, onCancel: { cancelReader() }, isolation: isolation)
        }
    }

    /// Hands every batch to `body`, oldest first, until the queue is closed and drained (then
    /// returns) or fails (then throws the error `close` was given), or the reading task is
    /// cancelled (then returns once what is queued has been handed over). What a read loop over
    /// `next` does, with one cancellation handler for the whole loop instead of one per wait: a
    /// reader wakes once per burst, and each wait is then one continuation and nothing more.
    /// Runs on the caller's actor (`isolation`), `body` within its turn.
    ///
    /// The batch array is recycled: the reader keeps the one it handed to `body` and, emptied
    /// (its capacity kept), swaps it for the queue's at the next take, so a steady stream of
    /// batches allocates no arrays (a new array per batch, then grown by `push`). A
    /// `body` that keeps its batch keeps a copy as ever; the spare is then a new array.
    ///
    /// `body` may take frames out of its batch (swap them for others): a frame taken out is
    /// then referenced only by `body`, which can change its bytes in place rather than copy them
    /// (the virtual radio rewriting an ACL header). What it leaves is released after.
    public func read(isolation: isolated (any Actor)? = #isolation, _ body: (inout [H4Frame]) -> Void) async throws {
        try await withTaskCancellationHandler(operation: {
            var batch: [H4Frame] = []
            while true {
                // Emptied outside the lock: releasing the frames is not the pushers' wait. A
                // burst's array, far larger than what now comes, goes rather than stay for ever.
                if batch.capacity > Self.keptCapacity && batch.capacity > 4 * batch.count {
                    batch = []
                } else {
                    batch.removeAll(keepingCapacity: true)
                }
                switch take(swapping: &batch) {
                case .frames:
                    body(&batch)
                    continue
                case .end: return
                case let .failed(error): throw error
                case .empty: break
                }
                await waitForFrames(isolation: isolation)
            }
        }, onCancel: { cancelReader() }, isolation: isolation)
    }

    /// The most capacity a recycled batch array keeps whatever it held last; beyond it, an
    /// array more than four times the last batch is dropped.
    static let keptCapacity = 64

    /// Suspends until frames are queued, the queue is closed, or the reader was cancelled.
    private func waitForFrames(isolation: isolated (any Actor)?) async {
        await withUnsafeContinuation(isolation: isolation) { (c: UnsafeContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if !s.frames.isEmpty || s.closed || s.cancelled { return true }
                s.waiter = c
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// The reader's task was cancelled: marks it and wakes a waiting reader.
    private func cancelReader() {
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>? in
            s.cancelled = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Takes every queued frame: they trade places with `spare` (empty, with whatever capacity
    /// the caller's last batch left it), which then holds them. A spare without capacity is
    /// given room for as many frames as this batch had, so `push` need not grow it from nothing.
    private func take(swapping spare: inout [H4Frame]) -> Take {
        state.withLock { s -> Take in
            if !s.frames.isEmpty {
                swap(&s.frames, &spare)
                if s.frames.capacity == 0 { s.frames.reserveCapacity(spare.count) }
                return .frames
            }
            if s.cancelled {
                s.cancelled = false
                return .end
            }
            guard s.closed else { return .empty }
            if let error = s.error { return .failed(error) }
            return .end
        }
    }

    /// The queue as an `AsyncThrowingStream` of single frames, for readers written against the
    /// `HCITransport.incoming` contract.
    public func stream() -> AsyncThrowingStream<H4Frame, any Error> {
        let iterator = BatchIterator(queue: self)
        return AsyncThrowingStream(unfolding: { try await iterator.next() })
    }

    /// Hands out a batch frame by frame. Only ever touched by the stream's one consumer.
    private final class BatchIterator: @unchecked Sendable {
        let queue: HCIFrameQueue
        var batch: [H4Frame] = []
        var index = 0

        init(queue: HCIFrameQueue) { self.queue = queue }

        func next() async throws -> H4Frame? {
            if index >= batch.count {
                guard let frames = try await queue.next() else { return nil }
                batch = frames
                index = 0
            }
            defer { index += 1 }
            return batch[index]
        }
    }
}

import BLEHCI

/// The frames one end of an in-process transport has received and its reader not yet taken:
/// a `SingleConsumerQueue` of frames, unbounded, read in batches (a reader that wakes takes
/// every frame that arrived meanwhile in one go, so a burst of ACL fragments costs one task
/// switch, not one per fragment). Cancelling a reader ends that read only: the queue outlives
/// any one read loop and serves the next reader.
public typealias HCIFrameQueue = SingleConsumerQueue<H4Frame>

extension SingleConsumerQueue where Element == H4Frame {
    /// An empty, open, unbounded queue of frames whose reader's cancellation ends its read only.
    public convenience init() {
        self.init(limit: .max, overflow: .dropNewest, cancellation: .endsRead)
    }

    /// `push` for frames, compiled here rather than specialised where it is called: a closure
    /// in a generic function specialised in another module is not inlined into it, and a frame
    /// would cost a call more (every HCI packet in and out passes here; `ble-bench raw`).
    @discardableResult
    public func push(_ frame: H4Frame) -> Bool {
        // The common case under one lock; the rest (`pushing`) looks again under a second one,
        // so the first keeps nothing but the frame live (each value it must keep for later is a
        // spill, twenty times per 27-octet notification).
        if let woken = state.withLock({ $0.queue(frame, limit: limit) }) {
            woken?.resume(returning: true)
            return true
        }
        return woke(state.withLock { $0.pushing(frame, limit: limit, overflow: overflow) }, handing: frame)
    }
}

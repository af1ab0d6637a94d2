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
}

import BLEHCI
import Synchronization

/// Two linked transport ends in one process: what one end sends, the other receives, in order.
/// Tests put the host on one end and a scripted fake controller on the other (the Bumble idea
/// of two stacks in one process), with no sockets, threads or timing involved.
///
/// Closing either end finishes both streams; `fail(_:)` finishes both with an error, to test how
/// the host reacts to a transport dying.
public final class InMemoryTransport: HCITransport {
    /// "in-memory (host end)" or "in-memory (controller end)".
    public let description: String
    /// What the other end sent, in order; finishes when either end closes or fails.
    public let incoming: AsyncThrowingStream<H4Frame, any Error>
    /// The same frames as `incoming`, in batches (read one or the other, never both).
    public let incomingQueue: HCIFrameQueue?
    private let link: Link
    private let side: Int

    /// Shared by both ends. The receiving queue's lock orders every delivery, so frames sent from
    /// concurrent tasks arrive whole and in the order the sends took it; a send is one lock, not
    /// two (the in-process pipe carries every fragment of the hot path).
    private final class Link: Sendable {
        let queues: [HCIFrameQueue]
        /// What each side receives: `queues[0]` and `queues[1]` as constants, so that a send (one
        /// per frame both ways) reads its queue without an array access.
        private let toSide0: HCIFrameQueue
        private let toSide1: HCIFrameQueue
        /// Set first by `close`, so a send that starts after it throws; a send racing a close
        /// either lands before the queues close (and is read) or is refused by the closed queue.
        let closed = Atomic<Bool>(false)
        /// Frames each side has delivered.
        let sentBySide0 = Atomic<Int>(0)
        let sentBySide1 = Atomic<Int>(0)

        init(_ queues: [HCIFrameQueue]) {
            self.queues = queues
            self.toSide0 = queues[0]
            self.toSide1 = queues[1]
        }

        func deliver(_ frame: H4Frame, from side: Int) throws {
            guard !closed.load(ordering: .acquiring), (side == 0 ? toSide1 : toSide0).push(frame) else {
                throw TransportError(.closed, "in-memory transport is closed")
            }
            if side == 0 { sentBySide0.wrappingAdd(1, ordering: .relaxed) } else { sentBySide1.wrappingAdd(1, ordering: .relaxed) }
        }

        func close(error: (any Error)?) {
            guard closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
            for q in queues { q.close(error: error) }
        }

        func sentCount(_ side: Int) -> Int {
            side == 0 ? sentBySide0.load(ordering: .relaxed) : sentBySide1.load(ordering: .relaxed)
        }
    }

    private init(description: String, queue: HCIFrameQueue, link: Link, side: Int) {
        self.description = description
        self.incoming = queue.stream()
        self.incomingQueue = queue
        self.link = link
        self.side = side
    }

    /// Makes two linked ends: `host` receives what `controller` sends and vice versa.
    public static func pair() -> (host: InMemoryTransport, controller: InMemoryTransport) {
        let queues = [HCIFrameQueue(), HCIFrameQueue()]
        let link = Link(queues)
        return (InMemoryTransport(description: "in-memory (host end)", queue: queues[0], link: link, side: 0),
                InMemoryTransport(description: "in-memory (controller end)", queue: queues[1], link: link, side: 1))
    }

    /// Delivers `frame` to the other end at once; throws `.closed` once either end is closed.
    public func send(_ frame: H4Frame) async throws {
        try link.deliver(frame, from: side)
    }

    /// Delivery takes a lock and never waits, so both ends may send from inside an actor turn.
    public var acceptsImmediateSends: Bool { true }

    /// `send` without the suspension point: the frame is delivered before this returns.
    public func sendImmediately(_ frame: H4Frame) throws {
        try link.deliver(frame, from: side)
    }

    /// `close()` from synchronous code (an actor removing the end it owns).
    public func closeNow() {
        link.close(error: nil)
    }

    /// Closes both ends: both `incoming` streams finish normally.
    public func close() async {
        link.close(error: nil)
    }

    /// Finishes both ends' `incoming` by throwing `error` (default: the peer went away), as a
    /// real transport does on an I/O failure. Later sends throw `.closed`.
    public func fail(_ error: any Error = TransportError(.peerClosed, "in-memory transport: the peer went away")) {
        link.close(error: error)
    }

    /// How many frames this end has sent so far.
    public var sentCount: Int { link.sentCount(side) }
}

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
    private let link: Link
    private let side: Int

    /// Shared by both ends: one lock orders every delivery, so frames sent from concurrent tasks
    /// arrive whole and in the order the sends took the lock.
    private final class Link: Sendable {
        struct State {
            var closed = false
            var frames: [Int] = [0, 0]
        }
        let continuations: [AsyncThrowingStream<H4Frame, any Error>.Continuation]
        let state = Mutex(State())

        init(_ continuations: [AsyncThrowingStream<H4Frame, any Error>.Continuation]) {
            self.continuations = continuations
        }

        func deliver(_ frame: H4Frame, from side: Int) throws {
            try state.withLock { s in
                if s.closed { throw TransportError(.closed, "in-memory transport is closed") }
                s.frames[side] += 1
                continuations[1 - side].yield(frame)
            }
        }

        func close(error: (any Error)?) {
            let first = state.withLock { s -> Bool in
                defer { s.closed = true }
                return !s.closed
            }
            guard first else { return }
            for c in continuations { c.finish(throwing: error) }
        }
    }

    private init(description: String, incoming: AsyncThrowingStream<H4Frame, any Error>, link: Link, side: Int) {
        self.description = description
        self.incoming = incoming
        self.link = link
        self.side = side
    }

    /// Makes two linked ends: `host` receives what `controller` sends and vice versa.
    public static func pair() -> (host: InMemoryTransport, controller: InMemoryTransport) {
        let (hostStream, hostContinuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        let (controllerStream, controllerContinuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        let link = Link([hostContinuation, controllerContinuation])
        return (InMemoryTransport(description: "in-memory (host end)", incoming: hostStream, link: link, side: 0),
                InMemoryTransport(description: "in-memory (controller end)", incoming: controllerStream, link: link, side: 1))
    }

    /// Delivers `frame` to the other end at once; throws `.closed` once either end is closed.
    public func send(_ frame: H4Frame) async throws {
        try link.deliver(frame, from: side)
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
    public var sentCount: Int { link.state.withLock { $0.frames[side] } }
}

import BLEHCI

/// A byte pipe to one HCI controller, moving whole H4 frames. This is the only I/O the stack does
/// (ARCHITECTURE.md, "transport"); everything above is sans-IO and drives a transport from the
/// controller actor.
///
/// Contract every implementation keeps:
/// - `incoming` is one stream, created with the transport, for a single consumer. It yields the
///   controller's frames in order, finishes normally after `close()`, and finishes by throwing a
///   `TransportError` on an I/O error, a lost H4 sync, or when the peer goes away.
/// - `send` writes the whole frame or throws; concurrent callers are serialised, each frame is
///   written contiguously, in the order the calls reached the transport.
/// - `close()` is idempotent, stops the reader, releases the OS resource before it returns, and
///   finishes `incoming`. After it, `send` throws `TransportError.Kind.closed`.
public protocol HCITransport: AnyObject, Sendable {
    /// The controller's frames in order, for one consumer (the host); see the contract above for
    /// how it ends.
    var incoming: AsyncThrowingStream<H4Frame, any Error> { get }
    /// Writes one whole frame to the controller, or throws (`TransportError`, `.closed` after `close()`).
    func send(_ frame: H4Frame) async throws
    /// Releases the OS resource and finishes `incoming`; idempotent.
    func close() async
    /// The transport in `TransportSpec` form, e.g. "tcp:127.0.0.1:6402", for logs and errors.
    var description: String { get }
    /// True when `sendImmediately` can always take a frame without suspending (an in-process
    /// pipe): the host then writes from its own actor turn instead of through a writer task, one
    /// task switch less per packet. False (the default) for sockets and serial lines.
    var acceptsImmediateSends: Bool { get }
    /// Writes one whole frame without suspending, in call order with every other send; only
    /// called when `acceptsImmediateSends` is true. Throws as `send` does.
    func sendImmediately(_ frame: H4Frame) throws
    /// The frames of `incoming` as a batch queue, when the transport keeps them in one (an
    /// in-process pipe): a reader that takes them from here takes a whole burst per wake-up.
    /// Read this or `incoming`, never both. Nil (the default) for the others.
    var incomingQueue: HCIFrameQueue? { get }
}

extension HCITransport {
    /// Sockets, serial lines and user channels may block: they take frames through `send`.
    public var acceptsImmediateSends: Bool { false }

    /// Sockets, serial lines and user channels deliver through `incoming` only.
    public var incomingQueue: HCIFrameQueue? { nil }

    /// Not available on a transport that may block: it throws `TransportError.Kind.io`, and the
    /// host never calls it there (it asks `acceptsImmediateSends` first).
    public func sendImmediately(_ frame: H4Frame) throws {
        throw TransportError(.io, "\(description) cannot send without suspending")
    }
}

/// Why a transport could not be opened or stopped working. A struct with an open set of kinds
/// (the swift-nio style) so new cases do not break callers' switches; `message` is written for a
/// person and says what to do where we know.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as one of an open set of kinds (compare with `==`, not by exhaustive
    /// switch).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, e.g. "openFailed".
        public var rawValue: String
        /// A kind named `rawValue` (a transport of an app's own may define more).
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The kind's name.
        public var description: String { rawValue }

        /// The transport string does not match any accepted form.
        public static let invalidSpec = Kind("invalidSpec")
        /// The transport kind exists but is not built in here (e.g. `virtual`, or a non-Linux OS).
        public static let notAvailable = Kind("notAvailable")
        /// Opening failed: no such device/host, permission, busy, refused...
        public static let openFailed = Kind("openFailed")
        /// A read or write failed after the transport was open.
        public static let io = Kind("io")
        /// The other end closed the connection or the device went away.
        public static let peerClosed = Kind("peerClosed")
        /// The byte stream held an unknown H4 packet indicator: framing is lost for good.
        public static let desync = Kind("desync")
        /// `send` after `close()` (or after the transport failed).
        public static let closed = Kind("closed")
    }

    /// Which kind of failure: what a caller branches on.
    public var kind: Kind
    /// What happened and, where known, what to do, for a person.
    public var message: String
    /// The errno behind the failure, when there was one.
    public var errno: Int32?

    /// An error of `kind` saying `message`, with the `errno` behind it if there was one.
    public init(_ kind: Kind, _ message: String, errno: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.errno = errno
    }

    /// The message.
    public var description: String { message }
}

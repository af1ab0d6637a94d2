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
    var incoming: AsyncThrowingStream<H4Frame, any Error> { get }
    func send(_ frame: H4Frame) async throws
    func close() async
    /// The transport in `TransportSpec` form, e.g. "tcp:127.0.0.1:6402", for logs and errors.
    var description: String { get }
}

/// Why a transport could not be opened or stopped working. A struct with an open set of kinds
/// (the swift-nio style) so new cases do not break callers' switches; `message` is written for a
/// person and says what to do where we know.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
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

    public var kind: Kind
    public var message: String
    /// The errno behind the failure, when there was one.
    public var errno: Int32?

    public init(_ kind: Kind, _ message: String, errno: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.errno = errno
    }

    public var description: String { message }
}

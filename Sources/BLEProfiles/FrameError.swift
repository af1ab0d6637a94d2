import BLEWire

/// Why a framed-stream header was rejected or a frame could not be encoded (docs/SYSTEMS.md S1).
///
/// The original client force-unwrapped the size field and crashed on garbage; every malformed
/// header here ends in one of these, with a message a user can act on.
public enum FrameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The first byte of a header is not `N`, `T`, `U` or `I`.
    case unknownCode(UInt8)
    /// The seven SIZE bytes (as received) are not all ASCII digits.
    case invalidSize([UInt8])
    /// The header announces a body larger than the decoder's configured limit.
    case bodyTooLarge(size: Int, limit: Int)
    /// An `N` frame announces a body; `N` is a bare notification and never has one.
    case notifyWithBody(size: Int)
    /// A body of this many bytes does not fit the seven-digit SIZE field (at most 9,999,999).
    case bodyTooLongToEncode(Int)

    /// Whether the header was well formed and only its frame is refused (too large, an `N`
    /// with a body): the announced body can be skipped and the stream stays in step. The other
    /// decoding errors leave nothing that says where the next frame starts.
    public var isRefusal: Bool { announcedBodySize != nil }

    /// The body size a refused frame's header announced: the bytes to skip after it.
    public var announcedBodySize: Int? {
        switch self {
        case let .bodyTooLarge(size, _), let .notifyWithBody(size): return size
        case .unknownCode, .invalidSize, .bodyTooLongToEncode: return nil
        }
    }

    public var description: String {
        switch self {
        case let .unknownCode(byte):
            return "framed stream: unknown frame code \(Self.show(byte)) (expected N, T, U or I); the stream is out of sync"
        case let .invalidSize(bytes):
            let text = String(decoding: bytes.map(Self.printable), as: UTF8.self)
            return "framed stream: size field \"\(text)\" (\(bytes.hexString)) is not \(Frame.sizeDigits) ASCII decimal digits"
        case let .bodyTooLarge(size, limit):
            return "framed stream: frame announces a body of \(size) bytes, more than the limit of \(limit)"
        case let .notifyWithBody(size):
            return "framed stream: an N frame announces a body of \(size) bytes; N frames have none"
        case let .bodyTooLongToEncode(size):
            return "framed stream: a body of \(size) bytes cannot be sent; the size field holds at most \(Frame.maximumEncodableBodySize)"
        }
    }

    /// "0x41 'A'" for printable ASCII, "0x07" otherwise.
    private static func show(_ byte: UInt8) -> String {
        let hex = String(byte, radix: 16, uppercase: true)
        let code = "0x" + (hex.count < 2 ? "0" + hex : hex)
        return (0x20..<0x7F).contains(byte) ? "\(code) '\(String(UnicodeScalar(byte)))'" : code
    }

    /// Printable ASCII as itself, anything else as ".".
    private static func printable(_ byte: UInt8) -> UInt8 {
        (0x20..<0x7F).contains(byte) ? byte : 0x2E
    }
}

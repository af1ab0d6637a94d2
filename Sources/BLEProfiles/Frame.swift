/// The kind of a frame on the S1 framed stream: its one ASCII code byte (docs/SYSTEMS.md S1).
public enum FrameCode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// `N`: a bare notification, always with an empty body.
    case notify = 0x4E
    /// `T`: UTF-8 text.
    case text = 0x54
    /// `U`: a URL as UTF-8 text; the peripheral answers with the image it fetches from there.
    case url = 0x55
    /// `I`: image bytes (binary, any format).
    case image = 0x49

    /// The ASCII letter, e.g. "T".
    public var description: String { String(UnicodeScalar(rawValue)) }
}

/// One frame of the S1 framed stream (docs/SYSTEMS.md S1): `CODE` (1 ASCII byte) + `SIZE` (7 ASCII
/// decimal digits, zero-filled, the body length) + `BODY`.
///
/// Both directions of the echo service carry a byte stream of these frames over one
/// characteristic: written by the central, notified by the peripheral. `FrameDecoder` reassembles
/// them from whatever pieces the link delivers; `Frame.chunks(of:maximumLength:)` cuts an encoded
/// frame into writes.
public struct Frame: Equatable, Sendable {
    public var code: FrameCode
    public var body: [UInt8]

    /// Bytes before the body: one code byte and seven size digits.
    public static let headerLength = 8
    /// Digits in the SIZE field.
    public static let sizeDigits = 7
    /// The largest body seven decimal digits can describe.
    public static let maximumEncodableBodySize = 9_999_999

    public init(code: FrameCode, body: [UInt8] = []) {
        self.code = code
        self.body = body
    }

    /// A `T` frame holding `text` as UTF-8.
    public static func text(_ text: String) -> Frame { Frame(code: .text, body: Array(text.utf8)) }

    /// A `U` frame holding `url` as UTF-8.
    public static func url(_ url: String) -> Frame { Frame(code: .url, body: Array(url.utf8)) }

    /// An `I` frame holding image bytes.
    public static func image(_ bytes: [UInt8]) -> Frame { Frame(code: .image, body: bytes) }

    /// The `N` frame: no body.
    public static let notify = Frame(code: .notify)

    /// The body as UTF-8 text, or nil when it is not valid UTF-8 (an image, or a corrupt text).
    public var text: String? { String(validating: body, as: UTF8.self) }

    /// The frame the central sends for a line the user typed (docs/SYSTEMS.md S1): `U` when the text
    /// starts with "http" (which covers "https") or with "file://", otherwise `T`.
    ///
    /// "file://" is an addition to the article's rule so that local tests and demos can ask the
    /// peripheral for an image without a network; the peripheral decides whether it serves it.
    public static func forMessage(_ message: String) -> Frame {
        if message.hasPrefix("http") || message.hasPrefix("file://") { return .url(message) }
        return .text(message)
    }

    /// The frame on the wire: code, zero-filled seven-digit size, body.
    ///
    /// Throws `FrameError.bodyTooLongToEncode` when the body has more than 9,999,999 bytes, the
    /// most seven digits can say, and `FrameError.notifyWithBody` for an `N` frame with a body
    /// (a decoder would refuse it).
    public func encoded() throws(FrameError) -> [UInt8] {
        guard body.count <= Self.maximumEncodableBodySize else { throw .bodyTooLongToEncode(body.count) }
        guard code != .notify || body.isEmpty else { throw .notifyWithBody(size: body.count) }
        var out: [UInt8] = []
        out.reserveCapacity(Self.headerLength + body.count)
        out.append(code.rawValue)
        var digits = [UInt8](repeating: 0x30, count: Self.sizeDigits)
        var remaining = body.count
        var position = Self.sizeDigits - 1
        while remaining > 0 && position >= 0 {
            digits[position] = 0x30 + UInt8(remaining % 10)
            remaining /= 10
            position -= 1
        }
        out.append(contentsOf: digits)
        out.append(contentsOf: body)
        return out
    }

    /// The encoded frame cut into writes of at most `maximumLength` bytes
    /// (see `chunks(of:maximumLength:)`).
    public func chunks(maximumLength: Int) throws(FrameError) -> [[UInt8]] {
        Self.chunks(of: try encoded(), maximumLength: maximumLength)
    }

    /// Cuts an encoded byte stream (one frame or several back to back) into pieces of at most
    /// `maximumLength` bytes, in order, the last one possibly shorter.
    ///
    /// The central writes each piece with one ATT Write Request, so `maximumLength` is the peer's
    /// maximum write length, ATT_MTU − 3 (docs/SYSTEMS.md S1; Core spec Vol 3 Part F §3.4.5.1). A
    /// `maximumLength` below 1 cannot come from a real MTU (the minimum LE ATT_MTU is 23); it is
    /// treated as 1 so that every byte is still sent and nothing traps. No input gives no pieces.
    public static func chunks(of stream: [UInt8], maximumLength: Int) -> [[UInt8]] {
        let size = max(1, maximumLength)
        var pieces: [[UInt8]] = []
        pieces.reserveCapacity(stream.count / size + 1)
        var start = 0
        while start < stream.count {
            let end = stream.count - start > size ? start + size : stream.count
            pieces.append(Array(stream[start..<end]))
            start = end
        }
        return pieces
    }
}

/// Why a decoder could not read a value: every decoder in the stack reports short or nonsense input
/// with one of these instead of trapping (ARCHITECTURE.md, "Decoders never trap").
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// Fewer bytes were left than the field needs.
        case truncated(needed: Int, remaining: Int)
        /// The bytes are present but their value is not allowed here.
        case invalidValue
    }
    public var kind: Kind
    /// What was being decoded, e.g. "ATT Read By Type Response".
    public var context: String

    public init(_ kind: Kind, context: String = "") {
        self.kind = kind
        self.context = context
    }

    public static func truncated(needed: Int, remaining: Int, _ context: String = "") -> WireError {
        WireError(.truncated(needed: needed, remaining: remaining), context: context)
    }

    public static func invalid(_ context: String) -> WireError {
        WireError(.invalidValue, context: context)
    }

    public var description: String {
        switch kind {
        case let .truncated(needed, remaining):
            return "\(context.isEmpty ? "input" : context): truncated (needed \(needed) bytes, \(remaining) left)"
        case .invalidValue:
            return "\(context.isEmpty ? "input" : context): invalid value"
        }
    }
}

/// A cursor over little-endian Bluetooth bytes that throws on short input, never traps.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    public init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        self.init(Array(bytes))
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }

    private func need(_ n: Int) throws(WireError) {
        if n < 0 || remaining < n { throw WireError.truncated(needed: n, remaining: remaining) }
    }

    public mutating func readU8() throws(WireError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readI8() throws(WireError) -> Int8 {
        Int8(bitPattern: try readU8())
    }

    public mutating func readU16() throws(WireError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    public mutating func readU24() throws(WireError) -> UInt32 {
        try need(3)
        defer { offset += 3 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    public mutating func readU32() throws(WireError) -> UInt32 {
        try need(4)
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * i) }
        offset += 4
        return v
    }

    public mutating func readU64() throws(WireError) -> UInt64 {
        try need(8)
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * i) }
        offset += 8
        return v
    }

    public mutating func readBytes(_ n: Int) throws(WireError) -> [UInt8] {
        try need(n)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    public mutating func readRemaining() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[min(offset, bytes.count)...])
    }

    public mutating func skip(_ n: Int) throws(WireError) {
        try need(n)
        offset += n
    }

    /// Decodes with `body`, prefixing any error with `context`.
    public mutating func reading<T>(_ context: String, _ body: (inout ByteReader) throws(WireError) -> T) throws(WireError) -> T {
        do {
            return try body(&self)
        } catch {
            var e = error
            if e.context.isEmpty { e.context = context }
            throw e
        }
    }
}

/// Builds little-endian Bluetooth bytes.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    public mutating func u24(_ v: UInt32) { for i in 0..<3 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
    public mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
    public mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
    public mutating func append<S: Sequence>(_ s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }
}

extension Array where Element == UInt8 {
    /// Lower-case hex without separators, e.g. "0a1b".
    public var hexString: String {
        var s = ""
        s.reserveCapacity(count * 2)
        let digits = Swift.Array<Character>("0123456789abcdef")
        for b in self {
            s.append(digits[Int(b >> 4)])
            s.append(digits[Int(b & 0x0F)])
        }
        return s
    }

    /// Parses hex with optional spaces, colons or a 0x prefix; nil on anything else.
    public init?(hexString: String) {
        var text = hexString.filter { !$0.isWhitespace && $0 != ":" && $0 != "-" }
        if text.hasPrefix("0x") || text.hasPrefix("0X") { text.removeFirst(2) }
        guard text.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var it = text.makeIterator()
        while let hi = it.next(), let lo = it.next() {
            guard let h = hi.hexDigitValue, let l = lo.hexDigitValue else { return nil }
            out.append(UInt8(h << 4 | l))
        }
        self = out
    }
}

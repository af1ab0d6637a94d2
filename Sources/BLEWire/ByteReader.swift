/// Why a decoder could not read a value: every decoder in the stack reports short or nonsense input
/// with one of these instead of trapping (ARCHITECTURE.md, "Decoders never trap").
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem the input had.
    public enum Kind: Hashable, Sendable {
        /// Fewer bytes were left than the field needs.
        case truncated(needed: Int, remaining: Int)
        /// The bytes are present but their value is not allowed here.
        case invalidValue
    }
    /// What was wrong: too short, or a value not allowed.
    public var kind: Kind
    /// What was being decoded, e.g. "ATT Read By Type Response".
    public var context: String

    /// An error of `kind` while decoding what `context` names.
    public init(_ kind: Kind, context: String = "") {
        self.kind = kind
        self.context = context
    }

    /// Input that ended early: `needed` bytes were wanted with `remaining` left.
    public static func truncated(needed: Int, remaining: Int, _ context: String = "") -> WireError {
        WireError(.truncated(needed: needed, remaining: remaining), context: context)
    }

    /// Input whose value is not allowed; `context` says which and why.
    public static func invalid(_ context: String) -> WireError {
        WireError(.invalidValue, context: context)
    }

    /// The context and the problem, e.g. "ATT Read Response: truncated (needed 2 bytes, 1 left)".
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
    /// The whole input.
    public let bytes: [UInt8]
    /// Where the next read starts.
    public private(set) var offset: Int

    /// A reader at the start of `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    /// A reader at the start of `bytes` (a slice, say), copied.
    public init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        self.init(Array(bytes))
    }

    /// How many bytes are left to read.
    public var remaining: Int { bytes.count - offset }
    /// True when everything has been read (decoders check it to refuse trailing bytes).
    public var isAtEnd: Bool { offset >= bytes.count }

    private func need(_ n: Int) throws(WireError) {
        if n < 0 || remaining < n { throw WireError.truncated(needed: n, remaining: remaining) }
    }

    /// Reads one octet.
    public mutating func readU8() throws(WireError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Reads one octet as a signed value (RSSI, TX power).
    public mutating func readI8() throws(WireError) -> Int8 {
        Int8(bitPattern: try readU8())
    }

    /// Reads a little-endian 16-bit value (Bluetooth's byte order, Core spec Vol 3 Part F §3.2.9 for ATT).
    public mutating func readU16() throws(WireError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    /// Reads a little-endian 24-bit value (e.g. a Class of Device).
    public mutating func readU24() throws(WireError) -> UInt32 {
        try need(3)
        defer { offset += 3 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    /// Reads a little-endian 32-bit value.
    public mutating func readU32() throws(WireError) -> UInt32 {
        try need(4)
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * i) }
        offset += 4
        return v
    }

    /// Reads a little-endian 64-bit value (e.g. a feature mask).
    public mutating func readU64() throws(WireError) -> UInt64 {
        try need(8)
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * i) }
        offset += 8
        return v
    }

    /// Reads the next `n` bytes as they are.
    public mutating func readBytes(_ n: Int) throws(WireError) -> [UInt8] {
        try need(n)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    /// Reads everything left (possibly nothing): the tail of a PDU whose length is the rest.
    public mutating func readRemaining() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[min(offset, bytes.count)...])
    }

    /// Moves past `n` bytes (reserved fields), throwing if fewer are left.
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
    /// Everything written so far.
    public private(set) var bytes: [UInt8]

    /// An empty writer with room for `capacity` bytes before it grows.
    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Writes one octet.
    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    /// Writes a signed octet (two's complement).
    public mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    /// Writes a 16-bit value, least significant octet first.
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    /// Writes the low 24 bits of `v`, least significant octet first.
    public mutating func u24(_ v: UInt32) { for i in 0..<3 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
    /// Writes a 32-bit value, least significant octet first.
    public mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
    /// Writes a 64-bit value, least significant octet first.
    public mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
    /// Writes bytes as they are (a value, an already-encoded field).
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

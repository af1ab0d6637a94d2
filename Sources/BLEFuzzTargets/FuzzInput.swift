/// A cursor that turns one fuzz input into the decisions and byte strings a stateful target
/// needs (how to chunk a stream, which operation to run next, the bytes of the next PDU).
///
/// It never fails: past the end every read returns zero or empty, so any input, including the
/// empty one, is a valid program. Reads are designed to keep small edits local (a length byte
/// changes one chunk, not the framing of everything after it), which helps the fuzzer.
struct FuzzInput {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }
    var remaining: Int { max(0, bytes.count - offset) }

    mutating func u8() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> UInt16 {
        UInt16(u8()) | UInt16(u8()) << 8
    }

    mutating func bool() -> Bool { u8() & 1 == 1 }

    /// Up to `count` bytes (fewer at the end of the input).
    mutating func take(_ count: Int) -> [UInt8] {
        let n = max(0, min(count, remaining))
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    /// A chunk preceded by its length byte (0...255; fewer bytes at the end of the input).
    mutating func chunk() -> [UInt8] {
        take(Int(u8()))
    }

    /// A chunk with a 16-bit length (for PDUs longer than 255 bytes).
    mutating func longChunk(maximum: Int) -> [UInt8] {
        take(Int(u16()) % (maximum + 1))
    }

    mutating func rest() -> [UInt8] {
        take(remaining)
    }
}

/// Big-endian helpers for rebuilding btsnoop files in the round-trip check.
enum BigEndian {
    static func append32(_ v: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    static func append64(_ v: UInt64, to out: inout [UInt8]) {
        append32(UInt32(truncatingIfNeeded: v >> 32), to: &out)
        append32(UInt32(truncatingIfNeeded: v), to: &out)
    }
}

/// Short hex for violation messages, cut so a huge input does not flood the log.
func fuzzHex(_ bytes: [UInt8], limit: Int = 64) -> String {
    let digits = Array("0123456789abcdef")
    var s = ""
    for b in bytes.prefix(limit) {
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 0x0F)])
    }
    return bytes.count > limit ? s + "…(\(bytes.count) bytes)" : s
}

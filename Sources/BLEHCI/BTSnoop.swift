import BLEWire

/// The btsnoop capture format (pure encoder and decoder, no I/O): what `btmon -w`, Android's
/// HCI snoop log, Bumble's snooper and Wireshark/tshark all read, so a capture written by our
/// transport can be inspected with the same tools as everyone else's.
///
/// Layout (RFC 1761 "snoop" with the btsnoop identification pattern, as documented by the
/// Wireshark/BlueZ btsnoop readers): a 16-byte file header, then records of a 24-byte header
/// followed by the packet bytes. Every integer is big-endian, unlike everything else in Bluetooth.
/// With datalink 1002 (HCI UART, H4) each record's data starts with the H4 packet indicator
/// (Core spec Vol 4 Part A §2), which is exactly `H4Frame.bytes`.
public enum BTSnoop {
    /// Identification pattern: "btsnoop" and a NUL.
    public static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
    public static let version: UInt32 = 1
    /// Datalink type 1002: HCI UART (H4), packets carry their indicator byte.
    public static let datalinkH4: UInt32 = 1002
    /// Microseconds from midnight 1 January 0 AD to the Unix epoch: btsnoop timestamps count
    /// from year 0, so Unix µs + this offset is a btsnoop timestamp.
    public static let epochOffsetMicroseconds: Int64 = 0x00dc_ddb3_0f2f_8000
    public static let fileHeaderLength = 16
    public static let recordHeaderLength = 24

    /// Which way a packet went, seen from the host (flags bit 0).
    public enum Direction: Sendable, Hashable {
        /// Host → controller (commands, outgoing ACL/ISO data): bit 0 clear.
        case sent
        /// Controller → host (events, incoming data): bit 0 set.
        case received
    }

    /// The 16-byte file header: magic, version 1, datalink 1002 (H4).
    public static var fileHeader: [UInt8] {
        var out = magic
        appendBE32(version, to: &out)
        appendBE32(datalinkH4, to: &out)
        return out
    }

    /// Converts a Unix time in microseconds to a btsnoop timestamp (µs since 0 AD).
    public static func timestamp(unixMicroseconds: Int64) -> Int64 {
        unixMicroseconds &+ epochOffsetMicroseconds
    }

    /// Record flags: bit 0 = direction (0 sent, 1 received), bit 1 = command/event (1) versus
    /// data (0, ACL/SCO/ISO).
    public static func flags(for type: HCIPacketType, direction: Direction) -> UInt32 {
        var f: UInt32 = direction == .received ? 1 : 0
        switch type {
        case .command, .event: f |= 2
        case .acl, .sco, .iso: break
        }
        return f
    }

    /// One record: original length, included length (both the whole H4 frame, nothing is
    /// truncated), flags, cumulative drops (always 0), timestamp in µs since 0 AD, then the frame.
    public static func record(frame: H4Frame, direction: Direction, timestamp: Int64) -> [UInt8] {
        let data = frame.bytes
        var out: [UInt8] = []
        out.reserveCapacity(recordHeaderLength + data.count)
        appendBE32(UInt32(truncatingIfNeeded: data.count), to: &out)
        appendBE32(UInt32(truncatingIfNeeded: data.count), to: &out)
        appendBE32(flags(for: frame.type, direction: direction), to: &out)
        appendBE32(0, to: &out)
        appendBE64(UInt64(bitPattern: timestamp), to: &out)
        out.append(contentsOf: data)
        return out
    }

    /// One decoded record, as read back by `parse`.
    public struct Record: Sendable, Hashable {
        public var originalLength: UInt32
        public var includedLength: UInt32
        public var flags: UInt32
        public var cumulativeDrops: UInt32
        /// Microseconds since midnight 1 January 0 AD.
        public var timestamp: Int64
        /// The captured bytes (for datalink 1002: indicator byte + packet).
        public var data: [UInt8]

        public init(originalLength: UInt32, includedLength: UInt32, flags: UInt32,
                    cumulativeDrops: UInt32, timestamp: Int64, data: [UInt8]) {
            self.originalLength = originalLength
            self.includedLength = includedLength
            self.flags = flags
            self.cumulativeDrops = cumulativeDrops
            self.timestamp = timestamp
            self.data = data
        }

        public var direction: Direction { flags & 1 == 0 ? .sent : .received }
        public var isCommandOrEvent: Bool { flags & 2 != 0 }
        /// The timestamp as Unix microseconds.
        public var unixMicroseconds: Int64 { timestamp &- BTSnoop.epochOffsetMicroseconds }

        /// The record's data as an H4 frame; throws if the indicator byte is unknown.
        public func frame() throws(WireError) -> H4Frame { try H4Frame(bytes: data) }
    }

    /// Decodes a whole btsnoop file with datalink 1002. Throws `WireError` on a wrong magic,
    /// version or datalink, or a truncated record (a capture cut short mid-record by a crash is
    /// reported, not silently shortened).
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> [Record] {
        var r = BigEndianCursor(bytes)
        let m = try r.read(magic.count, "btsnoop file header")
        guard m == magic else { throw WireError.invalid("btsnoop magic") }
        guard try r.u32("btsnoop file header") == version else { throw WireError.invalid("btsnoop version") }
        guard try r.u32("btsnoop file header") == datalinkH4 else {
            throw WireError.invalid("btsnoop datalink (only 1002, HCI UART H4, is supported)")
        }
        var records: [Record] = []
        while !r.isAtEnd {
            let original = try r.u32("btsnoop record header")
            let included = try r.u32("btsnoop record header")
            let flags = try r.u32("btsnoop record header")
            let drops = try r.u32("btsnoop record header")
            let ts = Int64(bitPattern: try r.u64("btsnoop record header"))
            guard included <= original else { throw WireError.invalid("btsnoop included length > original length") }
            let data = try r.read(Int(included), "btsnoop record data")
            records.append(Record(originalLength: original, includedLength: included, flags: flags,
                                  cumulativeDrops: drops, timestamp: ts, data: data))
        }
        return records
    }

    static func appendBE32(_ v: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v >> 24))
        out.append(UInt8(truncatingIfNeeded: v >> 16))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
        out.append(UInt8(truncatingIfNeeded: v))
    }

    static func appendBE64(_ v: UInt64, to out: inout [UInt8]) {
        appendBE32(UInt32(truncatingIfNeeded: v >> 32), to: &out)
        appendBE32(UInt32(truncatingIfNeeded: v), to: &out)
    }
}

/// Big-endian reads for btsnoop (ByteReader is little-endian, as the rest of Bluetooth is).
private struct BigEndianCursor {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func read(_ n: Int, _ context: String) throws(WireError) -> [UInt8] {
        let remaining = bytes.count - offset
        guard n >= 0, remaining >= n else { throw WireError.truncated(needed: n, remaining: remaining, context) }
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    mutating func u32(_ context: String) throws(WireError) -> UInt32 {
        try read(4, context).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64(_ context: String) throws(WireError) -> UInt64 {
        try read(8, context).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

import BLEWire

/// L2CAP channel identifiers on an LE logical link. Core spec Vol 3 Part A §2.1, Table 2.3: the
/// fixed channels are 0x0004 (ATT), 0x0005 (LE signaling) and 0x0006 (Security Manager);
/// 0x0040–0x007F are allocated dynamically to LE credit-based channels. CIDs are plain `UInt16`s
/// so that any value a peer sends can be carried and logged.
public enum L2CAPChannel {
    /// Never a valid destination.
    public static let null: UInt16 = 0x0000
    /// Attribute protocol.
    public static let att: UInt16 = 0x0004
    /// LE signaling channel.
    public static let leSignaling: UInt16 = 0x0005
    /// Security Manager protocol.
    public static let smp: UInt16 = 0x0006

    /// The range LE credit-based channels take their identifiers from.
    public static let dynamicRange: ClosedRange<UInt16> = 0x0040...0x007F

    /// "ATT", "LE signaling", "SMP" or "CID 0x0040".
    public static func name(_ cid: UInt16) -> String {
        switch cid {
        case att: return "ATT"
        case leSignaling: return "LE signaling"
        case smp: return "SMP"
        default:
            let h = String(cid, radix: 16, uppercase: true)
            return "CID 0x" + String(repeating: "0", count: max(0, 4 - h.count)) + h
        }
    }
}

/// A basic L2CAP frame (B-frame, and the C-frame of the signaling channel): a 2-octet payload
/// length, a 2-octet channel ID, then the payload, all little-endian. Core spec Vol 3 Part A §3.1.
///
/// This type is one whole PDU, after `L2CAPRecombiner` has recombined the ACL fragments it came
/// in: the ACL packet with the "first fragment" flag starts with this header, whose length tells
/// the recombiner how many bytes to wait for.
public struct L2CAPFrame: Sendable, Hashable, CustomStringConvertible {
    public var channelID: UInt16
    public var payload: [UInt8]

    /// The basic header's size: length and channel ID.
    public static let headerLength = 4

    /// The largest payload the 16-bit length field can describe.
    public static let maximumPayloadLength = Int(UInt16.max)

    /// The basic header of a frame of `length` payload octets on `channel`, as one little-endian
    /// word: the prefix `ACLFlowController.enqueue(handle:prefix:payload:send:)` writes before
    /// the payload. `length` must fit the length field (at most `maximumPayloadLength`, as an
    /// ATT PDU always does); `ACLFlowController.enqueueBasicFrame` cuts longer payloads.
    @inlinable
    public static func basicHeader(length: Int, channel: UInt16) -> UInt32 {
        UInt32(truncatingIfNeeded: length) & 0xFFFF | UInt32(channel) << 16
    }

    public init(channelID: UInt16, payload: [UInt8]) {
        self.channelID = channelID
        self.payload = payload
    }

    /// Decodes one complete PDU. The length field must match the bytes that follow exactly:
    /// fewer is a truncated frame, more means the reassembly went wrong; both are errors here.
    public init(bytes: [UInt8]) throws(WireError) {
        var r = ByteReader(bytes)
        let (length, cid) = try r.reading("L2CAP basic header") { (r: inout ByteReader) throws(WireError) in
            (try r.readU16(), try r.readU16())
        }
        let payload = try r.reading("L2CAP payload") { (r: inout ByteReader) throws(WireError) in
            try r.readBytes(Int(length))
        }
        guard r.isAtEnd else {
            throw WireError.invalid("L2CAP frame: length field \(length) but \(bytes.count - Self.headerLength) payload bytes")
        }
        self.init(channelID: cid, payload: payload)
    }

    /// The same as `init(bytes:)`.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> L2CAPFrame {
        try L2CAPFrame(bytes: bytes)
    }

    /// The total size (header plus payload) of the PDU whose first bytes are `prefix`, or nil if
    /// fewer than the two length bytes are there yet.
    public static func pduLength<C: Collection>(prefix: C) -> Int? where C.Element == UInt8 {
        var it = prefix.makeIterator()
        guard let lo = it.next(), let hi = it.next() else { return nil }
        return headerLength + Int(UInt16(lo) | UInt16(hi) << 8)
    }

    /// Header and payload. A payload over 65535 bytes (which no LE link can carry) is cut to fit
    /// so the length field stays truthful.
    public func encode() -> [UInt8] {
        let body = payload.prefix(Self.maximumPayloadLength)
        var w = ByteWriter(capacity: Self.headerLength + body.count)
        w.u16(UInt16(body.count))
        w.u16(channelID)
        w.append(body)
        return w.bytes
    }

    public var description: String { "L2CAP[\(L2CAPChannel.name(channelID))] \(payload.hexString)" }
}

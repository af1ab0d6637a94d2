import BLEWire

/// Packet_Boundary_Flag of an ACL data packet. Core spec Vol 4 Part E §5.4.2.
public enum PacketBoundary: UInt8, Hashable, Sendable {
    /// First fragment of a non-automatically-flushable PDU: what an LE host sends first.
    case firstNonFlushable = 0b00
    /// A continuation fragment.
    case continuing = 0b01
    /// First fragment of an automatically-flushable PDU: what a controller sends to the host.
    case firstFlushable = 0b10
    /// A complete, automatically-flushable PDU (historic, AMP); never used on LE but decoded so
    /// that every 2-bit value is representable.
    case complete = 0b11

    /// Whether this fragment begins a PDU of the layer above.
    public var isStart: Bool { self != .continuing }
}

/// One HCI ACL data packet. Core spec Vol 4 Part E §5.4.2.
///
/// Header: 12-bit handle, 2-bit packet boundary, 2-bit broadcast flag (all in one little-endian
/// UInt16), then a 16-bit data length; then the data.
public struct ACLPacket: Hashable, Sendable {
    /// Connection handle, 12 bits.
    public var handle: UInt16
    public var boundary: PacketBoundary
    /// Broadcast_Flag, 2 bits; 0 (point-to-point) on LE.
    public var broadcast: UInt8
    public var data: [UInt8]

    public init(handle: UInt16, boundary: PacketBoundary, broadcast: UInt8 = 0, data: [UInt8]) {
        self.handle = handle & 0x0FFF
        self.boundary = boundary
        self.broadcast = broadcast & 0x03
        self.data = data
    }

    /// The packet without the H4 indicator. Data beyond 65535 bytes cannot be described by the
    /// length field and is cut off.
    public func encode() -> [UInt8] {
        let n = min(data.count, Int(UInt16.max))
        let word = (handle & 0x0FFF) | UInt16(boundary.rawValue) << 12 | UInt16(broadcast & 0x03) << 14
        // Header and data in one allocation, the data copied once (a packet per fragment);
        // `reserveCapacity` and `append` are specialised here, while
        // `init(unsafeUninitializedCapacity:)` allocates through an unspecialised path that looks
        // the storage type up on every call.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + n)
        bytes.append(UInt8(word & 0xFF))
        bytes.append(UInt8(word >> 8))
        bytes.append(UInt8(n & 0xFF))
        bytes.append(UInt8(n >> 8))
        bytes.append(contentsOf: data[0..<n])
        return bytes
    }

    /// The packet with its H4 indicator.
    public var h4Frame: H4Frame { H4Frame(type: .acl, payload: encode()) }

    /// Parses an ACL packet without the H4 indicator; the length field must match the bytes.
    public static func decode(_ payload: [UInt8]) throws(WireError) -> ACLPacket {
        guard payload.count >= 4 else {
            throw WireError.truncated(needed: 2, remaining: payload.count < 2 ? payload.count : payload.count - 2, "ACL packet")
        }
        let header = UInt16(payload[0]) | UInt16(payload[1]) << 8
        let length = Int(payload[2]) | Int(payload[3]) << 8
        guard payload.count - 4 >= length else { throw WireError.truncated(needed: length, remaining: payload.count - 4, "ACL packet") }
        guard payload.count - 4 == length else { throw WireError.invalid("ACL packet: \(payload.count - 4 - length) bytes beyond its length") }
        // A 2-bit field always maps to one of the four cases.
        let boundary = PacketBoundary(rawValue: UInt8((header >> 12) & 0x3)) ?? .continuing
        return ACLPacket(handle: header & 0x0FFF, boundary: boundary, broadcast: UInt8(header >> 14), data: Array(payload[4...]))
    }
}

/// Splits a PDU of the layer above into ACL packets no longer than the controller's buffer
/// (Vol 4 Part E §5.4.2).
public enum ACLFragmenter {
    /// The first fragment is marked "first non-flushable" (host to controller on LE), the rest
    /// "continuing". `maxLength` is the controller's ACL data packet length; values below 1 are
    /// treated as 1. An empty PDU gives one empty first fragment.
    public static func fragment(handle: UInt16, pdu: [UInt8], maxLength: Int) -> [ACLPacket] {
        let size = max(1, maxLength)
        guard !pdu.isEmpty else { return [ACLPacket(handle: handle, boundary: .firstNonFlushable, data: [])] }
        var packets: [ACLPacket] = []
        packets.reserveCapacity((pdu.count + size - 1) / size)
        var offset = 0
        while offset < pdu.count {
            let end = min(offset + size, pdu.count)
            packets.append(ACLPacket(handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing,
                                     data: Array(pdu[offset..<end])))
            offset = end
        }
        return packets
    }
}

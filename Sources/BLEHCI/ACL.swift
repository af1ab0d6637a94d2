import BLEWire

/// Packet_Boundary_Flag of an ACL data packet. Core spec Vol 4 Part E §5.4.2.
public enum PacketBoundary: UInt8, Hashable, Sendable {
    /// First fragment of a non-automatically-flushable L2CAP PDU: what an LE host sends first.
    case firstNonFlushable = 0b00
    /// A continuation fragment.
    case continuing = 0b01
    /// First fragment of an automatically-flushable PDU: what a controller sends to the host.
    case firstFlushable = 0b10
    /// A complete, automatically-flushable PDU (historic, AMP); never used on LE but decoded so
    /// that every 2-bit value is representable.
    case complete = 0b11

    /// Whether this fragment begins an L2CAP PDU.
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

/// Splits an L2CAP PDU into ACL packets no longer than the controller's buffer. §5.4.2, and
/// Vol 3 Part A §7.2 (fragmentation).
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

/// Why a received ACL fragment could not be reassembled. In every case the handle's partial PDU
/// is discarded.
public enum ACLReassemblyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A continuing fragment arrived with no PDU in progress on that handle; it is dropped.
    case continuationWithoutStart(handle: UInt16)
    /// A start fragment arrived while a PDU was in progress: the old partial PDU was dropped and
    /// the new one kept. Not thrown; recorded in `ACLReassembler.lastDiscarded` for logging.
    case startWhileInProgress(handle: UInt16)
    /// Fragments carried more bytes than the L2CAP basic header declared.
    case overflow(handle: UInt16, expected: Int, received: Int)

    public var handle: UInt16 {
        switch self {
        case let .continuationWithoutStart(h), let .startWhileInProgress(h), let .overflow(h, _, _): return h
        }
    }

    public var description: String {
        switch self {
        case let .continuationWithoutStart(h):
            return "ACL continuation fragment on handle 0x\(hex4(h)) without a start"
        case let .startWhileInProgress(h):
            return "ACL start fragment on handle 0x\(hex4(h)) while a PDU was incomplete"
        case let .overflow(h, expected, received):
            return "ACL fragments on handle 0x\(hex4(h)) overflow the L2CAP PDU (\(received) bytes for \(expected))"
        }
    }
}

/// Reassembles L2CAP PDUs from ACL fragments, per connection handle. Core spec Vol 4 Part E
/// §5.4.2 and Vol 3 Part A §7.2 / §3.1 (basic header: 2-byte length, 2-byte channel ID).
///
/// A PDU is complete when its bytes reach the basic header's length + 4. The header itself may
/// be split across fragments; the length is read once four bytes are present.
public struct ACLReassembler: Sendable {
    /// One handle's PDU in progress. A small array searched linearly rather than a dictionary:
    /// every fragment looks its handle up, and a host has a handful of links.
    private struct Partial: Sendable {
        let handle: UInt16
        var buffer: [UInt8]
    }

    private var partial: [Partial] = []
    /// The last PDU dropped because a new start fragment arrived before it was complete (a
    /// flushed or truncated PDU), for the owner to log. The new PDU is kept, as BlueZ does.
    public private(set) var lastDiscarded: ACLReassemblyError?

    public init() {}

    /// Handles with a PDU in progress.
    public var handlesInProgress: [UInt16] { partial.map(\.handle).sorted() }

    /// Whether `handle` has a PDU in progress.
    public func isInProgress(_ handle: UInt16) -> Bool { index(of: handle) != nil }

    private func index(of handle: UInt16) -> Int? {
        var i = 0
        while i < partial.count {
            if partial[i].handle == handle { return i }
            i += 1
        }
        return nil
    }

    /// Adds one received fragment; returns the whole L2CAP PDU (header included) when this
    /// fragment completes it, nil when more fragments are needed.
    public mutating func push(_ packet: ACLPacket) throws(ACLReassemblyError) -> [UInt8]? {
        try push(handle: packet.handle, isStart: packet.boundary.isStart, packet.data[...])
    }

    /// `push(_:)` for a fragment's data in place (a slice of the received HCI packet): the
    /// bytes are appended to the handle's buffer, which is sized for the whole PDU once its
    /// basic header is in, so a PDU of many fragments is copied once.
    public mutating func push(handle: UInt16, isStart: Bool, _ data: ArraySlice<UInt8>) throws(ACLReassemblyError) -> [UInt8]? {
        let i: Int
        if isStart {
            if let old = index(of: handle) {
                // The previous PDU can never complete; drop it and start over with this one.
                partial.remove(at: old)
                lastDiscarded = .startWhileInProgress(handle: handle)
            }
            if data.count >= 4 {
                let expected = (Int(data[data.startIndex]) | Int(data[data.startIndex + 1]) << 8) + 4
                if data.count > expected {
                    throw ACLReassemblyError.overflow(handle: handle, expected: expected, received: data.count)
                }
                if data.count == expected { return Array(data) }
                var buffer: [UInt8] = []
                buffer.reserveCapacity(expected)
                buffer.append(contentsOf: data)
                partial.append(Partial(handle: handle, buffer: buffer))
                return nil
            }
            partial.append(Partial(handle: handle, buffer: Array(data)))
            i = partial.count - 1
        } else {
            guard let existing = index(of: handle) else {
                throw ACLReassemblyError.continuationWithoutStart(handle: handle)
            }
            i = existing
            partial[i].buffer.append(contentsOf: data)
        }
        let count = partial[i].buffer.count
        guard count >= 4 else { return nil }
        let expected = (Int(partial[i].buffer[0]) | Int(partial[i].buffer[1]) << 8) + 4
        if count > expected {
            partial.remove(at: i)
            throw ACLReassemblyError.overflow(handle: handle, expected: expected, received: count)
        }
        if count == expected { return partial.remove(at: i).buffer }
        if partial[i].buffer.capacity < expected { partial[i].buffer.reserveCapacity(expected) }
        return nil
    }

    /// Forgets the partial PDU of a handle (on disconnection).
    public mutating func reset(handle: UInt16) {
        if let i = index(of: handle & 0x0FFF) { partial.remove(at: i) }
    }

    /// Forgets all partial PDUs (on controller reset).
    public mutating func resetAll() {
        partial.removeAll()
    }
}

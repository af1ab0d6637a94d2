/// One packet of the bench protocol bumble-bench speaks (Bumble's `apps/bench.py`), so that
/// either end of a `ble bench` run may be Bumble. Three kinds, told apart by the first octet:
///
/// | type | octets | layout (multi-octet fields little-endian) |
/// | --- | --- | --- |
/// | 0 reset | 1 | type |
/// | 1 sequence | 10 + payload | type, flags, sequence (u32), timestamp (u32, µs since the run's start), payload (zeros) |
/// | 2 ack | 6 | type, flags, sequence (u32) |
///
/// A reset starts a run; the sender's last sequence packet has the `last` flag; the receiver
/// answers it (pong answers every packet) with an ack of the same flags and sequence.
///
/// Decoding never traps: a packet from a peer that is too short or of an unknown type is a
/// `BenchPacketError` saying which, and the scenarios report it and go on.
public enum BenchPacket: Equatable, Sendable {
    case reset
    case sequence(BenchSequencePacket)
    case ack(flags: BenchPacketFlags, sequence: UInt32)

    /// The first octet of each kind.
    public enum Kind: UInt8, Sendable {
        case reset = 0
        case sequence = 1
        case ack = 2
    }

    /// Octets before a sequence packet's payload: type, flags, sequence, timestamp.
    public static let sequenceHeaderLength = 10
    /// Octets of an ack: type, flags, sequence.
    public static let ackLength = 6

    /// The packet as it goes on the link (a sequence packet's payload is `payloadLength` zeros).
    public var bytes: [UInt8] {
        switch self {
        case .reset:
            return [Kind.reset.rawValue]
        case let .ack(flags, sequence):
            var out: [UInt8] = [Kind.ack.rawValue, flags.rawValue]
            Self.append(sequence, to: &out)
            return out
        case let .sequence(packet):
            var out = [UInt8]()
            out.reserveCapacity(Self.sequenceHeaderLength + packet.payloadLength)
            out.append(Kind.sequence.rawValue)
            out.append(packet.flags.rawValue)
            Self.append(packet.sequence, to: &out)
            Self.append(packet.timestamp, to: &out)
            out.append(contentsOf: repeatElement(0, count: packet.payloadLength))
            return out
        }
    }

    /// Reads a packet a peer sent. Octets after an ack's sixth are ignored, as bumble-bench
    /// ignores them; a sequence packet's payload is taken whatever it holds (only its length counts).
    public init(decoding data: [UInt8]) throws(BenchPacketError) {
        guard let first = data.first else { throw .empty }
        guard let kind = Kind(rawValue: first) else { throw .unknownType(first) }
        switch kind {
        case .reset:
            self = .reset
        case .ack:
            guard data.count >= Self.ackLength else { throw .truncated(kind, length: data.count, needed: Self.ackLength) }
            self = .ack(flags: BenchPacketFlags(rawValue: data[1]), sequence: Self.u32(data, at: 2))
        case .sequence:
            guard data.count >= Self.sequenceHeaderLength else {
                throw .truncated(kind, length: data.count, needed: Self.sequenceHeaderLength)
            }
            self = .sequence(BenchSequencePacket(flags: BenchPacketFlags(rawValue: data[1]), sequence: Self.u32(data, at: 2),
                                                 timestamp: Self.u32(data, at: 6), payloadLength: data.count - Self.sequenceHeaderLength))
        }
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// The caller has checked that four octets are there.
    private static func u32(_ data: [UInt8], at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for i in 0..<4 { value |= UInt32(data[offset + i]) << UInt32(8 * i) }
        return value
    }
}

/// A sequence packet's fields; the payload is known by its length only (bumble-bench sends zeros).
public struct BenchSequencePacket: Equatable, Sendable {
    /// `last` on the final packet of a run.
    public var flags: BenchPacketFlags
    /// 0, 1, 2, … within a run.
    public var sequence: UInt32
    /// Microseconds from the run's start to when the sender made the packet (wraps after about 71 minutes).
    public var timestamp: UInt32
    /// Octets after the ten-octet header.
    public var payloadLength: Int

    /// A sequence packet of these fields.
    public init(flags: BenchPacketFlags = [], sequence: UInt32, timestamp: UInt32, payloadLength: Int) {
        self.flags = flags
        self.sequence = sequence
        self.timestamp = timestamp
        self.payloadLength = max(0, payloadLength)
    }

    /// The packet's length on the link.
    public var length: Int { BenchPacket.sequenceHeaderLength + payloadLength }
}

/// The flags octet. Bits other than `last` are kept as they came, and echoed in acks.
public struct BenchPacketFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The octet.
    public var rawValue: UInt8
    /// Flags from their octet.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The final packet of a run: the receiver acknowledges it.
    public static let last = BenchPacketFlags(rawValue: 0x01)

    /// `LAST`, `0`, or the octet in hex when other bits are set.
    public var description: String {
        switch rawValue {
        case 0: return "0"
        case 1: return "LAST"
        default: return "0x" + String(rawValue, radix: 16, uppercase: true)
        }
    }
}

/// Why a packet from the peer could not be read.
public enum BenchPacketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A write or SDU of no octets.
    case empty
    /// A first octet that is not reset (0), sequence (1) or ack (2).
    case unknownType(UInt8)
    /// Fewer octets than the kind's header needs.
    case truncated(BenchPacket.Kind, length: Int, needed: Int)

    public var description: String {
        switch self {
        case .empty: return "empty packet"
        case let .unknownType(t): return "unknown packet type 0x" + String(t, radix: 16, uppercase: true)
        case let .truncated(kind, length, needed): return "\(kind) packet too short: \(length) bytes, need at least \(needed)"
        }
    }
}

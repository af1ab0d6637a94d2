/// How bench packets travel on a stream-like channel (bumble-bench's L2CAP and RFCOMM modes):
/// each packet is preceded by its length, two octets big-endian. The channel's SDU boundaries
/// mean nothing: one SDU may carry several packets, or part of one, and a length prefix may be
/// split between two SDUs.
public enum BenchStreamFraming {
    /// Octets each packet costs on the stream beyond its own: the length prefix.
    public static let overhead = 2

    /// The longest packet a two-octet length can frame.
    public static let maximumPacketLength = Int(UInt16.max)

    /// `packet` with its length in front, or nil when it is longer than a length can say.
    public static func frame(_ packet: [UInt8]) -> [UInt8]? {
        guard packet.count <= maximumPacketLength else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(packet.count + overhead)
        out.append(UInt8(truncatingIfNeeded: packet.count >> 8))
        out.append(UInt8(truncatingIfNeeded: packet.count))
        out.append(contentsOf: packet)
        return out
    }
}

/// Cuts the stream back into packets, whatever the SDUs it arrived in. A zero length gives an
/// empty packet (which the packet decoder then reports), so a peer's nonsense is seen, not
/// silently skipped; any length is valid framing, so the framing itself cannot fail.
public struct BenchStreamDeframer: Sendable {
    private var header: [UInt8] = []
    private var packet: [UInt8] = []
    private var needed: Int?

    /// A deframer at the start of a stream.
    public init() {}

    /// Whether a packet has been begun and not finished (at the end of the stream, a truncated one).
    public var hasPartialPacket: Bool { !header.isEmpty || needed != nil }

    /// The packets `chunk` completes, in order.
    public mutating func receive(_ chunk: [UInt8]) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var index = chunk.startIndex
        while index < chunk.endIndex {
            if let want = needed {
                let take = min(want - packet.count, chunk.endIndex - index)
                packet.append(contentsOf: chunk[index..<(index + take)])
                index += take
                if packet.count == want {
                    packets.append(packet)
                    packet = []
                    needed = nil
                }
            } else {
                header.append(chunk[index])
                index += 1
                if header.count == 2 {
                    let length = Int(header[0]) << 8 | Int(header[1])
                    header = []
                    if length == 0 {
                        packets.append([])
                    } else {
                        needed = length
                        packet.reserveCapacity(length)
                    }
                }
            }
        }
        return packets
    }
}

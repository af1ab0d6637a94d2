import BLEHCI
import BLEWire

/// Why a received ACL fragment could not be recombined into an L2CAP PDU. In every case the
/// handle's partial PDU is discarded.
public enum L2CAPRecombinationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A continuing fragment arrived with no PDU in progress on that handle; it is dropped.
    case continuationWithoutStart(handle: UInt16)
    /// A start fragment arrived while a PDU was in progress: the old partial PDU was dropped and
    /// the new one kept. Not thrown; recorded in `L2CAPRecombiner.lastDiscarded` for logging.
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
            return "ACL continuation fragment on handle 0x\(attHex16(h)) without a start"
        case let .startWhileInProgress(h):
            return "ACL start fragment on handle 0x\(attHex16(h)) while a PDU was incomplete"
        case let .overflow(h, expected, received):
            return "ACL fragments on handle 0x\(attHex16(h)) overflow the L2CAP PDU (\(received) bytes for \(expected))"
        }
    }
}

/// Recombines L2CAP PDUs from the ACL fragments they came in, per connection handle: L2CAP's
/// side of fragmentation (Core spec Vol 3 Part A §7.2 / §3.1, the basic header's 2-byte length
/// and 2-byte channel ID; the ACL packets' boundary flags, Vol 4 Part E §5.4.2).
///
/// A PDU is complete when its bytes reach the basic header's length + 4. The header itself may
/// be split across fragments; the length is read once four bytes are present.
public struct L2CAPRecombiner: Sendable {
    /// One handle's PDU in progress. A small array searched linearly rather than a dictionary:
    /// every fragment looks its handle up, and a host has a handful of links.
    private struct Partial: Sendable {
        let handle: UInt16
        var buffer: [UInt8]
    }

    private var partial: [Partial] = []
    /// The last PDU dropped because a new start fragment arrived before it was complete (a
    /// flushed or truncated PDU), for the owner to log. The new PDU is kept, as BlueZ does.
    public private(set) var lastDiscarded: L2CAPRecombinationError?

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
    public mutating func push(_ packet: ACLPacket) throws(L2CAPRecombinationError) -> [UInt8]? {
        try push(handle: packet.handle, isStart: packet.boundary.isStart, packet.data[...])
    }

    /// `push(_:)` for a fragment's data in place (a slice of the received HCI packet): the
    /// bytes are appended to the handle's buffer, which is sized for the whole PDU once its
    /// basic header is in, so a PDU of many fragments is copied once.
    public mutating func push(handle: UInt16, isStart: Bool, _ data: ArraySlice<UInt8>) throws(L2CAPRecombinationError) -> [UInt8]? {
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
                    throw L2CAPRecombinationError.overflow(handle: handle, expected: expected, received: data.count)
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
                throw L2CAPRecombinationError.continuationWithoutStart(handle: handle)
            }
            i = existing
            partial[i].buffer.append(contentsOf: data)
        }
        let count = partial[i].buffer.count
        guard count >= 4 else { return nil }
        let expected = (Int(partial[i].buffer[0]) | Int(partial[i].buffer[1]) << 8) + 4
        if count > expected {
            partial.remove(at: i)
            throw L2CAPRecombinationError.overflow(handle: handle, expected: expected, received: count)
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

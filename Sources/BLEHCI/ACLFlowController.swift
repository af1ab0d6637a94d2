/// Host-to-controller ACL data flow control, sans-IO. Core spec Vol 4 Part E §4.1.1 (packet-based
/// flow control).
///
/// The controller has `bufferCount` ACL buffers of `bufferLength` bytes (LE Read Buffer Size, or
/// Read Buffer Size when LE has no own buffers). The host may only send a packet while it holds a
/// credit; each Number Of Completed Packets entry gives credits back. This fragments each L2CAP
/// PDU at `bufferLength`, sends what the credits allow, and queues the rest per handle.
///
/// Fairness: queued packets leave round-robin across handles, one packet per handle per turn, so
/// a bulk transfer on one link cannot starve another. Fragments of one PDU stay in order; those
/// of different handles may interleave, which reassembly per handle allows (§5.4.2).
///
/// Invariant: `availableCredits` + the packets in flight on all handles == `bufferCount`. A
/// controller that reports more completions than packets in flight on a handle (or for an
/// unknown handle) is ignored beyond that, so credits never exceed the total or go negative.
public struct ACLFlowController: Sendable {
    /// One handle's unsent fragments, oldest first.
    struct HandleQueue: Sendable {
        var packets: [ACLPacket] = []
        var head = 0

        var isEmpty: Bool { head >= packets.count }
        var count: Int { packets.count - head }

        mutating func popFirst() -> ACLPacket? {
            guard head < packets.count else { return nil }
            let p = packets[head]
            head += 1
            if head > 64 && head * 2 > packets.count {
                packets.removeFirst(head)
                head = 0
            }
            return p
        }

        /// PDUs with at least one unsent fragment: each queued start, plus a partly sent one.
        var pduCount: Int {
            guard head < packets.count else { return 0 }
            var n = packets[head].boundary.isStart ? 0 : 1
            for i in head..<packets.count where packets[i].boundary.isStart { n += 1 }
            return n
        }
    }

    public let bufferCount: Int
    public let bufferLength: Int
    public private(set) var availableCredits: Int
    private var inFlight: [UInt16: Int] = [:]
    private var queues: [UInt16: HandleQueue] = [:]
    /// Handles with queued packets, in round-robin order; `cursor` is the next to serve.
    private var order: [UInt16] = []
    private var cursor = 0

    /// Negative values are treated as 0 (nothing can ever be sent).
    public init(bufferCount: Int, bufferLength: Int) {
        self.bufferCount = max(0, bufferCount)
        self.bufferLength = max(0, bufferLength)
        self.availableCredits = self.bufferCount
    }

    /// Queues an L2CAP PDU for `handle`; returns the packets to send now.
    public mutating func enqueue(handle: UInt16, pdu: [UInt8]) -> [ACLPacket] {
        let h = handle & 0x0FFF
        let fragments = ACLFragmenter.fragment(handle: h, pdu: pdu, maxLength: bufferLength)
        queues[h, default: HandleQueue()].packets.append(contentsOf: fragments)
        if !order.contains(h) { order.append(h) }
        return pump()
    }

    /// Returns credits from a Number Of Completed Packets event; returns the packets now sendable.
    public mutating func completed(_ entries: [CompletedPackets]) -> [ACLPacket] {
        for entry in entries {
            let h = entry.handle & 0x0FFF
            let outstanding = inFlight[h] ?? 0
            let credited = min(Int(entry.count), outstanding)
            guard credited > 0 else { continue }
            inFlight[h] = outstanding - credited == 0 ? nil : outstanding - credited
            availableCredits = min(bufferCount, availableCredits + credited)
        }
        return pump()
    }

    /// The connection is gone (Disconnection Complete): its queue is dropped and its packets in
    /// flight count as completed, because the controller flushes them without reporting them
    /// (§4.1.1, §7.7.5). Returns the packets of other handles now sendable.
    public mutating func connectionClosed(handle: UInt16) -> [ACLPacket] {
        let h = handle & 0x0FFF
        queues[h] = nil
        if let i = order.firstIndex(of: h) {
            order.remove(at: i)
            if i < cursor { cursor -= 1 }
        }
        if let n = inFlight.removeValue(forKey: h) {
            availableCredits = min(bufferCount, availableCredits + n)
        }
        return pump()
    }

    /// PDUs of `handle` not yet fully handed out (queued, or partly sent): for backpressure.
    public func queuedPDUs(handle: UInt16) -> Int { queues[handle & 0x0FFF]?.pduCount ?? 0 }

    /// Packets of `handle` waiting for credits.
    public func queuedPackets(handle: UInt16) -> Int { queues[handle & 0x0FFF]?.count ?? 0 }

    /// Packets of `handle` sent and not yet reported completed.
    public func inFlight(handle: UInt16) -> Int { inFlight[handle & 0x0FFF] ?? 0 }

    /// Sends queued packets round-robin while credits last.
    private mutating func pump() -> [ACLPacket] {
        var out: [ACLPacket] = []
        while availableCredits > 0, !order.isEmpty {
            if cursor >= order.count { cursor = 0 }
            let h = order[cursor]
            guard let packet = queues[h]?.popFirst() else {
                // Defensive: an empty queue should not be in `order`.
                order.remove(at: cursor)
                queues[h] = nil
                continue
            }
            availableCredits -= 1
            inFlight[h, default: 0] += 1
            out.append(packet)
            if queues[h]?.isEmpty ?? true {
                queues[h] = nil
                order.remove(at: cursor)
            } else {
                cursor += 1
            }
        }
        return out
    }
}

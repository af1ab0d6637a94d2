/// Host-to-controller ACL data flow control, sans-IO. Core spec Vol 4 Part E §4.1.1 (packet-based
/// flow control).
///
/// The controller has `bufferCount` ACL buffers of `bufferLength` bytes (LE Read Buffer Size, or
/// Read Buffer Size when LE has no own buffers). The host may only send a packet while it holds a
/// credit; each Number Of Completed Packets entry gives credits back. This fragments each PDU of
/// the layer above at `bufferLength`, sends what the credits allow, and queues the rest per
/// handle.
///
/// Fragments are built in wire form at once (ACL header, then for the first the upper layer's
/// 4-octet header when it gives one, then the payload: one copy of the payload, Vol 4 Part E
/// §5.4.2), so what leaves here is the HCI ACL packet the transport writes, with no per-layer
/// copies.
///
/// Fairness: queued packets leave round-robin across handles, one packet per handle per turn, so
/// a bulk transfer on one link cannot starve another. Fragments of one PDU stay in order; those
/// of different handles may interleave, which reassembly per handle allows (§5.4.2).
///
/// Invariant: `availableCredits` + the packets in flight on all handles == `bufferCount`. A
/// controller that reports more completions than packets in flight on a handle (or for an
/// unknown handle) is ignored beyond that, so credits never exceed the total or go negative.
public struct ACLFlowController: Sendable {
    /// One encoded ACL packet (header included) and whether it starts a PDU of the layer above.
    struct Fragment: Sendable {
        var bytes: [UInt8]
        var isStart: Bool
    }

    /// One handle's unsent fragments, oldest first: a ring buffer, so taking the oldest moves it
    /// out (its bytes neither retained nor released later, nothing shifted down) and a queue
    /// that drains and fills again reuses its slots.
    struct HandleQueue: Sendable {
        /// The `count` fragments from `head` on (wrapping at the end) are the queue; every
        /// other slot holds `vacant`.
        private var slots: [Fragment] = []
        private var head = 0
        private(set) var count = 0
        /// PDUs whose first fragment is still queued.
        private var starts = 0

        /// What a free slot holds (no storage of its own: the empty array is shared).
        private static var vacant: Fragment { Fragment(bytes: [], isStart: false) }

        var isEmpty: Bool { count == 0 }

        @inline(__always)
        mutating func append(_ fragment: consuming Fragment) {
            if fragment.isStart { starts += 1 }
            if count == slots.count { grow() }
            var tail = head + count
            if tail >= slots.count { tail -= slots.count }
            slots[tail] = fragment
            count += 1
        }

        @inline(__always)
        mutating func popFirst() -> Fragment? {
            guard count > 0 else { return nil }
            var p = Self.vacant
            swap(&p, &slots[head])
            head += 1
            if head == slots.count { head = 0 }
            count -= 1
            if p.isStart { starts -= 1 }
            return p
        }

        /// At least twice the slots (4 at first), the queue moved to their start in order.
        private mutating func grow() {
            var grown: [Fragment] = []
            grown.reserveCapacity(max(4, 2 * slots.count))
            var i = head
            for _ in 0..<count {
                var f = Self.vacant
                swap(&f, &slots[i])
                grown.append(f)
                i += 1
                if i == slots.count { i = 0 }
            }
            while grown.count < grown.capacity { grown.append(Self.vacant) }
            slots = grown
            head = 0
        }

        /// PDUs with at least one unsent fragment: each queued start, plus a partly sent one.
        var pduCount: Int {
            guard count > 0 else { return 0 }
            return starts + (slots[head].isStart ? 0 : 1)
        }
    }

    /// What the controller holds of one handle: packets in flight, and its queue. Kept in a
    /// small array searched linearly (a host has a handful of links), not a hashed dictionary:
    /// every packet and every completion looks its handle up.
    struct HandleState: Sendable {
        let handle: UInt16
        var inFlight = 0
        var queue = HandleQueue()
    }

    public let bufferCount: Int
    public let bufferLength: Int
    public private(set) var availableCredits: Int
    private var states: [HandleState] = []
    /// Handles with queued packets, in round-robin order; `cursor` is the next to serve.
    private var order: [UInt16] = []
    private var cursor = 0

    /// Negative values are treated as 0 (nothing can ever be sent).
    public init(bufferCount: Int, bufferLength: Int) {
        self.bufferCount = max(0, bufferCount)
        self.bufferLength = max(0, bufferLength)
        self.availableCredits = self.bufferCount
    }

    private func index(of handle: UInt16) -> Int? {
        var i = 0
        while i < states.count {
            if states[i].handle == handle { return i }
            i += 1
        }
        return nil
    }

    private mutating func stateIndex(_ handle: UInt16) -> Int {
        if let i = index(of: handle) { return i }
        states.append(HandleState(handle: handle))
        return states.count - 1
    }

    /// Drops a handle's state once it has nothing queued and nothing in flight.
    private mutating func forgetIfIdle(_ i: Int) {
        if states[i].inFlight == 0 && states[i].queue.isEmpty { states.remove(at: i) }
    }

    /// Queues a whole PDU of the layer above for `handle`; returns the packets to send now.
    public mutating func enqueue(handle: UInt16, pdu: [UInt8]) -> [ACLPacket] {
        var out: [ACLPacket] = []
        enqueue(handle: handle, header: nil, payload: pdu) { out.append(Self.packet($0)) }
        return out
    }

    /// Queues a PDU of the layer above for `handle`: the four octets of `prefix`
    /// (little-endian: the layer's own header, which this layer does not read) then `payload`,
    /// in wire form. `send` gets each encoded ACL packet (HCI header included, no H4
    /// indicator) that may go now, in order. Returns the handle's `queuedPDUs` afterwards, so a
    /// sender keeping that backlog small need not ask again.
    ///
    /// A payload that fits one buffer whole with its prefix, in an array with room for eight
    /// more bytes and referenced only here, is framed in that array (the ACL header and the
    /// prefix put in front of it) and sent as it is: no new array, no copy of the payload.
    @discardableResult
    public mutating func enqueue(handle: UInt16, prefix: UInt32, payload: consuming [UInt8], send: ([UInt8]) -> Void) -> Int {
        if payload.count + 4 <= bufferLength, payload.capacity >= payload.count + 8 {
            return enqueue(handle: handle & 0x0FFF, framed: Self.framed(handle: handle & 0x0FFF, header: prefix, payload: payload), send: send)
        }
        return enqueue(handle: handle, header: prefix, payload: payload, send: send)
    }

    /// The one fragment of (`header`, then `payload`) that fits a buffer whole, built in
    /// `payload`'s array: eight bytes inserted in front (a move within its storage when it has
    /// the room) and the ACL header and `header` written into them. The same bytes as
    /// `fragment(...)` makes from `0` to the end.
    private static func framed(handle: UInt16, header: UInt32, payload: consuming [UInt8]) -> Fragment {
        var bytes = payload
        let n = bytes.count + 4
        let word = handle | UInt16(PacketBoundary.firstNonFlushable.rawValue) << 12
        bytes.insert(contentsOf: repeatElement(0, count: 8), at: 0)
        bytes[0] = UInt8(word & 0xFF)
        bytes[1] = UInt8(word >> 8)
        bytes[2] = UInt8(n & 0xFF)
        bytes[3] = UInt8(n >> 8)
        bytes[4] = UInt8(truncatingIfNeeded: header)
        bytes[5] = UInt8(truncatingIfNeeded: header >> 8)
        bytes[6] = UInt8(truncatingIfNeeded: header >> 16)
        bytes[7] = UInt8(truncatingIfNeeded: header >> 24)
        return Fragment(bytes: bytes, isStart: true)
    }

    /// Sends or queues `fragment`, a whole PDU in one packet of `handle` (already masked): the
    /// steps of `enqueue(handle:header:payload:send:)` for a PDU of one fragment.
    private mutating func enqueue(handle h: UInt16, framed fragment: consuming Fragment, send: ([UInt8]) -> Void) -> Int {
        let i = stateIndex(h)
        var direct = order.isEmpty
        let sent = sendOrQueue(fragment, state: i, direct: &direct, send: send)
        return scheduleQueued(handle: h, state: i, servedDirectly: sent, send: send)
    }

    /// Sends `fragment` of the handle at state `i` while `direct` (nothing queued on any handle
    /// before it) and credits last; otherwise queues it and clears `direct`, so the PDU's later
    /// fragments queue behind it. True if it went out.
    @inline(__always)
    private mutating func sendOrQueue(_ fragment: consuming Fragment, state i: Int, direct: inout Bool,
                                      send: ([UInt8]) -> Void) -> Bool {
        if direct && availableCredits > 0 {
            availableCredits -= 1
            states[i].inFlight += 1
            send(fragment.bytes)
            return true
        }
        direct = false
        states[i].queue.append(fragment)
        return false
    }

    /// After a PDU of handle `h` (state `i`) was sent or queued: a handle with fragments left
    /// joins the round-robin and the queues are pumped. Returns the handle's `queuedPDUs`.
    @inline(__always)
    private mutating func scheduleQueued(handle h: UInt16, state i: Int, servedDirectly: Bool, send: ([UInt8]) -> Void) -> Int {
        if !states[i].queue.isEmpty {
            if !order.contains(h) {
                order.append(h)
                // This handle was just served straight out (`direct` began with nothing queued):
                // as round-robin would, the next turn goes to the handle after it.
                if order.count == 1 && servedDirectly { cursor = 1 }
            }
            pump(send)
        }
        // `pump` sends but removes no state (only credits and closing do), so `i` still holds.
        return states[i].queue.pduCount
    }

    /// Fragments `header` (four octets, little-endian, if any) then `payload` at `bufferLength`,
    /// sends what credits allow.
    @discardableResult
    private mutating func enqueue(handle: UInt16, header: UInt32?, payload: [UInt8], send: ([UInt8]) -> Void) -> Int {
        let h = handle & 0x0FFF
        let headerLength = header == nil ? 0 : 4
        let total = headerLength + payload.count
        let size = max(1, bufferLength)
        let i = stateIndex(h)
        // Nothing queued on any handle: fragments go straight out while credits last, in the
        // order round-robin would have sent them (this handle is the only one waiting).
        var direct = order.isEmpty
        var servedDirectly = false
        var offset = 0
        repeat {
            let end = min(offset + size, total)
            let fragment = Self.fragment(handle: h, start: offset == 0, header: header, headerLength: headerLength,
                                         payload: payload, from: offset, to: end)
            offset = end
            if sendOrQueue(fragment, state: i, direct: &direct, send: send) { servedDirectly = true }
        } while offset < total
        return scheduleQueued(handle: h, state: i, servedDirectly: servedDirectly, send: send)
    }

    /// One encoded ACL packet with bytes `from..<to` of (`header`, then `payload`).
    private static func fragment(handle: UInt16, start: Bool, header: UInt32?, headerLength: Int, payload: [UInt8],
                                 from: Int, to: Int) -> Fragment {
        let n = to - from
        let boundary = start ? PacketBoundary.firstNonFlushable : .continuing
        let word = handle | UInt16(boundary.rawValue) << 12
        // `reserveCapacity` and `append`, specialised here: `init(unsafeUninitializedCapacity:)`
        // allocates through an unspecialised path that looks the storage type up per fragment.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + n)
        bytes.append(UInt8(word & 0xFF))
        bytes.append(UInt8(word >> 8))
        bytes.append(UInt8(n & 0xFF))
        bytes.append(UInt8(n >> 8))
        var k = from
        if let header, k == 0, to >= headerLength {
            // The whole basic header in this (first) fragment, as always but with tiny buffers.
            bytes.append(UInt8(truncatingIfNeeded: header))
            bytes.append(UInt8(truncatingIfNeeded: header >> 8))
            bytes.append(UInt8(truncatingIfNeeded: header >> 16))
            bytes.append(UInt8(truncatingIfNeeded: header >> 24))
            k = headerLength
        } else if let header {
            while k < min(to, headerLength) {
                bytes.append(UInt8(truncatingIfNeeded: header >> (8 * UInt32(k))))
                k += 1
            }
        }
        if k < to { bytes.append(contentsOf: payload[(k - headerLength)..<(to - headerLength)]) }
        return Fragment(bytes: bytes, isStart: start)
    }

    /// An encoded packet back as an `ACLPacket` (the array-returning API).
    private static func packet(_ bytes: [UInt8]) -> ACLPacket {
        let word = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        return ACLPacket(handle: word & 0x0FFF, boundary: PacketBoundary(rawValue: UInt8((word >> 12) & 0x3)) ?? .continuing,
                         data: Array(bytes[4...]))
    }

    /// Returns credits from a Number Of Completed Packets event; returns the packets now sendable.
    public mutating func completed(_ entries: [CompletedPackets]) -> [ACLPacket] {
        for entry in entries { credit(handle: entry.handle, count: entry.count) }
        var out: [ACLPacket] = []
        pump { out.append(Self.packet($0)) }
        return out
    }

    /// Returns `count` credits of `handle` (one Number Of Completed Packets entry, §7.7.19),
    /// never more than it has in flight; call `pump` after the event's last entry.
    public mutating func credit(handle: UInt16, count: UInt16) {
        guard let i = index(of: handle & 0x0FFF) else { return }
        let credited = min(Int(count), states[i].inFlight)
        guard credited > 0 else { return }
        states[i].inFlight -= credited
        availableCredits = min(bufferCount, availableCredits + credited)
        forgetIfIdle(i)
    }

    /// The connection is gone (Disconnection Complete): its queue is dropped and its packets in
    /// flight count as completed, because the controller flushes them without reporting them
    /// (§4.1.1, §7.7.5). Returns the packets of other handles now sendable.
    public mutating func connectionClosed(handle: UInt16) -> [ACLPacket] {
        var out: [ACLPacket] = []
        connectionClosed(handle: handle) { out.append(Self.packet($0)) }
        return out
    }

    /// `connectionClosed(handle:)`, handing the encoded packets now sendable to `send`.
    public mutating func connectionClosed(handle: UInt16, send: ([UInt8]) -> Void) {
        let h = handle & 0x0FFF
        if let i = order.firstIndex(of: h) {
            order.remove(at: i)
            if i < cursor { cursor -= 1 }
        }
        if let i = index(of: h) {
            availableCredits = min(bufferCount, availableCredits + states[i].inFlight)
            states.remove(at: i)
        }
        pump(send)
    }

    /// PDUs of `handle` not yet fully handed out (queued, or partly sent): for backpressure.
    public func queuedPDUs(handle: UInt16) -> Int { index(of: handle & 0x0FFF).map { states[$0].queue.pduCount } ?? 0 }

    /// `queuedPDUs(handle:)` for an owner that keeps the flow controller in a class or actor
    /// property (the host): called as a mutating method it reads the state where it lies, where
    /// a non-mutating call on such a property first copies the controller (retaining and
    /// releasing its arrays) on every ask. Changes nothing.
    public mutating func queuedPDUsInPlace(handle: UInt16) -> Int { queuedPDUs(handle: handle) }

    /// Packets of `handle` waiting for credits.
    public func queuedPackets(handle: UInt16) -> Int { index(of: handle & 0x0FFF).map { states[$0].queue.count } ?? 0 }

    /// Packets of `handle` sent and not yet reported completed.
    public func inFlight(handle: UInt16) -> Int { index(of: handle & 0x0FFF).map { states[$0].inFlight } ?? 0 }

    /// Whether any handle has packets waiting for credits.
    public var hasQueuedPackets: Bool { !order.isEmpty }

    /// Sends queued packets round-robin while credits last, each to `send` as encoded bytes.
    public mutating func pump(_ send: ([UInt8]) -> Void) {
        while availableCredits > 0, !order.isEmpty {
            if cursor >= order.count { cursor = 0 }
            let h = order[cursor]
            guard let i = index(of: h), let packet = states[i].queue.popFirst() else {
                // Defensive: an empty queue should not be in `order`.
                order.remove(at: cursor)
                continue
            }
            availableCredits -= 1
            states[i].inFlight += 1
            send(packet.bytes)
            if states[i].queue.isEmpty {
                order.remove(at: cursor)
            } else {
                cursor += 1
            }
        }
    }
}

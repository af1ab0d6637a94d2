import BLEHCI
import BLEWire

/// What the router asks its owner to do with a link's traffic.
public enum L2CAPRouting: Sendable, Equatable {
    /// Nothing complete yet (a fragment of a longer PDU), or nothing to do.
    case none
    /// A whole ATT PDU for the link's bearer (fixed CID 0x0004), where it lies in the ACL packet
    /// (or reassembly buffer) it came in: the bearer copies out only what it keeps.
    case att(ArraySlice<UInt8>)
    /// A whole SMP PDU for the link's Security Manager (fixed CID 0x0006).
    case smp([UInt8])
    /// Replies and requests produced by the link's signaling channel.
    case control([L2CAPControlAction])
    /// Traffic the router could not use, with why, for the diagnostics log; the link goes on.
    case dropped(String)
}

/// What a link's LE signaling channel asks the owner to do.
public enum L2CAPControlAction: Sendable, Equatable {
    /// Send `payload` on the fixed channel `channel` of the link.
    case send(channel: UInt16, payload: [UInt8])
    /// Central: the peer's Connection Parameter Update Request was accepted (Vol 3 Part A
    /// §4.20); apply it with HCI LE Connection Update (Vol 4 Part E §7.8.18).
    case updateConnectionParameters(LESignalingCommand.ConnectionParameters)
    /// Something happened on one of the link's LE credit-based channels (Vol 3 Part A §4.22–§4.24).
    case channel(CreditBasedChannelEvent)
    /// Peripheral: the central answered our Connection Parameter Update Request (§4.20, §4.21):
    /// accepted (its LE Connection Update follows) or rejected (or the command was rejected).
    case connectionParameterUpdateAnswered(accepted: Bool)
}

/// The L2CAP layer of every link, sans-IO: reassembles ACL fragments into basic frames (Core
/// spec Vol 3 Part A §3.1, §7.2), routes them by channel ID (§2.1: fixed channels 0x0004 ATT,
/// 0x0005 LE signaling, 0x0006 SMP) and runs the signaling channel of each link; ATT and SMP
/// PDUs go up whole to their owners (the bearers and the Security Manager). K-frames on dynamic
/// CIDs (0x0040–0x007F) go to the link's LE credit-based channel of that CID (§3.4.3, §10.2),
/// run by the signaling channel; data for a CID that is not open is dropped with a reason.
/// The listeners (SPSMs we accept channels on) are the same for every link.
public struct L2CAPRouter: Sendable {
    private struct LinkChannels: Sendable {
        let role: LESignalingChannel.Role
        var signaling = LESignalingChannel()
    }

    private var recombiner = L2CAPRecombiner()
    private var links: [UInt16: LinkChannels] = [:]
    /// The handles of `links`, searched linearly by every ACL fragment that arrives (a host has a
    /// handful of links, and hashing the handle per fragment showed in the profile).
    private var openHandles: [UInt16] = []
    /// Each link's earliest signaling response deadline, beside the links and updated after
    /// every change to a link's signaling state: `nextDeadline` is asked after every batch of
    /// frames the host receives, and reading a link out of `links` copies its whole signaling
    /// state.
    private var signalingDeadlines: [UInt16: Duration] = [:]

    /// Who accepts LE credit-based channels, by SPSM (Vol 3 Part A §4.22).
    public var listeners: [UInt16: CreditBasedListener] = [:]

    public init() {}

    /// Starts routing for a new link.
    public mutating func linkOpened(handle: UInt16, role: LESignalingChannel.Role) {
        links[handle] = LinkChannels(role: role)
        if !openHandles.contains(handle) { openHandles.append(handle) }
        signalingDeadlines[handle] = nil
        nextDeadline = signalingDeadlines.values.min()
    }

    /// Forgets a closed link, with any partial PDU it left.
    public mutating func linkClosed(handle: UInt16) {
        links[handle] = nil
        openHandles.removeAll { $0 == handle }
        signalingDeadlines[handle] = nil
        nextDeadline = signalingDeadlines.values.min()
        recombiner.reset(handle: handle)
    }

    /// Whether the router knows this link.
    public func isOpen(_ handle: UInt16) -> Bool { isKnown(handle) }

    private func isKnown(_ handle: UInt16) -> Bool {
        var i = 0
        while i < openHandles.count {
            if openHandles[i] == handle { return true }
            i += 1
        }
        return false
    }

    /// Takes one ACL packet from the controller and says what it completes. `security` is the
    /// link's now (a listener's requirement is checked against it); `now` runs the signaling
    /// timeouts.
    public mutating func receive(_ packet: ACLPacket, security: LinkSecurity = LinkSecurity(), now: Duration = .zero) -> L2CAPRouting {
        receive(handle: packet.handle, isStart: packet.boundary.isStart, packet.data[...], security: { security }, now: { now })
    }

    /// `receive(_:security:now:)` for an HCI ACL data packet as it came from the controller
    /// (header and data, no H4 indicator), read in place: a whole basic frame in one fragment
    /// (every 244-byte notification over 251-byte buffers) has its payload copied out once,
    /// and a fragmented one is copied once into its reassembly buffer. A packet whose length
    /// field does not match its bytes is dropped as `ACLPacket.decode` would refuse it.
    /// `security` is asked only for signaling (a listener's requirement is checked against it),
    /// `now` only for signaling and credit-based channels: an ATT or SMP PDU needs neither, and
    /// reading the clock for each of a PDU's fragments showed in the profile.
    public mutating func receive(acl bytes: [UInt8], security: () -> LinkSecurity, now: @autoclosure () -> Duration) -> L2CAPRouting {
        guard bytes.count >= 4 else {
            return .dropped("malformed ACL packet: \(WireError.truncated(needed: 4, remaining: bytes.count, "ACL packet"))")
        }
        let word = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        let length = Int(bytes[2]) | Int(bytes[3]) << 8
        guard bytes.count == 4 + length else {
            return .dropped(bytes.count < 4 + length
                ? "malformed ACL packet: \(WireError.truncated(needed: length, remaining: bytes.count - 4, "ACL packet"))"
                : "malformed ACL packet: \(WireError.invalid("ACL packet: \(bytes.count - 4 - length) bytes beyond its length"))")
        }
        // A 2-bit field always maps to one of the four cases; only "continuing" is not a start.
        let isStart = (word >> 12) & 0x3 != PacketBoundary.continuing.rawValue
        return receive(handle: word & 0x0FFF, isStart: isStart, bytes[4...], security: security, now: now)
    }

    private mutating func receive(handle: UInt16, isStart: Bool, _ data: ArraySlice<UInt8>, security: () -> LinkSecurity,
                                  now: () -> Duration) -> L2CAPRouting {
        guard isKnown(handle) else {
            return .dropped("ACL data for unknown handle 0x\(String(handle, radix: 16))")
        }
        // The common case, a whole basic frame in one start fragment with nothing in progress:
        // route its payload straight from the packet (the recombiner would return the same).
        if isStart, data.count >= L2CAPFrame.headerLength, !recombiner.isInProgress(handle) {
            let s = data.startIndex
            let length = Int(data[s]) | Int(data[s + 1]) << 8
            if data.count == L2CAPFrame.headerLength + length {
                let cid = UInt16(data[s + 2]) | UInt16(data[s + 3]) << 8
                return route(cid: cid, payload: data[(s + L2CAPFrame.headerLength)...], handle: handle,
                             security: security, now: now)
            }
        }
        let pdu: [UInt8]?
        do {
            pdu = try recombiner.push(handle: handle, isStart: isStart, data)
        } catch {
            return .dropped("ACL reassembly on 0x\(String(handle, radix: 16)): \(error)")
        }
        guard let pdu else { return .none }
        // The recombiner returns exactly header + length bytes, so the frame always decodes;
        // checked all the same rather than trusted.
        guard pdu.count >= L2CAPFrame.headerLength,
              pdu.count == L2CAPFrame.headerLength + (Int(pdu[0]) | Int(pdu[1]) << 8) else {
            do { _ = try L2CAPFrame.decode(pdu) } catch { return .dropped("malformed L2CAP frame: \(error)") }
            return .dropped("malformed L2CAP frame")
        }
        return route(cid: UInt16(pdu[2]) | UInt16(pdu[3]) << 8, payload: pdu[L2CAPFrame.headerLength...], handle: handle,
                     security: security, now: now)
    }

    /// A whole basic frame's payload to the channel `cid` names (Vol 3 Part A §2.1). ATT gets it
    /// in place; the other channels keep what they get, so they get a copy.
    private mutating func route(cid: UInt16, payload: ArraySlice<UInt8>, handle: UInt16, security: () -> LinkSecurity,
                                now: () -> Duration) -> L2CAPRouting {
        switch cid {
        case L2CAPChannel.att:
            return .att(payload)
        case L2CAPChannel.leSignaling:
            return .control(receiveSignaling(Array(payload), handle: handle,
                                             context: CreditBasedContext(listeners: listeners, security: security(), now: now())))
        case L2CAPChannel.smp:
            return .smp(Array(payload))
        case L2CAPChannel.dynamicRange:
            guard let index = links.index(forKey: handle), links.values[index].signaling.channel(cid) != nil else {
                return .dropped("data on L2CAP channel 0x\(String(cid, radix: 16)), which is not open")
            }
            let actions = links.values[index].signaling.receiveFrame(Array(payload), cid: cid, now: now())
            noteDeadline(at: index)
            return .control(Self.map(actions))
        default:
            return .dropped("data on unrouted L2CAP channel 0x\(String(cid, radix: 16))")
        }
    }

    private mutating func receiveSignaling(_ payload: [UInt8], handle: UInt16, context: CreditBasedContext) -> [L2CAPControlAction] {
        guard let index = links.index(forKey: handle) else { return [] }
        let role = links.values[index].role
        let actions = links.values[index].signaling.receive(payload, role: role, context: context)
        noteDeadline(at: index)
        return Self.map(actions)
    }

    private static func map(_ actions: [SignalingAction]) -> [L2CAPControlAction] {
        actions.compactMap { action in
            switch action {
            case let .send(bytes):
                return .send(channel: L2CAPChannel.leSignaling, payload: bytes)
            case let .updateConnectionParameters(parameters, _):
                return .updateConnectionParameters(parameters)
            case let .connectionParameterUpdateResult(accepted):
                return .connectionParameterUpdateAnswered(accepted: accepted)
            case let .frame(cid, payload):
                return .send(channel: cid, payload: payload)
            case let .channel(event):
                return .channel(event)
            }
        }
    }

    /// Peripheral: asks the central of `handle` for new connection parameters with a Connection
    /// Parameter Update Request on the LE signaling channel (Vol 3 Part A §4.20), the way to ask
    /// when either Link Layer lacks the Connection Parameters Request procedure. The answer comes
    /// as `.connectionParameterUpdateAnswered`. Nil for an unknown link.
    public mutating func requestConnectionParameterUpdate(handle: UInt16, _ parameters: LESignalingCommand.ConnectionParameters) -> [L2CAPControlAction]? {
        guard let index = links.index(forKey: handle) else { return nil }
        let payload = links.values[index].signaling.requestConnectionParameterUpdate(parameters)
        return [.send(channel: L2CAPChannel.leSignaling, payload: payload)]
    }

    /// Runs `body` on a link's signaling channel; [] for an unknown link.
    private mutating func withSignaling(_ handle: UInt16, _ body: (inout LESignalingChannel) -> [SignalingAction]?) -> [L2CAPControlAction]? {
        guard let index = links.index(forKey: handle) else { return nil }
        let actions = body(&links.values[index].signaling)
        noteDeadline(at: index)
        return actions.map(Self.map)
    }

    /// Records the signaling deadline of the link at `index` after its state changed; the link
    /// is read in place (`inout`), not copied out of the dictionary.
    private mutating func noteDeadline(at index: Dictionary<UInt16, LinkChannels>.Index) {
        signalingDeadlines[links.keys[index]] = Self.deadline(of: &links.values[index])
        nextDeadline = signalingDeadlines.values.min()
    }

    private static func deadline(of link: inout LinkChannels) -> Duration? {
        link.signaling.creditBasedDeadline
    }

    // MARK: - LE credit-based channels (Vol 3 Part A §4.22–§4.24, §10.2)

    /// Asks the peer of `handle` for a channel on `spsm`; the answer comes as `.channel(.connected)`
    /// or `.channel(.connectFailed)` with `token`. Nil when the link is unknown or out of CIDs.
    public mutating func connect(handle: UInt16, spsm: UInt16, parameters: CreditBasedChannelParameters,
                                 token: UInt64, now: Duration) -> [L2CAPControlAction]? {
        withSignaling(handle) { $0.connect(spsm: spsm, parameters: parameters, token: token, now: now) }
    }

    /// Asks the peer of `handle` for `count` (1...5) enhanced credit-based channels on `spsm`
    /// (Vol 3 Part A §4.25); the answer comes as `.channel(.enhancedConnected)` or
    /// `.channel(.connectFailed)` with `token`. Nil when the link is unknown, the count or
    /// parameters are out of range, or too few CIDs are free.
    public mutating func connectEnhanced(handle: UInt16, spsm: UInt16, parameters: CreditBasedChannelParameters, count: Int,
                                         token: UInt64, now: Duration) -> [L2CAPControlAction]? {
        withSignaling(handle) { $0.connectEnhanced(spsm: spsm, parameters: parameters, count: count, token: token, now: now) }
    }

    /// Announces a new MTU and MPS for enhanced channels `cids` of `handle` (§4.27); the answer
    /// comes as `.channel(.reconfigured)` or `.channel(.reconfigureFailed)` with `token`.
    public mutating func reconfigure(handle: UInt16, cids: [UInt16], mtu: UInt16, mps: UInt16, token: UInt64,
                                     now: Duration) throws(LESignalingChannel.ReconfigureProblem) -> [L2CAPControlAction] {
        guard let index = links.index(forKey: handle) else { throw .notEnhanced(cid: cids.first ?? 0) }
        defer { noteDeadline(at: index) }
        return Self.map(try links.values[index].signaling.reconfigure(cids: cids, mtu: mtu, mps: mps, token: token, now: now))
    }

    /// Queues an SDU on channel `cid` of `handle`; nil when it is not open or the SDU exceeds the peer's MTU.
    public mutating func send(_ sdu: [UInt8], handle: UInt16, cid: UInt16, token: UInt64) -> [L2CAPControlAction]? {
        withSignaling(handle) { $0.send(sdu, cid: cid, token: token) }
    }

    /// Takes back the SDU `token` queued on channel `cid` of `handle` if none of it has gone out.
    public mutating func withdraw(handle: UInt16, cid: UInt16, token: UInt64) -> Bool {
        guard let index = links.index(forKey: handle) else { return false }
        defer { noteDeadline(at: index) }
        return links.values[index].signaling.withdraw(token: token, cid: cid)
    }

    /// The application consumed one SDU of channel `cid`: credits back when due.
    public mutating func consumed(handle: UInt16, cid: UInt16) -> [L2CAPControlAction] {
        withSignaling(handle) { $0.channelConsumed(cid: cid) } ?? []
    }

    /// Closes channel `cid` of `handle` (Disconnection Request).
    public mutating func disconnect(handle: UInt16, cid: UInt16, now: Duration) -> [L2CAPControlAction] {
        withSignaling(handle) { $0.disconnect(cid: cid, now: now) } ?? []
    }

    /// The channel `cid` of `handle`, if open.
    public func channel(handle: UInt16, cid: UInt16) -> CreditBasedChannel? {
        links[handle]?.signaling.channel(cid)
    }

    /// The earliest signaling response deadline on any link. Stored, and recomputed whenever a
    /// link's deadline is: as a computed property of this module, asked after every batch of
    /// frames, it was read from a copy of the whole router.
    public private(set) var nextDeadline: Duration?

    /// Fails the requests whose 30 s have run out, per link (handles in order).
    public mutating func expire(now: Duration) -> [(handle: UInt16, actions: [L2CAPControlAction])] {
        links.keys.sorted().compactMap { handle in
            guard let actions = withSignaling(handle, { $0.expireCreditBased(now: now) }), !actions.isEmpty else { return nil }
            return (handle, actions)
        }
    }
}

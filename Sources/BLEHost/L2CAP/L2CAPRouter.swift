import BLEHCI

/// What the router asks its owner to do with a link's traffic.
public enum L2CAPRouting: Sendable, Equatable {
    /// Nothing complete yet (a fragment of a longer PDU), or nothing to do.
    case none
    /// A whole ATT PDU for the link's bearer (fixed CID 0x0004).
    case att([UInt8])
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
}

/// The L2CAP layer of every link, sans-IO: reassembles ACL fragments into basic frames (Core
/// spec Vol 3 Part A §3.1, §7.2), routes them by channel ID (§2.1: fixed channels 0x0004 ATT,
/// 0x0005 LE signaling, 0x0006 SMP) and runs the signaling channel of each link; ATT and SMP
/// PDUs go up whole to their owners (the bearers and the Security Manager). Dynamic
/// channels (LE credit-based, §4.22) get a route of their own here when they are built; until
/// then their data is dropped with a reason.
public struct L2CAPRouter: Sendable {
    private struct LinkChannels: Sendable {
        let role: LESignalingChannel.Role
        var signaling = LESignalingChannel()
    }

    private var reassembler = ACLReassembler()
    private var links: [UInt16: LinkChannels] = [:]

    public init() {}

    /// Starts routing for a new link.
    public mutating func linkOpened(handle: UInt16, role: LESignalingChannel.Role) {
        links[handle] = LinkChannels(role: role)
    }

    /// Forgets a closed link, with any partial PDU it left.
    public mutating func linkClosed(handle: UInt16) {
        links[handle] = nil
        reassembler.reset(handle: handle)
    }

    /// Whether the router knows this link.
    public func isOpen(_ handle: UInt16) -> Bool { links[handle] != nil }

    /// Takes one ACL packet from the controller and says what it completes.
    public mutating func receive(_ packet: ACLPacket) -> L2CAPRouting {
        let handle = packet.handle
        guard links[handle] != nil else {
            return .dropped("ACL data for unknown handle 0x\(String(handle, radix: 16))")
        }
        let pdu: [UInt8]?
        do {
            pdu = try reassembler.push(packet)
        } catch {
            return .dropped("ACL reassembly on 0x\(String(handle, radix: 16)): \(error)")
        }
        guard let pdu else { return .none }
        let frame: L2CAPFrame
        do {
            frame = try L2CAPFrame.decode(pdu)
        } catch {
            return .dropped("malformed L2CAP frame: \(error)")
        }
        switch frame.channelID {
        case L2CAPChannel.att:
            return .att(frame.payload)
        case L2CAPChannel.leSignaling:
            return .control(receiveSignaling(frame.payload, handle: handle))
        case L2CAPChannel.smp:
            return .smp(frame.payload)
        default:
            return .dropped("data on unrouted L2CAP channel 0x\(String(frame.channelID, radix: 16))")
        }
    }

    private mutating func receiveSignaling(_ payload: [UInt8], handle: UInt16) -> [L2CAPControlAction] {
        guard let index = links.index(forKey: handle) else { return [] }
        let role = links.values[index].role
        let actions = links.values[index].signaling.receive(payload, role: role)
        return actions.compactMap { action in
            switch action {
            case let .send(bytes):
                return .send(channel: L2CAPChannel.leSignaling, payload: bytes)
            case let .updateConnectionParameters(parameters, _):
                return .updateConnectionParameters(parameters)
            case .connectionParameterUpdateResult:
                // Nothing asks the central for new parameters yet, so no answer is awaited.
                return nil
            }
        }
    }
}

import BLEHCI
import BLEHost
import BLEWire

extension HostController {
    /// Reassembles ACL fragments and routes complete L2CAP frames by channel (Core spec Vol 3
    /// Part A §2.1: fixed channels 0x0004 ATT, 0x0005 LE signaling, 0x0006 SMP).
    func receiveACL(_ packet: ACLPacket) {
        guard links[packet.handle] != nil else {
            log("ACL data for unknown handle 0x\(String(packet.handle, radix: 16))")
            return
        }
        let pdu: [UInt8]?
        do {
            pdu = try reassembler.push(packet)
        } catch {
            log("ACL reassembly on 0x\(String(packet.handle, radix: 16)): \(error)")
            return
        }
        guard let pdu else { return }
        let frame: L2CAPFrame
        do {
            frame = try L2CAPFrame.decode(pdu)
        } catch {
            log("malformed L2CAP frame: \(error)")
            return
        }
        switch frame.channelID {
        case L2CAPChannel.att:
            receiveATT(frame.payload, handle: packet.handle)
        case L2CAPChannel.leSignaling:
            receiveSignaling(frame.payload, handle: packet.handle)
        case L2CAPChannel.smp:
            receiveSMP(frame.payload, handle: packet.handle)
        default:
            log("data on unrouted L2CAP channel 0x\(String(frame.channelID, radix: 16))")
        }
    }

    private func receiveSignaling(_ payload: [UInt8], handle: UInt16) {
        guard var link = links[handle] else { return }
        let role: LESignalingChannel.Role = link.role == .central ? .central : .peripheral
        let actions = link.signaling.receive(payload, role: role)
        links[handle] = link
        for action in actions {
            switch action {
            case let .send(bytes):
                sendL2CAP(handle: handle, channel: L2CAPChannel.leSignaling, payload: bytes)
            case let .updateConnectionParameters(p, _):
                // The central answers a peripheral's request (Vol 3 Part A §4.20) by applying it
                // with LE Connection Update (Vol 4 Part E §7.8.18).
                Task(executorPreference: clock.taskExecutor) {
                    try? await self.command(.leConnectionUpdate(
                        handle: handle, intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                        maxLatency: p.latency, supervisionTimeout: p.timeout, minCELength: 0, maxCELength: 0))
                }
            default:
                break
            }
        }
    }

    /// SMP arrives with the pairing issue. Until then a pairing or security request is answered
    /// with Pairing Failed "Pairing Not Supported" (Vol 3 Part H §3.5.5, reason 0x05), so the
    /// peer is never left waiting for its 30-second SMP timeout.
    private func receiveSMP(_ payload: [UInt8], handle: UInt16) {
        guard let code = payload.first else { return }
        switch code {
        case 0x01, 0x0B: // Pairing Request, Security Request
            sendL2CAP(handle: handle, channel: L2CAPChannel.smp, payload: [0x05, 0x05])
        default:
            break
        }
    }
}

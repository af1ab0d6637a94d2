import BLEHCI
import BLEWire

/// The behaviour of `VirtualControllerQuirk`s: what a controller with quirks does around the
/// answers `answer(_:)` gives, after a Disconnection Complete, and with advertising reports.
/// Only a controller whose configuration lists quirks comes here.
extension VirtualController {
    /// What the quirks remember; kept over HCI Reset, started afresh at power-on.
    struct QuirkState: Hashable, Sendable {
        /// Some command arrived since power-on (`losesFirstCommand`).
        var heardFirstCommand = false
        /// HCI Reset has been answered since power-on (`spontaneousResetComplete`).
        var resetAnswered = false
        /// The unsolicited Reset completion went out.
        var spontaneousResetSent = false
    }

    /// Power back on: reset defaults, and the quirks that happen once per power-on armed again.
    mutating func poweredOn() {
        resetState()
        quirkState = QuirkState()
    }

    /// `handle` on a controller with quirks.
    mutating func answerWithQuirks(_ command: HCICommand) -> ControllerOutput {
        let quirks = configuration.quirks
        let op = command.opcode
        let first = !quirkState.heardFirstCommand
        quirkState.heardFirstCommand = true
        if first && quirks.contains(.losesFirstCommand) { return ControllerOutput() }
        if quirkState.resetAnswered && !quirkState.spontaneousResetSent && quirks.contains(.spontaneousResetComplete(replacing: op)) {
            quirkState.spontaneousResetSent = true
            return ControllerOutput(toHost: [.event(complete(.reset))])
        }
        for case let .listedButUnknown(opcodes) in quirks where opcodes.contains(op) {
            return ControllerOutput(toHost: [.event(unknownCommand(op))])
        }
        var out = answer(command)
        switch op {
        case .reset:
            quirkState.resetAnswered = true
            if quirks.contains(.creditOnlyCommandComplete) {
                out.event(.commandComplete(numHCICommandPackets: 1, opcode: .noOperation, returnParameters: []))
            }
        case .leConnectionUpdate where quirks.contains(.silentConnectionUpdate):
            // Command Status Success went to the host; the procedure never starts.
            out.air.removeAll {
                switch $0 {
                case .connectionUpdate, .connectionParameterRequest: return true
                default: return false
                }
            }
        case .disconnect:
            var extra: [HostBoundPacket] = []
            for case let .event(.disconnectionComplete(_, handle, _)) in out.toHost { extra += afterDisconnectionComplete(handle: handle) }
            out.toHost += extra
        default:
            break
        }
        if quirks.contains(.duplicateCommandComplete) {
            out.toHost = out.toHost.flatMap { packet -> [HostBoundPacket] in
                if case let .event(.commandComplete(_, opcode, _)) = packet, opcode != .noOperation { return [packet, packet] }
                return [packet]
            }
        }
        return out
    }

    /// The answer to a command this controller does not know: Command Complete with Unknown
    /// HCI Command (Vol 4 Part E §4.5), or Command Status with it (`unknownCommandAsCommandStatus`).
    func unknownCommand(_ op: HCIOpcode) -> HCIEvent {
        if configuration.quirks.contains(.unknownCommandAsCommandStatus) {
            return status(op, .unknownCommand)
        }
        return complete(op, status: .unknownCommand)
    }

    /// What LE Read Buffer Size reports: the configured LE buffers, or none when LE shares the
    /// BR/EDR ones (`sharedACLBuffers`, §7.8.2).
    var leBuffers: (length: UInt16, count: UInt8) {
        if configuration.quirks.contains(.sharedACLBuffers) { return (0, 0) }
        return (configuration.leACLBufferLength, configuration.leACLBufferCount)
    }

    /// Read Buffer Size's return parameters after the status (§7.4.5): none for an LE-only
    /// controller, the configured buffers when LE shares them (`sharedACLBuffers`).
    var sharedBufferSize: [UInt8] {
        guard configuration.quirks.contains(.sharedACLBuffers) else { return [0, 0, 0, 0, 0, 0, 0] }
        var w = ByteWriter()
        w.u16(configuration.leACLBufferLength)
        w.u8(0) // SCO length
        w.u16(UInt16(configuration.leACLBufferCount))
        w.u16(0) // SCO packets
        return w.bytes
    }

    /// What follows a Disconnection Complete for `handle`: a late Number Of Completed Packets
    /// (`completedPacketsAfterDisconnection`), then a late ACL packet (`aclAfterDisconnection`).
    func afterDisconnectionComplete(handle: UInt16) -> [HostBoundPacket] {
        var out: [HostBoundPacket] = []
        for case let .completedPacketsAfterDisconnection(count) in configuration.quirks {
            out.append(.event(.numberOfCompletedPackets([CompletedPackets(handle: handle, count: count)])))
        }
        if configuration.quirks.contains(.aclAfterDisconnection) {
            // L2CAP basic frame on the ATT channel (length 3, CID 0x0004): ATT Read Request for
            // attribute handle 0x0001.
            out.append(.acl(ACLPacket(handle: handle, boundary: .firstFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x0A, 0x01, 0x00])))
        }
        return out
    }

    /// Legacy advertising reports as a controller with quirks sends them: without RSSI
    /// (`advertisingReportsWithoutRSSI`), each followed by a malformed one
    /// (`malformedAdvertisingReports`).
    func quirkyReports(_ reports: [LEAdvertisingReport]) -> [HostBoundPacket] {
        let withoutRSSI = configuration.quirks.contains(.advertisingReportsWithoutRSSI)
        let malformed = configuration.quirks.contains(.malformedAdvertisingReports)
        var out: [HostBoundPacket] = []
        for var report in reports {
            if withoutRSSI { report.rssi = LEAdvertisingReport.unavailable }
            out.append(.event(.le(.advertisingReport([report]))))
            if malformed { out.append(.event(.unknown(code: HCIEvent.Code.leMeta, parameters: Self.overrunningReport(report.address)))) }
        }
        return out
    }

    /// LE Advertising Report parameters (§7.7.65.2) with one ADV_IND report from `address` whose
    /// Data_Length says 31 octets where 10 follow, and no RSSI: the length runs past the event.
    static func overrunningReport(_ address: DeviceAddress) -> [UInt8] {
        [LEMetaEvent.Subevent.advertisingReport, 1, 0x00, address.type.peerType.rawValue & 0x01]
            + address.address.littleEndianBytes + [31] + [UInt8](repeating: 0xEE, count: 10)
    }
}

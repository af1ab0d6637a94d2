import BLEHCI
import BLEWire

/// Commands that change an established link's parameters: data length (Core spec Vol 4 Part E
/// §7.8.33–§7.8.35, §7.8.46), PHY (§7.8.47–§7.8.49) and the central's answer to a Remote
/// Connection Parameter Request (§7.8.31, §7.8.32). The procedures themselves involve both ends,
/// so the controller only validates and hands them to the medium as air actions.
extension VirtualController {
    /// The largest LL payload and its time on LE 1M (Vol 6 Part B §4.5.10).
    static let maximumDataOctets: UInt16 = 251
    static let maximumDataTime: UInt16 = 17_040

    /// Handles the command if it belongs here; nil when it does not.
    mutating func handleLinkCommand(_ command: HCICommand, _ r: inout ByteReader) throws(WireError) -> ControllerOutput? {
        var out = ControllerOutput()
        let op = command.opcode
        switch op {
        case .readRSSI:
            // §7.5.4: what the medium says this end hears of the link's peer (`heardRSSI`, set
            // around this call), Unknown Connection Identifier for a handle with no link.
            let handle = try r.readU16() & 0x0FFF
            if connections[handle] != nil, let rssi = heardRSSI {
                out.event(complete(op, handle: handle, [UInt8(bitPattern: rssi)]))
            } else {
                out.event(complete(op, handle: handle, status: .unknownConnectionIdentifier))
            }
        case .leSetDataLength:
            let handle = try r.readU16() & 0x0FFF
            let txOctets = try r.readU16()
            let txTime = try r.readU16()
            guard connections[handle] != nil else {
                out.event(complete(op, handle: handle, status: .unknownConnectionIdentifier))
                break
            }
            guard (27...251).contains(txOctets), (328...17_040).contains(txTime) else {
                out.event(complete(op, handle: handle, status: .invalidHCICommandParameters))
                break
            }
            connections[handle]?.maxTxOctets = txOctets
            out.event(complete(op, handle: handle))
            out.air.append(.dataLengthChanged(handle: handle))
        case .leReadSuggestedDefaultDataLength:
            var w = ByteWriter()
            w.u16(suggestedTxOctets)
            w.u16(suggestedTxTime)
            out.event(complete(op, w.bytes))
        case .leWriteSuggestedDefaultDataLength:
            let octets = try r.readU16()
            let time = try r.readU16()
            guard (27...251).contains(octets), (328...17_040).contains(time) else {
                out.event(complete(op, status: .invalidHCICommandParameters))
                break
            }
            suggestedTxOctets = octets
            suggestedTxTime = time
            out.event(complete(op))
        case .leReadMaximumDataLength:
            var w = ByteWriter()
            for value in [Self.maximumDataOctets, Self.maximumDataTime, Self.maximumDataOctets, Self.maximumDataTime] { w.u16(value) }
            out.event(complete(op, w.bytes))
        case .leReadPHY:
            let handle = try r.readU16() & 0x0FFF
            guard let c = connections[handle] else {
                out.event(complete(op, handle: handle, status: .unknownConnectionIdentifier))
                break
            }
            out.event(complete(op, handle: handle, [c.phy.rawValue, c.phy.rawValue]))
        case .leSetDefaultPHY:
            let all = try r.readU8()
            let tx = LEPHYSet(rawValue: try r.readU8())
            let rx = LEPHYSet(rawValue: try r.readU8())
            // A PHY the controller lacks (LE Coded without LE features bit 11), or none, is
            // Unsupported Feature or Parameter Value (§7.8.48).
            let supported = supportedPHYs
            if (all & 0x01 == 0 && (tx.isEmpty || !supported.isSuperset(of: tx)))
                || (all & 0x02 == 0 && (rx.isEmpty || !supported.isSuperset(of: rx))) {
                out.event(complete(op, status: .unsupportedFeatureOrParameterValue))
                break
            }
            defaultPHYs = PHYPreference(tx: all & 0x01 != 0 ? PHYPreference.any.tx : tx,
                                        rx: all & 0x02 != 0 ? PHYPreference.any.rx : rx)
            out.event(complete(op))
        case .leSetPHY:
            let handle = try r.readU16() & 0x0FFF
            let all = try r.readU8()
            let tx = LEPHYSet(rawValue: try r.readU8())
            let rx = LEPHYSet(rawValue: try r.readU8())
            _ = try r.readU16() // coded PHY options
            guard connections[handle] != nil else {
                out.event(status(op, .unknownConnectionIdentifier))
                break
            }
            // §7.8.49: a PHY the controller lacks (LE Coded without it), or none, is refused.
            let supported = supportedPHYs
            if (all & 0x01 == 0 && (tx.isEmpty || !supported.isSuperset(of: tx)))
                || (all & 0x02 == 0 && (rx.isEmpty || !supported.isSuperset(of: rx))) {
                out.event(status(op, .unsupportedFeatureOrParameterValue))
                break
            }
            out.event(status(op, .success))
            let preference = PHYPreference(tx: all & 0x01 != 0 ? PHYPreference.any.tx : tx,
                                           rx: all & 0x02 != 0 ? PHYPreference.any.rx : rx)
            out.air.append(.setPHY(handle: handle, preference: preference))
        case .leRemoteConnectionParameterRequestReply:
            let handle = try r.readU16() & 0x0FFF
            let intervalMin = try r.readU16()
            let intervalMax = try r.readU16() // the central picks the minimum
            let latency = try r.readU16()
            let timeout = try r.readU16()
            _ = try r.readU32() // CE lengths
            guard connections[handle]?.awaitingParameterReply == true else {
                out.event(complete(op, handle: handle, status: connections[handle] == nil ? .unknownConnectionIdentifier : .commandDisallowed))
                break
            }
            guard Self.validConnectionParameters(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: timeout) else {
                out.event(complete(op, handle: handle, status: .invalidHCICommandParameters))
                break
            }
            connections[handle]?.awaitingParameterReply = false
            out.event(complete(op, handle: handle))
            out.air.append(.connectionUpdate(handle: handle, interval: intervalMin, latency: latency, supervisionTimeout: timeout))
        case .leRemoteConnectionParameterRequestNegativeReply:
            let handle = try r.readU16() & 0x0FFF
            let reason = HCIStatus(try r.readU8())
            guard connections[handle]?.awaitingParameterReply == true else {
                out.event(complete(op, handle: handle, status: connections[handle] == nil ? .unknownConnectionIdentifier : .commandDisallowed))
                break
            }
            connections[handle]?.awaitingParameterReply = false
            out.event(complete(op, handle: handle))
            out.air.append(.connectionParameterRejected(handle: handle, reason: reason))
        default:
            return nil
        }
        return out
    }
}

import BLEHCI
import BLEWire

/// Read RSSI (Core spec Vol 4 Part E §7.5.4) on a link: the controller alone does not know where
/// its peer stands, so the medium answers it with the signal strength at which this end hears
/// the other (127, "not available", when it does not hear it now).
extension VirtualMedium {
    mutating func readRSSI(_ command: HCICommand, from id: ControllerID, now: Duration) -> [Delivery] {
        // The medium knows what the controller hears; the controller answers (through its
        // profile's gate and its quirks, like any command).
        var r = ByteReader(command.parameters)
        let handle = ((try? r.readU16()) ?? 0x0FFF) & 0x0FFF
        let mine = LinkEnd(id: id, handle: handle)
        let link = links.values.first { $0.central == mine || $0.peripheral == mine }
        let peer = link.map { $0.central == mine ? $0.peripheral.id : $0.central.id }
        nodes[id.rawValue].controller.heardRSSI = peer.map { rssi(from: $0, to: id, phy: link?.phy ?? .le1M) ?? 127 }
        let out = nodes[id.rawValue].controller.handle(command)
        nodes[id.rawValue].controller.heardRSSI = nil
        return apply(out, from: id, now: now)
    }
}

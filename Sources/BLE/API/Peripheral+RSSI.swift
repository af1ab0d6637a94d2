import BLEHCI

extension Peripheral {
    /// The signal strength of the peripheral's packets on this link now, in dBm (HCI Read RSSI,
    /// Core spec Vol 4 Part E §7.5.4); 127 when the controller cannot tell. Throws
    /// `.unsupported` on a controller that does not list Read RSSI.
    public func readRSSI() async throws -> Int {
        let parameters = try await host.run { [linkID] host -> [UInt8] in
            guard let handle = host.connections.links.handle(forID: linkID) else { throw BLEError.notConnected }
            guard host.info?.lists(.readRSSI) ?? true else { throw ControllerInfo.notSupported(.readRSSI, "the RSSI of a link") }
            return try await host.commandReturning(.readRSSI(handle: handle))
        }
        guard parameters.count >= 4 else { throw BLEError.unsupported("Read RSSI returned \(parameters.count) bytes") }
        return Int(Int8(bitPattern: parameters[3]))
    }
}

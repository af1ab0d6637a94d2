import BLEHCI

extension Peripheral {
    /// The signal strength of the peripheral's packets on this link now, in dBm (HCI Read RSSI,
    /// Core spec Vol 4 Part E §7.5.4); 127 when the controller cannot tell.
    public func readRSSI() async throws -> Int {
        let parameters = try await host.run { [linkID] host -> [UInt8] in
            guard let handle = host.connections.links.handle(forID: linkID) else { throw BLEError.notConnected }
            return try await host.commandReturning(.readRSSI(handle: handle))
        }
        guard parameters.count >= 4 else { throw BLEError.unsupported("Read RSSI returned \(parameters.count) bytes") }
        return Int(Int8(bitPattern: parameters[3]))
    }
}

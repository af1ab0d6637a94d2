import BLEHCI

/// A link's PHY and LL payload size: asked for per link, or for every new link by
/// `HostConfiguration.preferredDataLength` / `preferredPHY`. The results arrive as LE Data Length
/// Change and LE PHY Update Complete events (HostController+Events.swift).
extension HostController {
    /// LE Set Data Length (Core spec Vol 4 Part E §7.8.33) for one link; the controller then
    /// runs the Data Length Update procedure with the peer.
    func setDataLength(linkID: UInt64, octets: Int) async throws {
        guard let handle = linkHandle(forID: linkID) else { throw BLEError.notConnected }
        guard (27...251).contains(octets) else { throw BLEError.invalidArgument("data length \(octets) is outside 27...251 octets") }
        // TxTime for that many octets on LE 1M: (octets + 14) × 8 µs (Vol 6 Part B §4.5.10).
        _ = try await commandReturning(.leSetDataLength(handle: handle, txOctets: UInt16(octets), txTime: UInt16((octets + 14) * 8)))
    }

    /// LE Set PHY (§7.8.49) for one link, both directions.
    func setPHY(linkID: UInt64, _ phy: LEPHY) async throws {
        guard let handle = linkHandle(forID: linkID) else { throw BLEError.notConnected }
        let set: LEPHYSet
        switch phy {
        case .le1M: set = .le1M
        case .le2M: set = .le2M
        case .leCoded: set = .leCoded
        default: throw BLEError.invalidArgument("unknown PHY \(phy)")
        }
        try await command(.leSetPHY(handle: handle, tx: set, rx: set))
    }

    /// Applies the configured preferences to a new link, in the background: a controller that
    /// refuses (or lacks the feature) leaves the link as it is.
    func applyLinkPreferences(handle: UInt16) {
        let dataLength = configuration.preferredDataLength
        let phy = configuration.preferredPHY
        guard dataLength != nil || phy != nil, let id = links[handle]?.id else { return }
        Task(executorPreference: clock.taskExecutor) {
            if let dataLength {
                do { try await self.setDataLength(linkID: id, octets: dataLength) } catch { self.log("LE Set Data Length: \(error)") }
            }
            if let phy {
                do { try await self.setPHY(linkID: id, phy) } catch { self.log("LE Set PHY: \(error)") }
            }
        }
    }
}

import BLEHCI
import BLEWire

/// Periodic Advertising Sync Transfer in a virtual controller (PAST, Core spec Vol 6 Part B
/// §5.1.13; HCI Vol 4 Part E §7.8.89–§7.8.92): the host hands a connected peer a sync, or its
/// own set's train, and the peer's controller syncs to it without scanning when its host
/// accepts transfers on that connection.
extension VirtualController {
    /// The PAST commands; nil for any other command, or on a controller without Bluetooth 5
    /// advertising.
    mutating func handleSyncTransferCommand(_ command: HCICommand, _ r: inout ByteReader) throws(WireError) -> ControllerOutput? {
        guard configuration.extendedAdvertising != nil else { return nil }
        var out = ControllerOutput()
        let op = command.opcode
        switch op {
        case .leSetPeriodicAdvertisingSyncTransferParameters:
            let handle = try r.readU16() & 0x0FFF
            let mode = try r.readU8()
            _ = try r.readU16() // skip
            let timeout = try r.readU16()
            _ = try r.readU8() // CTE type
            guard connections[handle] != nil else { out.event(complete(op, handle: handle, status: .unknownConnectionIdentifier)); break }
            guard mode <= 3, (0x000A...0x4000).contains(timeout) else {
                out.event(complete(op, handle: handle, status: .invalidHCICommandParameters))
                break
            }
            connections[handle]?.syncTransferMode = mode
            connections[handle]?.syncTransferTimeout = timeout
            out.event(complete(op, handle: handle))
        case .leSetDefaultPeriodicAdvertisingSyncTransferParameters:
            let mode = try r.readU8()
            _ = try r.readU16() // skip
            let timeout = try r.readU16()
            _ = try r.readU8() // CTE type
            guard mode <= 3, (0x000A...0x4000).contains(timeout) else { out.event(complete(op, status: .invalidHCICommandParameters)); break }
            defaultSyncTransfer = (mode, timeout)
            out.event(complete(op))
        case .lePeriodicAdvertisingSyncTransfer, .lePeriodicAdvertisingSetInfoTransfer:
            let handle = try r.readU16() & 0x0FFF
            let serviceData = try r.readU16()
            let source: SyncTransferSource
            if op == .lePeriodicAdvertisingSyncTransfer {
                let syncHandle = try r.readU16() & 0x0FFF
                guard connections[handle] != nil else { out.event(complete(op, handle: handle, status: .unknownConnectionIdentifier)); break }
                guard let sync = syncs[syncHandle] else { out.event(complete(op, handle: handle, status: .unknownAdvertisingIdentifier)); break }
                source = .sync(sync.train)
            } else {
                let setHandle = try r.readU8()
                guard connections[handle] != nil else { out.event(complete(op, handle: handle, status: .unknownConnectionIdentifier)); break }
                guard let set = advertisingSets[setHandle] else { out.event(complete(op, handle: handle, status: .unknownAdvertisingIdentifier)); break }
                // §7.8.90: the set's periodic advertising must be on.
                guard set.periodic?.running == true else { out.event(complete(op, handle: handle, status: .commandDisallowed)); break }
                source = .ownSet(setHandle)
            }
            out.event(complete(op, handle: handle))
            out.air.append(.syncTransfer(handle: handle, serviceData: serviceData, source: source))
        default:
            return nil
        }
        return out
    }

    /// The peer of connection `handle` transferred the sync of `train` (LL_PERIODIC_SYNC_IND):
    /// with a non-zero Mode for that connection the controller syncs (reports on for Modes 2
    /// and 3) and tells its host with LE Periodic Advertising Sync Transfer Received
    /// (§7.7.65.24). Returns the new sync's handle and timeout, and what the host hears; nil
    /// when the transfer is ignored (Mode 0, or a train already followed).
    mutating func syncTransferred(connection handle: UInt16, serviceData: UInt16, train: PeriodicTrainKey,
                                  _ t: VirtualPeriodicTrain) -> (sync: UInt16, timeout: Duration, toHost: [HostBoundPacket])? {
        guard let connection = connections[handle], connection.syncTransferMode != 0,
              !syncs.values.contains(where: { $0.train == train }) else { return nil }
        let sync = allocateSyncHandle()
        let timeout = Duration.milliseconds(10 * Int64(connection.syncTransferTimeout))
        syncs[sync] = PeriodicSyncState(train: train, advertiser: t.address, sid: t.sid, timeout: timeout,
                                        reports: connection.syncTransferMode >= 2)
        guard leEventEnabled(bit: 23) else { return (sync, timeout, []) }
        let established = LEPeriodicSyncEstablished(status: .success, syncHandle: sync, sid: t.sid, advertiser: t.address,
                                                    phy: t.phy, interval: t.interval, clockAccuracy: 0)
        return (sync, timeout, [.event(.le(.periodicAdvertisingSyncTransferReceived(LEPeriodicSyncTransferReceived(
            connectionHandle: handle, serviceData: serviceData, sync: established))))])
    }
}

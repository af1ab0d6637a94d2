import BLEWire

/// Builders for Bluetooth 5's scanning, initiating and periodic-sync commands (Core spec Vol 4
/// Part E §7.8.64-§7.8.73, §7.8.88-§7.8.92), laid out as the spec lists them, little-endian.
/// Like the advertising commands, the extended scan and connect commands exclude their legacy
/// counterparts on one controller (§3.1.1).
extension HCICommand {
    // MARK: Extended scanning and initiating

    /// LE Set Extended Scan Parameters. §7.8.64. One entry per PHY scanned, in the order of
    /// Scanning_PHYs' bits (LE 1M, then LE Coded); at least one must be given.
    public static func leSetExtendedScanParameters(ownAddressType: OwnAddressType = .public,
                                                   filterPolicy: ScanFilterPolicy = .acceptAll,
                                                   le1M: ExtendedScanPHYParameters?,
                                                   leCoded: ExtendedScanPHYParameters? = nil) -> HCICommand {
        build(.leSetExtendedScanParameters) { w in
            w.u8(ownAddressType.rawValue)
            w.u8(filterPolicy.rawValue)
            w.u8((le1M == nil ? 0 : LEPHYSet.le1M.rawValue) | (leCoded == nil ? 0 : LEPHYSet.leCoded.rawValue))
            for entry in [le1M, leCoded].compactMap({ $0 }) {
                w.u8(entry.type.rawValue)
                w.u16(entry.interval)
                w.u16(entry.window)
            }
        }
    }

    /// LE Set Extended Scan Enable. §7.8.65. `duration` in 10 ms units (0: until disabled),
    /// `period` in 1.28 s units (0: scan once for `duration`). Filter_Duplicates 0 off, 1 on, 2
    /// on and reset each period.
    public static func leSetExtendedScanEnable(enable enabled: Bool, filterDuplicates: UInt8 = 0,
                                               duration: UInt16 = 0, period: UInt16 = 0) -> HCICommand {
        build(.leSetExtendedScanEnable) { w in
            w.u8(enabled ? 1 : 0)
            w.u8(filterDuplicates)
            w.u16(duration)
            w.u16(period)
        }
    }

    /// LE Extended Create Connection [v1]. §7.8.66. One entry per initiating PHY, in the order of
    /// Initiating_PHYs' bits (LE 1M, LE 2M, LE Coded); LE 2M only with LE 1M or LE Coded (it is
    /// not scanned, its entry gives the connection parameters if the link starts on it). Answered
    /// with Command Status; the connection is reported by LE Enhanced Connection Complete.
    public static func leExtendedCreateConnection(filterPolicy: InitiatorFilterPolicy = .usePeerAddress,
                                                  ownAddressType: OwnAddressType = .public, peer: DeviceAddress,
                                                  le1M: ExtendedConnectionPHYParameters?,
                                                  le2M: ExtendedConnectionPHYParameters? = nil,
                                                  leCoded: ExtendedConnectionPHYParameters? = nil) -> HCICommand {
        build(.leExtendedCreateConnection) { w in
            w.u8(filterPolicy.rawValue)
            w.u8(ownAddressType.rawValue)
            w.u8(peer.type.peerType.rawValue)
            w.append(peer.address.littleEndianBytes)
            var phys = LEPHYSet()
            if le1M != nil { phys.insert(.le1M) }
            if le2M != nil { phys.insert(.le2M) }
            if leCoded != nil { phys.insert(.leCoded) }
            w.u8(phys.rawValue)
            for entry in [le1M, le2M, leCoded].compactMap({ $0 }) {
                w.u16(entry.scanInterval)
                w.u16(entry.scanWindow)
                w.u16(entry.intervalMin)
                w.u16(entry.intervalMax)
                w.u16(entry.latency)
                w.u16(entry.supervisionTimeout)
                w.u16(entry.minCELength)
                w.u16(entry.maxCELength)
            }
        }
    }

    // MARK: Periodic advertising sync

    /// LE Periodic Advertising Create Sync. §7.8.67. Syncs to the periodic train of the set `sid`
    /// of `advertiser` (or of any advertiser in the Periodic Advertiser List with
    /// `.useAdvertiserList`). `skip`: periodic events that may be skipped; `syncTimeout` in 10 ms
    /// units (0x000A...0x4000). Answered with Command Status; LE Periodic Advertising Sync
    /// Established follows.
    public static func lePeriodicAdvertisingCreateSync(options: PeriodicSyncOptions = [], sid: UInt8, advertiser: DeviceAddress,
                                                       skip: UInt16 = 0, syncTimeout: UInt16, cteType: UInt8 = 0) -> HCICommand {
        build(.lePeriodicAdvertisingCreateSync) { w in
            w.u8(options.rawValue)
            w.u8(sid & 0x0F)
            w.u8(advertiser.type.peerType.rawValue)
            w.append(advertiser.address.littleEndianBytes)
            w.u16(skip)
            w.u16(syncTimeout)
            w.u8(cteType)
        }
    }

    /// LE Periodic Advertising Create Sync Cancel. §7.8.68. The pending sync then ends with Sync
    /// Established, status Operation Cancelled by Host.
    public static var lePeriodicAdvertisingCreateSyncCancel: HCICommand { HCICommand(opcode: .lePeriodicAdvertisingCreateSyncCancel) }

    /// LE Periodic Advertising Terminate Sync. §7.8.69.
    public static func lePeriodicAdvertisingTerminateSync(syncHandle: UInt16) -> HCICommand {
        build(.lePeriodicAdvertisingTerminateSync) { $0.u16(handleBits(syncHandle)) }
    }

    /// LE Add Device To Periodic Advertiser List. §7.8.70.
    public static func leAddDeviceToPeriodicAdvertiserList(_ advertiser: DeviceAddress, sid: UInt8) -> HCICommand {
        periodicAdvertiserListEntry(.leAddDeviceToPeriodicAdvertiserList, advertiser, sid: sid)
    }

    /// LE Remove Device From Periodic Advertiser List. §7.8.71.
    public static func leRemoveDeviceFromPeriodicAdvertiserList(_ advertiser: DeviceAddress, sid: UInt8) -> HCICommand {
        periodicAdvertiserListEntry(.leRemoveDeviceFromPeriodicAdvertiserList, advertiser, sid: sid)
    }

    /// The shared layout of §7.8.70 and §7.8.71: address type, address, SID.
    static func periodicAdvertiserListEntry(_ opcode: HCIOpcode, _ advertiser: DeviceAddress, sid: UInt8) -> HCICommand {
        build(opcode) { w in
            w.u8(advertiser.type.peerType.rawValue)
            w.append(advertiser.address.littleEndianBytes)
            w.u8(sid & 0x0F)
        }
    }

    /// LE Clear Periodic Advertiser List. §7.8.72.
    public static var leClearPeriodicAdvertiserList: HCICommand { HCICommand(opcode: .leClearPeriodicAdvertiserList) }

    /// LE Read Periodic Advertiser List Size. §7.8.73 (`LEPeriodicAdvertiserListSize`).
    public static var leReadPeriodicAdvertiserListSize: HCICommand { HCICommand(opcode: .leReadPeriodicAdvertiserListSize) }

    /// LE Set Periodic Advertising Receive Enable. §7.8.88: reports of a sync on or off
    /// (bit 0), duplicate filtering (bit 1).
    public static func leSetPeriodicAdvertisingReceiveEnable(syncHandle: UInt16, reports: Bool, filterDuplicates: Bool = false) -> HCICommand {
        build(.leSetPeriodicAdvertisingReceiveEnable) { w in
            w.u16(handleBits(syncHandle))
            w.u8((reports ? 1 : 0) | (filterDuplicates ? 2 : 0))
        }
    }

    // MARK: Periodic Advertising Sync Transfer (PAST)

    /// LE Periodic Advertising Sync Transfer. §7.8.89: hands the sync `syncHandle` to the peer
    /// of connection `handle`; `serviceData` is the host's own value for the peer's host.
    public static func lePeriodicAdvertisingSyncTransfer(handle: UInt16, serviceData: UInt16, syncHandle: UInt16) -> HCICommand {
        build(.lePeriodicAdvertisingSyncTransfer) { w in
            w.u16(handleBits(handle))
            w.u16(serviceData)
            w.u16(handleBits(syncHandle))
        }
    }

    /// LE Periodic Advertising Set Info Transfer. §7.8.90: hands the peer of connection `handle`
    /// the sync information of our own periodic advertising on set `advertisingHandle`.
    public static func lePeriodicAdvertisingSetInfoTransfer(handle: UInt16, serviceData: UInt16, advertisingHandle: UInt8) -> HCICommand {
        build(.lePeriodicAdvertisingSetInfoTransfer) { w in
            w.u16(handleBits(handle))
            w.u16(serviceData)
            w.u8(advertisingHandle)
        }
    }

    /// LE Set Periodic Advertising Sync Transfer Parameters. §7.8.91: what the controller does
    /// with a sync the peer of connection `handle` transfers. `syncTimeout` in 10 ms units.
    public static func leSetPeriodicAdvertisingSyncTransferParameters(handle: UInt16, mode: PeriodicSyncTransferMode,
                                                                      skip: UInt16 = 0, syncTimeout: UInt16, cteType: UInt8 = 0) -> HCICommand {
        build(.leSetPeriodicAdvertisingSyncTransferParameters) { w in
            w.u16(handleBits(handle))
            w.u8(mode.rawValue)
            w.u16(skip)
            w.u16(syncTimeout)
            w.u8(cteType)
        }
    }

    /// LE Set Default Periodic Advertising Sync Transfer Parameters. §7.8.92: the same for every
    /// connection made from now on.
    public static func leSetDefaultPeriodicAdvertisingSyncTransferParameters(mode: PeriodicSyncTransferMode, skip: UInt16 = 0,
                                                                             syncTimeout: UInt16, cteType: UInt8 = 0) -> HCICommand {
        build(.leSetDefaultPeriodicAdvertisingSyncTransferParameters) { w in
            w.u8(mode.rawValue)
            w.u16(skip)
            w.u16(syncTimeout)
            w.u8(cteType)
        }
    }
}

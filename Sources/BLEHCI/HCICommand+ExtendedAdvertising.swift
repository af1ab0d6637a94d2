import BLEWire

/// Builders for Bluetooth 5's advertising commands: advertising sets and periodic advertising
/// (Core spec Vol 4 Part E §7.8.52-§7.8.63), laid out as the spec lists them, little-endian.
///
/// A controller takes either these or the legacy advertising commands (§7.8.5-§7.8.9), never
/// both: after the first of one kind, the other is refused with Command Disallowed (§3.1.1).
extension HCICommand {
    // MARK: Advertising sets

    /// LE Set Advertising Set Random Address. §7.8.52. The random address a set uses when its
    /// Own_Address_Type is random.
    public static func leSetAdvertisingSetRandomAddress(handle: UInt8, address: BDAddress) -> HCICommand {
        build(.leSetAdvertisingSetRandomAddress) { w in
            w.u8(handle)
            w.append(address.littleEndianBytes)
        }
    }

    /// LE Set Extended Advertising Parameters [v1]. §7.8.53. Answered with Command Complete:
    /// status and the TX power the controller chose (`LESelectedTxPower`).
    public static func leSetExtendedAdvertisingParameters(_ p: ExtendedAdvertisingParameters) -> HCICommand {
        build(.leSetExtendedAdvertisingParameters) { w in
            w.u8(p.handle)
            w.u16(p.properties.rawValue & 0x007F)
            w.u24(p.intervalMin & 0xFF_FFFF)
            w.u24(p.intervalMax & 0xFF_FFFF)
            w.u8(p.channelMap.rawValue)
            w.u8(p.ownAddressType.rawValue)
            w.u8(p.peer.type.peerType.rawValue)
            w.append(p.peer.address.littleEndianBytes)
            w.u8(p.filterPolicy.rawValue)
            w.i8(p.txPower)
            w.u8(p.primaryPHY.rawValue)
            w.u8(p.secondaryMaxSkip)
            w.u8(p.secondaryPHY.rawValue)
            w.u8(p.sid & 0x0F)
            w.u8(p.scanRequestNotifications ? 1 : 0)
        }
    }

    /// LE Set Extended Advertising Data. §7.8.54. One fragment (at most
    /// `AdvertisingDataFragment.extendedLimit` octets); `AdvertisingDataFragment.fragments`
    /// cuts longer data. `fragmentationAllowed`: the controller may fragment the data over the
    /// air as it likes (Fragment_Preference 0) or should keep fragments few (1).
    public static func leSetExtendedAdvertisingData(handle: UInt8, _ fragment: AdvertisingDataFragment,
                                                    fragmentationAllowed: Bool = true) -> HCICommand {
        setExtendedData(.leSetExtendedAdvertisingData, handle: handle, fragment, fragmentationAllowed: fragmentationAllowed)
    }

    /// LE Set Extended Scan Response Data. §7.8.55. As `leSetExtendedAdvertisingData`; the
    /// `.unchanged` operation is not allowed here.
    public static func leSetExtendedScanResponseData(handle: UInt8, _ fragment: AdvertisingDataFragment,
                                                     fragmentationAllowed: Bool = true) -> HCICommand {
        setExtendedData(.leSetExtendedScanResponseData, handle: handle, fragment, fragmentationAllowed: fragmentationAllowed)
    }

    /// The shared layout of §7.8.54 and §7.8.55: handle, operation, fragment preference, length,
    /// data (cut to what one command holds).
    static func setExtendedData(_ opcode: HCIOpcode, handle: UInt8, _ fragment: AdvertisingDataFragment,
                                fragmentationAllowed: Bool) -> HCICommand {
        let bytes = fragment.bytes.prefix(AdvertisingDataFragment.extendedLimit)
        return build(opcode) { w in
            w.u8(handle)
            w.u8(fragment.operation.rawValue)
            w.u8(fragmentationAllowed ? 0 : 1)
            w.u8(UInt8(bytes.count))
            w.append(bytes)
        }
    }

    /// LE Set Extended Advertising Enable. §7.8.56. Enables or disables the sets listed, each
    /// with its own duration and event limit (one entry per set, its fields together). Disabling
    /// with no sets listed disables every set.
    public static func leSetExtendedAdvertisingEnable(enable enabled: Bool, sets: [AdvertisingSetEnable]) -> HCICommand {
        build(.leSetExtendedAdvertisingEnable) { w in
            w.u8(enabled ? 1 : 0)
            let listed = sets.prefix(63)
            w.u8(UInt8(listed.count))
            for set in listed {
                w.u8(set.handle)
                w.u16(set.duration)
                w.u8(set.maxEvents)
            }
        }
    }

    /// LE Read Maximum Advertising Data Length. §7.8.57 (`LEMaximumAdvertisingDataLength`).
    public static var leReadMaximumAdvertisingDataLength: HCICommand { HCICommand(opcode: .leReadMaximumAdvertisingDataLength) }

    /// LE Read Number of Supported Advertising Sets. §7.8.58 (`LESupportedAdvertisingSets`).
    public static var leReadNumberOfSupportedAdvertisingSets: HCICommand { HCICommand(opcode: .leReadNumberOfSupportedAdvertisingSets) }

    /// LE Remove Advertising Set. §7.8.59.
    public static func leRemoveAdvertisingSet(handle: UInt8) -> HCICommand {
        build(.leRemoveAdvertisingSet) { $0.u8(handle) }
    }

    /// LE Clear Advertising Sets. §7.8.60.
    public static var leClearAdvertisingSets: HCICommand { HCICommand(opcode: .leClearAdvertisingSets) }

    // MARK: Periodic advertising

    /// LE Set Periodic Advertising Parameters [v1]. §7.8.61. Intervals in 1.25 ms units
    /// (0x0006 at least); `includeTxPower` sets Periodic_Advertising_Properties bit 6.
    public static func leSetPeriodicAdvertisingParameters(handle: UInt8, intervalMin: UInt16, intervalMax: UInt16,
                                                          includeTxPower: Bool = false) -> HCICommand {
        build(.leSetPeriodicAdvertisingParameters) { w in
            w.u8(handle)
            w.u16(intervalMin)
            w.u16(intervalMax)
            w.u16(includeTxPower ? 1 << 6 : 0)
        }
    }

    /// LE Set Periodic Advertising Data. §7.8.62. One fragment of at most
    /// `AdvertisingDataFragment.periodicLimit` octets.
    public static func leSetPeriodicAdvertisingData(handle: UInt8, _ fragment: AdvertisingDataFragment) -> HCICommand {
        let bytes = fragment.bytes.prefix(AdvertisingDataFragment.periodicLimit)
        return build(.leSetPeriodicAdvertisingData) { w in
            w.u8(handle)
            w.u8(fragment.operation.rawValue)
            w.u8(UInt8(bytes.count))
            w.append(bytes)
        }
    }

    /// LE Set Periodic Advertising Enable. §7.8.63. `includeADI`: the AUX_SYNC_IND PDUs carry
    /// the ADI field (Enable bit 1).
    public static func leSetPeriodicAdvertisingEnable(enable enabled: Bool, handle: UInt8, includeADI: Bool = false) -> HCICommand {
        build(.leSetPeriodicAdvertisingEnable) { w in
            w.u8((enabled ? 1 : 0) | (enabled && includeADI ? 2 : 0))
            w.u8(handle)
        }
    }
}

import BLEWire

/// Typed builders: one per command this stack sends, laying out the parameters exactly as
/// Core spec Vol 4 Part E §7 lists them (all multi-octet fields little-endian, §5.2).
///
/// Units follow the spec and are not converted here: intervals/windows in 0.625 ms (scan,
/// advertising) or 1.25 ms (connection), supervision timeout in 10 ms, CE length in 0.625 ms,
/// data-length times in microseconds. The higher layers own the conversions and range checks.
extension HCICommand {
    /// The connection handle is 12 bits (§5.4.2); upper bits are cleared rather than sent.
    static func handleBits(_ handle: UInt16) -> UInt16 { handle & 0x0FFF }

    /// Exactly `count` bytes: keys and nonces have fixed sizes on the wire, so a wrong-sized
    /// argument is zero-padded or truncated instead of producing a malformed packet.
    static func fixed(_ bytes: [UInt8], _ count: Int) -> [UInt8] {
        Array(bytes.prefix(count)) + [UInt8](repeating: 0, count: max(0, count - bytes.count))
    }

    static func build(_ opcode: HCIOpcode, _ body: (inout ByteWriter) -> Void) -> HCICommand {
        var w = ByteWriter()
        body(&w)
        return HCICommand(opcode: opcode, parameters: w.bytes)
    }

    // MARK: Link control

    /// Read RSSI. §7.5.4. Answered with Command Complete: status, handle, RSSI (Int8, dBm; on an
    /// LE link the received signal strength of the peer's packets).
    public static func readRSSI(handle: UInt16) -> HCICommand {
        build(.readRSSI) { w in w.u16(handleBits(handle)) }
    }

    /// Disconnect. §7.1.6. The reason goes to the peer; the spec allows 0x05, 0x13-0x15, 0x1A,
    /// 0x29 and 0x3B. Answered with Command Status, then Disconnection Complete.
    public static func disconnect(handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) -> HCICommand {
        build(.disconnect) { w in
            w.u16(handleBits(handle))
            w.u8(reason.rawValue)
        }
    }

    /// Read Remote Version Information. §7.1.23. Answered with Command Status, then the
    /// Read Remote Version Information Complete event.
    public static func readRemoteVersionInformation(handle: UInt16) -> HCICommand {
        build(.readRemoteVersionInformation) { $0.u16(handleBits(handle)) }
    }

    // MARK: Controller & baseband

    /// Set Event Mask. §7.3.1.
    public static func setEventMask(_ mask: UInt64) -> HCICommand {
        build(.setEventMask) { $0.u64(mask) }
    }

    /// Set Event Mask from the typed mask. §7.3.1.
    public static func setEventMask(_ mask: EventMask) -> HCICommand { setEventMask(mask.rawValue) }

    /// Reset. §7.3.2.
    public static var reset: HCICommand { HCICommand(opcode: .reset) }

    /// Write LE Host Support. §7.3.79. The second parameter (formerly Simultaneous_LE_Host) is
    /// now reserved and must be 0.
    public static func writeLEHostSupport(enabled: Bool = true) -> HCICommand {
        build(.writeLEHostSupport) { w in
            w.u8(enabled ? 1 : 0)
            w.u8(0)
        }
    }

    // MARK: Informational (no parameters)

    /// §7.4.1
    public static var readLocalVersionInformation: HCICommand { HCICommand(opcode: .readLocalVersionInformation) }
    /// §7.4.2
    public static var readLocalSupportedCommands: HCICommand { HCICommand(opcode: .readLocalSupportedCommands) }
    /// §7.4.3
    public static var readLocalSupportedFeatures: HCICommand { HCICommand(opcode: .readLocalSupportedFeatures) }
    /// §7.4.5
    public static var readBufferSize: HCICommand { HCICommand(opcode: .readBufferSize) }
    /// §7.4.6
    public static var readBDADDR: HCICommand { HCICommand(opcode: .readBDADDR) }

    // MARK: LE controller

    /// LE Set Event Mask. §7.8.1.
    public static func leSetEventMask(_ mask: UInt64) -> HCICommand {
        build(.leSetEventMask) { $0.u64(mask) }
    }

    /// LE Set Event Mask from the typed mask. §7.8.1.
    public static func leSetEventMask(_ mask: LEEventMask) -> HCICommand { leSetEventMask(mask.rawValue) }

    /// LE Read Buffer Size [v1]. §7.8.2.
    public static var leReadBufferSizeV1: HCICommand { HCICommand(opcode: .leReadBufferSizeV1) }
    /// LE Read Buffer Size [v2]. §7.8.2.
    public static var leReadBufferSizeV2: HCICommand { HCICommand(opcode: .leReadBufferSizeV2) }
    /// LE Read Local Supported Features. §7.8.3.
    public static var leReadLocalSupportedFeatures: HCICommand { HCICommand(opcode: .leReadLocalSupportedFeatures) }

    /// LE Set Random Address. §7.8.4.
    public static func leSetRandomAddress(_ address: BDAddress) -> HCICommand {
        build(.leSetRandomAddress) { $0.append(address.littleEndianBytes) }
    }

    /// LE Set Advertising Parameters. §7.8.5. Intervals in 0.625 ms units (0x0020...0x4000).
    /// `peer` only matters for directed advertising; this command's Peer_Address_Type allows only
    /// public (0) or random (1), so identity types are sent as their base type.
    public static func leSetAdvertisingParameters(
        intervalMin: UInt16, intervalMax: UInt16, type: AdvertisingType = .connectableUndirected,
        ownAddressType: OwnAddressType = .public, peer: DeviceAddress? = nil,
        channelMap: AdvertisingChannelMap = .all, filterPolicy: AdvertisingFilterPolicy = .acceptAll
    ) -> HCICommand {
        build(.leSetAdvertisingParameters) { w in
            w.u16(intervalMin)
            w.u16(intervalMax)
            w.u8(type.rawValue)
            w.u8(ownAddressType.rawValue)
            w.u8(peer?.type.peerType.rawValue ?? 0)
            w.append(peer?.address.littleEndianBytes ?? BDAddress.zero.littleEndianBytes)
            w.u8(channelMap.rawValue)
            w.u8(filterPolicy.rawValue)
        }
    }

    /// LE Read Advertising Physical Channel Tx Power. §7.8.6.
    public static var leReadAdvertisingPhysicalChannelTxPower: HCICommand {
        HCICommand(opcode: .leReadAdvertisingPhysicalChannelTxPower)
    }

    /// Legacy advertising payloads are at most 31 bytes and the command always carries 31. §7.8.7.
    static let legacyAdvertisingDataLength = 31

    static func paddedAdvertisingData(_ opcode: HCIOpcode, _ data: [UInt8]) -> HCICommand {
        let n = min(data.count, legacyAdvertisingDataLength)
        return build(opcode) { w in
            w.u8(UInt8(n))
            w.append(fixed(data, legacyAdvertisingDataLength))
        }
    }

    /// LE Set Advertising Data. §7.8.7. Length byte + data zero-padded to 31 octets; longer data
    /// is cut to 31 (the caller's AD builder should have prevented that).
    public static func leSetAdvertisingData(_ data: [UInt8]) -> HCICommand {
        paddedAdvertisingData(.leSetAdvertisingData, data)
    }

    /// LE Set Scan Response Data. §7.8.8. Same layout as advertising data.
    public static func leSetScanResponseData(_ data: [UInt8]) -> HCICommand {
        paddedAdvertisingData(.leSetScanResponseData, data)
    }

    /// LE Set Advertising Enable. §7.8.9.
    public static func leSetAdvertisingEnable(enable enabled: Bool) -> HCICommand {
        build(.leSetAdvertisingEnable) { $0.u8(enabled ? 1 : 0) }
    }

    /// LE Set Scan Parameters. §7.8.10. Interval/window in 0.625 ms units, window <= interval.
    public static func leSetScanParameters(
        type: LEScanType, interval: UInt16, window: UInt16,
        ownAddressType: OwnAddressType = .public, filterPolicy: ScanFilterPolicy = .acceptAll
    ) -> HCICommand {
        build(.leSetScanParameters) { w in
            w.u8(type.rawValue)
            w.u16(interval)
            w.u16(window)
            w.u8(ownAddressType.rawValue)
            w.u8(filterPolicy.rawValue)
        }
    }

    /// LE Set Scan Enable. §7.8.11.
    public static func leSetScanEnable(enable enabled: Bool, filterDuplicates: Bool = false) -> HCICommand {
        build(.leSetScanEnable) { w in
            w.u8(enabled ? 1 : 0)
            w.u8(filterDuplicates ? 1 : 0)
        }
    }

    /// LE Create Connection. §7.8.12. Answered with Command Status; the connection (or its
    /// cancellation) is reported by LE (Enhanced) Connection Complete.
    public static func leCreateConnection(
        scanInterval: UInt16, scanWindow: UInt16, filterPolicy: InitiatorFilterPolicy = .usePeerAddress,
        peer: DeviceAddress, ownAddressType: OwnAddressType = .public,
        connectionIntervalMin: UInt16, connectionIntervalMax: UInt16, maxLatency: UInt16,
        supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0
    ) -> HCICommand {
        build(.leCreateConnection) { w in
            w.u16(scanInterval)
            w.u16(scanWindow)
            w.u8(filterPolicy.rawValue)
            w.u8(peer.type.rawValue)
            w.append(peer.address.littleEndianBytes)
            w.u8(ownAddressType.rawValue)
            w.u16(connectionIntervalMin)
            w.u16(connectionIntervalMax)
            w.u16(maxLatency)
            w.u16(supervisionTimeout)
            w.u16(minCELength)
            w.u16(maxCELength)
        }
    }

    /// LE Create Connection Cancel. §7.8.13.
    public static var leCreateConnectionCancel: HCICommand { HCICommand(opcode: .leCreateConnectionCancel) }
    /// LE Read Filter Accept List Size. §7.8.14.
    public static var leReadFilterAcceptListSize: HCICommand { HCICommand(opcode: .leReadFilterAcceptListSize) }
    /// LE Clear Filter Accept List. §7.8.15.
    public static var leClearFilterAcceptList: HCICommand { HCICommand(opcode: .leClearFilterAcceptList) }

    /// LE Add Device To Filter Accept List. §7.8.16. Address type 0 public, 1 random.
    public static func leAddDeviceToFilterAcceptList(_ address: DeviceAddress) -> HCICommand {
        build(.leAddDeviceToFilterAcceptList) { w in
            w.u8(address.type.peerType.rawValue)
            w.append(address.address.littleEndianBytes)
        }
    }

    /// LE Remove Device From Filter Accept List. §7.8.17.
    public static func leRemoveDeviceFromFilterAcceptList(_ address: DeviceAddress) -> HCICommand {
        build(.leRemoveDeviceFromFilterAcceptList) { w in
            w.u8(address.type.peerType.rawValue)
            w.append(address.address.littleEndianBytes)
        }
    }

    /// LE Add Device To Resolving List. §7.8.38. `peer` is the identity address (public or
    /// static random); the IRKs are given least significant octet first, as SMP distributes them.
    public static func leAddDeviceToResolvingList(peer: DeviceAddress, peerIRK: [UInt8], localIRK: [UInt8]) -> HCICommand {
        build(.leAddDeviceToResolvingList) { w in
            w.u8(peer.type.peerType.rawValue)
            w.append(peer.address.littleEndianBytes)
            w.append(Array(peerIRK.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - peerIRK.count)))
            w.append(Array(localIRK.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - localIRK.count)))
        }
    }

    /// LE Remove Device From Resolving List. §7.8.39.
    public static func leRemoveDeviceFromResolvingList(peer: DeviceAddress) -> HCICommand {
        build(.leRemoveDeviceFromResolvingList) { w in
            w.u8(peer.type.peerType.rawValue)
            w.append(peer.address.littleEndianBytes)
        }
    }

    /// LE Clear Resolving List. §7.8.40.
    public static var leClearResolvingList: HCICommand { HCICommand(opcode: .leClearResolvingList) }

    /// LE Read Resolving List Size. §7.8.41.
    public static var leReadResolvingListSize: HCICommand { HCICommand(opcode: .leReadResolvingListSize) }

    /// LE Set Address Resolution Enable. §7.8.44.
    public static func leSetAddressResolutionEnable(_ enable: Bool) -> HCICommand {
        build(.leSetAddressResolutionEnable) { $0.u8(enable ? 1 : 0) }
    }

    /// LE Set Resolvable Private Address Timeout, in seconds (0x0001–0x0E10). §7.8.45.
    public static func leSetResolvablePrivateAddressTimeout(seconds: UInt16) -> HCICommand {
        build(.leSetResolvablePrivateAddressTimeout) { $0.u16(seconds) }
    }

    /// LE Set Privacy Mode. §7.8.77. Device privacy (`device` true) also accepts the peer's
    /// identity address on the air; network privacy (the default) accepts only its RPAs.
    public static func leSetPrivacyMode(peer: DeviceAddress, device: Bool) -> HCICommand {
        build(.leSetPrivacyMode) { w in
            w.u8(peer.type.peerType.rawValue)
            w.append(peer.address.littleEndianBytes)
            w.u8(device ? 1 : 0)
        }
    }

    /// LE Connection Update. §7.8.18. Answered with Command Status, then LE Connection Update
    /// Complete.
    public static func leConnectionUpdate(
        handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16,
        supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0
    ) -> HCICommand {
        connectionParameters(.leConnectionUpdate, handle: handle, intervalMin: intervalMin, intervalMax: intervalMax,
                             maxLatency: maxLatency, supervisionTimeout: supervisionTimeout,
                             minCELength: minCELength, maxCELength: maxCELength)
    }

    /// LE Read Remote Features. §7.8.21. Answered with Command Status, then LE Read Remote
    /// Features Complete.
    public static func leReadRemoteFeatures(handle: UInt16) -> HCICommand {
        build(.leReadRemoteFeatures) { $0.u16(handleBits(handle)) }
    }

    /// LE Encrypt (AES-128 in the controller). §7.8.22. `key` and `plaintext` are 16 bytes each
    /// in HCI order, least significant octet first (reverse of FIPS-197 notation).
    public static func leEncrypt(key: [UInt8], plaintext: [UInt8]) -> HCICommand {
        build(.leEncrypt) { w in
            w.append(fixed(key, 16))
            w.append(fixed(plaintext, 16))
        }
    }

    /// LE Rand. §7.8.23.
    public static var leRand: HCICommand { HCICommand(opcode: .leRand) }

    /// LE Enable Encryption (central starts or refreshes encryption). §7.8.24. `longTermKey` is 16
    /// bytes, least significant octet first. Answered with Command Status, then Encryption Change
    /// or Encryption Key Refresh Complete.
    public static func leEnableEncryption(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16, longTermKey: [UInt8]) -> HCICommand {
        build(.leEnableEncryption) { w in
            w.u16(handleBits(handle))
            w.u64(randomNumber)
            w.u16(encryptedDiversifier)
            w.append(fixed(longTermKey, 16))
        }
    }

    /// LE Long Term Key Request Reply. §7.8.25.
    public static func leLongTermKeyRequestReply(handle: UInt16, longTermKey: [UInt8]) -> HCICommand {
        build(.leLongTermKeyRequestReply) { w in
            w.u16(handleBits(handle))
            w.append(fixed(longTermKey, 16))
        }
    }

    /// LE Long Term Key Request Negative Reply. §7.8.26.
    public static func leLongTermKeyRequestNegativeReply(handle: UInt16) -> HCICommand {
        build(.leLongTermKeyRequestNegativeReply) { $0.u16(handleBits(handle)) }
    }

    /// A command whose parameters are a connection handle and a connection's parameters, in the
    /// order LE Connection Update (§7.8.18) and LE Remote Connection Parameter Request Reply
    /// (§7.8.31) both lay them out.
    private static func connectionParameters(
        _ opcode: HCIOpcode, handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16,
        supervisionTimeout: UInt16, minCELength: UInt16, maxCELength: UInt16
    ) -> HCICommand {
        build(opcode) { w in
            w.u16(handleBits(handle))
            w.u16(intervalMin)
            w.u16(intervalMax)
            w.u16(maxLatency)
            w.u16(supervisionTimeout)
            w.u16(minCELength)
            w.u16(maxCELength)
        }
    }

    /// LE Remote Connection Parameter Request Reply: accept (possibly adjusted) parameters the
    /// peer asked for. §7.8.31.
    public static func leRemoteConnectionParameterRequestReply(
        handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16,
        supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0
    ) -> HCICommand {
        connectionParameters(.leRemoteConnectionParameterRequestReply, handle: handle, intervalMin: intervalMin,
                             intervalMax: intervalMax, maxLatency: maxLatency, supervisionTimeout: supervisionTimeout,
                             minCELength: minCELength, maxCELength: maxCELength)
    }

    /// LE Remote Connection Parameter Request Negative Reply. §7.8.32. The usual reason is
    /// Unacceptable Connection Parameters (0x3B).
    public static func leRemoteConnectionParameterRequestNegativeReply(
        handle: UInt16, reason: HCIStatus = .unacceptableConnectionParameters
    ) -> HCICommand {
        build(.leRemoteConnectionParameterRequestNegativeReply) { w in
            w.u16(handleBits(handle))
            w.u8(reason.rawValue)
        }
    }

    /// LE Set Data Length. §7.8.33. TxOctets 27...251, TxTime 328...17040 µs.
    public static func leSetDataLength(handle: UInt16, txOctets: UInt16, txTime: UInt16) -> HCICommand {
        build(.leSetDataLength) { w in
            w.u16(handleBits(handle))
            w.u16(txOctets)
            w.u16(txTime)
        }
    }

    /// LE Read Suggested Default Data Length. §7.8.34.
    public static var leReadSuggestedDefaultDataLength: HCICommand { HCICommand(opcode: .leReadSuggestedDefaultDataLength) }

    /// LE Write Suggested Default Data Length. §7.8.35.
    public static func leWriteSuggestedDefaultDataLength(txOctets: UInt16, txTime: UInt16) -> HCICommand {
        build(.leWriteSuggestedDefaultDataLength) { w in
            w.u16(txOctets)
            w.u16(txTime)
        }
    }

    /// LE Read Maximum Data Length. §7.8.46.
    public static var leReadMaximumDataLength: HCICommand { HCICommand(opcode: .leReadMaximumDataLength) }

    /// LE Read PHY. §7.8.47.
    public static func leReadPHY(handle: UInt16) -> HCICommand {
        build(.leReadPHY) { $0.u16(handleBits(handle)) }
    }

    /// All_PHYs: bit 0 "no transmitter preference", bit 1 "no receiver preference".
    static func allPHYs(tx: LEPHYSet?, rx: LEPHYSet?) -> UInt8 {
        (tx == nil ? 0x01 : 0) | (rx == nil ? 0x02 : 0)
    }

    /// LE Set Default PHY. §7.8.48. `nil` means "no preference" for that direction.
    public static func leSetDefaultPHY(tx: LEPHYSet?, rx: LEPHYSet?) -> HCICommand {
        build(.leSetDefaultPHY) { w in
            w.u8(allPHYs(tx: tx, rx: rx))
            w.u8(tx?.rawValue ?? 0)
            w.u8(rx?.rawValue ?? 0)
        }
    }

    /// LE Set PHY. §7.8.49. `nil` means "no preference" for that direction. Answered with Command
    /// Status, then LE PHY Update Complete.
    public static func leSetPHY(handle: UInt16, tx: LEPHYSet?, rx: LEPHYSet?, options: LECodedPHYOptions = .noPreference) -> HCICommand {
        build(.leSetPHY) { w in
            w.u16(handleBits(handle))
            w.u8(allPHYs(tx: tx, rx: rx))
            w.u8(tx?.rawValue ?? 0)
            w.u8(rx?.rawValue ?? 0)
            w.u16(options.rawValue)
        }
    }
}

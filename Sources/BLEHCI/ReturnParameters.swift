import BLEWire

/// Typed return parameters of a command that finishes with Command Complete. Core spec Vol 4
/// Part E §7.7.14: the return parameters are the command's own, and (for every command here)
/// start with a status byte.
///
/// `init(returnParameters:)` takes the bytes after Num_HCI_Command_Packets and the opcode, checks
/// the status (non-zero throws `HCIError.commandFailed(opcode: opcode, status: status)`) and decodes the rest
/// (too short throws `HCIError.malformed`). Bytes beyond the known fields are ignored.
public protocol HCIReturnParameters: Sendable {
    /// The command these parameters answer.
    static var opcode: HCIOpcode { get }
    init(returnParameters: [UInt8]) throws(HCIError)
}

/// Checks the leading status byte, then decodes the rest with `body`.
func parseReturnParameters<T>(
    _ opcode: HCIOpcode, _ bytes: [UInt8], _ body: (inout ByteReader) throws(WireError) -> T
) throws(HCIError) -> T {
    guard let first = bytes.first else {
        throw HCIError.malformed(WireError.truncated(needed: 1, remaining: 0, "\(opcode) return parameters"))
    }
    guard first == 0 else { throw HCIError.commandFailed(opcode: opcode, status: HCIStatus(first)) }
    var r = ByteReader(bytes.dropFirst())
    do {
        return try body(&r)
    } catch {
        var e = error
        if e.context.isEmpty { e.context = "\(opcode) return parameters" }
        throw HCIError.malformed(e)
    }
}

/// Checks only the status byte: for commands whose return parameters are the status alone
/// (Reset, Set Event Mask, LE Set Scan Enable, ...).
public func checkStatusReturnParameters(_ opcode: HCIOpcode, _ returnParameters: [UInt8]) throws(HCIError) {
    try parseReturnParameters(opcode, returnParameters) { (_: inout ByteReader) throws(WireError) in }
}

/// Read Local Version Information. §7.4.1.
public struct LocalVersionInformation: HCIReturnParameters, Hashable {
    /// The command these parameters answer: HCI_Read_Local_Version_Information.
    public static let opcode = HCIOpcode.readLocalVersionInformation
    /// HCI version (Assigned Numbers): 0x06 = 4.0, 0x07 = 4.1, 0x08 = 4.2, 0x09 = 5.0, 0x0A = 5.1,
    /// 0x0B = 5.2, 0x0C = 5.3, 0x0D = 5.4, 0x0E = 6.0.
    public var hciVersion: UInt8
    /// The manufacturer's revision of its HCI implementation (meaning is theirs).
    public var hciSubversion: UInt16
    /// Link Layer version, same numbering.
    public var lmpVersion: UInt8
    /// Company identifier of the controller's manufacturer.
    public var companyIdentifier: UInt16
    /// The manufacturer's revision of its Link Layer (meaning is theirs).
    public var lmpSubversion: UInt16

    /// Version information with these fields (a virtual controller's answer, a test's).
    public init(hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8, companyIdentifier: UInt16, lmpSubversion: UInt16) {
        self.hciVersion = hciVersion
        self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion
        self.companyIdentifier = companyIdentifier
        self.lmpSubversion = lmpSubversion
    }

    /// Decodes the Command Complete return parameters; throws on a non-zero status or short data.
    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LocalVersionInformation(hciVersion: try r.readU8(), hciSubversion: try r.readU16(), lmpVersion: try r.readU8(),
                                    companyIdentifier: try r.readU16(), lmpSubversion: try r.readU16())
        }
    }

    /// "5.3" etc. for the HCI version, or "0xNN" when unknown.
    public var coreVersionName: String {
        let names: [UInt8: String] = [0x06: "4.0", 0x07: "4.1", 0x08: "4.2", 0x09: "5.0", 0x0A: "5.1",
                                      0x0B: "5.2", 0x0C: "5.3", 0x0D: "5.4", 0x0E: "6.0"]
        return names[hciVersion] ?? "0x\(hex2(hciVersion))"
    }
}

/// Read Local Supported Commands: a 64-octet bit mask, one bit per command. §7.4.2, table §6.27.
public struct LocalSupportedCommands: HCIReturnParameters, Hashable {
    /// The command these parameters answer: HCI_Read_Local_Supported_Commands.
    public static let opcode = HCIOpcode.readLocalSupportedCommands
    /// The 64 octets of the Supported_Commands mask, octet 0 first.
    public var octets: [UInt8]

    /// A mask from its octets (missing octets read as unsupported).
    public init(octets: [UInt8]) { self.octets = octets }

    /// Decodes the Command Complete return parameters; throws on a non-zero status or fewer than 64 octets.
    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LocalSupportedCommands(octets: try r.readBytes(64))
        }
    }

    /// Whether bit `bit` of octet `octet` is set; false outside the mask.
    public func supports(octet: Int, bit: Int) -> Bool {
        guard octet >= 0, octet < octets.count, bit >= 0, bit < 8 else { return false }
        return octets[octet] & (1 << UInt8(bit)) != 0
    }

    /// Octet 0 bit 5: the controller supports HCI_Disconnect (§7.1.6).
    public var disconnect: Bool { supports(octet: 0, bit: 5) }
    /// Octet 2 bit 7: the controller supports HCI_Read_Remote_Version_Information (§7.1.23).
    public var readRemoteVersionInformation: Bool { supports(octet: 2, bit: 7) }
    /// Octet 5 bit 6: the controller supports HCI_Set_Event_Mask (§7.3.1).
    public var setEventMask: Bool { supports(octet: 5, bit: 6) }
    /// Octet 5 bit 7: the controller supports HCI_Reset (§7.3.2).
    public var reset: Bool { supports(octet: 5, bit: 7) }
    /// Octet 15 bit 1: the controller supports HCI_Read_BD_ADDR (§7.4.6).
    public var readBDADDR: Bool { supports(octet: 15, bit: 1) }
    /// Octet 24 bit 6: the controller supports HCI_Write_LE_Host_Support (§7.3.79).
    public var writeLEHostSupport: Bool { supports(octet: 24, bit: 6) }
    /// Octet 25 bit 0: the controller supports HCI_LE_Set_Event_Mask (§7.8.1).
    public var leSetEventMask: Bool { supports(octet: 25, bit: 0) }
    /// Octet 25 bit 1: the controller supports HCI_LE_Read_Buffer_Size [v1] (§7.8.2).
    public var leReadBufferSizeV1: Bool { supports(octet: 25, bit: 1) }
    /// Octet 25 bit 2: the controller supports HCI_LE_Read_Local_Supported_Features (§7.8.3).
    public var leReadLocalSupportedFeatures: Bool { supports(octet: 25, bit: 2) }
    /// Octet 25 bit 4: the controller supports HCI_LE_Set_Random_Address (§7.8.4).
    public var leSetRandomAddress: Bool { supports(octet: 25, bit: 4) }
    /// Octet 26 bit 4: the controller supports HCI_LE_Create_Connection (§7.8.12).
    public var leCreateConnection: Bool { supports(octet: 26, bit: 4) }
    /// Octet 27 bit 2: the controller supports HCI_LE_Connection_Update (§7.8.18).
    public var leConnectionUpdate: Bool { supports(octet: 27, bit: 2) }
    /// Octet 27 bit 5: the controller supports HCI_LE_Read_Remote_Features (§7.8.21).
    public var leReadRemoteFeatures: Bool { supports(octet: 27, bit: 5) }
    /// Octet 27 bit 6: the controller supports HCI_LE_Encrypt (§7.8.22).
    public var leEncrypt: Bool { supports(octet: 27, bit: 6) }
    /// Octet 27 bit 7: the controller supports HCI_LE_Rand (§7.8.23).
    public var leRand: Bool { supports(octet: 27, bit: 7) }
    /// Octet 28 bit 0: the controller supports HCI_LE_Enable_Encryption (§7.8.24).
    public var leEnableEncryption: Bool { supports(octet: 28, bit: 0) }
    /// Octet 28 bit 1: the controller supports HCI_LE_Long_Term_Key_Request_Reply (§7.8.25).
    public var leLongTermKeyRequestReply: Bool { supports(octet: 28, bit: 1) }
    /// Octet 26 bit 6: the controller supports HCI_LE_Read_Filter_Accept_List_Size (§7.8.14).
    public var leReadFilterAcceptListSize: Bool { supports(octet: 26, bit: 6) }
    /// Octet 34 bit 6: the controller supports HCI_LE_Read_Resolving_List_Size (§7.8.41).
    public var leReadResolvingListSize: Bool { supports(octet: 34, bit: 6) }
    /// Octet 34 bit 3: the controller supports HCI_LE_Add_Device_To_Resolving_List (§7.8.38).
    public var leAddDeviceToResolvingList: Bool { supports(octet: 34, bit: 3) }
    /// Octet 34 bit 4: the controller supports HCI_LE_Remove_Device_From_Resolving_List (§7.8.39).
    public var leRemoveDeviceFromResolvingList: Bool { supports(octet: 34, bit: 4) }
    /// Octet 34 bit 5: the controller supports HCI_LE_Clear_Resolving_List (§7.8.40).
    public var leClearResolvingList: Bool { supports(octet: 34, bit: 5) }
    /// Octet 35 bit 1: the controller supports HCI_LE_Set_Address_Resolution_Enable (§7.8.44).
    public var leSetAddressResolutionEnable: Bool { supports(octet: 35, bit: 1) }
    /// Octet 39 bit 2: the controller supports HCI_LE_Set_Privacy_Mode (§7.8.77).
    public var leSetPrivacyMode: Bool { supports(octet: 39, bit: 2) }
    /// Octet 33 bit 4: the controller supports HCI_LE_Remote_Connection_Parameter_Request_Reply (§7.8.31).
    public var leRemoteConnectionParameterRequestReply: Bool { supports(octet: 33, bit: 4) }
    /// Octet 33 bit 6: the controller supports HCI_LE_Set_Data_Length (§7.8.33).
    public var leSetDataLength: Bool { supports(octet: 33, bit: 6) }
    /// Octet 33 bit 7: the controller supports HCI_LE_Read_Suggested_Default_Data_Length (§7.8.34).
    public var leReadSuggestedDefaultDataLength: Bool { supports(octet: 33, bit: 7) }
    /// Octet 34 bit 0: the controller supports HCI_LE_Write_Suggested_Default_Data_Length (§7.8.35).
    public var leWriteSuggestedDefaultDataLength: Bool { supports(octet: 34, bit: 0) }
    /// Octet 35 bit 3: the controller supports HCI_LE_Read_Maximum_Data_Length (§7.8.46).
    public var leReadMaximumDataLength: Bool { supports(octet: 35, bit: 3) }
    /// Octet 35 bit 4: the controller supports HCI_LE_Read_PHY (§7.8.47).
    public var leReadPHY: Bool { supports(octet: 35, bit: 4) }
    /// Octet 35 bit 5: the controller supports HCI_LE_Set_Default_PHY (§7.8.48).
    public var leSetDefaultPHY: Bool { supports(octet: 35, bit: 5) }
    /// Octet 35 bit 6: the controller supports HCI_LE_Set_PHY (§7.8.49).
    public var leSetPHY: Bool { supports(octet: 35, bit: 6) }
    /// Octet 36 bit 2: the controller supports HCI_LE_Set_Extended_Advertising_Parameters (§7.8.53).
    public var leSetExtendedAdvertisingParameters: Bool { supports(octet: 36, bit: 2) }
    /// Octet 37 bit 5: the controller supports HCI_LE_Set_Extended_Scan_Parameters (§7.8.64).
    public var leSetExtendedScanParameters: Bool { supports(octet: 37, bit: 5) }
    /// Octet 37 bit 7: the controller supports HCI_LE_Extended_Create_Connection (§7.8.66).
    public var leExtendedCreateConnection: Bool { supports(octet: 37, bit: 7) }
    /// Octet 41 bit 5: the controller supports HCI_LE_Read_Buffer_Size [v2] (§7.8.2). The host
    /// reads the LE buffers with it when listed, else with v1.
    public var leReadBufferSizeV2: Bool { supports(octet: 41, bit: 5) }
}

/// Read Local Supported Features: the LMP feature mask, page 0. §7.4.3; bits in Vol 2 Part C
/// §3.3. Only the bits an LE host looks at are named.
public struct LocalSupportedFeatures: OptionSet, HCIReturnParameters, Hashable {
    /// The command these parameters answer: HCI_Read_Local_Supported_Features.
    public static let opcode = HCIOpcode.readLocalSupportedFeatures
    /// The 64-bit LMP feature mask, page 0.
    public var rawValue: UInt64
    /// Features from their mask.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Decodes the Command Complete return parameters; throws on a non-zero status or short data.
    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LocalSupportedFeatures(rawValue: try r.readU64())
        }
    }

    /// Encryption (BR/EDR). Bit 2.
    public static let encryption = LocalSupportedFeatures(rawValue: 1 << 2)
    /// BR/EDR Not Supported. Bit 37.
    public static let brEdrNotSupported = LocalSupportedFeatures(rawValue: 1 << 37)
    /// LE Supported (Controller). Bit 38.
    public static let leSupportedController = LocalSupportedFeatures(rawValue: 1 << 38)
    /// Simultaneous LE and BR/EDR to Same Device Capable (Controller). Bit 49.
    public static let simultaneousLEAndBREDR = LocalSupportedFeatures(rawValue: 1 << 49)
    /// Secure Simple Pairing (Controller). Bit 51.
    public static let secureSimplePairing = LocalSupportedFeatures(rawValue: 1 << 51)
    /// Extended Features. Bit 63.
    public static let extendedFeatures = LocalSupportedFeatures(rawValue: 1 << 63)
}

/// The LE feature mask (page 0), from LE Read Local Supported Features (§7.8.3) or the peer's
/// in LE Read Remote Features Complete (§7.7.65.4). Bits: Vol 6 Part B §4.6.
public struct LESupportedFeatures: OptionSet, HCIReturnParameters, Hashable {
    /// The command these parameters answer: HCI_LE_Read_Local_Supported_Features.
    public static let opcode = HCIOpcode.leReadLocalSupportedFeatures
    /// The 64-bit LE feature mask, page 0.
    public var rawValue: UInt64
    /// Features from their mask.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Decodes the Command Complete return parameters; throws on a non-zero status or short data.
    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LESupportedFeatures(rawValue: try r.readU64())
        }
    }

    /// Bit 0: LE Encryption, the link can be encrypted (needed for pairing and bonding).
    public static let leEncryption = LESupportedFeatures(rawValue: 1 << 0)
    /// Bit 1: the Connection Parameters Request procedure, so either end may propose parameters.
    public static let connectionParametersRequest = LESupportedFeatures(rawValue: 1 << 1)
    /// Bit 2: Extended Reject Indication (LL_REJECT_EXT_IND, naming the refused PDU).
    public static let extendedRejectIndication = LESupportedFeatures(rawValue: 1 << 2)
    /// Bit 3: the peripheral may start the feature exchange.
    public static let peripheralInitiatedFeaturesExchange = LESupportedFeatures(rawValue: 1 << 3)
    /// Bit 4: LE Ping, checking an encrypted link's peer is still there.
    public static let lePing = LESupportedFeatures(rawValue: 1 << 4)
    /// Bit 5: LE Data Packet Length Extension, PDUs of up to 251 octets (LE Set Data Length).
    public static let leDataPacketLengthExtension = LESupportedFeatures(rawValue: 1 << 5)
    /// Bit 6: LL Privacy, the controller resolves and generates resolvable private addresses.
    public static let llPrivacy = LESupportedFeatures(rawValue: 1 << 6)
    /// Bit 7: Extended Scanner Filter Policies (directed advertising to resolvable addresses).
    public static let extendedScannerFilterPolicies = LESupportedFeatures(rawValue: 1 << 7)
    /// Bit 8: the LE 2M PHY, twice the symbol rate of LE 1M (LE Set PHY).
    public static let le2MPHY = LESupportedFeatures(rawValue: 1 << 8)
    /// Bit 9: Stable Modulation Index when transmitting.
    public static let stableModulationIndexTransmitter = LESupportedFeatures(rawValue: 1 << 9)
    /// Bit 10: Stable Modulation Index when receiving.
    public static let stableModulationIndexReceiver = LESupportedFeatures(rawValue: 1 << 10)
    /// Bit 11: the LE Coded PHY, long range at 500 or 125 kb/s.
    public static let leCodedPHY = LESupportedFeatures(rawValue: 1 << 11)
    /// Bit 12: LE Extended Advertising, advertising sets and data beyond 31 octets.
    public static let leExtendedAdvertising = LESupportedFeatures(rawValue: 1 << 12)
    /// Bit 13: LE Periodic Advertising.
    public static let lePeriodicAdvertising = LESupportedFeatures(rawValue: 1 << 13)
    /// Bit 14: Channel Selection Algorithm #2 (Vol 6 Part B §4.5.8.3).
    public static let channelSelectionAlgorithm2 = LESupportedFeatures(rawValue: 1 << 14)
    /// Bit 15: LE Power Class 1, transmit power up to +20 dBm.
    public static let lePowerClass1 = LESupportedFeatures(rawValue: 1 << 15)
    /// Bit 16: the Minimum Number of Used Channels procedure.
    public static let minimumNumberOfUsedChannels = LESupportedFeatures(rawValue: 1 << 16)
}

/// Read Buffer Size: the shared (BR/EDR and, when LE has no own buffers, LE) ACL buffers. §7.4.5.
public struct BufferSize: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.readBufferSize
    /// Largest ACL data field the controller accepts per packet.
    public var aclDataPacketLength: UInt16
    public var synchronousDataPacketLength: UInt8
    /// How many ACL packets the controller can hold: the host's credit count.
    public var totalNumACLDataPackets: UInt16
    public var totalNumSynchronousDataPackets: UInt16

    public init(aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8 = 0, totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16 = 0) {
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            let acl = try r.readU16()
            let sco = try r.readU8()
            return BufferSize(aclDataPacketLength: acl, synchronousDataPacketLength: sco,
                              totalNumACLDataPackets: try r.readU16(), totalNumSynchronousDataPackets: try r.readU16())
        }
    }
}

/// LE Read Buffer Size [v1]. §7.8.2. A length or count of 0 means the controller has no separate
/// LE buffers and the host must use Read Buffer Size's shared ones.
public struct LEBufferSizeV1: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadBufferSizeV1
    public var aclDataPacketLength: UInt16
    public var totalNumACLDataPackets: UInt8

    public init(aclDataPacketLength: UInt16, totalNumACLDataPackets: UInt8) {
        self.aclDataPacketLength = aclDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
    }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEBufferSizeV1(aclDataPacketLength: try r.readU16(), totalNumACLDataPackets: try r.readU8())
        }
    }

    /// Whether the host must fall back to Read Buffer Size.
    public var usesSharedBuffers: Bool { aclDataPacketLength == 0 || totalNumACLDataPackets == 0 }
}

/// LE Read Buffer Size [v2]: v1 plus the ISO data buffers. §7.8.2.
public struct LEBufferSizeV2: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadBufferSizeV2
    public var aclDataPacketLength: UInt16
    public var totalNumACLDataPackets: UInt8
    public var isoDataPacketLength: UInt16
    public var totalNumISODataPackets: UInt8

    public init(aclDataPacketLength: UInt16, totalNumACLDataPackets: UInt8, isoDataPacketLength: UInt16 = 0, totalNumISODataPackets: UInt8 = 0) {
        self.aclDataPacketLength = aclDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.isoDataPacketLength = isoDataPacketLength
        self.totalNumISODataPackets = totalNumISODataPackets
    }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            let aclLength = try r.readU16()
            let aclCount = try r.readU8()
            return LEBufferSizeV2(aclDataPacketLength: aclLength, totalNumACLDataPackets: aclCount,
                                  isoDataPacketLength: try r.readU16(), totalNumISODataPackets: try r.readU8())
        }
    }

    public var usesSharedBuffers: Bool { aclDataPacketLength == 0 || totalNumACLDataPackets == 0 }
}

/// Read BD_ADDR: the controller's public address (zero if it has none). §7.4.6.
public struct BDAddressReturn: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.readBDADDR
    public var address: BDAddress

    public init(address: BDAddress) { self.address = address }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            BDAddressReturn(address: try r.readBDADDRess())
        }
    }
}

/// LE Rand: 8 random octets from the controller. §7.8.23.
public struct LERandResult: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leRand
    /// The octets as sent (least significant first when read as a number).
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LERandResult(bytes: try r.readBytes(8))
        }
    }

    /// The octets as a little-endian integer.
    public var value: UInt64 {
        bytes.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }
}

/// LE Encrypt: AES-128 ciphertext, 16 octets least significant first. §7.8.22.
public struct LEEncryptResult: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leEncrypt
    public var encryptedData: [UInt8]

    public init(encryptedData: [UInt8]) { self.encryptedData = encryptedData }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEEncryptResult(encryptedData: try r.readBytes(16))
        }
    }
}

/// LE Read Maximum Data Length: the largest link-layer payloads the controller supports. §7.8.46.
public struct LEMaximumDataLength: HCIReturnParameters, Hashable {
    /// The command these parameters answer: HCI_LE_Read_Maximum_Data_Length.
    public static let opcode = HCIOpcode.leReadMaximumDataLength
    /// The longest LL data payload the controller sends, in octets (27...251).
    public var supportedMaxTxOctets: UInt16
    /// Microseconds.
    public var supportedMaxTxTime: UInt16
    /// The longest LL data payload the controller receives, in octets (27...251).
    public var supportedMaxRxOctets: UInt16
    /// Microseconds.
    public var supportedMaxRxTime: UInt16

    /// The four maxima as given.
    public init(supportedMaxTxOctets: UInt16, supportedMaxTxTime: UInt16, supportedMaxRxOctets: UInt16, supportedMaxRxTime: UInt16) {
        self.supportedMaxTxOctets = supportedMaxTxOctets
        self.supportedMaxTxTime = supportedMaxTxTime
        self.supportedMaxRxOctets = supportedMaxRxOctets
        self.supportedMaxRxTime = supportedMaxRxTime
    }

    /// Decodes the Command Complete return parameters; throws on a non-zero status or short data.
    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEMaximumDataLength(supportedMaxTxOctets: try r.readU16(), supportedMaxTxTime: try r.readU16(),
                                supportedMaxRxOctets: try r.readU16(), supportedMaxRxTime: try r.readU16())
        }
    }
}

/// LE Read Suggested Default Data Length. §7.8.34.
public struct LESuggestedDefaultDataLength: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadSuggestedDefaultDataLength
    public var suggestedMaxTxOctets: UInt16
    public var suggestedMaxTxTime: UInt16

    public init(suggestedMaxTxOctets: UInt16, suggestedMaxTxTime: UInt16) {
        self.suggestedMaxTxOctets = suggestedMaxTxOctets
        self.suggestedMaxTxTime = suggestedMaxTxTime
    }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LESuggestedDefaultDataLength(suggestedMaxTxOctets: try r.readU16(), suggestedMaxTxTime: try r.readU16())
        }
    }
}

/// LE Read PHY. §7.8.47.
public struct LEReadPHYResult: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadPHY
    public var handle: UInt16
    public var txPHY: LEPHY
    public var rxPHY: LEPHY

    public init(handle: UInt16, txPHY: LEPHY, rxPHY: LEPHY) {
        self.handle = handle
        self.txPHY = txPHY
        self.rxPHY = rxPHY
    }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEReadPHYResult(handle: try r.readHandle(), txPHY: LEPHY(rawValue: try r.readU8()), rxPHY: LEPHY(rawValue: try r.readU8()))
        }
    }
}

/// LE Read Advertising Physical Channel Tx Power: dBm, -127...+20. §7.8.6.
public struct LEAdvertisingTxPower: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadAdvertisingPhysicalChannelTxPower
    public var txPowerLevel: Int8

    public init(txPowerLevel: Int8) { self.txPowerLevel = txPowerLevel }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEAdvertisingTxPower(txPowerLevel: try r.readI8())
        }
    }
}

/// LE Read Filter Accept List Size. §7.8.14.
public struct LEFilterAcceptListSize: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadFilterAcceptListSize
    public var size: UInt8

    public init(size: UInt8) { self.size = size }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEFilterAcceptListSize(size: try r.readU8())
        }
    }
}

/// LE Read Resolving List Size. §7.8.41.
public struct LEResolvingListSize: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadResolvingListSize
    public var size: UInt8

    public init(size: UInt8) { self.size = size }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEResolvingListSize(size: try r.readU8())
        }
    }
}

/// Return parameters that are a status and a connection handle: LE Long Term Key Request
/// (Negative) Reply, LE Remote Connection Parameter Request (Negative) Reply, LE Set Data Length
/// (§7.8.25, §7.8.26, §7.8.31, §7.8.32, §7.8.33). Several opcodes share it, so it is given one.
public struct ConnectionHandleReturn: Hashable, Sendable {
    public var handle: UInt16

    public init(handle: UInt16) { self.handle = handle }

    public init(opcode: HCIOpcode, returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            ConnectionHandleReturn(handle: try r.readHandle())
        }
    }
}

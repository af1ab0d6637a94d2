import BLEWire

/// LE Read Maximum Advertising Data Length. §7.8.57: the most advertising (or scan response, or
/// periodic) data one set may hold, 31...1650 octets.
public struct LEMaximumAdvertisingDataLength: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadMaximumAdvertisingDataLength
    public var length: UInt16

    public init(length: UInt16) { self.length = length }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEMaximumAdvertisingDataLength(length: try r.readU16())
        }
    }
}

/// LE Read Number of Supported Advertising Sets. §7.8.58: how many sets the controller can
/// advertise at once (1...240; fewer may be available while other features use its memory).
public struct LESupportedAdvertisingSets: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadNumberOfSupportedAdvertisingSets
    public var count: UInt8

    public init(count: UInt8) { self.count = count }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LESupportedAdvertisingSets(count: try r.readU8())
        }
    }
}

/// LE Set Extended Advertising Parameters' answer. §7.8.53: the TX power the controller chose
/// for the set, in dBm.
public struct LESelectedTxPower: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingParameters
    public var txPower: Int8

    public init(txPower: Int8) { self.txPower = txPower }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LESelectedTxPower(txPower: try r.readI8())
        }
    }
}

/// LE Read Periodic Advertiser List Size. §7.8.73.
public struct LEPeriodicAdvertiserListSize: HCIReturnParameters, Hashable {
    public static let opcode = HCIOpcode.leReadPeriodicAdvertiserListSize
    public var size: UInt8

    public init(size: UInt8) { self.size = size }

    public init(returnParameters: [UInt8]) throws(HCIError) {
        self = try parseReturnParameters(Self.opcode, returnParameters) { (r: inout ByteReader) throws(WireError) in
            LEPeriodicAdvertiserListSize(size: try r.readU8())
        }
    }
}

/// The supported-command bits of Bluetooth 5's advertising, scanning and sync commands
/// (§6.27, octets 36-41).
extension LocalSupportedCommands {
    /// Octet 36 bit 1: HCI_LE_Set_Advertising_Set_Random_Address (§7.8.52).
    public var leSetAdvertisingSetRandomAddress: Bool { supports(octet: 36, bit: 1) }
    /// Octet 36 bit 3: HCI_LE_Set_Extended_Advertising_Data (§7.8.54).
    public var leSetExtendedAdvertisingData: Bool { supports(octet: 36, bit: 3) }
    /// Octet 36 bit 4: HCI_LE_Set_Extended_Scan_Response_Data (§7.8.55).
    public var leSetExtendedScanResponseData: Bool { supports(octet: 36, bit: 4) }
    /// Octet 36 bit 5: HCI_LE_Set_Extended_Advertising_Enable (§7.8.56).
    public var leSetExtendedAdvertisingEnable: Bool { supports(octet: 36, bit: 5) }
    /// Octet 36 bit 6: HCI_LE_Read_Maximum_Advertising_Data_Length (§7.8.57).
    public var leReadMaximumAdvertisingDataLength: Bool { supports(octet: 36, bit: 6) }
    /// Octet 36 bit 7: HCI_LE_Read_Number_of_Supported_Advertising_Sets (§7.8.58).
    public var leReadNumberOfSupportedAdvertisingSets: Bool { supports(octet: 36, bit: 7) }
    /// Octet 37 bit 0: HCI_LE_Remove_Advertising_Set (§7.8.59).
    public var leRemoveAdvertisingSet: Bool { supports(octet: 37, bit: 0) }
    /// Octet 37 bit 1: HCI_LE_Clear_Advertising_Sets (§7.8.60).
    public var leClearAdvertisingSets: Bool { supports(octet: 37, bit: 1) }
    /// Octet 37 bit 2: HCI_LE_Set_Periodic_Advertising_Parameters (§7.8.61).
    public var leSetPeriodicAdvertisingParameters: Bool { supports(octet: 37, bit: 2) }
    /// Octet 37 bit 3: HCI_LE_Set_Periodic_Advertising_Data (§7.8.62).
    public var leSetPeriodicAdvertisingData: Bool { supports(octet: 37, bit: 3) }
    /// Octet 37 bit 4: HCI_LE_Set_Periodic_Advertising_Enable (§7.8.63).
    public var leSetPeriodicAdvertisingEnable: Bool { supports(octet: 37, bit: 4) }
    /// Octet 37 bit 6: HCI_LE_Set_Extended_Scan_Enable (§7.8.65).
    public var leSetExtendedScanEnable: Bool { supports(octet: 37, bit: 6) }
    /// Octet 38 bit 0: HCI_LE_Periodic_Advertising_Create_Sync (§7.8.67).
    public var lePeriodicAdvertisingCreateSync: Bool { supports(octet: 38, bit: 0) }
    /// Octet 38 bit 1: HCI_LE_Periodic_Advertising_Create_Sync_Cancel (§7.8.68).
    public var lePeriodicAdvertisingCreateSyncCancel: Bool { supports(octet: 38, bit: 1) }
    /// Octet 38 bit 2: HCI_LE_Periodic_Advertising_Terminate_Sync (§7.8.69).
    public var lePeriodicAdvertisingTerminateSync: Bool { supports(octet: 38, bit: 2) }
    /// Octet 38 bit 3: HCI_LE_Add_Device_To_Periodic_Advertiser_List (§7.8.70).
    public var leAddDeviceToPeriodicAdvertiserList: Bool { supports(octet: 38, bit: 3) }
    /// Octet 38 bit 4: HCI_LE_Remove_Device_From_Periodic_Advertiser_List (§7.8.71).
    public var leRemoveDeviceFromPeriodicAdvertiserList: Bool { supports(octet: 38, bit: 4) }
    /// Octet 38 bit 5: HCI_LE_Clear_Periodic_Advertiser_List (§7.8.72).
    public var leClearPeriodicAdvertiserList: Bool { supports(octet: 38, bit: 5) }
    /// Octet 38 bit 6: HCI_LE_Read_Periodic_Advertiser_List_Size (§7.8.73).
    public var leReadPeriodicAdvertiserListSize: Bool { supports(octet: 38, bit: 6) }
    /// Octet 40 bit 5: HCI_LE_Set_Periodic_Advertising_Receive_Enable (§7.8.88).
    public var leSetPeriodicAdvertisingReceiveEnable: Bool { supports(octet: 40, bit: 5) }
    /// Octet 40 bit 6: HCI_LE_Periodic_Advertising_Sync_Transfer (§7.8.89).
    public var lePeriodicAdvertisingSyncTransfer: Bool { supports(octet: 40, bit: 6) }
    /// Octet 40 bit 7: HCI_LE_Periodic_Advertising_Set_Info_Transfer (§7.8.90).
    public var lePeriodicAdvertisingSetInfoTransfer: Bool { supports(octet: 40, bit: 7) }
    /// Octet 41 bit 0: HCI_LE_Set_Periodic_Advertising_Sync_Transfer_Parameters (§7.8.91).
    public var leSetPeriodicAdvertisingSyncTransferParameters: Bool { supports(octet: 41, bit: 0) }
    /// Octet 41 bit 1: HCI_LE_Set_Default_Periodic_Advertising_Sync_Transfer_Parameters (§7.8.92).
    public var leSetDefaultPeriodicAdvertisingSyncTransferParameters: Bool { supports(octet: 41, bit: 1) }

    /// Every command an advertiser needs to run advertising sets (§7.8.53-§7.8.56, §7.8.58).
    public var extendedAdvertising: Bool {
        leSetExtendedAdvertisingParameters && leSetExtendedAdvertisingData && leSetExtendedScanResponseData
            && leSetExtendedAdvertisingEnable && leReadNumberOfSupportedAdvertisingSets
    }

    /// Every command extended scanning and initiating need (§7.8.64-§7.8.66).
    public var extendedScanning: Bool {
        leSetExtendedScanParameters && leSetExtendedScanEnable && leExtendedCreateConnection
    }
}

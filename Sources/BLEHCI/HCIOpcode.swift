/// A 16-bit HCI command opcode: a 6-bit Opcode Group Field (OGF) above a 10-bit Opcode Command
/// Field (OCF). Core spec Vol 4 Part E §5.4.1.
///
/// A struct rather than an enum so that every value a controller can echo back (in Command
/// Complete/Status, or a vendor command) is representable; the named constants are the commands
/// this stack sends. Opcode 0x0000 is the "no operation" opcode a controller uses in a Command
/// Complete/Status that only hands out command credits (Vol 4 Part E §7.7.14).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The opcode as sent, little-endian, in the command packet's first two octets.
    public var rawValue: UInt16

    /// The opcode `rawValue`, named here or not.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The opcode of command `ocf` in group `ogf` (each cut to its field width).
    public init(ogf: UInt8, ocf: UInt16) {
        self.rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF)
    }

    /// Opcode Group Field: 0x01 link control, 0x03 controller & baseband, 0x04 informational,
    /// 0x08 LE controller, 0x3F vendor specific.
    public var ogf: UInt8 { UInt8(rawValue >> 10) }
    /// Opcode Command Field.
    public var ocf: UInt16 { rawValue & 0x03FF }

    // MARK: Link control (OGF 0x01), Vol 4 Part E §7.1

    /// No operation: only updates Num_HCI_Command_Packets. Vol 4 Part E §7.7.14.
    public static let noOperation = HCIOpcode(rawValue: 0x0000)
    /// §7.1.6
    public static let disconnect = HCIOpcode(rawValue: 0x0406)
    /// §7.1.23
    public static let readRemoteVersionInformation = HCIOpcode(rawValue: 0x041D)

    // MARK: Controller & baseband (OGF 0x03), §7.3

    /// §7.3.1
    public static let setEventMask = HCIOpcode(rawValue: 0x0C01)
    /// §7.3.2
    public static let reset = HCIOpcode(rawValue: 0x0C03)
    /// §7.3.79
    public static let writeLEHostSupport = HCIOpcode(rawValue: 0x0C6D)

    // MARK: Informational (OGF 0x04), §7.4

    /// §7.4.1
    public static let readLocalVersionInformation = HCIOpcode(rawValue: 0x1001)
    /// §7.4.2
    public static let readLocalSupportedCommands = HCIOpcode(rawValue: 0x1002)
    /// §7.4.3
    public static let readLocalSupportedFeatures = HCIOpcode(rawValue: 0x1003)
    /// §7.4.5
    public static let readBufferSize = HCIOpcode(rawValue: 0x1005)
    /// §7.4.6
    public static let readBDADDR = HCIOpcode(rawValue: 0x1009)

    // MARK: Status parameters (OGF 0x05), §7.5

    /// §7.5.4
    public static let readRSSI = HCIOpcode(rawValue: 0x1405)

    // MARK: LE controller (OGF 0x08), §7.8

    /// §7.8.1
    public static let leSetEventMask = HCIOpcode(rawValue: 0x2001)
    /// §7.8.2 (v1)
    public static let leReadBufferSizeV1 = HCIOpcode(rawValue: 0x2002)
    /// §7.8.3
    public static let leReadLocalSupportedFeatures = HCIOpcode(rawValue: 0x2003)
    /// §7.8.4
    public static let leSetRandomAddress = HCIOpcode(rawValue: 0x2005)
    /// §7.8.5
    public static let leSetAdvertisingParameters = HCIOpcode(rawValue: 0x2006)
    /// §7.8.6
    public static let leReadAdvertisingPhysicalChannelTxPower = HCIOpcode(rawValue: 0x2007)
    /// §7.8.7
    public static let leSetAdvertisingData = HCIOpcode(rawValue: 0x2008)
    /// §7.8.8
    public static let leSetScanResponseData = HCIOpcode(rawValue: 0x2009)
    /// §7.8.9
    public static let leSetAdvertisingEnable = HCIOpcode(rawValue: 0x200A)
    /// §7.8.10
    public static let leSetScanParameters = HCIOpcode(rawValue: 0x200B)
    /// §7.8.11
    public static let leSetScanEnable = HCIOpcode(rawValue: 0x200C)
    /// §7.8.12
    public static let leCreateConnection = HCIOpcode(rawValue: 0x200D)
    /// §7.8.13
    public static let leCreateConnectionCancel = HCIOpcode(rawValue: 0x200E)
    /// §7.8.14
    public static let leReadFilterAcceptListSize = HCIOpcode(rawValue: 0x200F)
    /// §7.8.15
    public static let leClearFilterAcceptList = HCIOpcode(rawValue: 0x2010)
    /// §7.8.16
    public static let leAddDeviceToFilterAcceptList = HCIOpcode(rawValue: 0x2011)
    /// §7.8.17
    public static let leRemoveDeviceFromFilterAcceptList = HCIOpcode(rawValue: 0x2012)
    /// §7.8.18
    public static let leConnectionUpdate = HCIOpcode(rawValue: 0x2013)
    /// §7.8.21
    public static let leReadRemoteFeatures = HCIOpcode(rawValue: 0x2016)
    /// §7.8.22
    public static let leEncrypt = HCIOpcode(rawValue: 0x2017)
    /// §7.8.23
    public static let leRand = HCIOpcode(rawValue: 0x2018)
    /// §7.8.24
    public static let leEnableEncryption = HCIOpcode(rawValue: 0x2019)
    /// §7.8.25
    public static let leLongTermKeyRequestReply = HCIOpcode(rawValue: 0x201A)
    /// §7.8.26
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(rawValue: 0x201B)
    /// §7.8.31
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(rawValue: 0x2020)
    /// §7.8.32
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(rawValue: 0x2021)
    /// §7.8.33
    public static let leSetDataLength = HCIOpcode(rawValue: 0x2022)
    /// §7.8.34
    public static let leReadSuggestedDefaultDataLength = HCIOpcode(rawValue: 0x2023)
    /// §7.8.35
    public static let leWriteSuggestedDefaultDataLength = HCIOpcode(rawValue: 0x2024)
    /// §7.8.38
    public static let leAddDeviceToResolvingList = HCIOpcode(rawValue: 0x2027)
    /// §7.8.39
    public static let leRemoveDeviceFromResolvingList = HCIOpcode(rawValue: 0x2028)
    /// §7.8.40
    public static let leClearResolvingList = HCIOpcode(rawValue: 0x2029)
    /// §7.8.41
    public static let leReadResolvingListSize = HCIOpcode(rawValue: 0x202A)
    /// §7.8.44
    public static let leSetAddressResolutionEnable = HCIOpcode(rawValue: 0x202D)
    /// §7.8.45
    public static let leSetResolvablePrivateAddressTimeout = HCIOpcode(rawValue: 0x202E)
    /// §7.8.46
    public static let leReadMaximumDataLength = HCIOpcode(rawValue: 0x202F)
    /// §7.8.47
    public static let leReadPHY = HCIOpcode(rawValue: 0x2030)
    /// §7.8.48
    public static let leSetDefaultPHY = HCIOpcode(rawValue: 0x2031)
    /// §7.8.49
    public static let leSetPHY = HCIOpcode(rawValue: 0x2032)
    /// §7.8.77
    public static let leSetPrivacyMode = HCIOpcode(rawValue: 0x204E)
    /// §7.8.52
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(rawValue: 0x2035)
    /// §7.8.53 (v1)
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(rawValue: 0x2036)
    /// §7.8.54
    public static let leSetExtendedAdvertisingData = HCIOpcode(rawValue: 0x2037)
    /// §7.8.55
    public static let leSetExtendedScanResponseData = HCIOpcode(rawValue: 0x2038)
    /// §7.8.56
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(rawValue: 0x2039)
    /// §7.8.57
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(rawValue: 0x203A)
    /// §7.8.58
    public static let leReadNumberOfSupportedAdvertisingSets = HCIOpcode(rawValue: 0x203B)
    /// §7.8.59
    public static let leRemoveAdvertisingSet = HCIOpcode(rawValue: 0x203C)
    /// §7.8.60
    public static let leClearAdvertisingSets = HCIOpcode(rawValue: 0x203D)
    /// §7.8.61 (v1)
    public static let leSetPeriodicAdvertisingParameters = HCIOpcode(rawValue: 0x203E)
    /// §7.8.62
    public static let leSetPeriodicAdvertisingData = HCIOpcode(rawValue: 0x203F)
    /// §7.8.63
    public static let leSetPeriodicAdvertisingEnable = HCIOpcode(rawValue: 0x2040)
    /// §7.8.64
    public static let leSetExtendedScanParameters = HCIOpcode(rawValue: 0x2041)
    /// §7.8.65
    public static let leSetExtendedScanEnable = HCIOpcode(rawValue: 0x2042)
    /// §7.8.66 (v1)
    public static let leExtendedCreateConnection = HCIOpcode(rawValue: 0x2043)
    /// §7.8.67
    public static let lePeriodicAdvertisingCreateSync = HCIOpcode(rawValue: 0x2044)
    /// §7.8.68
    public static let lePeriodicAdvertisingCreateSyncCancel = HCIOpcode(rawValue: 0x2045)
    /// §7.8.69
    public static let lePeriodicAdvertisingTerminateSync = HCIOpcode(rawValue: 0x2046)
    /// §7.8.70
    public static let leAddDeviceToPeriodicAdvertiserList = HCIOpcode(rawValue: 0x2047)
    /// §7.8.71
    public static let leRemoveDeviceFromPeriodicAdvertiserList = HCIOpcode(rawValue: 0x2048)
    /// §7.8.72
    public static let leClearPeriodicAdvertiserList = HCIOpcode(rawValue: 0x2049)
    /// §7.8.73
    public static let leReadPeriodicAdvertiserListSize = HCIOpcode(rawValue: 0x204A)
    /// §7.8.88
    public static let leSetPeriodicAdvertisingReceiveEnable = HCIOpcode(rawValue: 0x2059)
    /// §7.8.89
    public static let lePeriodicAdvertisingSyncTransfer = HCIOpcode(rawValue: 0x205A)
    /// §7.8.90
    public static let lePeriodicAdvertisingSetInfoTransfer = HCIOpcode(rawValue: 0x205B)
    /// §7.8.91
    public static let leSetPeriodicAdvertisingSyncTransferParameters = HCIOpcode(rawValue: 0x205C)
    /// §7.8.92
    public static let leSetDefaultPeriodicAdvertisingSyncTransferParameters = HCIOpcode(rawValue: 0x205D)
    /// §7.8.2 (v2, adds the ISO buffers)
    public static let leReadBufferSizeV2 = HCIOpcode(rawValue: 0x2060)

    /// Every named opcode with its spec name, for `description` and for tests.
    public static let knownNames: [HCIOpcode: String] = [
        .noOperation: "No Operation",
        .disconnect: "Disconnect",
        .readRemoteVersionInformation: "Read Remote Version Information",
        .setEventMask: "Set Event Mask",
        .reset: "Reset",
        .writeLEHostSupport: "Write LE Host Support",
        .readLocalVersionInformation: "Read Local Version Information",
        .readLocalSupportedCommands: "Read Local Supported Commands",
        .readLocalSupportedFeatures: "Read Local Supported Features",
        .readBufferSize: "Read Buffer Size",
        .readBDADDR: "Read BD_ADDR",
        .readRSSI: "Read RSSI",
        .leSetEventMask: "LE Set Event Mask",
        .leReadBufferSizeV1: "LE Read Buffer Size",
        .leReadLocalSupportedFeatures: "LE Read Local Supported Features",
        .leSetRandomAddress: "LE Set Random Address",
        .leSetAdvertisingParameters: "LE Set Advertising Parameters",
        .leReadAdvertisingPhysicalChannelTxPower: "LE Read Advertising Physical Channel Tx Power",
        .leSetAdvertisingData: "LE Set Advertising Data",
        .leSetScanResponseData: "LE Set Scan Response Data",
        .leSetAdvertisingEnable: "LE Set Advertising Enable",
        .leSetScanParameters: "LE Set Scan Parameters",
        .leSetScanEnable: "LE Set Scan Enable",
        .leCreateConnection: "LE Create Connection",
        .leCreateConnectionCancel: "LE Create Connection Cancel",
        .leReadFilterAcceptListSize: "LE Read Filter Accept List Size",
        .leClearFilterAcceptList: "LE Clear Filter Accept List",
        .leAddDeviceToFilterAcceptList: "LE Add Device To Filter Accept List",
        .leRemoveDeviceFromFilterAcceptList: "LE Remove Device From Filter Accept List",
        .leConnectionUpdate: "LE Connection Update",
        .leReadRemoteFeatures: "LE Read Remote Features",
        .leEncrypt: "LE Encrypt",
        .leRand: "LE Rand",
        .leEnableEncryption: "LE Enable Encryption",
        .leLongTermKeyRequestReply: "LE Long Term Key Request Reply",
        .leLongTermKeyRequestNegativeReply: "LE Long Term Key Request Negative Reply",
        .leRemoteConnectionParameterRequestReply: "LE Remote Connection Parameter Request Reply",
        .leRemoteConnectionParameterRequestNegativeReply: "LE Remote Connection Parameter Request Negative Reply",
        .leSetDataLength: "LE Set Data Length",
        .leReadSuggestedDefaultDataLength: "LE Read Suggested Default Data Length",
        .leWriteSuggestedDefaultDataLength: "LE Write Suggested Default Data Length",
        .leAddDeviceToResolvingList: "LE Add Device To Resolving List",
        .leRemoveDeviceFromResolvingList: "LE Remove Device From Resolving List",
        .leClearResolvingList: "LE Clear Resolving List",
        .leReadResolvingListSize: "LE Read Resolving List Size",
        .leSetAddressResolutionEnable: "LE Set Address Resolution Enable",
        .leSetResolvablePrivateAddressTimeout: "LE Set Resolvable Private Address Timeout",
        .leSetPrivacyMode: "LE Set Privacy Mode",
        .leReadMaximumDataLength: "LE Read Maximum Data Length",
        .leReadPHY: "LE Read PHY",
        .leSetDefaultPHY: "LE Set Default PHY",
        .leSetPHY: "LE Set PHY",
        .leReadBufferSizeV2: "LE Read Buffer Size v2",
        .leSetAdvertisingSetRandomAddress: "LE Set Advertising Set Random Address",
        .leSetExtendedAdvertisingParameters: "LE Set Extended Advertising Parameters",
        .leSetExtendedAdvertisingData: "LE Set Extended Advertising Data",
        .leSetExtendedScanResponseData: "LE Set Extended Scan Response Data",
        .leSetExtendedAdvertisingEnable: "LE Set Extended Advertising Enable",
        .leReadMaximumAdvertisingDataLength: "LE Read Maximum Advertising Data Length",
        .leReadNumberOfSupportedAdvertisingSets: "LE Read Number of Supported Advertising Sets",
        .leRemoveAdvertisingSet: "LE Remove Advertising Set",
        .leClearAdvertisingSets: "LE Clear Advertising Sets",
        .leSetPeriodicAdvertisingParameters: "LE Set Periodic Advertising Parameters",
        .leSetPeriodicAdvertisingData: "LE Set Periodic Advertising Data",
        .leSetPeriodicAdvertisingEnable: "LE Set Periodic Advertising Enable",
        .leSetExtendedScanParameters: "LE Set Extended Scan Parameters",
        .leSetExtendedScanEnable: "LE Set Extended Scan Enable",
        .leExtendedCreateConnection: "LE Extended Create Connection",
        .lePeriodicAdvertisingCreateSync: "LE Periodic Advertising Create Sync",
        .lePeriodicAdvertisingCreateSyncCancel: "LE Periodic Advertising Create Sync Cancel",
        .lePeriodicAdvertisingTerminateSync: "LE Periodic Advertising Terminate Sync",
        .leAddDeviceToPeriodicAdvertiserList: "LE Add Device To Periodic Advertiser List",
        .leRemoveDeviceFromPeriodicAdvertiserList: "LE Remove Device From Periodic Advertiser List",
        .leClearPeriodicAdvertiserList: "LE Clear Periodic Advertiser List",
        .leReadPeriodicAdvertiserListSize: "LE Read Periodic Advertiser List Size",
        .leSetPeriodicAdvertisingReceiveEnable: "LE Set Periodic Advertising Receive Enable",
        .lePeriodicAdvertisingSyncTransfer: "LE Periodic Advertising Sync Transfer",
        .lePeriodicAdvertisingSetInfoTransfer: "LE Periodic Advertising Set Info Transfer",
        .leSetPeriodicAdvertisingSyncTransferParameters: "LE Set Periodic Advertising Sync Transfer Parameters",
        .leSetDefaultPeriodicAdvertisingSyncTransferParameters: "LE Set Default Periodic Advertising Sync Transfer Parameters",
    ]

    /// The spec's command name, or "0xXXXX" for an opcode without a name here.
    public var description: String {
        if let name = Self.knownNames[self] { return name }
        return "0x" + hex4(rawValue)
    }

    /// Commands the controller acknowledges with Command Status (and finishes later with their own
    /// event) rather than Command Complete: the command flow controller releases them on the status.
    /// Core spec Vol 4 Part E §7.1.6, §7.1.23, §7.8.12, §7.8.18, §7.8.21, §7.8.24, §7.8.49,
    /// §7.8.66, §7.8.67.
    public var completesWithCommandStatus: Bool {
        switch self {
        case .disconnect, .readRemoteVersionInformation, .leCreateConnection, .leConnectionUpdate,
             .leReadRemoteFeatures, .leEnableEncryption, .leSetPHY, .leExtendedCreateConnection,
             .lePeriodicAdvertisingCreateSync:
            return true
        default:
            return false
        }
    }
}

/// Four upper-case hex digits.
func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - s.count)) + s
}

/// Two upper-case hex digits.
func hex2(_ v: UInt8) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count < 2 ? "0" + s : s
}

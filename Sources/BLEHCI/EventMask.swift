/// The Set Event Mask bit field: which events the controller may send. Core spec Vol 4 Part E
/// §7.3.1. Command Complete, Command Status and Number Of Completed Packets are not maskable.
///
/// For the events below, bit n enables the event whose code is n + 1 (e.g. bit 4 is event 0x05).
/// The controller's reset default is 0x0000_1FFF_FFFF_FFFF, which leaves LE Meta (bit 61) off:
/// an LE host must always set the mask.
public struct EventMask: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Disconnection Complete (event 0x05). Bit 4.
    public static let disconnectionComplete = EventMask(rawValue: 1 << 4)
    /// Encryption Change v1 (event 0x08). Bit 7.
    public static let encryptionChange = EventMask(rawValue: 1 << 7)
    /// Read Remote Version Information Complete (event 0x0C). Bit 11.
    public static let readRemoteVersionInformationComplete = EventMask(rawValue: 1 << 11)
    /// Hardware Error (event 0x10). Bit 15.
    public static let hardwareError = EventMask(rawValue: 1 << 15)
    /// Data Buffer Overflow (event 0x1A). Bit 25.
    public static let dataBufferOverflow = EventMask(rawValue: 1 << 25)
    /// Encryption Key Refresh Complete (event 0x30). Bit 47.
    public static let encryptionKeyRefreshComplete = EventMask(rawValue: 1 << 47)
    /// LE Meta (event 0x3E), gated further by the LE event mask. Bit 61.
    public static let leMeta = EventMask(rawValue: 1 << 61)

    /// What an LE-only host needs: connection lifecycle, encryption, errors and LE Meta.
    public static let `default`: EventMask = [
        .disconnectionComplete, .encryptionChange, .readRemoteVersionInformationComplete,
        .hardwareError, .dataBufferOverflow, .encryptionKeyRefreshComplete, .leMeta,
    ]
}

/// The LE Set Event Mask bit field: which LE Meta subevents the controller may send. Core spec
/// Vol 4 Part E §7.8.1. Bit n enables subevent n + 1. Reset default 0x1F.
///
/// When both LE Connection Complete and LE Enhanced Connection Complete are enabled the
/// controller sends only the enhanced one (§7.7.65.10); the decoder maps both to one struct.
public struct LEEventMask: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// LE Connection Complete (subevent 0x01). Bit 0.
    public static let connectionComplete = LEEventMask(rawValue: 1 << 0)
    /// LE Advertising Report (0x02). Bit 1.
    public static let advertisingReport = LEEventMask(rawValue: 1 << 1)
    /// LE Connection Update Complete (0x03). Bit 2.
    public static let connectionUpdateComplete = LEEventMask(rawValue: 1 << 2)
    /// LE Read Remote Features Complete (0x04). Bit 3.
    public static let readRemoteFeaturesComplete = LEEventMask(rawValue: 1 << 3)
    /// LE Long Term Key Request (0x05). Bit 4.
    public static let longTermKeyRequest = LEEventMask(rawValue: 1 << 4)
    /// LE Remote Connection Parameter Request (0x06). Bit 5.
    public static let remoteConnectionParameterRequest = LEEventMask(rawValue: 1 << 5)
    /// LE Data Length Change (0x07). Bit 6.
    public static let dataLengthChange = LEEventMask(rawValue: 1 << 6)
    /// LE Enhanced Connection Complete v1 (0x0A). Bit 9.
    public static let enhancedConnectionComplete = LEEventMask(rawValue: 1 << 9)
    /// LE PHY Update Complete (0x0C). Bit 11.
    public static let phyUpdateComplete = LEEventMask(rawValue: 1 << 11)
    /// LE Extended Advertising Report (0x0D). Bit 12.
    public static let extendedAdvertisingReport = LEEventMask(rawValue: 1 << 12)
    /// LE Periodic Advertising Sync Established (0x0E). Bit 13.
    public static let periodicAdvertisingSyncEstablished = LEEventMask(rawValue: 1 << 13)
    /// LE Periodic Advertising Report (0x0F). Bit 14.
    public static let periodicAdvertisingReport = LEEventMask(rawValue: 1 << 14)
    /// LE Periodic Advertising Sync Lost (0x10). Bit 15.
    public static let periodicAdvertisingSyncLost = LEEventMask(rawValue: 1 << 15)
    /// LE Scan Timeout (0x11). Bit 16.
    public static let scanTimeout = LEEventMask(rawValue: 1 << 16)
    /// LE Advertising Set Terminated (0x12). Bit 17.
    public static let advertisingSetTerminated = LEEventMask(rawValue: 1 << 17)
    /// LE Scan Request Received (0x13). Bit 18.
    public static let scanRequestReceived = LEEventMask(rawValue: 1 << 18)
    /// LE Channel Selection Algorithm (0x14). Bit 19.
    public static let channelSelectionAlgorithm = LEEventMask(rawValue: 1 << 19)
    /// LE Periodic Advertising Sync Transfer Received (0x18). Bit 23.
    public static let periodicAdvertisingSyncTransferReceived = LEEventMask(rawValue: 1 << 23)
    /// LE Enhanced Connection Complete v2 (0x29). Bit 40. Not in `default`: it adds only
    /// periodic-advertising fields this stack does not use, and v1 is what every LE controller has.
    public static let enhancedConnectionCompleteV2 = LEEventMask(rawValue: 1 << 40)

    /// The subevents a controller of this HCI version defines (Core spec Vol 4 Part E §7.8.1,
    /// by the version that added each): 4.0 bits 0–4, 4.1 bit 5, 4.2 bits 6–10, 5.0 bits 11–19,
    /// 5.1 bits 20–23; from 5.2 on (or when the version is not known) every bit. A host sets
    /// no bit its controller's version leaves reserved: some controllers refuse the command.
    public static func defined(byHCIVersion version: UInt8?) -> LEEventMask {
        let highestBit: UInt64
        switch version {
        case .some(...0x06): highestBit = 4
        case 0x07: highestBit = 5
        case 0x08: highestBit = 10
        case 0x09: highestBit = 19
        case 0x0A: highestBit = 23
        default: return LEEventMask(rawValue: .max)
        }
        return LEEventMask(rawValue: (1 << (highestBit + 1)) - 1)
    }

    /// The subevents this stack handles.
    public static let `default`: LEEventMask = [
        .connectionComplete, .advertisingReport, .connectionUpdateComplete, .readRemoteFeaturesComplete,
        .longTermKeyRequest, .remoteConnectionParameterRequest, .dataLengthChange,
        .enhancedConnectionComplete, .phyUpdateComplete, .extendedAdvertisingReport,
    ]
}

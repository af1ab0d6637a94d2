import BLEHCI

/// What the host does with the controller it found: each choice follows from what the
/// controller listed in Read Local Supported Commands and LE Read Local Supported Features
/// (Core spec Vol 4 Part E §7.4.2, §7.8.3), never from its version alone. `ble info` prints
/// these; the parts of the host that make each choice ask the same properties.
extension ControllerInfo {
    /// Whether the controller resolves private addresses itself: LL Privacy (LE feature bit 6)
    /// with the resolving list commands (§7.8.38, §7.8.40, §7.8.44) and LE Set Privacy Mode
    /// (§7.8.77, Bluetooth 5.0). Without it the host resolves every RPA it hears (Vol 3 Part C
    /// §10.7). A 4.2 controller has the list but not the mode: each entry stays in network
    /// privacy mode, in which the controller drops a listed peer's advertisements from its
    /// identity address (Vol 6 Part B §4.7), so a bonded peer that does not use privacy could not
    /// be found again. The host resolves on such a controller.
    public var resolvesAddressesInController: Bool {
        guard let c = supportedCommands, leFeatures?.contains(.llPrivacy) == true else { return false }
        return c.leAddDeviceToResolvingList && c.leClearResolvingList && c.leSetAddressResolutionEnable && c.leSetPrivacyMode
    }

    /// Whether links may carry LL data PDUs longer than 27 octets: Data Length Extension (LE
    /// feature bit 5) and LE Set Data Length (§7.8.33) listed.
    public var supportsDataLengthExtension: Bool {
        leFeatures?.contains(.leDataPacketLengthExtension) == true && supportedCommands?.leSetDataLength == true
    }

    /// The longest LL data payload a link can carry with this controller: its maximum transmit
    /// octets with Data Length Extension (251 when it does not say), else 27 (Vol 6 Part B §4.5.10).
    public var linkDataLengthLimit: Int {
        guard supportsDataLengthExtension else { return 27 }
        return maximumDataLength.map { max(27, min(251, Int($0.supportedMaxTxOctets))) } ?? 251
    }

    /// Whether a link's PHY can be changed (LE Set PHY, §7.8.49, and a PHY beyond LE 1M).
    public var supportsPHYUpdate: Bool {
        supportedCommands?.leSetPHY == true && supportedPHYs != .le1M
    }

    /// Whether the peripheral's Link Layer can propose connection parameters itself (Connection
    /// Parameters Request procedure, LE feature bit 1, Vol 6 Part B §5.1.7); without it the host
    /// asks over L2CAP (Vol 3 Part A §4.20).
    public var supportsConnectionParametersRequest: Bool {
        leFeatures?.contains(.connectionParametersRequest) == true
    }

    /// Whether the controller says a command with this opcode is there, by its bit in
    /// Supported_Commands (§6.27). Commands without a bit (Read Local Supported Commands
    /// itself) and a controller that did not answer the read count as there.
    public func lists(_ opcode: HCIOpcode) -> Bool { supportedCommands?.lists(opcode) ?? true }

    /// The error a call gets when the controller lacks a command it needs: what the command
    /// does, with its spec section, and that this controller does not have it.
    static func notSupported(_ opcode: HCIOpcode, _ what: String) -> BLEError {
        .unsupported("\(what) needs \(SupportedCommandBit.of(opcode)?.name ?? opcode.description), which this controller does not support")
    }
}

/// A command the host sends, and what it does on a controller that does not list it.
public struct HostCommandUse: Sendable {
    /// The command.
    public var opcode: HCIOpcode
    /// What the host does without it; nil when the host cannot work without it.
    public var without: String?

    /// Every command this host may send (Core spec Vol 4 Part E §7), in the order of the
    /// initialisation and then by feature: what `ble info` marks present or absent.
    public static let all: [HostCommandUse] = [
        .init(.reset, nil),
        .init(.readLocalVersionInformation, "version unknown"),
        .init(.readLocalSupportedFeatures, "LMP features unknown"),
        .init(.readBDADDR, "no public address: random addresses only"),
        .init(.setEventMask, "the reset default mask, without LE events"),
        .init(.readBufferSize, "no buffer fallback when LE has none"),
        .init(.leReadBufferSizeV2, "LE Read Buffer Size v1, no ISO buffers"),
        .init(.leReadBufferSizeV1, "the shared ACL buffers (Read Buffer Size)"),
        .init(.leSetEventMask, "the reset default LE events"),
        .init(.leReadLocalSupportedFeatures, "no LE features assumed"),
        .init(.leReadFilterAcceptListSize, "size not shown"),
        .init(.leReadResolvingListSize, "every bonded key offered to the list"),
        .init(.leReadMaximumDataLength, "251 octets assumed with Data Length Extension"),
        .init(.leSetRandomAddress, nil),
        .init(.leSetAdvertisingParameters, nil),
        .init(.leSetAdvertisingData, nil),
        .init(.leSetScanResponseData, nil),
        .init(.leSetAdvertisingEnable, nil),
        .init(.leSetScanParameters, nil),
        .init(.leSetScanEnable, nil),
        .init(.leCreateConnection, nil),
        .init(.leCreateConnectionCancel, nil),
        .init(.disconnect, nil),
        .init(.leConnectionUpdate, "parameters asked over L2CAP (as peripheral)"),
        .init(.leRemoteConnectionParameterRequestReply, "no Connection Parameters Request procedure"),
        .init(.leRemoteConnectionParameterRequestNegativeReply, "no Connection Parameters Request procedure"),
        .init(.leEnableEncryption, "no pairing or encryption"),
        .init(.leLongTermKeyRequestReply, "no encryption as peripheral"),
        .init(.leLongTermKeyRequestNegativeReply, "no encryption as peripheral"),
        .init(.readRSSI, "no RSSI of a link"),
        .init(.leSetDataLength, "27-octet LL payloads"),
        .init(.leReadPHY, "PHY of a link from events only"),
        .init(.leSetPHY, "links stay on LE 1M"),
        .init(.leAddDeviceToResolvingList, "the host resolves private addresses"),
        .init(.leClearResolvingList, "the host resolves private addresses"),
        .init(.leSetAddressResolutionEnable, "the host resolves private addresses"),
        .init(.leSetPrivacyMode, "the host resolves private addresses (no device privacy mode)"),
        .init(.leSetAdvertisingSetRandomAddress, "legacy advertising, scanning and connecting"),
        .init(.leSetExtendedAdvertisingParameters, "legacy advertising, scanning and connecting"),
        .init(.leSetExtendedAdvertisingData, "legacy advertising, scanning and connecting"),
        .init(.leSetExtendedScanResponseData, "legacy advertising, scanning and connecting"),
        .init(.leSetExtendedAdvertisingEnable, "legacy advertising, scanning and connecting"),
        .init(.leReadMaximumAdvertisingDataLength, "1,650 octets assumed"),
        .init(.leReadNumberOfSupportedAdvertisingSets, "one set assumed"),
        .init(.leRemoveAdvertisingSet, "legacy advertising, scanning and connecting"),
        .init(.leSetExtendedScanParameters, "legacy advertising, scanning and connecting"),
        .init(.leSetExtendedScanEnable, "legacy advertising, scanning and connecting"),
        .init(.leExtendedCreateConnection, "legacy advertising, scanning and connecting"),
        .init(.leSetPeriodicAdvertisingParameters, "no periodic advertising"),
        .init(.leSetPeriodicAdvertisingData, "no periodic advertising"),
        .init(.leSetPeriodicAdvertisingEnable, "no periodic advertising"),
        .init(.lePeriodicAdvertisingCreateSync, "no periodic sync"),
        .init(.lePeriodicAdvertisingCreateSyncCancel, "no periodic sync"),
        .init(.lePeriodicAdvertisingTerminateSync, "no periodic sync"),
        .init(.leAddDeviceToPeriodicAdvertiserList, "no sync through the Periodic Advertiser List"),
        .init(.leClearPeriodicAdvertiserList, "no sync through the Periodic Advertiser List"),
        .init(.leReadPeriodicAdvertiserListSize, "no sync through the Periodic Advertiser List"),
        .init(.lePeriodicAdvertisingSyncTransfer, "no Periodic Advertising Sync Transfer"),
        .init(.lePeriodicAdvertisingSetInfoTransfer, "no Periodic Advertising Sync Transfer"),
        .init(.leSetPeriodicAdvertisingSyncTransferParameters, "no Periodic Advertising Sync Transfer"),
        .init(.leSetDefaultPeriodicAdvertisingSyncTransferParameters, "no Periodic Advertising Sync Transfer"),
    ]

    init(_ opcode: HCIOpcode, _ without: String?) {
        self.opcode = opcode
        self.without = without
    }
}

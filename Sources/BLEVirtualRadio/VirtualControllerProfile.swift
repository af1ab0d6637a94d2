import BLEHCI

/// Named capability sets for a virtual controller, one per core version a real controller may
/// be (`--hci virtual:PROFILE`, `ble radio --profile PROFILE`). Each sets what Read Local
/// Version Information, Read Local Supported Commands and LE Read Local Supported Features
/// answer and has the controller answer every command the version did not yet define with
/// Unknown HCI Command (0x01), as such a controller does (Core spec Vol 4 Part E §4.5). The
/// profiles are named by version only: they follow what each version of the Core spec added
/// (Supported_Commands §6.27, LE features Vol 6 Part B §4.6), not a particular chip.
public enum VirtualControllerProfile: String, CaseIterable, Sendable, Hashable, CustomStringConvertible {
    /// Bluetooth 4.0: legacy advertising, 27-octet LL payloads (no Data Length Extension), no
    /// controller privacy, LE 1M only, encryption as the only LE feature, small lists, two links.
    case bluetooth40 = "4.0"
    /// Bluetooth 4.2: Data Length Extension, LL privacy with a resolving list, the Connection
    /// Parameters Request procedure (4.1), LE Enhanced Connection Complete; still legacy
    /// advertising on LE 1M.
    case bluetooth42 = "4.2"
    /// Bluetooth 5.0: LE 2M and LE Coded, extended advertising with two sets of up to 251
    /// octets, periodic advertising; no Periodic Advertising Sync Transfer (5.1) nor LE Read
    /// Buffer Size v2 (5.2).
    case bluetooth50 = "5.0"
    /// The most capable: Bluetooth 5.4 with everything the virtual controller runs (the
    /// configuration's defaults).
    case current = "default"

    /// The name on the command line.
    public var description: String { rawValue }

    /// The profile named `name` (`4.0`, `4.2`, `5.0`, `default`); nil for any other.
    public init?(name: String) { self.init(rawValue: name) }

    /// The HCI/LMP version it reports (Assigned Numbers, Core Specification Versions).
    var hciVersion: UInt8 {
        switch self {
        case .bluetooth40: return 0x06
        case .bluetooth42: return 0x08
        case .bluetooth50: return 0x09
        case .current: return VirtualControllerConfiguration().hciVersion
        }
    }

    /// The last command of Supported_Commands the version defined: every command whose bit
    /// comes after it was added later (4.0 ends with LE Test End, octet 28 bit 6; 4.2 with LE
    /// Read Maximum Data Length, octet 35 bit 3; 5.0 with LE Set Privacy Mode, octet 39 bit 2).
    /// The bits between 4.0's last and LE Remote Connection Parameter Request Reply (octet 33
    /// bit 4) are commands this controller does not run in any profile (BR/EDR ones, and in
    /// octet 29 later LE ones such as Channel Sounding's), so the cut-off leaves none out wrongly.
    private var lastCommand: HCIOpcode? {
        switch self {
        case .bluetooth40: return HCIOpcode(rawValue: 0x201F) // LE Test End
        case .bluetooth42: return .leReadMaximumDataLength
        case .bluetooth50: return .leSetPrivacyMode
        case .current: return nil
        }
    }

    /// The highest LE feature bit the version defined (4.0: 0, LE Encryption; 4.2: 7, Extended
    /// Scanner Filter Policies; 5.0: 16, Minimum Number of Used Channels).
    private var lastLEFeatureBit: Int? {
        switch self {
        case .bluetooth40: return 0
        case .bluetooth42: return 7
        case .bluetooth50: return 16
        case .current: return nil
        }
    }

    /// The configuration this profile gives a controller.
    public var configuration: VirtualControllerConfiguration {
        var c = VirtualControllerConfiguration()
        c.profile = self
        c.hciVersion = hciVersion
        if let last = lastCommand.flatMap(SupportedCommandBit.of) {
            let cutoff = last.octet * 8 + last.bit
            c.lacksCommands = Set(SupportedCommandBit.all.filter { $0.octet * 8 + $0.bit > cutoff }.map(\.opcode))
        }
        if let bit = lastLEFeatureBit {
            c.lacksLEFeatures = LESupportedFeatures(rawValue: ~((UInt64(1) << UInt64(bit + 1)) - 1))
        }
        switch self {
        case .bluetooth40:
            c.leACLBufferLength = 27
            c.leACLBufferCount = 4
            c.filterAcceptListSize = 4
            c.resolvingListSize = 0
            c.maximumConnections = 2
            c.extendedAdvertising = nil
            c.refusesReservedEventMaskBits = true
        case .bluetooth42:
            c.leACLBufferLength = 251
            c.leACLBufferCount = 4
            c.filterAcceptListSize = 8
            c.resolvingListSize = 4
            c.maximumConnections = 4
            c.extendedAdvertising = nil
            c.refusesReservedEventMaskBits = true
        case .bluetooth50:
            c.leACLBufferLength = 251
            c.leACLBufferCount = 6
            c.filterAcceptListSize = 8
            c.resolvingListSize = 8
            c.maximumConnections = 8
            c.extendedAdvertising = ExtendedAdvertisingSupport(sets: 2, maximumDataLength: 251, periodicAdvertiserListSize: 2, codedPHY: true)
            c.refusesReservedEventMaskBits = true
        case .current:
            break
        }
        return c
    }
}

import BLEHCI
import BLEWire

/// What a virtual controller hands to its host: an HCI event or an ACL data packet
/// (Core spec Vol 4 Part E §5.4.2, §5.4.4). Kept typed, not as bytes, so tests can compare them.
public enum HostBoundPacket: Hashable, Sendable {
    case event(HCIEvent)
    case acl(ACLPacket)

    /// The packet with its H4 indicator, as a transport carries it.
    public var h4Frame: H4Frame {
        switch self {
        case let .event(e): return e.h4Frame
        case let .acl(p): return p.h4Frame
        }
    }
}

/// What a controller asks of the medium after a command or ACL packet from its host. The medium
/// (VirtualMedium.swift) carries these "over the air" to other controllers; the controller itself
/// never sees its peers, which keeps it a plain state machine (ARCHITECTURE.md, sans-IO).
public enum AirAction: Hashable, Sendable {
    /// Advertising was enabled, disabled or changed: the medium re-reads `advertisement`.
    case advertisingChanged
    /// Scanning was enabled or disabled (the medium times an extended scan's duration).
    case scanningChanged
    /// The initiator started (LE Create Connection): the medium connects at the target's next
    /// connectable advertising event.
    case initiate
    /// The initiator stopped without a connection (LE Create Connection Cancel).
    case cancelInitiation
    /// One ACL packet for the peer of `handle`, as the host sent it.
    case acl(handle: UInt16, packet: ACLPacket)
    /// The host terminated the link; the peer learns `reason` (Vol 4 Part E §7.1.6).
    case disconnect(handle: UInt16, reason: HCIStatus)
    /// New connection parameters for both ends of `handle` (Vol 4 Part E §7.8.18).
    case connectionUpdate(handle: UInt16, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16)
    /// The peripheral asked for new parameters (Connection Parameters Request procedure,
    /// Vol 6 Part B §5.1.7).
    case connectionParameterRequest(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, supervisionTimeout: UInt16)
    /// The central's host refused the peripheral's parameter request.
    case connectionParameterRejected(handle: UInt16, reason: HCIStatus)
    /// This end's maximum transmit payload changed (Data Length Update procedure, §5.1.9).
    case dataLengthChanged(handle: UInt16)
    /// This end's host asked for a PHY (PHY Update procedure, §5.1.10).
    case setPHY(handle: UInt16, preference: VirtualController.PHYPreference)
    /// The central starts encryption with this key (Encryption Start procedure, §5.1.3).
    case startEncryption(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16, longTermKey: [UInt8])
    /// The peripheral's host answered the Long Term Key Request (nil: Negative Reply).
    case longTermKeyReply(handle: UInt16, longTermKey: [UInt8]?)
    /// The host handed the peer of `handle` a periodic sync (PAST, Vol 6 Part B §5.1.13,
    /// LL_PERIODIC_SYNC_IND): one of its syncs, or its own set's train.
    case syncTransfer(handle: UInt16, serviceData: UInt16, source: SyncTransferSource)
    /// HCI Reset: every link of this controller is gone, without a word to the peer (who will
    /// see a supervision timeout).
    case reset
}

/// The result of one input to a `VirtualController`: packets for its own host and actions for
/// the medium, in order.
public struct ControllerOutput: Hashable, Sendable {
    public var toHost: [HostBoundPacket] = []
    public var air: [AirAction] = []

    public init(toHost: [HostBoundPacket] = [], air: [AirAction] = []) {
        self.toHost = toHost
        self.air = air
    }

    mutating func event(_ e: HCIEvent) { toHost.append(.event(e)) }
}

/// A controller's current advertising as the medium sees it: what other controllers hear each
/// advertising interval. Core spec Vol 6 Part B §4.4.2 (advertising state).
public struct VirtualAdvertisement: Hashable, Sendable {
    /// The advertiser's address as it goes on air (public, or the static random address).
    public var address: DeviceAddress
    public var type: AdvertisingType
    public var data: [UInt8]
    public var scanResponse: [UInt8]
    /// Advertising_Interval_Min (the virtual radio advertises at the fastest allowed interval).
    public var interval: Duration
    /// For directed advertising: the only device that hears it and may connect (Vol 6 Part B
    /// §4.4.2.4).
    public var directTarget: DeviceAddress?
    /// Advertising_Filter_Policy (§7.8.5): bit 0 scan requests, bit 1 connection requests only
    /// from devices on `filterAcceptList`.
    public var filterPolicy: UInt8 = 0
    public var filterAcceptList: Set<DeviceAddress> = []
    /// The advertising set this comes from (LE Set Extended Advertising Enable, §7.8.56); nil
    /// for advertising enabled with the legacy commands.
    public var setHandle: UInt8?
    /// What an extended advertising event adds (ADV_EXT_IND, AUX_ADV_IND ...); nil when the
    /// set sends legacy PDUs.
    public var extended: ExtendedAdvertisingPDUs?

    public init(address: DeviceAddress, type: AdvertisingType, data: [UInt8], scanResponse: [UInt8] = [], interval: Duration) {
        self.address = address
        self.type = type
        self.data = data
        self.scanResponse = scanResponse
        self.interval = interval
    }

    /// The legacy PDU type scanners report (Vol 4 Part E §7.7.65.2, Event_Type).
    public var reportType: LegacyAdvertisingEventType {
        switch type {
        case .connectableUndirected: return .advInd
        case .connectableDirectedHighDuty, .connectableDirectedLowDuty: return .advDirectInd
        case .scannableUndirected: return .advScanInd
        case .nonConnectableUndirected: return .advNonconnInd
        }
    }

    public var isConnectable: Bool {
        if let extended { return extended.properties.contains(.connectable) }
        return reportType == .advInd || reportType == .advDirectInd
    }
    public var isScannable: Bool {
        if let extended { return extended.properties.contains(.scannable) }
        return reportType == .advInd || reportType == .advScanInd
    }

    /// The PHY a receiver must hear for the whole event: the primary channel's, and with
    /// extended PDUs the secondary channel's too (the weaker of the two decides the reach).
    var weakestPHY: LEPHY {
        guard let extended else { return .le1M }
        return extended.primaryPHY == .leCoded && extended.secondaryPHY == .leCoded ? .leCoded : .le1M
    }
}

/// The extended advertising PDUs of one set's events (Core spec Vol 6 Part B §2.3.1.4–§2.3.1.6,
/// §4.4.2.2): ADV_EXT_IND on the primary PHY points to an AUX_ADV_IND on the secondary PHY,
/// which carries the data, or its first part with AUX_CHAIN_INDs for the rest; a scannable set
/// answers AUX_SCAN_REQ with AUX_SCAN_RSP (chained the same way); a connectable one answers
/// AUX_CONNECT_REQ with AUX_CONNECT_RSP; a set with periodic advertising carries SyncInfo.
public struct ExtendedAdvertisingPDUs: Hashable, Sendable {
    /// Advertising_Event_Properties without the legacy bit (§7.8.53).
    public var properties: AdvertisingEventProperties
    public var sid: UInt8
    public var primaryPHY: LEPHY
    public var secondaryPHY: LEPHY
    /// The set's TX power when its PDUs carry it (property bit 6), else nil.
    public var txPower: Int8?
    /// The periodic train's interval (1.25 ms units) when AUX_ADV_IND carries SyncInfo, else 0.
    public var periodicInterval: UInt16
    /// Which train the SyncInfo points to (`PeriodicAdvertisingState.serial`); 0 without one.
    public var periodicSerial: UInt64 = 0
    /// The PDUs carry no AdvA (Advertising_Event_Properties bit 5): scanners report the
    /// advertiser as anonymous (§7.7.65.13).
    public var anonymous = false
}

/// A periodic advertising train (Vol 6 Part B §4.4.2.12): AUX_SYNC_IND at a fixed interval on
/// the set's secondary PHY, its data chained in AUX_CHAIN_INDs.
public struct VirtualPeriodicTrain: Hashable, Sendable {
    public var address: DeviceAddress
    public var sid: UInt8
    public var phy: LEPHY
    /// 1.25 ms units.
    public var interval: UInt16
    public var data: [UInt8]
    public var txPower: Int8?
    /// `PeriodicAdvertisingState.serial`: tells this train from a later one on the same set.
    public var serial: UInt64
}

/// What a Periodic Advertising Sync Transfer hands over (Vol 4 Part E §7.8.89, §7.8.90).
public enum SyncTransferSource: Hashable, Sendable {
    /// A train this controller is synced to.
    case sync(PeriodicTrainKey)
    /// This controller's own set's train.
    case ownSet(UInt8)
}

/// Bluetooth 5 advertising in a virtual controller: advertising sets, extended scanning and
/// initiating, periodic advertising and sync (Core spec Vol 4 Part E §7.8.52–§7.8.73). The
/// numbers are what LE Read Number of Supported Advertising Sets (§7.8.58), LE Read Maximum
/// Advertising Data Length (§7.8.57) and LE Read Periodic Advertiser List Size (§7.8.73) answer,
/// so a test can give a host one set or a 251-octet maximum.
public struct ExtendedAdvertisingSupport: Hashable, Sendable {
    public var sets: UInt8
    /// 31...1650 octets.
    public var maximumDataLength: UInt16
    public var periodicAdvertiserListSize: UInt8
    /// Whether the controller has the LE Coded PHY (LE feature bit 11).
    public var codedPHY: Bool

    public init(sets: UInt8 = 4, maximumDataLength: UInt16 = 1650, periodicAdvertiserListSize: UInt8 = 4, codedPHY: Bool = true) {
        self.sets = sets
        self.maximumDataLength = max(31, min(maximumDataLength, 1650))
        self.periodicAdvertiserListSize = periodicAdvertiserListSize
        self.codedPHY = codedPHY
    }
}

/// Fixed answers a virtual controller gives to the informational commands. Defaults describe an
/// LE-only Bluetooth 5.4 controller with 27-byte LE ACL buffers, so that L2CAP fragmentation is
/// exercised on every PDU over 23 bytes, as on rootcanal and many real chips.
public struct VirtualControllerConfiguration: Hashable, Sendable {
    /// HCI/LMP version: 0x0D is Core 5.4 (Assigned Numbers, Core Specification Versions).
    public var hciVersion: UInt8 = 0x0D
    /// 0xFFFF: the company identifier reserved for testing (Assigned Numbers, Company Identifiers).
    public var companyIdentifier: UInt16 = 0xFFFF
    public var leACLBufferLength: UInt16 = 27
    public var leACLBufferCount: UInt8 = 8
    /// The most data PDUs this controller exchanges in one connection event (nil: as many as
    /// fit in the interval). Many phones allow only a handful.
    public var maximumPDUsPerConnectionEvent: Int?
    /// When set, this controller as central refuses every Connection Parameters Request from a
    /// peripheral (Vol 6 Part B §5.1.7) with this reason, without asking its host, as a central
    /// whose Link Layer rejects the procedure (LL_REJECT_EXT_IND): the peripheral's host gets LE
    /// Connection Update Complete with this status and the link keeps its parameters. For
    /// example Unsupported Remote Feature (0x1A) or Unacceptable Connection Parameters (0x3B).
    public var refusesConnectionParameterRequests: HCIStatus?
    /// Bluetooth 5 advertising (extended advertising and scanning, the LE Coded PHY, periodic
    /// advertising): 4 sets of up to 1,650 octets by default; nil for a controller with only
    /// the legacy advertising commands, which hosts then drive as a Bluetooth 4 controller.
    public var extendedAdvertising: ExtendedAdvertisingSupport? = ExtendedAdvertisingSupport()
    /// Commands this controller does not have, though it could run them: it leaves them out of
    /// Supported_Commands and answers them with Unknown HCI Command (0x01), as a controller of an
    /// older version or a smaller build does (Vol 4 Part E §4.5). A profile fills it.
    public var lacksCommands: Set<HCIOpcode> = []
    /// LE features this controller does not have (Vol 6 Part B §4.6): it leaves them out of LE
    /// Read Local Supported Features and its Link Layer refuses their procedures with a peer.
    public var lacksLEFeatures: LESupportedFeatures = []
    /// Entries the Filter Accept List holds (LE Read Filter Accept List Size, §7.8.14).
    public var filterAcceptListSize: UInt8 = 16
    /// Entries the resolving list holds (LE Read Resolving List Size, §7.8.41).
    public var resolvingListSize: UInt8 = 8
    /// The most links this controller keeps at once; nil for no limit. At the limit it refuses
    /// LE Create Connection with Connection Limit Exceeded (0x09) and stops answering
    /// connection requests as an advertiser.
    public var maximumConnections: Int?
    /// Whether LE Set Event Mask with a bit its HCI version leaves reserved is refused with
    /// Invalid HCI Command Parameters (0x12), as strict controllers do (§7.8.1); the profiles
    /// of older versions set it, so a host that asks for events the version lacks is caught.
    public var refusesReservedEventMaskBits = false
    /// Which named profile this configuration came from, for logs and `ble info`; nil for one
    /// built field by field.
    public var profile: VirtualControllerProfile?
    /// Misbehaviours of real controllers this one reproduces (VirtualControllerQuirk.swift).
    public var quirks: Set<VirtualControllerQuirk> = []

    public init() {}
}

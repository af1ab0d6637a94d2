import BLEHCI
import BLEWire

/// The controller side of HCI for one virtual LE controller: a sans-IO state machine that takes
/// a decoded command (or an ACL packet) from its host and returns the events for that host plus
/// the air actions for the medium. Core spec Vol 4 Part E §7 (commands and events) and Vol 6
/// Part B §4 (link-layer states: standby, advertising, scanning, initiating, connection).
///
/// Commands outside the set the host stack uses are answered with Command Complete and status
/// Unknown HCI Command (0x01), which the host reads as "not supported" (Vol 4 Part E §4.5).
public struct VirtualController: Sendable {
    public let publicAddress: BDAddress
    public let configuration: VirtualControllerConfiguration

    // Set-up state (Vol 4 Part E §7.3.1, §7.8.1): reset defaults.
    public internal(set) var eventMask: UInt64 = Self.defaultEventMask
    public internal(set) var leEventMask: UInt64 = Self.defaultLEEventMask
    public internal(set) var randomAddress: BDAddress?

    // Advertising state (§7.8.5–§7.8.9).
    var advertisingIntervalMin: UInt16 = 0x0800
    var advertisingType: AdvertisingType = .connectableUndirected
    var advertisingOwnAddressType: UInt8 = 0
    var advertisingPeer: DeviceAddress?
    var advertisingFilterPolicy: UInt8 = 0
    var advertisingData: [UInt8] = []
    var scanResponseData: [UInt8] = []
    public internal(set) var isAdvertising = false

    // Scanning state (§7.8.10, §7.8.11).
    var activeScan = false
    public internal(set) var isScanning = false
    var filterDuplicates = false
    var scanOwnAddressType: UInt8 = 0
    var scanFilterPolicy: UInt8 = 0
    var reported: Set<ReportKey> = []

    // The Filter Accept List (§7.8.14–§7.8.17).
    public internal(set) var filterAcceptList: Set<DeviceAddress> = []

    // Link-layer privacy (§7.8.38–§7.8.44, VirtualController+Privacy.swift).
    public internal(set) var resolvingList: [ResolvingListEntry] = []
    public internal(set) var addressResolutionEnabled = false

    // Data length and PHY defaults for new connections (§7.8.35, §7.8.48).
    var suggestedTxOctets: UInt16 = 27
    var suggestedTxTime: UInt16 = 328
    var defaultPHYs = PHYPreference.any

    /// The transmit power the medium uses for this controller's signal, dBm.
    public internal(set) var txPower: Int8 = 0
    var random: SplitMix64

    // Bluetooth 5 advertising, scanning and sync (VirtualController+AdvertisingSets.swift,
    // +ExtendedScanning.swift): which of the two command sets the host chose (§3.1.1), the
    // sets, the extended scan, syncs and the Periodic Advertiser List.
    var commandSet: AdvertisingCommandKind?
    public internal(set) var advertisingSets: [UInt8: AdvertisingSetState] = [:]
    /// Extended scanning: each PHY scanned and whether actively (§7.8.64).
    var extendedScanPHYs: [LEPHY: Bool] = [:]
    var extendedScanning = false
    /// Scan_Duration of the enabled extended scan (§7.8.65); nil scans until disabled.
    public internal(set) var scanDuration: Duration?
    /// Scan_Period: with a duration, the scan runs `scanDuration` every `scanPeriod` until
    /// disabled; nil scans once.
    public internal(set) var scanPeriod: Duration?
    /// Within a scan period, whether the scan's duration is running (the receiver listening).
    public internal(set) var scanWindowOpen = true
    var reportedExtended: Set<ExtendedReportKey> = []
    /// Filter_Duplicates 2: the duplicate filter starts again each scan period (§7.8.65).
    var resetDuplicatesEachPeriod = false
    public internal(set) var pendingSync: PeriodicSyncRequest?
    public internal(set) var syncs: [UInt16: PeriodicSyncState] = [:]
    var nextSyncHandle: UInt16 = 0
    /// Numbers each periodic train this controller starts, kept over a reset, so a sync
    /// follows one train and not a later one on the same set.
    var nextTrainSerial: UInt64 = 1
    public internal(set) var periodicAdvertiserList: Set<PeriodicAdvertiserListEntry> = []
    /// LE Set Default Periodic Advertising Sync Transfer Parameters (§7.8.92): Mode and
    /// Sync_Timeout each new connection starts with.
    public internal(set) var defaultSyncTransfer: (mode: UInt8, timeout: UInt16) = (0, 0)

    // Initiating and connections (§7.8.12, §7.8.13).
    public internal(set) var initiation: Initiation?
    public internal(set) var connections: [UInt16: Connection] = [:]
    var nextHandle: UInt16 = 0x0040

    /// The RSSI the medium hears for the link a Read RSSI asks about, set only while the medium
    /// has the controller answer it (VirtualMedium+RSSI.swift); nil: no link.
    var heardRSSI: Int8?

    /// What the configured quirks remember (VirtualController+Quirks.swift); kept over a reset.
    var quirkState = QuirkState()

    /// Reset default of Set Event Mask: 0x00001FFFFFFFFFFF (LE Meta, bit 61, off). §7.3.1.
    public static let defaultEventMask: UInt64 = 0x0000_1FFF_FFFF_FFFF
    /// Reset default of LE Set Event Mask: the first five subevents. §7.8.1.
    public static let defaultLEEventMask: UInt64 = 0x1F

    /// What LE Create Connection asked for.
    public struct Initiation: Hashable, Sendable {
        /// The advertiser to connect to; nil with the Filter Accept List policy (any listed device).
        public var peer: DeviceAddress?
        public var ownAddress: DeviceAddress
        public var interval: UInt16
        public var latency: UInt16
        public var supervisionTimeout: UInt16
        /// LE Extended Create Connection (§7.8.66): the primary PHYs scanned (LE 1M, LE Coded)
        /// and each initiating PHY's parameters; legacy LE Create Connection scans LE 1M.
        public var phys: LEPHYSet = .le1M
        public var extended = false
        public var parametersByPHY: [LEPHY: ConnectionParameters] = [:]
    }

    /// Connection parameters of one initiating PHY (§7.8.66).
    public struct ConnectionParameters: Hashable, Sendable {
        public var interval: UInt16
        public var latency: UInt16
        public var supervisionTimeout: UInt16
    }

    /// One established link, as this controller sees it.
    public struct Connection: Hashable, Sendable {
        public var role: LERole
        public var peer: DeviceAddress
        public var interval: UInt16
        public var latency: UInt16
        public var supervisionTimeout: UInt16
        public var phy: LEPHY = .le1M
        public var encrypted = false
        /// This end's own maximum transmit payload (its host's choice, §7.8.33).
        public var maxTxOctets: UInt16 = 27
        /// A Long Term Key Request is waiting for this (peripheral) host's reply.
        public var awaitingLongTermKey = false
        /// A Remote Connection Parameter Request is waiting for this (central) host's reply.
        public var awaitingParameterReply = false
        /// What to do with a periodic sync the peer transfers (PAST, §7.8.91): Mode 0 ignores it,
        /// 1 syncs with reports off, 2 and 3 with reports on; Sync_Timeout in 10 ms units.
        public var syncTransferMode: UInt8 = 0
        public var syncTransferTimeout: UInt16 = 0
    }

    /// Which PHYs a host accepts for sending and receiving (§7.8.48).
    public struct PHYPreference: Hashable, Sendable {
        public var tx: LEPHYSet
        public var rx: LEPHYSet
        public static let any = PHYPreference(tx: [.le1M, .le2M], rx: [.le1M, .le2M])
    }

    struct ReportKey: Hashable {
        var address: DeviceAddress
        var type: LegacyAdvertisingEventType
    }

    public init(address: BDAddress, configuration: VirtualControllerConfiguration = VirtualControllerConfiguration()) {
        self.publicAddress = address
        self.configuration = configuration
        self.random = SplitMix64(seed: address.rawValue)
    }

    // MARK: Addresses

    /// The address this controller uses on air for an Own_Address_Type (0 public, 1 random; the
    /// RPA variants fall back to their identity as with an empty resolving list, §7.8.5).
    public func ownAddress(type: UInt8) -> DeviceAddress? {
        if type & 0x01 == 0 { return DeviceAddress(publicAddress, type: .public) }
        guard let r = randomAddress else { return nil }
        return DeviceAddress(r, type: .random)
    }

    /// What other controllers hear while this one advertises.
    public var advertisement: VirtualAdvertisement? {
        guard isAdvertising, let address = ownAddress(type: advertisingOwnAddressType) else { return nil }
        var adv = VirtualAdvertisement(address: address, type: advertisingType, data: advertisingData,
                                       scanResponse: scanResponseData,
                                       interval: .microseconds(625 * Int64(advertisingIntervalMin)))
        adv.directTarget = adv.reportType == .advDirectInd ? advertisingPeer : nil
        adv.filterPolicy = advertisingFilterPolicy
        adv.filterAcceptList = filterAcceptList
        return adv
    }

    // MARK: Event masking (§7.3.1, §7.8.1)

    func leEventEnabled(bit: Int) -> Bool {
        eventMask & (1 << 61) != 0 && leEventMask & (1 << UInt64(bit)) != 0
    }

    func eventEnabled(bit: Int) -> Bool { eventMask & (1 << UInt64(bit)) != 0 }

    // MARK: Commands

    /// Handles one command from the host. None of this slice's commands depends on the time;
    /// timed behaviour (advertising events) lives in the medium. A controller with quirks
    /// (`VirtualControllerConfiguration.quirks`) misbehaves around the answer as they say.
    public mutating func handle(_ command: HCICommand) -> ControllerOutput {
        configuration.quirks.isEmpty ? answer(command) : answerWithQuirks(command)
    }

    /// `handle` as a well-behaved controller answers.
    mutating func answer(_ command: HCICommand) -> ControllerOutput {
        var out = ControllerOutput()
        let op = command.opcode
        var r = ByteReader(command.parameters)
        // A command the profile leaves out is one this controller never heard of (§4.5).
        if configuration.lacksCommands.contains(op) {
            out.event(unknownCommand(op))
            return out
        }
        if let refused = refusedForMixing(op) {
            out.event(refused)
            return out
        }
        do {
            switch op {
            case .reset:
                resetState()
                out.air.append(.reset)
                out.event(complete(op))
            case .readLocalVersionInformation:
                var w = ByteWriter()
                w.u8(configuration.hciVersion)
                w.u16(0)
                w.u8(configuration.hciVersion)
                w.u16(configuration.companyIdentifier)
                w.u16(0)
                out.event(complete(op, w.bytes))
            case .readLocalSupportedCommands:
                out.event(complete(op, supportedCommandBits))
            case .readLocalSupportedFeatures:
                // Byte 4: bit 5 "LE Supported (Controller)", bit 6 "BR/EDR Not Supported". Vol 2 Part C §3.3.
                out.event(complete(op, [0, 0, 0, 0, 0x60, 0, 0, 0]))
            case .readBDADDR:
                out.event(complete(op, publicAddress.littleEndianBytes))
            case .readBufferSize:
                // An LE-only controller has no BR/EDR buffers; the host uses the LE ones. §7.4.5.
                // With shared buffers (a quirk) they are here, and LE reports none.
                out.event(complete(op, sharedBufferSize))
            case .leReadBufferSizeV1:
                var w = ByteWriter()
                w.u16(leBuffers.length)
                w.u8(leBuffers.count)
                out.event(complete(op, w.bytes))
            case .leReadBufferSizeV2:
                var w = ByteWriter()
                w.u16(leBuffers.length)
                w.u8(leBuffers.count)
                w.u16(0)
                w.u8(0)
                out.event(complete(op, w.bytes))
            case .setEventMask:
                eventMask = try r.readU64()
                out.event(complete(op))
            case .leSetEventMask:
                let mask = try r.readU64()
                // §7.8.1: bits the controller's version leaves reserved.
                if configuration.refusesReservedEventMaskBits,
                   mask & ~LEEventMask.defined(byHCIVersion: configuration.hciVersion).rawValue != 0 {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    break
                }
                leEventMask = mask
                out.event(complete(op))
            case .leReadLocalSupportedFeatures:
                out.event(complete(op, leFeatureBits))
            case .leSetRandomAddress:
                let a = BDAddress(littleEndian: try r.readBytes(6))
                // §7.8.4: disallowed while advertising, scanning or initiating.
                if isAdvertising || isScanning || initiation != nil {
                    out.event(complete(op, status: .commandDisallowed))
                } else {
                    randomAddress = a
                    out.event(complete(op))
                }
            case .leSetAdvertisingParameters:
                out.event(complete(op, status: try setAdvertisingParameters(&r)))
            case .leSetAdvertisingData, .leSetScanResponseData:
                // §7.8.7: the command always carries 31 data octets; hosts that send only the
                // significant ones are tolerated.
                let n = Int(try r.readU8())
                let bytes = r.readRemaining()
                if n > 31 || n > bytes.count {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                } else {
                    if op == .leSetAdvertisingData { advertisingData = Array(bytes.prefix(n)) } else { scanResponseData = Array(bytes.prefix(n)) }
                    if isAdvertising { out.air.append(.advertisingChanged) }
                    out.event(complete(op))
                }
            case .leSetAdvertisingEnable:
                let enable = try r.readU8()
                out.event(complete(op, status: setAdvertisingEnable(enable, air: &out.air)))
            case .leSetScanParameters:
                out.event(complete(op, status: try setScanParameters(&r)))
            case .leSetScanEnable:
                let enable = try r.readU8()
                let duplicates = try r.readU8()
                guard enable <= 1, duplicates <= 1 else { throw WireError.invalid("scan enable") }
                // §7.8.11: a random own address that was never set.
                if enable == 1 && ownAddress(type: scanOwnAddressType) == nil {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    break
                }
                if enable == 1 && !isScanning { reported = [] }
                isScanning = enable == 1
                extendedScanning = false
                filterDuplicates = duplicates == 1
                out.event(complete(op))
            case .leCreateConnection:
                createConnection(&r, out: &out)
            case .leCreateConnectionCancel:
                guard let i = initiation else {
                    out.event(complete(op, status: .commandDisallowed))
                    break
                }
                initiation = nil
                out.event(complete(op))
                out.air.append(.cancelInitiation)
                // §7.8.13: the cancelled attempt ends with a Connection Complete, status 0x02.
                if let e = connectionCompleteEvent(LEConnectionComplete(
                    status: .unknownConnectionIdentifier, handle: 0, role: .central,
                    peer: i.peer ?? DeviceAddress(BDAddress(rawValue: 0), type: .public),
                    interval: 0, latency: 0, supervisionTimeout: 0)) { out.event(e) }
            case .disconnect:
                let handle = try r.readU16() & 0x0FFF
                let reason = HCIStatus(try r.readU8())
                // §7.1.6: the reasons a host may give.
                guard [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B].contains(reason.rawValue) else {
                    out.event(status(op, .invalidHCICommandParameters))
                    break
                }
                guard connections.removeValue(forKey: handle) != nil else {
                    out.event(status(op, .unknownConnectionIdentifier))
                    break
                }
                out.event(status(op, .success))
                out.air.append(.disconnect(handle: handle, reason: reason))
                if eventEnabled(bit: 4) {
                    out.event(.disconnectionComplete(status: .success, handle: handle, reason: .connectionTerminatedByLocalHost))
                }
            case .leConnectionUpdate:
                let handle = try r.readU16() & 0x0FFF
                let intervalMin = try r.readU16()
                let intervalMax = try r.readU16()
                let latency = try r.readU16()
                let timeout = try r.readU16()
                guard connections[handle] != nil else {
                    out.event(status(op, .unknownConnectionIdentifier))
                    break
                }
                guard Self.validConnectionParameters(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: timeout) else {
                    out.event(status(op, .invalidHCICommandParameters))
                    break
                }
                // Before the Connection Parameters Request procedure (LE feature bit 1, 4.1) only
                // the central may update a link (Core 4.0 Vol 2 Part E §7.8.18).
                if connections[handle]?.role == .peripheral && !hasLEFeature(.connectionParametersRequest) {
                    out.event(status(op, .commandDisallowed))
                    break
                }
                out.event(status(op, .success))
                if connections[handle]?.role == .peripheral {
                    // §7.8.18: from the peripheral this starts the Connection Parameters Request
                    // procedure (Vol 6 Part B §5.1.7); the central's host may be asked.
                    out.air.append(.connectionParameterRequest(handle: handle, intervalMin: intervalMin, intervalMax: intervalMax,
                                                               latency: latency, supervisionTimeout: timeout))
                } else {
                    out.air.append(.connectionUpdate(handle: handle, interval: intervalMin, latency: latency, supervisionTimeout: timeout))
                }
            default:
                if let handled = try handleLinkCommand(command, &r) {
                    out = handled
                } else if let handled = try handleSecurityOrListCommand(command, &r) {
                    out = handled
                } else if let handled = try handlePrivacyCommand(command, &r) {
                    out = handled
                } else if let handled = try handleAdvertisingSetCommand(command, &r) {
                    out = handled
                } else if let handled = try handleExtendedScanCommand(command, &r) {
                    out = handled
                } else if let handled = try handleSyncTransferCommand(command, &r) {
                    out = handled
                } else {
                    out.event(unknownCommand(op))
                }
            }
        } catch {
            // Short or malformed parameters: Invalid HCI Command Parameters (Vol 1 Part F §1.3).
            let asStatus: Set<HCIOpcode> = [.disconnect, .leCreateConnection, .leConnectionUpdate, .leEnableEncryption, .leSetPHY,
                                            .leExtendedCreateConnection, .lePeriodicAdvertisingCreateSync]
            out.event(asStatus.contains(op) ? status(op, .invalidHCICommandParameters)
                                            : complete(op, status: .invalidHCICommandParameters))
        }
        return out
    }

    private mutating func setAdvertisingParameters(_ r: inout ByteReader) throws(WireError) -> HCIStatus {
        let intervalMin = try r.readU16()
        let intervalMax = try r.readU16()
        let rawType = try r.readU8()
        let ownType = try r.readU8()
        let peerType = try r.readU8()
        let peer = BDAddress(littleEndian: try r.readBytes(6))
        _ = try r.readU8() // channel map
        let filterPolicy = try r.readU8()
        // §7.8.5: changing parameters while advertising is enabled is disallowed.
        if isAdvertising { return .commandDisallowed }
        guard let type = AdvertisingType(rawValue: rawType), ownType <= 3, peerType <= 1, filterPolicy <= 3 else {
            return .invalidHCICommandParameters
        }
        advertisingPeer = DeviceAddress(peer, type: peerType == 0 ? .public : .random)
        advertisingFilterPolicy = filterPolicy
        let directed = type == .connectableDirectedHighDuty
        if !directed {
            guard intervalMin <= intervalMax, (0x0020...0x4000).contains(intervalMin), intervalMax <= 0x4000 else {
                return .invalidHCICommandParameters
            }
        }
        advertisingIntervalMin = directed ? 0x0020 : intervalMin
        advertisingType = type
        advertisingOwnAddressType = ownType
        return .success
    }

    private mutating func setAdvertisingEnable(_ enable: UInt8, air: inout [AirAction]) -> HCIStatus {
        guard enable <= 1 else { return .invalidHCICommandParameters }
        if enable == 1 {
            // §7.8.9: own address type random without a random address set.
            guard ownAddress(type: advertisingOwnAddressType) != nil else { return .invalidHCICommandParameters }
            isAdvertising = true
        } else {
            isAdvertising = false
        }
        air.append(.advertisingChanged)
        return .success
    }

    private mutating func setScanParameters(_ r: inout ByteReader) throws(WireError) -> HCIStatus {
        let type = try r.readU8()
        let interval = try r.readU16()
        let window = try r.readU16()
        let ownType = try r.readU8()
        let filterPolicy = try r.readU8()
        // §7.8.10: disallowed while scanning is enabled.
        if isScanning { return .commandDisallowed }
        guard type <= 1, window <= interval, ownType <= 3, filterPolicy <= 3 else { return .invalidHCICommandParameters }
        activeScan = type == 1
        scanOwnAddressType = ownType
        scanFilterPolicy = filterPolicy
        return .success
    }

    private mutating func createConnection(_ r: inout ByteReader, out: inout ControllerOutput) {
        let op = HCIOpcode.leCreateConnection
        do {
            try r.skip(4) // scan interval and window
            let filterPolicy = try r.readU8()
            let peerType = try r.readU8()
            let peer = BDAddress(littleEndian: try r.readBytes(6))
            let ownType = try r.readU8()
            let intervalMin = try r.readU16()
            let intervalMax = try r.readU16()
            let latency = try r.readU16()
            let timeout = try r.readU16()
            _ = try r.readU32() // CE lengths
            // §7.8.12: disallowed while already initiating.
            if initiation != nil {
                out.event(status(op, .commandDisallowed))
                return
            }
            guard hasRoomForLink else {
                out.event(status(op, .connectionLimitExceeded))
                return
            }
            guard filterPolicy <= 1, peerType <= 3, let own = ownAddress(type: ownType),
                  Self.validConnectionParameters(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: timeout) else {
                out.event(status(op, .invalidHCICommandParameters))
                return
            }
            // Filter policy 1: connect to any device on the Filter Accept List, ignoring the peer
            // address parameters (§7.8.12).
            // Identity types (0x02, 0x03) name the device behind a resolved RPA (§7.8.12).
            let target = filterPolicy == 1 ? nil : DeviceAddress(peer, type: AddressType(rawValue: peerType) ?? .public)
            initiation = Initiation(peer: target, ownAddress: own, interval: intervalMin, latency: latency, supervisionTimeout: timeout)
            out.event(status(op, .success))
            out.air.append(.initiate)
        } catch {
            out.event(status(op, .invalidHCICommandParameters))
        }
    }

    /// HCI Reset (§7.3.2): back to standby with reset defaults; links are dropped silently.
    mutating func resetState() {
        let power = txPower
        let serial = nextTrainSerial
        let quirks = quirkState
        self = VirtualController(address: publicAddress, configuration: configuration)
        txPower = power
        // Trains after the reset are new ones: no old sync may follow them.
        nextTrainSerial = serial
        quirkState = quirks
    }

    /// The ranges of Vol 4 Part E §7.8.12 (and §7.8.18, §7.8.31): interval 0x0006–0x0C80
    /// (7.5 ms–4 s) with min ≤ max, latency ≤ 0x01F3, supervision timeout 0x000A–0x0C80
    /// (100 ms–32 s) and longer than (1 + latency) × interval max × 2.
    static func validConnectionParameters(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) -> Bool {
        guard (0x0006...0x0C80).contains(intervalMin), (0x0006...0x0C80).contains(intervalMax), intervalMin <= intervalMax,
              latency <= 0x01F3, (0x000A...0x0C80).contains(timeout) else { return false }
        // Timeout in 10 ms units, interval in 1.25 ms: timeout·10 > (1 + latency)·interval·1.25·2.
        return Int(timeout) * 10 * 4 > (1 + Int(latency)) * Int(intervalMax) * 5 * 2
    }

    // MARK: Event builders

    func complete(_ op: HCIOpcode, _ parameters: [UInt8] = [], status: HCIStatus = .success) -> HCIEvent {
        // Return parameters beyond the status are only meaningful on success.
        .commandComplete(numHCICommandPackets: 1, opcode: op, returnParameters: [status.rawValue] + (status.isSuccess ? parameters : []))
    }

    /// Command Complete for a command whose return parameters start with the Connection_Handle:
    /// the handle is returned whatever the status (as controllers do), the rest only on success.
    func complete(_ op: HCIOpcode, handle: UInt16, _ rest: [UInt8] = [], status: HCIStatus = .success) -> HCIEvent {
        .commandComplete(numHCICommandPackets: 1, opcode: op,
                         returnParameters: [status.rawValue, UInt8(handle & 0xFF), UInt8(handle >> 8)] + (status.isSuccess ? rest : []))
    }

    func status(_ op: HCIOpcode, _ status: HCIStatus) -> HCIEvent {
        .commandStatus(status: status, numHCICommandPackets: 1, opcode: op)
    }

    /// LE Enhanced Connection Complete when the host unmasked it (LE mask bit 9), else the legacy
    /// event (bit 0), else nothing. §7.7.65.1, §7.7.65.10.
    func connectionCompleteEvent(_ event: LEConnectionComplete) -> HCIEvent? {
        var e = event
        if leEventEnabled(bit: 9) {
            e.format = .enhanced
        } else if leEventEnabled(bit: 0) {
            e.format = .legacy
        } else {
            return nil
        }
        return .le(.connectionComplete(e))
    }

    /// LE features (Vol 6 Part B §4.6): encryption (bit 0), connection parameters request
    /// procedure (1), data packet length extension (5), LL privacy (6), LE 2M PHY (8).
    static let leFeatures: LESupportedFeatures = [.leEncryption, .connectionParametersRequest, .leDataPacketLengthExtension, .llPrivacy, .le2MPHY]

    /// The Supported_Commands bit map (§6.27): exactly the commands `handle` implements.
    static let supportedCommands: [UInt8] = {
        var octets = [UInt8](repeating: 0, count: 64)
        let bits: [(Int, Int)] = [
            (0, 5), // Disconnect
            (5, 6), (5, 7), // Set Event Mask, Reset
            (14, 3), (14, 5), (14, 7), // Read Local Version Information, Read Local Supported Features, Read Buffer Size
            (15, 1), (15, 5), // Read BD_ADDR, Read RSSI (answered by the medium)
            (25, 0), (25, 1), (25, 2), (25, 4), (25, 5), (25, 7), // LE Set Event Mask ... LE Set Advertising Data
            (26, 0), (26, 1), (26, 2), (26, 3), (26, 4), (26, 5), // LE Set Scan Response Data ... LE Create Connection Cancel
            (26, 6), (26, 7), (27, 0), (27, 1), // LE Read Filter Accept List Size ... LE Remove Device From
            (27, 2), // LE Connection Update
            (27, 6), (27, 7), (28, 0), (28, 1), (28, 2), // LE Encrypt, LE Rand, LE Enable Encryption, LTK (Negative) Reply
            (33, 4), (33, 5), (33, 6), (33, 7), (34, 0), // Remote Connection Parameter (Negative) Reply, Data Length
            (34, 3), (34, 4), (34, 5), (34, 6), // LE Add/Remove Device To/From, Clear, Read Size of the Resolving List
            (35, 1), (35, 2), // LE Set Address Resolution Enable, LE Set RPA Timeout
            (35, 3), (35, 4), (35, 5), (35, 6), // LE Read Maximum Data Length, LE Read/Set Default/Set PHY
            (39, 2), // LE Set Privacy Mode
            (41, 5), // LE Read Buffer Size v2
        ]
        for (octet, bit) in bits { octets[octet] |= 1 << UInt8(bit) }
        return octets
    }()
}

import BLEHCI
import BLEWire

/// Which of the two advertising command sets a host has used since reset (Core spec Vol 4
/// Part E §3.1.1): a controller takes one or the other, never both.
enum AdvertisingCommandKind: Hashable, Sendable {
    case legacy
    case extended

    /// The kind `op` belongs to, or nil for a command outside both sets.
    init?(_ op: HCIOpcode) {
        if Self.legacyCommands.contains(op) {
            self = .legacy
        } else if (HCIOpcode.leSetAdvertisingSetRandomAddress.rawValue...HCIOpcode.leReadPeriodicAdvertiserListSize.rawValue).contains(op.rawValue) {
            self = .extended
        } else {
            return nil
        }
    }

    /// The legacy advertising, scanning and initiating commands (§7.8.5–§7.8.12).
    static let legacyCommands: Set<HCIOpcode> = [
        .leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable,
        .leSetScanParameters, .leSetScanEnable, .leCreateConnection, .leReadAdvertisingPhysicalChannelTxPower,
    ]
}

/// One advertising set of a virtual controller (§7.8.53–§7.8.63).
public struct AdvertisingSetState: Hashable, Sendable {
    /// Advertising_Event_Properties (§7.8.53), legacy bit included.
    public var properties: AdvertisingEventProperties
    /// Primary_Advertising_Interval_Min in 0.625 ms units.
    public var interval: UInt32
    public var ownAddressType: UInt8
    public var peer: DeviceAddress
    public var filterPolicy: UInt8
    /// The TX power the controller chose (returned by §7.8.53).
    public var txPower: Int8
    public var primaryPHY: LEPHY
    public var secondaryPHY: LEPHY
    public var sid: UInt8
    /// LE Set Advertising Set Random Address (§7.8.52).
    public var randomAddress: BDAddress?
    public var data: [UInt8] = []
    public var scanResponse: [UInt8] = []
    /// Data being given in fragments (Operation first/intermediate) and not yet complete.
    var partialData: [UInt8]?
    var partialScanResponse: [UInt8]?
    public var enabled = false
    /// Advertising_Duration of the enable (nil: until disabled) and Max_Extended_Advertising_Events
    /// (0: no limit), §7.8.56.
    public var duration: Duration?
    public var maxEvents: UInt8 = 0
    public var completedEvents = 0
    /// How many enables the set has had (each starts its duration and event count again).
    public var enables = 0
    public var periodic: PeriodicAdvertisingState?

    var isLegacy: Bool { properties.isLegacy }
}

/// A set's periodic advertising (§7.8.61–§7.8.63).
public struct PeriodicAdvertisingState: Hashable, Sendable {
    /// Periodic_Advertising_Interval_Min in 1.25 ms units.
    public var interval: UInt16
    public var includeTxPower: Bool
    public var data: [UInt8] = []
    var partialData: [UInt8]?
    public var enabled = false
    /// The train is on air: periodic advertising was enabled while the set was (or the set
    /// was enabled after it), and it keeps going when the set's extended advertising stops.
    public var running = false
    /// Numbers the train since it last started (`VirtualController.nextTrainSerial`).
    public var serial: UInt64 = 0
}

extension VirtualController {
    /// Whether any advertising set is enabled.
    var anySetEnabled: Bool { advertisingSets.values.contains { $0.enabled } }

    /// The PHYs this controller has: LE 1M and LE 2M, and LE Coded with Bluetooth 5
    /// advertising when it has it (LE features bits 8 and 11).
    var supportedPHYs: LEPHYSet {
        configuration.extendedAdvertising?.codedPHY == true ? [.le1M, .le2M, .leCoded] : [.le1M, .le2M]
    }

    /// Command Disallowed for a command of the other advertising command set than the host
    /// used first since reset (§3.1.1), on a controller that has both; nil to go on.
    mutating func refusedForMixing(_ op: HCIOpcode) -> HCIEvent? {
        guard configuration.extendedAdvertising != nil, let kind = AdvertisingCommandKind(op) else { return nil }
        if let used = commandSet, used != kind {
            let asStatus: Set<HCIOpcode> = [.leCreateConnection, .leExtendedCreateConnection, .lePeriodicAdvertisingCreateSync]
            return asStatus.contains(op) ? status(op, .commandDisallowed) : complete(op, status: .commandDisallowed)
        }
        commandSet = kind
        return nil
    }

    /// The advertising-set and periodic-advertising commands (§7.8.52–§7.8.63); nil for any
    /// other command, or on a controller without Bluetooth 5 advertising.
    mutating func handleAdvertisingSetCommand(_ command: HCICommand, _ r: inout ByteReader) throws(WireError) -> ControllerOutput? {
        guard let support = configuration.extendedAdvertising else { return nil }
        var out = ControllerOutput()
        let op = command.opcode
        switch op {
        case .leReadNumberOfSupportedAdvertisingSets:
            out.event(complete(op, [support.sets]))
        case .leReadMaximumAdvertisingDataLength:
            var w = ByteWriter()
            w.u16(support.maximumDataLength)
            out.event(complete(op, w.bytes))
        case .leSetAdvertisingSetRandomAddress:
            let handle = try r.readU8()
            let address = BDAddress(littleEndian: try r.readBytes(6))
            guard advertisingSets[handle] != nil else { out.event(complete(op, status: .unknownAdvertisingIdentifier)); break }
            // A connectable set's address cannot change under it (§7.8.52).
            if advertisingSets[handle]?.enabled == true, advertisingSets[handle]?.properties.contains(.connectable) == true {
                out.event(complete(op, status: .commandDisallowed))
                break
            }
            advertisingSets[handle]?.randomAddress = address
            if advertisingSets[handle]?.enabled == true { out.air.append(.advertisingChanged) }
            out.event(complete(op))
        case .leSetExtendedAdvertisingParameters:
            let (status, power) = try setExtendedAdvertisingParameters(&r, support)
            out.event(complete(op, [UInt8(bitPattern: power)], status: status))
        case .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData:
            out.event(complete(op, status: try setExtendedData(op, &r, support, air: &out.air)))
        case .leSetExtendedAdvertisingEnable:
            out.event(complete(op, status: try setExtendedAdvertisingEnable(&r, air: &out.air)))
        case .leRemoveAdvertisingSet:
            let handle = try r.readU8()
            guard let set = advertisingSets[handle] else { out.event(complete(op, status: .unknownAdvertisingIdentifier)); break }
            // §7.8.59: not while the set advertises or its periodic train runs.
            guard !set.enabled, set.periodic?.running != true else { out.event(complete(op, status: .commandDisallowed)); break }
            advertisingSets[handle] = nil
            out.event(complete(op))
        case .leClearAdvertisingSets:
            guard !advertisingSets.values.contains(where: { $0.enabled || $0.periodic?.running == true }) else {
                out.event(complete(op, status: .commandDisallowed))
                break
            }
            advertisingSets = [:]
            out.event(complete(op))
        case .leSetPeriodicAdvertisingParameters:
            out.event(complete(op, status: try setPeriodicParameters(&r)))
        case .leSetPeriodicAdvertisingData:
            out.event(complete(op, status: try setPeriodicData(&r, support, air: &out.air)))
        case .leSetPeriodicAdvertisingEnable:
            out.event(complete(op, status: try setPeriodicEnable(&r, air: &out.air)))
        default:
            return nil
        }
        return out
    }

    /// §7.8.53. Returns the status and the selected TX power.
    private mutating func setExtendedAdvertisingParameters(_ r: inout ByteReader, _ support: ExtendedAdvertisingSupport) throws(WireError) -> (HCIStatus, Int8) {
        let handle = try r.readU8()
        let properties = AdvertisingEventProperties(rawValue: try r.readU16())
        let intervalMin = try r.readU24()
        let intervalMax = try r.readU24()
        _ = try r.readU8() // channel map
        let ownType = try r.readU8()
        let peerType = try r.readU8()
        let peer = BDAddress(littleEndian: try r.readBytes(6))
        let filterPolicy = try r.readU8()
        let requestedPower = try r.readI8()
        let primary = LEPHY(rawValue: try r.readU8())
        _ = try r.readU8() // secondary max skip
        let secondary = LEPHY(rawValue: try r.readU8())
        let sid = try r.readU8()
        _ = try r.readU8() // scan request notifications
        guard handle <= 0xEF, ownType <= 3, peerType <= 1, filterPolicy <= 3, sid <= 0x0F, properties.rawValue < 0x80 else {
            return (.invalidHCICommandParameters, 0)
        }
        if advertisingSets[handle]?.enabled == true { return (.commandDisallowed, 0) }
        if advertisingSets[handle] == nil, advertisingSets.count >= Int(support.sets) { return (.memoryCapacityExceeded, 0) }
        let legacy = properties.isLegacy
        let directed = properties.contains(.directed)
        let highDuty = properties.contains(.highDutyCycleDirected)
        if legacy {
            // The legacy PDUs' combinations (§7.8.53 table): ADV_IND, ADV_DIRECT_IND (low or
            // high duty), ADV_SCAN_IND, ADV_NONCONN_IND.
            let core = properties.rawValue & 0x0F
            guard [0x03, 0x05, 0x0D, 0x02, 0x00].contains(core) else { return (.invalidHCICommandParameters, 0) }
            // Legacy PDUs carry 31 octets: a set holding more cannot become legacy (§7.8.53).
            if let set = advertisingSets[handle], set.data.count > 31 || set.scanResponse.count > 31 || set.periodic?.enabled == true {
                return (.invalidHCICommandParameters, 0)
            }
        } else {
            // Extended PDUs: not both connectable and scannable, no high duty cycle.
            if properties.contains(.connectable) && properties.contains(.scannable) || highDuty { return (.invalidHCICommandParameters, 0) }
            if properties.contains(.anonymous) && properties.contains(.connectable) { return (.invalidHCICommandParameters, 0) }
            // A set with periodic advertising stays non-connectable, non-scannable and named; a
            // set holding advertising data cannot become scannable (§7.8.53, §7.8.61).
            if let set = advertisingSets[handle] {
                if set.periodic?.enabled == true && (properties.contains(.connectable) || properties.contains(.scannable) || properties.contains(.anonymous)) {
                    return (.invalidHCICommandParameters, 0)
                }
                if properties.contains(.scannable) && !set.data.isEmpty { return (.invalidHCICommandParameters, 0) }
            }
        }
        guard primary == .le1M || primary == .leCoded, [LEPHY.le1M, .le2M, .leCoded].contains(secondary) else {
            return (.invalidHCICommandParameters, 0)
        }
        if !legacy, (primary == .leCoded || secondary == .leCoded) && !support.codedPHY { return (.unsupportedFeatureOrParameterValue, 0) }
        if !highDuty {
            guard intervalMin >= 0x20, intervalMin <= intervalMax else { return (.invalidHCICommandParameters, 0) }
        }
        let power = requestedPower == 0x7F ? txPower : min(max(requestedPower, -20), 20)
        var set = advertisingSets[handle] ?? AdvertisingSetState(
            properties: properties, interval: intervalMin, ownAddressType: ownType,
            peer: DeviceAddress(peer, type: peerType == 0 ? .public : .random), filterPolicy: filterPolicy,
            txPower: power, primaryPHY: primary, secondaryPHY: secondary, sid: sid)
        set.properties = properties
        set.interval = highDuty ? 0x20 : intervalMin
        set.ownAddressType = ownType
        set.peer = DeviceAddress(peer, type: peerType == 0 ? .public : .random)
        set.filterPolicy = directed ? 0 : filterPolicy
        set.txPower = power
        set.primaryPHY = legacy ? .le1M : primary
        set.secondaryPHY = legacy ? .le1M : secondary
        set.sid = sid
        advertisingSets[handle] = set
        return (.success, power)
    }

    /// How much advertising data one AUX_ADV_IND holds for `set`: 255 octets of payload less
    /// the extended header (length and mode 1, flags 1, AdvA 6, TargetA 6 when directed, ADI 2,
    /// TX power 1 when included, SyncInfo 18 with periodic advertising). Vol 6 Part B §2.3.4.
    static func auxAdvertisingCapacity(_ set: AdvertisingSetState) -> Int {
        var header = 1 + 1 + 2
        if !set.properties.contains(.anonymous) { header += 6 }
        if set.properties.contains(.directed) { header += 6 }
        if set.properties.contains(.includeTxPower) { header += 1 }
        if set.periodic != nil { header += 18 }
        return 255 - header
    }

    /// §7.8.54 and §7.8.55: a fragment of a set's data or scan response.
    private mutating func setExtendedData(_ op: HCIOpcode, _ r: inout ByteReader, _ support: ExtendedAdvertisingSupport,
                                          air: inout [AirAction]) throws(WireError) -> HCIStatus {
        let handle = try r.readU8()
        let rawOperation = try r.readU8()
        _ = try r.readU8() // fragment preference
        let length = Int(try r.readU8())
        let bytes = try r.readBytes(length)
        let scanResponse = op == .leSetExtendedScanResponseData
        guard let operation = AdvertisingDataOperation(rawValue: rawOperation), length <= 251 else { return .invalidHCICommandParameters }
        guard var set = advertisingSets[handle] else { return .unknownAdvertisingIdentifier }
        if operation == .unchanged {
            // Only the DID changes, for advertising data that exists (§7.8.54).
            return scanResponse || length != 0 || set.isLegacy ? .invalidHCICommandParameters : .success
        }
        if set.isLegacy {
            guard operation == .complete, length <= 31 else { return .invalidHCICommandParameters }
        }
        // A set cannot take fragments while it advertises (§7.8.54).
        if set.enabled, operation != .complete { return .commandDisallowed }
        // A scannable extended set advertises no data of its own; a non-scannable one has no
        // scan response (§7.8.54, §7.8.55).
        if !set.isLegacy {
            if !scanResponse && set.properties.contains(.scannable) && length > 0 { return .invalidHCICommandParameters }
            if scanResponse && !set.properties.contains(.scannable) && length > 0 { return .invalidHCICommandParameters }
        }
        var partial = scanResponse ? set.partialScanResponse : set.partialData
        switch operation {
        case .first, .complete: partial = bytes
        case .intermediate, .last:
            guard let earlier = partial else { return .invalidHCICommandParameters }
            partial = earlier + bytes
        case .unchanged: break
        }
        guard let gathered = partial, gathered.count <= Int(support.maximumDataLength) else {
            if scanResponse { set.partialScanResponse = nil } else { set.partialData = nil }
            advertisingSets[handle] = set
            return .memoryCapacityExceeded
        }
        // Connectable extended data must fit one AUX_ADV_IND (§7.8.54: Packet Too Long).
        if !scanResponse, set.enabled, set.properties.contains(.connectable), !set.isLegacy,
           gathered.count > Self.auxAdvertisingCapacity(set) {
            return .packetTooLong
        }
        if operation == .complete || operation == .last {
            if scanResponse {
                set.scanResponse = gathered
                set.partialScanResponse = nil
            } else {
                set.data = gathered
                set.partialData = nil
            }
        } else if scanResponse {
            set.partialScanResponse = gathered
        } else {
            set.partialData = gathered
        }
        advertisingSets[handle] = set
        if set.enabled { air.append(.advertisingChanged) }
        return .success
    }

    /// §7.8.56: enables or disables the sets listed (all of them on a disable with none listed).
    private mutating func setExtendedAdvertisingEnable(_ r: inout ByteReader, air: inout [AirAction]) throws(WireError) -> HCIStatus {
        let enable = try r.readU8()
        let count = Int(try r.readU8())
        var entries: [(handle: UInt8, duration: UInt16, maxEvents: UInt8)] = []
        for _ in 0..<count { entries.append((try r.readU8(), try r.readU16(), try r.readU8())) }
        guard enable <= 1 else { return .invalidHCICommandParameters }
        if enable == 0 && count == 0 {
            for handle in advertisingSets.keys { advertisingSets[handle]?.enabled = false }
            air.append(.advertisingChanged)
            return .success
        }
        guard count > 0, Set(entries.map(\.handle)).count == count else { return .invalidHCICommandParameters }
        for entry in entries {
            guard let set = advertisingSets[entry.handle] else { return .unknownAdvertisingIdentifier }
            guard enable == 1 else { continue }
            guard ownAddress(of: set) != nil else { return .invalidHCICommandParameters }
            if set.partialData != nil || set.partialScanResponse != nil { return .commandDisallowed }
            if !set.isLegacy && set.properties.contains(.scannable) && set.scanResponse.isEmpty { return .commandDisallowed }
            if !set.isLegacy && set.properties.contains(.connectable) && set.data.count > Self.auxAdvertisingCapacity(set) {
                return .packetTooLong
            }
            // High duty cycle directed advertising lasts 1.28 s at most, and must say how long
            // (§7.8.56).
            if set.properties.contains(.highDutyCycleDirected) && !(1...128).contains(entry.duration) {
                return .invalidHCICommandParameters
            }
        }
        for entry in entries {
            if enable == 1 {
                advertisingSets[entry.handle]?.enabled = true
                advertisingSets[entry.handle]?.duration = entry.duration == 0 ? nil : .milliseconds(10 * Int64(entry.duration))
                advertisingSets[entry.handle]?.maxEvents = entry.maxEvents
                advertisingSets[entry.handle]?.completedEvents = 0
                advertisingSets[entry.handle]?.enables += 1
                if advertisingSets[entry.handle]?.periodic?.enabled == true { startTrain(entry.handle) }
            } else {
                advertisingSets[entry.handle]?.enabled = false
            }
        }
        air.append(.advertisingChanged)
        return .success
    }

    /// §7.8.61.
    private mutating func setPeriodicParameters(_ r: inout ByteReader) throws(WireError) -> HCIStatus {
        let handle = try r.readU8()
        let intervalMin = try r.readU16()
        let intervalMax = try r.readU16()
        let properties = try r.readU16()
        guard let set = advertisingSets[handle] else { return .unknownAdvertisingIdentifier }
        if set.periodic?.running == true { return .commandDisallowed }
        // Periodic advertising needs a non-connectable, non-scannable, non-anonymous extended
        // set (§7.8.61).
        guard !set.isLegacy, !set.properties.contains(.connectable), !set.properties.contains(.scannable),
              !set.properties.contains(.anonymous), intervalMin >= 6, intervalMin <= intervalMax else {
            return .invalidHCICommandParameters
        }
        var periodic = set.periodic ?? PeriodicAdvertisingState(interval: intervalMin, includeTxPower: false)
        periodic.interval = intervalMin
        periodic.includeTxPower = properties & (1 << 6) != 0
        advertisingSets[handle]?.periodic = periodic
        return .success
    }

    /// §7.8.62.
    private mutating func setPeriodicData(_ r: inout ByteReader, _ support: ExtendedAdvertisingSupport,
                                          air: inout [AirAction]) throws(WireError) -> HCIStatus {
        let handle = try r.readU8()
        let rawOperation = try r.readU8()
        let length = Int(try r.readU8())
        let bytes = try r.readBytes(length)
        guard let operation = AdvertisingDataOperation(rawValue: rawOperation), operation != .unchanged, length <= 252 else {
            return .invalidHCICommandParameters
        }
        guard let set = advertisingSets[handle] else { return .unknownAdvertisingIdentifier }
        guard var periodic = set.periodic else { return .commandDisallowed }
        if periodic.enabled, operation != .complete { return .commandDisallowed }
        var partial = periodic.partialData
        switch operation {
        case .first, .complete: partial = bytes
        default:
            guard let earlier = partial else { return .invalidHCICommandParameters }
            partial = earlier + bytes
        }
        guard let gathered = partial, gathered.count <= Int(support.maximumDataLength) else {
            advertisingSets[handle]?.periodic?.partialData = nil
            return .memoryCapacityExceeded
        }
        if operation == .complete || operation == .last {
            periodic.data = gathered
            periodic.partialData = nil
        } else {
            periodic.partialData = gathered
        }
        advertisingSets[handle]?.periodic = periodic
        if periodic.running { air.append(.advertisingChanged) }
        return .success
    }

    /// §7.8.63.
    private mutating func setPeriodicEnable(_ r: inout ByteReader, air: inout [AirAction]) throws(WireError) -> HCIStatus {
        let enable = try r.readU8()
        let handle = try r.readU8()
        guard enable <= 3 else { return .invalidHCICommandParameters }
        guard let set = advertisingSets[handle] else { return .unknownAdvertisingIdentifier }
        guard let periodic = set.periodic else { return .commandDisallowed }
        if enable & 1 == 1 {
            if periodic.partialData != nil { return .commandDisallowed }
            advertisingSets[handle]?.periodic?.enabled = true
            if set.enabled { startTrain(handle) }
        } else {
            advertisingSets[handle]?.periodic?.enabled = false
            advertisingSets[handle]?.periodic?.running = false
        }
        air.append(.advertisingChanged)
        return .success
    }

    /// Set `handle`'s periodic train goes on air, if it is not already: a new train, with its
    /// own serial.
    private mutating func startTrain(_ handle: UInt8) {
        guard advertisingSets[handle]?.periodic?.running == false else { return }
        advertisingSets[handle]?.periodic?.running = true
        advertisingSets[handle]?.periodic?.serial = nextTrainSerial
        nextTrainSerial += 1
    }

    // MARK: What the medium sees

    /// The address a set goes on air with: public, or the set's own random address (§7.8.52);
    /// the RPA types fall back to those, as with an empty resolving list.
    func ownAddress(of set: AdvertisingSetState) -> DeviceAddress? {
        if set.ownAddressType & 0x01 == 0 { return DeviceAddress(publicAddress, type: .public) }
        return set.randomAddress.map { DeviceAddress($0, type: .random) }
    }

    /// What other controllers hear of set `handle` while it is enabled.
    public func advertisement(ofSet handle: UInt8) -> VirtualAdvertisement? {
        guard let set = advertisingSets[handle], set.enabled, let address = ownAddress(of: set) else { return nil }
        let type: AdvertisingType
        let p = set.properties
        if p.contains(.highDutyCycleDirected) {
            type = .connectableDirectedHighDuty
        } else if p.contains(.directed) {
            type = .connectableDirectedLowDuty
        } else if p.contains(.connectable) {
            type = .connectableUndirected
        } else if p.contains(.scannable) {
            type = .scannableUndirected
        } else {
            type = .nonConnectableUndirected
        }
        var adv = VirtualAdvertisement(address: address, type: type, data: set.data, scanResponse: set.scanResponse,
                                       interval: .microseconds(625 * Int64(set.interval)))
        adv.directTarget = p.contains(.directed) ? set.peer : nil
        adv.filterPolicy = set.filterPolicy
        adv.filterAcceptList = filterAcceptList
        adv.setHandle = handle
        if !set.isLegacy {
            adv.extended = ExtendedAdvertisingPDUs(
                properties: AdvertisingEventProperties(rawValue: p.rawValue & 0x0F), sid: set.sid,
                primaryPHY: set.primaryPHY, secondaryPHY: set.secondaryPHY,
                txPower: p.contains(.includeTxPower) ? set.txPower : nil,
                periodicInterval: set.periodic?.running == true ? set.periodic?.interval ?? 0 : 0,
                periodicSerial: set.periodic?.running == true ? set.periodic?.serial ?? 0 : 0,
                anonymous: p.contains(.anonymous))
        }
        return adv
    }

    /// The handles of the sets now enabled.
    public var enabledSetHandles: [UInt8] { advertisingSets.filter { $0.value.enabled }.keys.sorted() }

    /// The periodic train of set `handle`, while it runs.
    public func periodicTrain(ofSet handle: UInt8) -> VirtualPeriodicTrain? {
        guard let set = advertisingSets[handle], let periodic = set.periodic, periodic.running,
              let address = ownAddress(of: set) else { return nil }
        return VirtualPeriodicTrain(address: address, sid: set.sid, phy: set.secondaryPHY, interval: periodic.interval,
                                    data: periodic.data, txPower: periodic.includeTxPower ? set.txPower : nil, serial: periodic.serial)
    }

    /// The handles of the sets whose periodic trains run.
    public var runningTrainHandles: [UInt8] { advertisingSets.filter { $0.value.periodic?.running == true }.keys.sorted() }

    /// Set `handle`'s next advertising event is due, `elapsed` after its enable. Returns nil
    /// when the event goes out (counted); otherwise the set has ended, and what its host hears:
    /// LE Advertising Set Terminated when its duration (status Advertising Timeout) or event
    /// limit (Limit Reached) ran out (§7.8.56, §7.7.65.18), nothing when it was already off.
    mutating func setEventDue(_ handle: UInt8, elapsed: Duration) -> [HostBoundPacket]? {
        guard let set = advertisingSets[handle], set.enabled else { return [] }
        let status: HCIStatus
        if let limit = set.duration, elapsed >= limit {
            status = .advertisingTimeout
        } else if set.maxEvents > 0, set.completedEvents >= Int(set.maxEvents) {
            status = .limitReached
        } else {
            advertisingSets[handle]?.completedEvents += 1
            return nil
        }
        advertisingSets[handle]?.enabled = false
        guard leEventEnabled(bit: 17) else { return [] }
        return [.event(.le(.advertisingSetTerminated(LEAdvertisingSetTerminated(
            status: status, advertisingHandle: handle, connectionHandle: 0,
            completedEvents: UInt8(clamping: set.completedEvents)))))]
    }

    /// The Supported_Commands bits (§6.27): the legacy set, and with Bluetooth 5 advertising
    /// the extended advertising, scanning, initiating and sync commands this controller runs.
    var supportedCommandBits: [UInt8] {
        var octets = configuration.extendedAdvertising != nil ? extendedCommandBits : Self.supportedCommands
        for opcode in configuration.lacksCommands {
            guard let bit = SupportedCommandBit.of(opcode) else { continue }
            octets[bit.octet] &= ~(1 << UInt8(bit.bit))
        }
        return octets
    }

    private var extendedCommandBits: [UInt8] {
        var octets = Self.supportedCommands
        let bits: [(Int, Int)] = [
            (36, 1), (36, 2), (36, 3), (36, 4), (36, 5), (36, 6), (36, 7), // Set Random Address ... Read Number of Sets
            (37, 0), (37, 1), (37, 2), (37, 3), (37, 4), // Remove, Clear, Periodic Parameters/Data/Enable
            (37, 5), (37, 6), (37, 7), // Extended Scan Parameters/Enable, Extended Create Connection
            (38, 0), (38, 1), (38, 2), (38, 3), (38, 4), (38, 5), (38, 6), // Create Sync ... Periodic Advertiser List Size
            (40, 6), (40, 7), (41, 0), (41, 1), // Sync Transfer, Set Info Transfer, (Default) Sync Transfer Parameters
        ]
        for (octet, bit) in bits { octets[octet] |= 1 << UInt8(bit) }
        return octets
    }

    /// The LE features (Vol 6 Part B §4.6), with Bluetooth 5 advertising: LE Coded PHY (bit 11),
    /// LE Extended Advertising (12), LE Periodic Advertising (13), Channel Selection Algorithm
    /// #2 (14), Periodic Advertising Sync Transfer sender and recipient (24, 25).
    /// Less what the configuration says it lacks (`lacksLEFeatures`, a profile's cut-off).
    var leFeatureSet: LESupportedFeatures {
        var features = Self.leFeatures
        if let support = configuration.extendedAdvertising {
            // Bits 24 and 25: Periodic Advertising Sync Transfer, sender and recipient.
            features.formUnion([.leExtendedAdvertising, .lePeriodicAdvertising, .channelSelectionAlgorithm2,
                                LESupportedFeatures(rawValue: 1 << 24 | 1 << 25)])
            if support.codedPHY { features.insert(.leCodedPHY) }
        }
        return features.subtracting(configuration.lacksLEFeatures)
    }

    /// `leFeatureSet` as LE Read Local Supported Features carries it: 8 octets, least
    /// significant first.
    var leFeatureBits: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: leFeatureSet.rawValue >> UInt64(8 * $0)) } }

    /// Whether this controller has an LE feature (as `leFeatureSet` lists it).
    func hasLEFeature(_ feature: LESupportedFeatures) -> Bool { leFeatureSet.contains(feature) }

    /// The PHYs this controller's radio has: LE 1M, and LE 2M and LE Coded when it lists them.
    var physOnAir: LEPHYSet { leFeatureSet.phys }

    /// Whether one more link fits (`VirtualControllerConfiguration.maximumConnections`).
    var hasRoomForLink: Bool {
        configuration.maximumConnections.map { connections.count < $0 } ?? true
    }
}

import BLEHCI
import BLEWire

/// Names one periodic train on a medium: the advertiser's controller and its set.
public struct PeriodicTrainKey: Hashable, Sendable {
    public var controller: Int
    public var handle: UInt8
    /// `VirtualPeriodicTrain.serial`: a train started later on the same set is another one.
    public var serial: UInt64
}

/// What LE Periodic Advertising Create Sync asked for (§7.8.67).
public struct PeriodicSyncRequest: Hashable, Sendable {
    /// Options bit 0: sync to any advertiser on the Periodic Advertiser List.
    public var useList: Bool
    /// Options bit 1: reports start disabled.
    public var reportsDisabled: Bool
    public var sid: UInt8
    public var advertiser: DeviceAddress
    public var timeout: Duration
    /// The train whose SyncInfo was heard: the sync is made at its next AUX_SYNC_IND.
    public var found: PeriodicTrainKey?
    /// The advertiser's address as the scan reported it (an identity when resolved).
    public var advertiserAsSeen: DeviceAddress?
    /// When the AUX_ADV_IND carrying the SyncInfo had been received: the train's events
    /// from then on are the ones it points to.
    public var foundAt: Duration?
}

/// One periodic sync of a scanner (§7.7.65.14).
public struct PeriodicSyncState: Hashable, Sendable {
    public var train: PeriodicTrainKey
    public var advertiser: DeviceAddress
    public var sid: UInt8
    /// Sync_Timeout: the sync is lost when no AUX_SYNC_IND arrives for this long.
    public var timeout: Duration
    public var reports: Bool
}

/// An entry of the Periodic Advertiser List (§7.8.70).
public struct PeriodicAdvertiserListEntry: Hashable, Sendable {
    public var address: DeviceAddress
    public var sid: UInt8
}

/// What the duplicate filter of an extended scan remembers (§7.8.65): an advertiser's set and
/// its data (the Advertising DID changes with the data).
struct ExtendedReportKey: Hashable {
    var address: DeviceAddress
    var sid: UInt8?
    var scanResponse: Bool
    var data: [UInt8]
}

extension VirtualController {
    /// The most advertising data one LE Extended Advertising Report event carries: 255 octets
    /// of parameters less the subevent code, the report count and 24 octets of report fields
    /// (§7.7.65.13).
    static let extendedReportDataLimit = 229
    /// The same for LE Periodic Advertising Report: 255 less 8 (§7.7.65.15).
    static let periodicReportDataLimit = 247

    /// `data` cut into reports of at most `limit` octets; one empty report for no data.
    static func pieces(of data: [UInt8], limit: Int) -> [[UInt8]] {
        guard !data.isEmpty else { return [[]] }
        return stride(from: 0, to: data.count, by: limit).map { Array(data[$0..<min($0 + limit, data.count)]) }
    }

    /// Extended scanning, initiating and periodic sync (§7.8.64–§7.8.73); nil for any other
    /// command, or on a controller without Bluetooth 5 advertising.
    mutating func handleExtendedScanCommand(_ command: HCICommand, _ r: inout ByteReader) throws(WireError) -> ControllerOutput? {
        guard let support = configuration.extendedAdvertising else { return nil }
        var out = ControllerOutput()
        let op = command.opcode
        switch op {
        case .leSetExtendedScanParameters:
            let ownType = try r.readU8()
            let filterPolicy = try r.readU8()
            let phys = LEPHYSet(rawValue: try r.readU8())
            var entries: [LEPHY: Bool] = [:]
            for phy in [LEPHY.le1M, .leCoded] where phys.contains(phy == .le1M ? .le1M : .leCoded) {
                let type = try r.readU8()
                let interval = try r.readU16()
                let window = try r.readU16()
                guard type <= 1, window <= interval, interval >= 4 else { out.event(complete(op, status: .invalidHCICommandParameters)); return out }
                entries[phy] = type == 1
            }
            if isScanning { out.event(complete(op, status: .commandDisallowed)); break }
            guard !entries.isEmpty, phys.rawValue & ~0x05 == 0, ownType <= 3, filterPolicy <= 3 else {
                out.event(complete(op, status: .invalidHCICommandParameters))
                break
            }
            if phys.contains(.leCoded) && !support.codedPHY { out.event(complete(op, status: .unsupportedFeatureOrParameterValue)); break }
            extendedScanPHYs = entries
            scanOwnAddressType = ownType
            scanFilterPolicy = filterPolicy
            out.event(complete(op))
        case .leSetExtendedScanEnable:
            let enable = try r.readU8()
            let duplicates = try r.readU8()
            let duration = try r.readU16()
            let rawPeriod = try r.readU16()
            // §7.8.65: the Period is ignored without a Duration, and must be longer than it;
            // Filter_Duplicates 2 needs both; a disable ignores all of them.
            let period = duration == 0 ? 0 : rawPeriod
            guard enable <= 1, enable == 0 || duplicates <= 2, enable == 0 || duplicates != 2 || period != 0,
                  enable == 0 || period == 0 || Int(duration) * 10 < Int(period) * 1280 else {
                out.event(complete(op, status: .invalidHCICommandParameters))
                break
            }
            if enable == 1 {
                guard ownAddress(type: scanOwnAddressType) != nil, !extendedScanPHYs.isEmpty else {
                    out.event(complete(op, status: .invalidHCICommandParameters))
                    break
                }
                if !isScanning { reportedExtended = [] }
                isScanning = true
                extendedScanning = true
                filterDuplicates = duplicates != 0
                resetDuplicatesEachPeriod = duplicates == 2
                scanDuration = duration == 0 ? nil : .milliseconds(10 * Int64(duration))
                scanPeriod = period == 0 ? nil : .milliseconds(1280 * Int64(period))
                scanWindowOpen = true
            } else {
                isScanning = false
                scanDuration = nil
                scanPeriod = nil
                scanWindowOpen = true
            }
            out.event(complete(op))
            out.air.append(.scanningChanged)
        case .leExtendedCreateConnection:
            extendedCreateConnection(&r, support, out: &out)
        case .lePeriodicAdvertisingCreateSync:
            let options = try r.readU8()
            let sid = try r.readU8()
            let type = try r.readU8()
            let address = BDAddress(littleEndian: try r.readBytes(6))
            _ = try r.readU16() // skip
            let timeout = try r.readU16()
            _ = try r.readU8() // CTE type
            if pendingSync != nil { out.event(status(op, .commandDisallowed)); break }
            guard options <= 3, sid <= 0x0F, type <= 3, (0x000A...0x4000).contains(timeout) else {
                out.event(status(op, .invalidHCICommandParameters))
                break
            }
            if options & 1 == 1 && periodicAdvertiserList.isEmpty { out.event(status(op, .commandDisallowed)); break }
            pendingSync = PeriodicSyncRequest(useList: options & 1 == 1, reportsDisabled: options & 2 != 0, sid: sid,
                                              advertiser: DeviceAddress(address, type: type & 1 == 0 ? .public : .random),
                                              timeout: .milliseconds(10 * Int64(timeout)))
            out.event(status(op, .success))
        case .lePeriodicAdvertisingCreateSyncCancel:
            guard let request = pendingSync else { out.event(complete(op, status: .commandDisallowed)); break }
            pendingSync = nil
            out.event(complete(op))
            // §7.8.68: the attempt ends with Sync Established, Operation Cancelled by Host.
            if leEventEnabled(bit: 13) {
                out.event(.le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(
                    status: .operationCancelledByHost, syncHandle: 0, sid: request.sid, advertiser: request.advertiser,
                    phy: .le1M, interval: 0, clockAccuracy: 0))))
            }
        case .lePeriodicAdvertisingTerminateSync:
            let handle = try r.readU16() & 0x0FFF
            guard syncs.removeValue(forKey: handle) != nil else { out.event(complete(op, status: .unknownAdvertisingIdentifier)); break }
            out.event(complete(op))
        case .leAddDeviceToPeriodicAdvertiserList, .leRemoveDeviceFromPeriodicAdvertiserList:
            let type = try r.readU8()
            let address = BDAddress(littleEndian: try r.readBytes(6))
            let sid = try r.readU8()
            guard type <= 1, sid <= 0x0F else { out.event(complete(op, status: .invalidHCICommandParameters)); break }
            // §7.8.70–§7.8.72: not while a Create Sync is pending.
            if pendingSync != nil { out.event(complete(op, status: .commandDisallowed)); break }
            let entry = PeriodicAdvertiserListEntry(address: DeviceAddress(address, type: type == 0 ? .public : .random), sid: sid)
            if op == .leAddDeviceToPeriodicAdvertiserList {
                if periodicAdvertiserList.contains(entry) { out.event(complete(op, status: .invalidHCICommandParameters)); break }
                if periodicAdvertiserList.count >= Int(support.periodicAdvertiserListSize) {
                    out.event(complete(op, status: .memoryCapacityExceeded))
                    break
                }
                periodicAdvertiserList.insert(entry)
            } else if periodicAdvertiserList.remove(entry) == nil {
                out.event(complete(op, status: .unknownAdvertisingIdentifier))
                break
            }
            out.event(complete(op))
        case .leClearPeriodicAdvertiserList:
            if pendingSync != nil { out.event(complete(op, status: .commandDisallowed)); break }
            periodicAdvertiserList = []
            out.event(complete(op))
        case .leReadPeriodicAdvertiserListSize:
            out.event(complete(op, [support.periodicAdvertiserListSize]))
        default:
            return nil
        }
        return out
    }

    /// LE Extended Create Connection [v1] (§7.8.66): one 16-octet entry per initiating PHY, in
    /// the order LE 1M, LE 2M, LE Coded; LE 1M and LE Coded are scanned, LE 2M only gives the
    /// parameters of a connection that starts on it.
    private mutating func extendedCreateConnection(_ r: inout ByteReader, _ support: ExtendedAdvertisingSupport, out: inout ControllerOutput) {
        let op = HCIOpcode.leExtendedCreateConnection
        do {
            let filterPolicy = try r.readU8()
            let ownType = try r.readU8()
            let peerType = try r.readU8()
            let peer = BDAddress(littleEndian: try r.readBytes(6))
            let phys = LEPHYSet(rawValue: try r.readU8())
            var parameters: [LEPHY: ConnectionParameters] = [:]
            var first: ConnectionParameters?
            for (bit, phy) in [(LEPHYSet.le1M, LEPHY.le1M), (.le2M, .le2M), (.leCoded, .leCoded)] where phys.contains(bit) {
                try r.skip(4) // scan interval and window
                let intervalMin = try r.readU16()
                let intervalMax = try r.readU16()
                let latency = try r.readU16()
                let timeout = try r.readU16()
                try r.skip(4) // CE lengths
                guard Self.validConnectionParameters(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: timeout) else {
                    out.event(status(op, .invalidHCICommandParameters))
                    return
                }
                let p = ConnectionParameters(interval: intervalMin, latency: latency, supervisionTimeout: timeout)
                parameters[phy] = p
                first = first ?? p
            }
            if initiation != nil {
                out.event(status(op, .commandDisallowed))
                return
            }
            guard hasRoomForLink else {
                out.event(status(op, .connectionLimitExceeded))
                return
            }
            let scanned = phys.intersection([.le1M, .leCoded])
            guard let base = first, !scanned.isEmpty, phys.rawValue & ~0x07 == 0, filterPolicy <= 1, peerType <= 3,
                  let own = ownAddress(type: ownType) else {
                out.event(status(op, .invalidHCICommandParameters))
                return
            }
            if phys.contains(.leCoded) && !support.codedPHY {
                out.event(status(op, .unsupportedFeatureOrParameterValue))
                return
            }
            let target = filterPolicy == 1 ? nil : DeviceAddress(peer, type: AddressType(rawValue: peerType) ?? .public)
            initiation = Initiation(peer: target, ownAddress: own, interval: base.interval, latency: base.latency,
                                    supervisionTimeout: base.supervisionTimeout, phys: scanned, extended: true,
                                    parametersByPHY: parameters)
            out.event(status(op, .success))
            out.air.append(.initiate)
        } catch {
            out.event(status(op, .invalidHCICommandParameters))
        }
    }

    // MARK: Hearing extended advertising

    /// Whether this controller's extended scan listens on the primary PHY of `adv`, and
    /// whether actively.
    func extendedScan(hears adv: VirtualAdvertisement) -> (hears: Bool, active: Bool) {
        let primary = adv.extended?.primaryPHY ?? .le1M
        guard let active = extendedScanPHYs[primary == .leCoded ? .leCoded : .le1M] else { return (false, false) }
        return (true, active)
    }

    /// An advertising event heard by an extended scan (§7.7.65.13): the advertising data and,
    /// when scanning actively a scannable advertiser, the scan response, each in LE Extended
    /// Advertising Reports of at most 229 octets, all but the last marked "more to come".
    /// `received`: how much of the chained data arrived when an AUX_CHAIN_IND was lost (the
    /// last report is then marked truncated); nil when all of it did.
    mutating func hearExtended(_ adv: VirtualAdvertisement, rssi: Int8, received: Int?) -> [HostBoundPacket] {
        guard isScanning, extendedScanning, scanWindowOpen, leEventEnabled(bit: 12) else { return [] }
        let scan = extendedScan(hears: adv)
        guard scan.hears else { return [] }
        if let target = adv.directTarget, target != scannerAddress { return [] }
        if scanFilterPolicy & 0x01 != 0, !filterAcceptList.contains(adv.address.withPeerType) { return [] }
        let ext = adv.extended
        let anonymous = ext?.anonymous == true
        // An anonymous advertiser is reported without an address (Address_Type 0xFF, §7.7.65.13).
        guard let heard = anonymous ? DeviceAddress(.zero, type: .public) : reported(adv.address)?.address else { return [] }
        var packets: [HostBoundPacket] = []
        func add(_ properties: AdvertisingEventProperties, _ data: [UInt8], scanResponse: Bool, truncatedAt: Int?) {
            if filterDuplicates {
                let key = ExtendedReportKey(address: heard, sid: ext?.sid, scanResponse: scanResponse, data: data)
                guard !reportedExtended.contains(key) else { return }
                reportedExtended.insert(key)
            }
            let kept = truncatedAt.map { Array(data.prefix($0)) } ?? data
            let pieces = Self.pieces(of: kept, limit: Self.extendedReportDataLimit)
            for (i, piece) in pieces.enumerated() {
                var p = properties
                p.dataStatus = i < pieces.count - 1 ? .incompleteMoreToCome : truncatedAt == nil ? .complete : .incompleteTruncated
                let report = LEAdvertisingReport(
                    properties: p, address: heard, isAnonymous: anonymous, primaryPHY: ext?.primaryPHY ?? .le1M, secondaryPHY: ext?.secondaryPHY,
                    advertisingSID: ext?.sid, txPower: ext?.txPower ?? LEAdvertisingReport.unavailable, rssi: rssi,
                    periodicAdvertisingInterval: ext?.periodicInterval ?? 0,
                    directAddress: adv.directTarget == nil ? nil : scannerAddress, data: piece)
                packets.append(.event(.le(.extendedAdvertisingReport([report]))))
            }
        }
        let scannable = adv.isScannable
        if let ext {
            // A scannable extended set advertises no data: its AUX_ADV_IND is reported empty.
            add(ext.properties, adv.data, scanResponse: false, truncatedAt: scannable ? nil : received)
        } else {
            add(adv.reportType.properties, adv.data, scanResponse: false, truncatedAt: nil)
        }
        if scan.active && scannable && Self.advertiser(adv, accepts: scannerAddress, bit: 0x01) {
            var properties: AdvertisingEventProperties = ext == nil ? [.legacy, .scannable, .scanResponse] : [.scannable, .scanResponse]
            if adv.isConnectable { properties.insert(.connectable) }
            add(properties, adv.scanResponse, scanResponse: true, truncatedAt: ext == nil ? nil : received)
        }
        return packets
    }

    /// A pending Create Sync heard the SyncInfo of `train` in `adv`'s AUX_ADV_IND (Vol 6 Part B
    /// §4.4.2.12, from an extended scan on the set's primary PHY): the controller listens for
    /// the train's next AUX_SYNC_IND (`establishPendingSync`).
    mutating func heardSyncInfo(of train: PeriodicTrainKey, in adv: VirtualAdvertisement, receivedAt: Duration) {
        // A later SyncInfo (another train, the first one gone) replaces an earlier one.
        guard isScanning, extendedScanning, scanWindowOpen, extendedScan(hears: adv).hears, let request = pendingSync,
              request.found != train, let ext = adv.extended, ext.periodicInterval > 0, !ext.anonymous else { return }
        let advertiser = adv.address.withPeerType
        if request.useList {
            guard periodicAdvertiserList.contains(PeriodicAdvertiserListEntry(address: advertiser, sid: ext.sid)) else { return }
        } else {
            guard request.advertiser.withPeerType == advertiser, request.sid == ext.sid else { return }
        }
        guard !syncs.values.contains(where: { $0.train == train }) else { return }
        let seen = reported(adv.address)?.address ?? adv.address
        pendingSync?.found = train
        pendingSync?.advertiserAsSeen = seen
        pendingSync?.foundAt = receivedAt
    }

    /// The first AUX_SYNC_IND of the train a pending Create Sync found: the sync is made (LE
    /// Periodic Advertising Sync Established, §7.7.65.14, before that event's reports).
    /// Returns its handle and timeout, and what the host hears; nil when no Create Sync waits
    /// for this train.
    mutating func establishPendingSync(_ train: PeriodicTrainKey, _ t: VirtualPeriodicTrain,
                                      at time: Duration) -> (sync: UInt16, timeout: Duration, toHost: [HostBoundPacket])? {
        guard let request = pendingSync, request.found == train, time >= request.foundAt ?? time else { return nil }
        let handle = allocateSyncHandle()
        pendingSync = nil
        syncs[handle] = PeriodicSyncState(train: train, advertiser: t.address.withPeerType, sid: t.sid, timeout: request.timeout,
                                          reports: !request.reportsDisabled)
        guard leEventEnabled(bit: 13) else { return (handle, request.timeout, []) }
        return (handle, request.timeout, [.event(.le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(
            status: .success, syncHandle: handle, sid: t.sid, advertiser: request.advertiserAsSeen ?? t.address, phy: t.phy,
            interval: t.interval, clockAccuracy: 0))))])
    }

    /// A free Sync_Handle (0x0000...0x0EFF), counting up from the last one given.
    mutating func allocateSyncHandle() -> UInt16 {
        var handle = nextSyncHandle
        while syncs[handle] != nil { handle = handle >= 0x0EFF ? 0 : handle + 1 }
        nextSyncHandle = handle >= 0x0EFF ? 0 : handle + 1
        return handle
    }

    /// The syncs following `train`.
    func syncHandles(following train: PeriodicTrainKey) -> [UInt16] {
        syncs.filter { $0.value.train == train }.keys.sorted()
    }

    /// One periodic event of `train` heard (AUX_SYNC_IND and its chain): a report per 247
    /// octets for each sync with reports on (§7.7.65.15). `received` as in `hearExtended`.
    func hearPeriodic(_ train: PeriodicTrainKey, _ t: VirtualPeriodicTrain, rssi: Int8, received: Int?) -> [HostBoundPacket] {
        guard leEventEnabled(bit: 14) else { return [] }
        var packets: [HostBoundPacket] = []
        let kept = received.map { Array(t.data.prefix($0)) } ?? t.data
        let pieces = Self.pieces(of: kept, limit: Self.periodicReportDataLimit)
        for handle in syncHandles(following: train) where syncs[handle]?.reports == true {
            for (i, piece) in pieces.enumerated() {
                let status: AdvertisingDataStatus = i < pieces.count - 1 ? .incompleteMoreToCome : received == nil ? .complete : .incompleteTruncated
                packets.append(.event(.le(.periodicAdvertisingReport(LEPeriodicAdvertisingReport(
                    syncHandle: handle, txPower: t.txPower ?? LEAdvertisingReport.unavailable, rssi: rssi,
                    dataStatus: status, data: piece)))))
            }
        }
        return packets
    }

    /// No AUX_SYNC_IND for the sync's timeout: LE Periodic Advertising Sync Lost (§7.7.65.16).
    mutating func syncLost(_ handle: UInt16) -> [HostBoundPacket] {
        guard syncs.removeValue(forKey: handle) != nil, leEventEnabled(bit: 15) else { return [] }
        return [.event(.le(.periodicAdvertisingSyncLost(syncHandle: handle)))]
    }

    /// The extended scan's Scan_Duration ran out. Without a period scanning stops with LE Scan
    /// Timeout (§7.7.65.17); with one the receiver rests until the period ends, then listens
    /// for the duration again, the duplicate filter reset when Filter_Duplicates was 2
    /// (§7.8.65). Returns what the host hears and when the next change is due, from now.
    mutating func scanDurationEnded() -> (toHost: [HostBoundPacket], next: Duration?) {
        guard isScanning, let duration = scanDuration else { return ([], nil) }
        guard let period = scanPeriod else {
            isScanning = false
            scanDuration = nil
            guard leEventEnabled(bit: 16) else { return ([], nil) }
            return ([.event(.le(.scanTimeout))], nil)
        }
        if scanWindowOpen {
            scanWindowOpen = false
            return ([], period - duration)
        }
        scanWindowOpen = true
        if resetDuplicatesEachPeriod { reportedExtended = [] }
        return ([], duration)
    }
}

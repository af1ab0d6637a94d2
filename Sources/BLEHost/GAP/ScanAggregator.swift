import BLEWire

/// What kind of advertising PDU a report came from. Core spec Vol 4 Part E §7.7.65.2 (legacy
/// Event_Type) and Vol 6 Part B §2.3.
public enum AdvertisingEventKind: Sendable, Hashable {
    /// ADV_IND: connectable and scannable undirected.
    case connectableUndirected
    /// ADV_DIRECT_IND: connectable directed.
    case connectableDirected
    /// Connectable undirected and not scannable: extended advertising only (AUX_ADV_IND with
    /// the connectable mode, Vol 6 Part B §2.3.1.4), so no scan response is waited for.
    case connectableNonScannable
    /// ADV_SCAN_IND: scannable, not connectable.
    case scannableUndirected
    /// ADV_NONCONN_IND: neither.
    case nonConnectable
    /// SCAN_RSP: the answer to our scan request.
    case scanResponse

    /// Whether the advertiser accepts a connection request (ADV_IND, ADV_DIRECT_IND).
    public var isConnectable: Bool { self == .connectableUndirected || self == .connectableDirected || self == .connectableNonScannable }
    /// Whether an active scanner may send a scan request for a scan response (ADV_IND, ADV_SCAN_IND).
    public var isScannable: Bool { self == .connectableUndirected || self == .scannableUndirected }
}

/// One advertising report as the GAP layer needs it, independent of which HCI event carried it.
public struct AdvertisingReportInput: Sendable, Hashable {
    public var kind: AdvertisingEventKind
    public var address: DeviceAddress
    public var data: [UInt8]
    /// nil when the controller could not measure it (127, Vol 4 Part E §7.7.65.2).
    public var rssi: Int8?

    public init(kind: AdvertisingEventKind, address: DeviceAddress, data: [UInt8], rssi: Int8?) {
        self.kind = kind
        self.address = address
        self.data = data
        self.rssi = rssi
    }
}

/// Which advertisements a scan reports.
public struct ScanFilter: Sendable, Hashable {
    /// Report only devices advertising at least one of these services (empty: any).
    public var serviceUUIDs: [BluetoothUUID]
    /// Report only devices whose name contains this text, case-insensitively.
    public var nameContains: String?
    /// Report only devices heard at this RSSI (dBm) or stronger.
    public var minimumRSSI: Int?
    /// Report a device again every time it is heard, not only when its data changes.
    public var allowDuplicates: Bool

    /// A filter; with the defaults it lets every device through, once per change of its data.
    /// All the conditions given must hold.
    public init(serviceUUIDs: [BluetoothUUID] = [], nameContains: String? = nil, minimumRSSI: Int? = nil, allowDuplicates: Bool = false) {
        self.serviceUUIDs = serviceUUIDs
        self.nameContains = nameContains
        self.minimumRSSI = minimumRSSI
        self.allowDuplicates = allowDuplicates
    }

    /// Whether `device` passes: one of `serviceUUIDs` advertised (in a service list or as service
    /// data), the name containing `nameContains`, the RSSI at least `minimumRSSI`. A device with
    /// no name or no RSSI fails the conditions on them. `allowDuplicates` is not checked here.
    public func matches(_ device: ScannedDevice) -> Bool {
        if !serviceUUIDs.isEmpty {
            let advertised = Set(device.advertisement.serviceUUIDs + device.advertisement.serviceData.map(\.uuid))
            if !serviceUUIDs.contains(where: advertised.contains) { return false }
        }
        if let text = nameContains, !text.isEmpty {
            guard let name = device.advertisement.localName, name.lowercased().contains(text.lowercased()) else { return false }
        }
        if let minimum = minimumRSSI {
            guard let rssi = device.rssi, Int(rssi) >= minimum else { return false }
        }
        return true
    }
}

/// A device as a scan knows it: the advertisement merged with its scan response, the last RSSI,
/// and when it was last heard, so a list can age out devices that went quiet.
public struct ScannedDevice: Sendable, Hashable {
    // The stored properties are in this order to leave no padding between them: a device is
    // copied on every delivery, and one larger than 128 bytes is copied by a call to `memcpy`
    // (`ble-bench scan`).
    /// The advertiser's address and type (identifies the device in `connect`).
    public var address: DeviceAddress
    /// The signal strength of the last report in dBm; nil when the controller could not measure it.
    public var rssi: Int8?
    /// Whether the last advertisement accepted connections.
    public var isConnectable: Bool
    /// True once a scan response has been merged in.
    public var hasScanResponse: Bool
    /// Advertising data merged with the latest scan response.
    public var advertisement: AdvertisingData
    /// Time of the last report (the host clock's `now`, from its origin).
    public var lastSeen: Duration
    /// Time of the first report in this scan (the host clock's `now`).
    public var firstSeen: Duration
    /// What the last advertisement's extended report said (its set, PHYs, transmit power,
    /// periodic advertising); nil when it was a legacy advertisement.
    public var extended: ExtendedAdvertisingInfo? {
        get { ExtendedAdvertisingInfo(packed: extendedPacked & ~Self.truncatedBit) }
        set { extendedPacked = (newValue?.packed ?? 0) | extendedPacked & Self.truncatedBit }
    }
    /// The controller cut the advertising data or the scan response short (an extended
    /// advertisement whose chain it lost, Vol 4 Part E §7.7.65.13): `advertisement` holds only
    /// what arrived.
    public var isTruncated: Bool {
        get { extendedPacked & Self.truncatedBit != 0 }
        set { extendedPacked = newValue ? extendedPacked | Self.truncatedBit : extendedPacked & ~Self.truncatedBit }
    }

    /// `extended` packed in one word (`ExtendedAdvertisingInfo.packed`), with `isTruncated` in
    /// `truncatedBit`: the device is copied on every delivery, and one word more is what it
    /// costs.
    var extendedPacked: UInt64 = 0
    /// The identity address of the bonded device behind `address`, when `address` is a
    /// resolvable private address one of its IRKs resolves (Core spec Vol 3 Part C §10.8.2), or
    /// the controller resolved it; nil otherwise. Connecting to it reaches the device.
    public var identity: DeviceAddress?
    /// The bit of `extendedPacked` that is `isTruncated` (above the extended fields').
    static var truncatedBit: UInt64 { 1 << 63 }

    /// A device as a scan reports it. Scans make these; the initializer is for code that shows
    /// devices to be tried on fixed input.
    public init(address: DeviceAddress, advertisement: AdvertisingData, rssi: Int8?, isConnectable: Bool,
                lastSeen: Duration, firstSeen: Duration, hasScanResponse: Bool,
                extended: ExtendedAdvertisingInfo? = nil, isTruncated: Bool = false) {
        self.extendedPacked = (extended?.packed ?? 0) | (isTruncated ? Self.truncatedBit : 0)
        self.address = address
        self.advertisement = advertisement
        self.rssi = rssi
        self.isConnectable = isConnectable
        self.lastSeen = lastSeen
        self.firstSeen = firstSeen
        self.hasScanResponse = hasScanResponse
    }
}

/// Merges advertising reports into devices and decides which to report. Sans-IO: the owner feeds
/// reports with the time and gets back the devices to deliver.
///
/// Active scanning (Core spec Vol 6 Part B §4.4.3.2): a scannable advertisement is held until its
/// scan response arrives, so the user sees one merged advertisement. A device's first one (no
/// scan response merged yet) waits through a few lost scan requests: until the response, the
/// `scanResponseWaitEvents`-th scannable advertisement after it, or `scanResponseWaitTime` (the
/// owner's timer calls `releaseHolds` at `nextHoldDeadline`), whichever comes first; then it is
/// reported as the device's latest data, without the response. Later ones, whose merge carries
/// the last response already, wait only until the device's next advertisement or
/// `scanResponseWaitTime`, so a held report is always delivered. Passive scanning and
/// non-scannable PDUs (ADV_NONCONN_IND, ADV_DIRECT_IND, extended non-scannable) are reported at
/// once, except during a first wait: there a non-scannable one is another advertising set at the
/// same address (a legacy set beside an extended one, or another Advertising_SID, Vol 4 Part E
/// §7.7.65.13), merged as the device's latest data while the wait goes on. Deadlines are rounded
/// up to `holdDeadlineStep`, so devices heard close together share one timer wake-up.
///
/// One table entry per address holds everything about the device (its raw data, the parsed scan
/// response, what was last reported), so a report costs one look-up in an `AddressTable`. Data
/// that repeats what the device sent before (the common case: most devices advertise the same
/// bytes all day) is compared where it lies in the HCI event, and is neither copied, parsed nor
/// merged again; a device reported already with it is known to be a duplicate without
/// comparing advertisements.
public struct ScanAggregator: Sendable {
    /// How many of a device's advertisements its first scannable one waits for its scan response:
    /// reported without it at the 4th advertisement after it. A scan request or its response
    /// can be lost (a collision, the advertiser busy, the scanner's backoff, Vol 6 Part B
    /// §4.4.3.2), and the host may get the response only after the device's next advertisement;
    /// four events take the response to the held one's request or to either of the next two,
    /// late by one advertisement or not, so two lost requests in a row are survived.
    public static let scanResponseWaitEvents = 4
    /// How long a device's first scannable advertisement waits for its scan response at most:
    /// what bounds the wait for a device that advertises slowly (intervals reach 10.24 s, Vol 6
    /// Part B §4.4.2.2.1) or goes quiet. 2 s holds the four events of `scanResponseWaitEvents`
    /// for a device advertising every 500 ms heard at each event, or every 250 ms heard at every
    /// other one (the default scan window, 30 ms of every 60, hears about half of them); at
    /// 100 ms (Bumble's default) the event bound ends the wait after 400 ms. A device that never
    /// answers has its first report delayed by at most 2 s (plus `holdDeadlineStep`), once. A
    /// later hold has the same bound.
    public static let scanResponseWaitTime: Duration = .seconds(2)
    /// The grid hold deadlines (`scanResponseWaitTime` after the hold starts) are rounded up to:
    /// the holds of many devices heard within one step end at one deadline, so a crowd of
    /// advertisers that never answer costs the owner's timer one wake-up per step, not one per
    /// device. A wait is longer by less than a step.
    public static let holdDeadlineStep: Duration = .milliseconds(100)

    public let active: Bool
    public var filter: ScanFilter
    private var table = AddressTable<Entry>()
    /// The holds' deadlines in the order they started, so in time order (`now` only grows):
    /// from `holdsHead` on, then `newestHold`, each with its device's table key. An entry whose
    /// hold ended before its deadline stays until it reaches the head (`dropEndedHolds`).
    private var holds: [(key: UInt64, deadline: Duration)] = []
    private var holdsHead = 0
    /// The hold started last, after those in `holds` (valid when `hasNewestHold`): kept out of
    /// the array until another starts, so a hold that its scan response ends right after the
    /// advertisement (the common case) costs no array operation.
    private var newestHold: (key: UInt64, deadline: Duration) = (0, .zero)
    private var hasNewestHold = false
    /// The deadline of holds starting in the current grid step.
    private var deadlines = DeadlineGrid()

    /// What a held scannable advertisement waits for.
    private enum Hold: Sendable {
        /// Nothing is held.
        case none
        /// The scan response, the device's next advertisement, or `deadline`.
        case untilNextAdvertisement(deadline: Duration)
        /// The device's first scannable advertisement: the scan response, the
        /// `scanResponseWaitEvents`-th scannable advertisement after it (`advertisements` came
        /// so far), or `deadline`.
        case first(advertisements: Int, deadline: Duration)

        /// When the hold runs out of time; nil when nothing is held.
        var deadline: Duration? {
            switch self {
            case .none: nil
            case let .untilNextAdvertisement(deadline), let .first(_, deadline): deadline
            }
        }
    }

    /// Everything about one address. No optionals of the large structs: an optional
    /// `ScannedDevice` or `AdvertisingData` is copied and destroyed through the runtime's generic
    /// value witnesses on every in-place change, which cost more than the rest of a report.
    private struct Entry: Sendable {
        /// Valid when `hasDevice`; until then (only a scan response heard) a placeholder.
        var device: ScannedDevice
        var hasDevice = false
        /// The advertising data last heard (valid when `hasAdvertising`); its storage is reused
        /// when the data changes.
        var advertising: [UInt8] = []
        var hasAdvertising = false
        var scanResponse: [UInt8] = []
        var hasScanResponse = false
        /// The data last heard, or the scan response, was cut short by the controller.
        var advertisingTruncated = false
        var scanResponseTruncated = false
        /// `scanResponse` parsed, once it is merged (valid when `scanResponseParsed`).
        var parsedScanResponse = AdvertisingData()
        var scanResponseParsed = false
        var hold = Hold.none
        /// A first hold ended without the scan response (the device does not answer, or not
        /// reliably): later holds wait only for the next advertisement (or their deadline).
        var scanResponseOverdue = false
        /// The advertisement last reported (valid when `hasReported`).
        var reported = AdvertisingData()
        /// The extended fields last reported (`ScannedDevice.extendedPacked`), valid with `reported`.
        var reportedExtended: UInt64 = 0
        var hasReported = false
        /// Whether `reported` is known to equal `device.advertisement` (set when reporting, or
        /// after a comparison; cleared when the advertisement is merged anew).
        var reportedIsCurrent = false

        init(address: DeviceAddress) {
            device = ScannedDevice(address: address, advertisement: AdvertisingData(), rssi: nil, isConnectable: false,
                                   lastSeen: .zero, firstSeen: .zero, hasScanResponse: false)
        }
    }

    public init(active: Bool, filter: ScanFilter) {
        self.active = active
        self.filter = filter
    }

    /// The devices known, by address.
    public var devices: [DeviceAddress: ScannedDevice] {
        var out: [DeviceAddress: ScannedDevice] = [:]
        for entry in table.values where entry.hasDevice { out[entry.device.address] = entry.device }
        return out
    }

    /// The number of devices known.
    public var deviceCount: Int { table.values.reduce(0) { $0 + ($1.hasDevice ? 1 : 0) } }

    /// Takes one report; returns the devices to deliver now (zero, one, or — when a held report
    /// is flushed — two entries for the same device).
    public mutating func receive(_ report: AdvertisingReportInput, now: Duration) -> [ScannedDevice] {
        var out: [ScannedDevice] = []
        receive(report, now: now, into: &out)
        return out
    }

    /// Like `receive(_:now:)`, appending the devices to deliver to `out` (a buffer the owner
    /// reuses, so the hot path allocates no result array).
    public mutating func receive(_ report: AdvertisingReportInput, now: Duration, into out: inout [ScannedDevice]) {
        report.data.withUnsafeBufferPointer { data in
            receive(kind: report.kind, address: report.address, data: data, rssi: report.rssi, now: now, into: &out)
        }
    }

    /// Like `receive(_:now:into:)` for a report read in place: `data` points into the HCI event
    /// and is copied only when it differs from what the device sent before. Inlined into the
    /// scanner's loop over an event's reports: the hot path.
    /// `extended` is what an extended report adds (`ExtendedAdvertisingInfo.packed`, 0 for a
    /// legacy one); `truncated`, that the controller cut `data` short.
    @inline(__always)
    public mutating func receive(kind: AdvertisingEventKind, address: DeviceAddress, data: UnsafeBufferPointer<UInt8>,
                                 rssi: Int8?, extended: UInt64 = 0, truncated: Bool = false,
                                 now: Duration, into out: inout [ScannedDevice]) {
        let key = AddressTable<Entry>.key(address)
        let index = table.index(of: key) ?? table.append(Entry(address: address), for: key)
        let report = Heard(kind: kind, address: address, data: data, rssi: rssi, extended: extended, truncated: truncated)
        // In place: the entry is not copied out of the table and back.
        if let deadline = Self.receive(report, into: &table.values[index], active: active, filter: filter, now: now,
                                       deadlines: &deadlines, out: &out) {
            if hasNewestHold { holds.append(newestHold) }
            newestHold = (key, deadline)
            hasNewestHold = true
        } else if hasNewestHold && newestHold.key == key {
            // No hold started: the device's newest one goes on, or it ended (no look-up needed).
            if case .none = table.values[index].hold { hasNewestHold = false }
        } else if holdsHead < holds.count && holds[holdsHead].key == key {
            dropEndedHolds()
        }
    }

    /// `holdDeadline(startingAt:)` of the last grid step a hold started in, reused for the holds
    /// that start in the same step (most reports of a batch share their `now`).
    private struct DeadlineGrid: Sendable {
        /// Holds starting after `low`, up to `high`, end at `deadline`.
        var low: Duration = .zero
        var high: Duration = .zero
        var deadline: Duration = .zero

        mutating func deadline(startingAt now: Duration) -> Duration {
            if now > low && now <= high { return deadline }
            deadline = ScanAggregator.holdDeadline(startingAt: now)
            high = deadline - ScanAggregator.scanResponseWaitTime
            low = high - ScanAggregator.holdDeadlineStep
            return deadline
        }
    }

    /// The deadline of a hold that starts at `now`: `scanResponseWaitTime` later, rounded up to
    /// a multiple of `holdDeadlineStep`.
    public static func holdDeadline(startingAt now: Duration) -> Duration {
        let end = now + scanResponseWaitTime
        let step = holdDeadlineStep
        let (seconds, attoseconds) = end.components
        let (stepSeconds, stepAttoseconds) = step.components
        // Whole nanoseconds: exact for the clocks the host runs on, and no overflow for 292 years.
        let nanoseconds = seconds * 1_000_000_000 + (attoseconds + 999_999_999) / 1_000_000_000
        let stepNanoseconds = stepSeconds * 1_000_000_000 + stepAttoseconds / 1_000_000_000
        let steps = (nanoseconds + stepNanoseconds - 1) / stepNanoseconds
        return .nanoseconds(steps * stepNanoseconds)
    }

    /// When the earliest hold runs out of time (`releaseHolds`); nil when none waits. It may be
    /// one that has ended since, which `releaseHolds` then just drops.
    public var nextHoldDeadline: Duration? {
        holdsHead < holds.count ? holds[holdsHead].deadline : hasNewestHold ? newestHold.deadline : nil
    }

    /// Reports the devices whose hold ran out of time by `now`, without the scan response they
    /// waited for (a later hold's merge carries the last one), appending them to `out` (those
    /// the filter takes, and that are not duplicates).
    public mutating func releaseHolds(now: Duration, into out: inout [ScannedDevice]) {
        if hasNewestHold {
            holds.append(newestHold)
            hasNewestHold = false
        }
        while holdsHead < holds.count, holds[holdsHead].deadline <= now {
            let (key, deadline) = holds[holdsHead]
            holdsHead += 1
            guard let index = table.index(of: key), table.values[index].hold.deadline == deadline else { continue }
            if case .first = table.values[index].hold { table.values[index].scanResponseOverdue = true }
            table.values[index].hold = .none
            Self.emitIfWanted(&table.values[index], filter: filter, into: &out)
        }
        dropEndedHolds()
    }

    /// Reports every held device as it is (the scan ends: no response will be waited for),
    /// appending them to `out`.
    public mutating func releaseAllHolds(into out: inout [ScannedDevice]) {
        for index in table.values.indices {
            if case .none = table.values[index].hold { continue }
            table.values[index].hold = .none
            Self.emitIfWanted(&table.values[index], filter: filter, into: &out)
        }
        holds.removeAll()
        holdsHead = 0
        hasNewestHold = false
    }

    /// Drops the deadlines at the head of `holds` whose hold has ended, so `nextHoldDeadline`
    /// is a live one; empties the storage when none is left.
    private mutating func dropEndedHolds() {
        while holdsHead < holds.count {
            let (key, deadline) = holds[holdsHead]
            if let index = table.index(of: key), table.values[index].hold.deadline == deadline { break }
            holdsHead += 1
        }
        if holdsHead == holds.count {
            holds.removeAll(keepingCapacity: true)
            holdsHead = 0
        } else if holdsHead >= 256 && 2 * holdsHead >= holds.count {
            holds.removeFirst(holdsHead)
            holdsHead = 0
        }
    }

    /// One report as `receive` passes it on.
    private struct Heard {
        let kind: AdvertisingEventKind
        let address: DeviceAddress
        let data: UnsafeBufferPointer<UInt8>
        let rssi: Int8?
        let extended: UInt64
        let truncated: Bool
    }

    /// Takes one report into its device's entry, appending what to deliver to `out`; the
    /// deadline of the hold it starts, if it starts one (the caller queues it).
    private static func receive(_ report: Heard, into entry: inout Entry, active: Bool, filter: borrowing ScanFilter,
                                now: Duration, deadlines: inout DeadlineGrid, out: inout [ScannedDevice]) -> Duration? {
        if report.kind == .scanResponse {
            if !entry.hasScanResponse || !equal(entry.scanResponse, report.data) {
                store(report.data, in: &entry.scanResponse)
                entry.hasScanResponse = true
                entry.scanResponseParsed = false
            }
            entry.scanResponseTruncated = report.truncated
            entry.hold = .none
            // A scan response without its advertisement: kept for when the advertisement comes,
            // and aged out like a device if it does not (the placeholder's `lastSeen`).
            guard entry.hasDevice else {
                entry.device.lastSeen = now
                return nil
            }
            update(&entry, report: report, now: now, scanResponse: true)
            emitIfWanted(&entry, filter: filter, into: &out)
            return nil
        }
        switch entry.hold {
        case .none:
            break
        case .untilNextAdvertisement:
            emitIfWanted(&entry, filter: filter, into: &out)
        case let .first(advertisements, deadline):
            update(&entry, report: report, now: now, scanResponse: false)
            // A non-scannable report is another advertising set of the device (a legacy one
            // beside an extended one, or two extended sets): merged as its latest data, and not
            // counted, as it gives no chance of a scan request.
            let counted = report.kind.isScannable ? advertisements + 1 : advertisements
            if counted < scanResponseWaitEvents && now < deadline {
                entry.hold = .first(advertisements: counted, deadline: deadline)
                return nil
            }
            // The wait ran out: the device as it is now, without a scan response.
            entry.hold = .none
            entry.scanResponseOverdue = true
            emitIfWanted(&entry, filter: filter, into: &out)
            return nil
        }
        update(&entry, report: report, now: now, scanResponse: false)
        if active && report.kind.isScannable {
            let holdDeadline = deadlines.deadline(startingAt: now)
            if entry.hasScanResponse || entry.scanResponseOverdue {
                entry.hold = .untilNextAdvertisement(deadline: holdDeadline)
            } else {
                entry.hold = .first(advertisements: 0, deadline: holdDeadline)
            }
            return holdDeadline
        }
        entry.hold = .none
        emitIfWanted(&entry, filter: filter, into: &out)
        return nil
    }

    /// Devices not heard for `maximumAge` as of `now`, removed from the table. Scan responses
    /// whose advertisement never came go too, unreported (no device was reported for them).
    public mutating func removeStale(olderThan maximumAge: Duration, now: Duration) -> [ScannedDevice] {
        var stale: [ScannedDevice] = []
        table.removeAll { entry in
            guard now - entry.device.lastSeen > maximumAge else { return false }
            if entry.hasDevice { stale.append(entry.device) }
            return true
        }
        dropEndedHolds()
        return stale
    }

    /// Whether `stored` holds the same bytes as `data`, compared eight at a time.
    private static func equal(_ stored: [UInt8], _ data: UnsafeBufferPointer<UInt8>) -> Bool {
        guard stored.count == data.count else { return false }
        return stored.withUnsafeBytes { s -> Bool in
            let d = UnsafeRawBufferPointer(data)
            var i = 0
            while i + 8 <= d.count {
                if s.loadUnaligned(fromByteOffset: i, as: UInt64.self) != d.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                    return false
                }
                i += 8
            }
            while i < d.count {
                if s[i] != d[i] { return false }
                i += 1
            }
            return true
        }
    }

    /// Replaces the contents of `stored` with `data`, in its own storage when it has room.
    private static func store(_ data: UnsafeBufferPointer<UInt8>, in stored: inout [UInt8]) {
        stored.removeAll(keepingCapacity: true)
        stored.append(contentsOf: data)
    }

    /// Whether two extended words (`ScannedDevice.extendedPacked`) are one set's whose fields
    /// changed: both extended, the same SID, something else different. A device that sends
    /// legacy and extended PDUs, or several sets, from one address is not new at each report.
    @inline(__always)
    static func sameSetChanged(_ old: UInt64, _ new: UInt64) -> Bool {
        let extended: UInt64 = 1 << 56, sid: UInt64 = 0xFF << 16
        return old != new && old & new & extended != 0 && old & sid == new & sid
    }

    /// Brings the entry's device up to date with `report`; the advertisement is merged again
    /// only when the device's data changed (or it is new).
    private static func update(_ entry: inout Entry, report: Heard, now: Duration, scanResponse: Bool) {
        var changed = !entry.hasDevice
        if !scanResponse, !entry.hasAdvertising || !equal(entry.advertising, report.data) {
            store(report.data, in: &entry.advertising)
            entry.hasAdvertising = true
            changed = true
        }
        if !scanResponse {
            entry.advertisingTruncated = report.truncated
            let packed = report.extended | entry.device.extendedPacked & ScannedDevice.truncatedBit
            // Extended fields that changed alone (periodic advertising started, say) make the
            // device new again to a scan that filters duplicates.
            if Self.sameSetChanged(entry.device.extendedPacked, packed) { entry.reportedIsCurrent = false }
            entry.device.extendedPacked = packed
        }
        if scanResponse, !entry.scanResponseParsed { changed = true }
        if changed {
            var advertisement = AdvertisingData(bytes: entry.advertising)
            if entry.hasScanResponse {
                if !entry.scanResponseParsed {
                    entry.parsedScanResponse = AdvertisingData(bytes: entry.scanResponse)
                    entry.scanResponseParsed = true
                }
                advertisement.merge(entry.parsedScanResponse)
            }
            entry.device.advertisement = advertisement
            entry.reportedIsCurrent = false
        }
        // Changed in place, field by field: the device is not copied.
        if entry.hasDevice {
            if let r = report.rssi { entry.device.rssi = r }
            if !scanResponse { entry.device.isConnectable = report.kind.isConnectable }
        } else {
            entry.hasDevice = true
            entry.device.address = report.address
            entry.device.rssi = report.rssi
            entry.device.isConnectable = report.kind.isConnectable
            entry.device.firstSeen = now
        }
        entry.device.lastSeen = now
        entry.device.hasScanResponse = entry.hasScanResponse
        entry.device.isTruncated = entry.advertisingTruncated || (entry.hasScanResponse && entry.scanResponseTruncated)
    }

    private static func emitIfWanted(_ entry: inout Entry, filter: borrowing ScanFilter, into out: inout [ScannedDevice]) {
        // A device whose advertisement was reported as it is now is a duplicate whatever the
        // filter says: looked at first, so a repeat costs no filtering.
        if !filter.allowDuplicates && entry.reportedIsCurrent { return }
        guard entry.hasDevice, filter.matches(entry.device) else { return }
        if !filter.allowDuplicates, entry.hasReported, !sameSetChanged(entry.reportedExtended, entry.device.extendedPacked),
           entry.reported == entry.device.advertisement {
            entry.reportedIsCurrent = true
            return
        }
        entry.reported = entry.device.advertisement
        entry.reportedExtended = entry.device.extendedPacked
        entry.hasReported = true
        entry.reportedIsCurrent = true
        out.append(entry.device)
    }
}

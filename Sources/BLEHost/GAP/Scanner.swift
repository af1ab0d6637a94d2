import BLEHCI
import BLEWire

/// The scans a host runs on one controller, sans-IO (Core spec Vol 4 Part E §7.8.10–11,
/// §7.7.65.2, §7.7.65.13): the controller has one scanner, and every scan shares it, each with
/// its own filter, deadline and device table (a device list and a heart-rate screen both
/// scanning, say). Advertising reports in, each scan's devices out through its
/// `ScanAggregator`, memory kept bounded on long scans among rotating addresses. The owner
/// sends the HCI commands that turn the controller's scanning on (active when any scan is) and
/// off (when the last ends), and keeps the consumers' streams.
public struct Scanner: Sendable {
    private struct Session: Sendable {
        let id: UInt64
        let active: Bool
        var aggregator: ScanAggregator
        let timeout: Duration?
        /// Set once the controller has confirmed the scan is on, so the timeout cannot fire
        /// while it is still starting.
        var deadline: Duration?
        /// When stale devices were last pruned from the aggregator.
        var lastPrune: Duration = .zero
    }

    /// How often, and after how much silence, devices are forgotten on a long scan.
    static let pruneInterval: Duration = .seconds(10)
    static let forgetAfter: Duration = .seconds(60)
    /// Scans at once: each keeps a device table, so their number is bounded.
    public static let maximumScans = 16

    /// Oldest first (ids only grow), so reports go to the scans in a fixed order; at most
    /// `maximumScans`, so a linear look-up is the cheap one.
    private var sessions: [Session] = []
    private var nextID: UInt64 = 1
    /// Extended advertisements the controller cut into several reports, being put back
    /// together (once for every scan).
    private var assembler = ExtendedReportAssembler<ExtendedAdvertisementKey>()

    public init() {}

    /// The running scans' ids, oldest first.
    public var runningIDs: [UInt64] { sessions.map(\.id) }

    /// Whether scan `id` runs.
    public func isRunning(_ id: UInt64) -> Bool { sessions.contains { $0.id == id } }

    /// Whether any running scan wants scan responses (the controller's scan is active then).
    public var wantsActiveScanning: Bool { sessions.contains { $0.active } }

    /// Starts a scan; nil when `maximumScans` run already.
    public mutating func begin(active: Bool, filter: ScanFilter, timeout: Duration?) -> UInt64? {
        guard sessions.count < Self.maximumScans else { return nil }
        defer { nextID += 1 }
        sessions.append(Session(id: nextID, active: active, aggregator: ScanAggregator(active: active, filter: filter), timeout: timeout))
        return nextID
    }

    /// The controller confirmed scan `id` is on: its timeout starts now.
    public mutating func enabled(_ id: UInt64, now: Duration) {
        guard let i = sessions.firstIndex(where: { $0.id == id }), sessions[i].deadline == nil else { return }
        sessions[i].deadline = sessions[i].timeout.map { now + $0 }
    }

    /// Ends scan `id`; false when it was not running (ended already).
    public mutating func end(_ id: UInt64) -> Bool {
        guard let i = sessions.firstIndex(where: { $0.id == id }) else { return false }
        sessions.remove(at: i)
        return true
    }

    /// The controller's scanner was turned off (LE Set Scan Enable, off, completed): the
    /// parts of an extended advertisement under way are forgotten, as the rest of it will not
    /// come (a scanner turned on again follows new chains from their first packet). Not when a
    /// scan ends: the controller may go on scanning for the next one, and the tail of a chain
    /// must then find its head.
    public mutating func controllerStoppedScanning() {
        assembler.removeAll()
    }

    /// The earliest deadline of the running scans: a timeout, or a held advertisement's wait for
    /// its scan response (`releaseHolds`). A loop, not `compactMap(_:).min()`: asked after every
    /// batch of frames the host receives, so it makes no array.
    public var nextDeadline: Duration? {
        var next: Duration?
        for session in sessions {
            if let d = session.deadline { next = next.map { min($0, d) } ?? d }
            if let d = session.aggregator.nextHoldDeadline { next = next.map { min($0, d) } ?? d }
        }
        return next
    }

    /// The ids of the scans whose deadline has passed, oldest first (the owner ends them).
    public func expired(now: Duration) -> [UInt64] {
        sessions.filter { $0.deadline.map { $0 <= now } ?? false }.map(\.id)
    }

    /// Appends to `deliveries` the devices whose wait for a scan response ran out of time by
    /// `now` (`ScanAggregator.releaseHolds`), per scan, oldest first.
    public mutating func releaseHolds(now: Duration, into deliveries: inout Deliveries) {
        for i in sessions.indices {
            guard let d = sessions[i].aggregator.nextHoldDeadline, d <= now else { continue }
            let start = deliveries.devices.count
            sessions[i].aggregator.releaseHolds(now: now, into: &deliveries.devices)
            deliveries.tag(from: start, with: sessions[i].id)
        }
    }

    /// Appends to `deliveries` every device scan `id` holds for a scan response, as it is: the
    /// scan is ending (`ScanAggregator.releaseAllHolds`).
    public mutating func releaseAllHolds(of id: UInt64, into deliveries: inout Deliveries) {
        guard let i = sessions.firstIndex(where: { $0.id == id }) else { return }
        let start = deliveries.devices.count
        sessions[i].aggregator.releaseAllHolds(into: &deliveries.devices)
        deliveries.tag(from: start, with: id)
    }

    /// Takes one advertising report; returns, per running scan (oldest first), the devices it
    /// adds or changes there, as that scan's aggregator merges them. Legacy and extended
    /// reports both carry Event_Type properties (§7.7.65.13); an extended advertisement cut
    /// into several reports is delivered once its last report is in, marked truncated when the
    /// controller lost the rest of it.
    public mutating func receive(_ report: LEAdvertisingReport, now: Duration) -> [(id: UInt64, devices: [ScannedDevice])] {
        var deliveries = Deliveries()
        receive(report, now: now, into: &deliveries)
        var out: [(id: UInt64, devices: [ScannedDevice])] = []
        for (id, device) in zip(deliveries.ids, deliveries.devices) {
            if out.last?.id == id { out[out.count - 1].devices.append(device) } else { out.append((id, [device])) }
        }
        return out
    }

    /// What `receive(_:now:into:)` hands on: devices in order, each with the id of its scan. The
    /// owner keeps one and empties it after each report, so the hot path allocates nothing for
    /// the result.
    public struct Deliveries: Sendable {
        /// The scan each device is for (parallel to `devices`).
        public private(set) var ids: [UInt64] = []
        /// The devices, in the order the scans' aggregators gave them (scans oldest first).
        public fileprivate(set) var devices: [ScannedDevice] = []

        /// An empty list.
        public init() {}

        /// Whether there is nothing to deliver.
        public var isEmpty: Bool { devices.isEmpty }

        /// How many devices there are.
        public var count: Int { devices.count }

        /// The scan every device is for, when they are all for one (the common case: one scan
        /// running); nil when empty or for several.
        public var singleScan: UInt64? {
            guard let first = ids.first, ids.allSatisfy({ $0 == first }) else { return nil }
            return first
        }

        /// Hands the devices to `body` to take (move out, or leave), then empties the list.
        public mutating func moveDevices(_ body: (inout [ScannedDevice]) -> Void) {
            body(&devices)
            removeAll()
        }

        /// Empties the list, keeping its storage.
        public mutating func removeAll() {
            ids.removeAll(keepingCapacity: true)
            devices.removeAll(keepingCapacity: true)
        }

        /// Sets each device's `identity` to what `identity` says of its address (the host's
        /// bonds and resolving list, Core spec Vol 3 Part C §10.8.2), in place.
        public mutating func resolveIdentities(_ identity: (DeviceAddress) -> DeviceAddress?) {
            for i in devices.indices { devices[i].identity = identity(devices[i].address) }
        }

        fileprivate mutating func tag(from start: Int, with id: UInt64) {
            for _ in start..<devices.count { ids.append(id) }
        }
    }

    /// Like `receive(_:now:)`, appending each scan's devices to `deliveries`.
    public mutating func receive(_ report: LEAdvertisingReport, now: Duration, into deliveries: inout Deliveries) {
        report.data.withUnsafeBufferPointer { data in
            receive(LEAdvertisingReportRef(
                properties: report.properties, address: report.address, rssi: report.rssi, data: data,
                isAnonymous: report.isAnonymous, primaryPHY: report.primaryPHY, secondaryPHY: report.secondaryPHY,
                advertisingSID: report.advertisingSID, txPower: report.txPower,
                periodicAdvertisingInterval: report.periodicAdvertisingInterval), now: now, into: &deliveries)
        }
    }

    /// The reports of an LE Advertising Report or LE Extended Advertising Report event, read in
    /// place (`HCIEvent.scanAdvertisingReports`), each as `receive(_:now:into:)` takes it; false,
    /// with nothing received, when `event` (code, length, parameters) is not a well-formed one
    /// (the owner then decodes it as any other event).
    public mutating func receive(event: [UInt8], now: Duration, into deliveries: inout Deliveries) -> Bool {
        HCIEvent.scanAdvertisingReports(event) { report in
            receive(report, now: now, into: &deliveries)
        }
    }

    /// One report, whole or (an extended advertisement cut into several reports) once its
    /// last part is in: `ExtendedReportAssembler` puts the data together, and a chain the
    /// controller cut short reaches the scans marked truncated, never as complete. Inlined
    /// into the loop over an event's reports, as what it calls: the report is not copied.
    @inline(__always)
    private mutating func receive(_ report: LEAdvertisingReportRef, now: Duration, into deliveries: inout Deliveries) {
        let status = report.properties.dataStatus
        // The common case, checked first: a whole report while nothing is being put together.
        if status == .complete && assembler.isEmpty {
            if !sessions.isEmpty { receive(report, data: report.data, truncated: false, now: now, into: &deliveries) }
            return
        }
        // Put together even while no scan runs (one ended, the next has not begun, and the
        // controller scans on): the tail of a chain must find its head.
        guard !report.properties.isLegacy else {
            // A legacy PDU is always whole (§7.7.65.13).
            receive(report, data: report.data, truncated: false, now: now, into: &deliveries)
            return
        }
        let key = ExtendedAdvertisementKey(address: report.address, isAnonymous: report.isAnonymous,
                                           sid: report.advertisingSID,
                                           scanResponse: report.properties.contains(.scanResponse))
        guard let whole = assembler.receive(key, status: status, data: report.data) else { return }
        whole.data.withUnsafeBufferPointer { data in
            receive(report, data: data, truncated: whole.truncated, now: now, into: &deliveries)
        }
    }

    @inline(__always)
    private mutating func receive(_ report: LEAdvertisingReportRef, data: UnsafeBufferPointer<UInt8>, truncated: Bool,
                                  now: Duration, into deliveries: inout Deliveries) {
        let properties = report.properties
        let address = report.address
        let kind: AdvertisingEventKind
        if properties.contains(.scanResponse) {
            kind = .scanResponse
        } else if properties.contains(.connectable) {
            // Extended advertising may be connectable without being scannable (§7.7.65.13).
            let scannable = properties.contains(.scannable)
            kind = properties.contains(.directed) ? .connectableDirected : scannable ? .connectableUndirected : .connectableNonScannable
        } else {
            kind = properties.contains(.scannable) ? .scannableUndirected : .nonConnectable
        }
        let rssi = report.rssi == LEAdvertisingReport.unavailable ? nil : report.rssi
        let extended = ExtendedAdvertisingInfo.packed(report)
        for i in sessions.indices {
            let start = deliveries.devices.count
            // In place: the aggregator's tables are not copied.
            sessions[i].aggregator.receive(kind: kind, address: address, data: data, rssi: rssi, extended: extended,
                                           truncated: truncated, now: now, into: &deliveries.devices)
            if now - sessions[i].lastPrune > Self.pruneInterval {
                _ = sessions[i].aggregator.removeStale(olderThan: Self.forgetAfter, now: now)
                sessions[i].lastPrune = now
            }
            deliveries.tag(from: start, with: sessions[i].id)
        }
    }
}

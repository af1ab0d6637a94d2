import BLEHCI
import BLEWire

/// One scan at a time, sans-IO (Core spec Vol 4 Part E §7.8.10–11, §7.7.65.2, §7.7.65.13):
/// advertising reports in, devices out through the `ScanAggregator`, with the scan's deadline,
/// and memory kept bounded on long scans among rotating addresses. The owner sends the HCI
/// commands that turn the controller's scanning on and off, and keeps the consumer's stream.
public struct Scanner: Sendable {
    private struct Session: Sendable {
        let id: UInt64
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

    private var session: Session?
    private var nextID: UInt64 = 1

    public init() {}

    /// The running scan's id.
    public var runningID: UInt64? { session?.id }

    /// Starts a scan; nil when one is running.
    public mutating func begin(active: Bool, filter: ScanFilter, timeout: Duration?) -> UInt64? {
        guard session == nil else { return nil }
        defer { nextID += 1 }
        session = Session(id: nextID, aggregator: ScanAggregator(active: active, filter: filter), timeout: timeout)
        return nextID
    }

    /// The controller confirmed scan `id` is on: its timeout starts now.
    public mutating func enabled(_ id: UInt64, now: Duration) {
        guard var s = session, s.id == id else { return }
        s.deadline = s.timeout.map { now + $0 }
        session = s
    }

    /// Ends scan `id`; false when it was not running (ended already, or another scan).
    public mutating func end(_ id: UInt64) -> Bool {
        guard session?.id == id else { return false }
        session = nil
        return true
    }

    public var nextDeadline: Duration? { session?.deadline }

    /// The id of the scan whose deadline has passed, if any (the owner ends it).
    public func expired(now: Duration) -> UInt64? {
        guard let s = session, let d = s.deadline, d <= now else { return nil }
        return s.id
    }

    /// Takes one advertising report; returns the devices it adds or changes, as the aggregator
    /// merges them. Legacy and extended reports both carry Event_Type properties
    /// (§7.7.65.13); an incomplete extended chain (more data to come) waits until it completes.
    public mutating func receive(_ report: LEAdvertisingReport, now: Duration) -> [ScannedDevice] {
        guard session != nil, report.properties.dataStatus == .complete else { return [] }
        let kind: AdvertisingEventKind
        if report.isScanResponse {
            kind = .scanResponse
        } else if report.isConnectable {
            kind = report.isDirected ? .connectableDirected : .connectableUndirected
        } else {
            kind = report.isScannable ? .scannableUndirected : .nonConnectable
        }
        let input = AdvertisingReportInput(kind: kind, address: report.address, data: report.data,
                                           rssi: report.rssi == LEAdvertisingReport.unavailable ? nil : report.rssi)
        guard var s = session else { return [] }
        session = nil  // mutate the aggregator without a copy of its tables
        let devices = s.aggregator.receive(input, now: now)
        if now - s.lastPrune > Self.pruneInterval {
            _ = s.aggregator.removeStale(olderThan: Self.forgetAfter, now: now)
            s.lastPrune = now
        }
        session = s
        return devices
    }
}

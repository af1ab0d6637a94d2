import BLEHCI
import BLEHost
import BLEWire

/// One running scan: its aggregator and the stream it feeds.
struct ScanSession {
    let id: UInt64
    var aggregator: ScanAggregator
    let continuation: AsyncThrowingStream<ScannedDevice, any Error>.Continuation
    let deadline: Duration?

    func finish(throwing error: (any Error)? = nil) {
        continuation.finish(throwing: error)
    }
}

extension HostController {
    /// Starts scanning (LE Set Scan Parameters and LE Set Scan Enable, Vol 4 Part E §7.8.10–11).
    /// Devices go to `continuation` until the deadline, `stopScan`, or the consumer stops.
    func startScan(active: Bool, filter: ScanFilter, timeout: Duration?, continuation: AsyncThrowingStream<ScannedDevice, any Error>.Continuation) async throws -> UInt64 {
        if let failure { throw failure }
        guard scan == nil else { throw BLEError.busy("a scan is already running") }
        let id = nextScanID
        nextScanID += 1
        scan = ScanSession(id: id, aggregator: ScanAggregator(active: active, filter: filter), continuation: continuation, deadline: timeout.map { now + $0 })
        do {
            _ = try await commandReturning(.leSetScanParameters(
                type: active ? .active : .passive, interval: configuration.scanInterval, window: configuration.scanWindow,
                ownAddressType: ownAddressType, filterPolicy: 0))
            // The controller's duplicate filter stays off: the host filters, and needs every
            // report to keep RSSI and last-seen times current (for ageing out quiet devices).
            _ = try await commandReturning(.leSetScanEnable(enable: true, filterDuplicates: false))
        } catch {
            if scan?.id == id { scan = nil }
            throw error
        }
        rescheduleTimer()
        return id
    }

    /// Stops the scan with this id, if it is still running, and finishes its stream.
    func finishScan(id: UInt64, error: (any Error)? = nil) {
        guard let s = scan, s.id == id else { return }
        scan = nil
        s.finish(throwing: error)
        rescheduleTimer()
        guard failure == nil else { return }
        Task { try? await self.commandReturning(.leSetScanEnable(enable: false, filterDuplicates: false)) }
    }

    /// Stops the scan and waits until the controller has confirmed it (so a connect can follow).
    func stopScan() async {
        guard let s = scan else { return }
        scan = nil
        s.finish()
        rescheduleTimer()
        _ = try? await commandReturning(.leSetScanEnable(enable: false, filterDuplicates: false))
    }

    func receiveAdvertisingReport(_ report: LEAdvertisingReport) {
        guard var s = scan else { return }
        // Legacy and extended reports both carry Event_Type properties (Vol 4 Part E §7.7.65.13);
        // an incomplete extended chain (more data to come) is skipped until it completes.
        guard report.properties.dataStatus == .complete else { return }
        let kind: AdvertisingEventKind
        if report.isScanResponse {
            kind = .scanResponse
        } else if report.isConnectable {
            kind = report.isDirected ? .connectableDirected : .connectableUndirected
        } else {
            kind = report.isScannable ? .scannableUndirected : .nonConnectable
        }
        let input = AdvertisingReportInput(kind: kind, address: report.address, data: report.data, rssi: report.rssi == LEAdvertisingReport.unavailable ? nil : report.rssi)
        let devices = s.aggregator.receive(input, now: now)
        scan = s
        for d in devices { s.continuation.yield(d) }
    }
}

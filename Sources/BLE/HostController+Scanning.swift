import BLEHCI
import BLEHost
import BLEWire

/// One running scan: its aggregator and the stream it feeds.
struct ScanSession {
    let id: UInt64
    var aggregator: ScanAggregator
    let continuation: AsyncThrowingStream<ScannedDevice, any Error>.Continuation
    /// Set once the controller has confirmed the scan is on, so the timeout cannot fire while
    /// it is still starting.
    var deadline: Duration?
    let timeout: Duration?
    /// When stale devices were last pruned from the aggregator.
    var lastPrune: Duration = .zero

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
        scan = ScanSession(id: id, aggregator: ScanAggregator(active: active, filter: filter), continuation: continuation, deadline: nil, timeout: timeout)
        // Radio commands of one scan after another go strictly in order: a new scan waits for
        // the previous one's disable (a Set Scan Parameters while scanning is disallowed).
        await scanRadio.waitIdle()
        do {
            _ = try await commandReturning(.leSetScanParameters(
                type: active ? .active : .passive, interval: configuration.scanInterval, window: configuration.scanWindow,
                ownAddressType: ownAddressType, filterPolicy: 0))
            // Stopped while starting (a connect, the consumer going away): never enable.
            guard scan?.id == id else { throw CancellationError() }
            // The controller's duplicate filter stays off: the host filters, and needs every
            // report to keep RSSI and last-seen times current (for ageing out quiet devices).
            _ = try await commandReturning(.leSetScanEnable(enable: true, filterDuplicates: false))
            scanRadio.enabled = true
            guard scan?.id == id else {
                await disableScanOnRadio()
                throw CancellationError()
            }
        } catch {
            if scan?.id == id { scan = nil }
            throw error
        }
        scan?.deadline = timeout.map { now + $0 }
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
        Task(executorPreference: clock.taskExecutor) { await self.disableScanOnRadio() }
    }

    /// Stops the scan and waits until the controller has confirmed it (so a connect can follow).
    func stopScan() async {
        if let s = scan {
            scan = nil
            s.finish()
            rescheduleTimer()
        }
        await disableScanOnRadio()
    }

    /// Turns scanning off on the controller if it is on; later scans wait for this.
    func disableScanOnRadio() async {
        guard scanRadio.enabled, failure == nil else { return }
        scanRadio.enabled = false
        scanRadio.busy += 1
        _ = try? await commandReturning(.leSetScanEnable(enable: false, filterDuplicates: false))
        scanRadio.busy -= 1
        scanRadio.wakeIfIdle()
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
        let t = now
        let devices = s.aggregator.receive(input, now: t)
        // Bounded memory on long scans among rotating addresses: forget devices quiet for a minute.
        if t - s.lastPrune > .seconds(10) {
            _ = s.aggregator.removeStale(olderThan: .seconds(60), now: t)
            s.lastPrune = t
        }
        scan = s
        for d in devices { s.continuation.yield(d) }
    }
}

/// Whether the controller is scanning, as far as the host has told it, and who waits for a
/// pending disable to finish before starting anew.
final class ScanRadioState {
    var enabled = false
    var busy = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func waitIdle(isolation: isolated (any Actor)? = #isolation) async {
        guard busy > 0 else { return }
        await withCheckedContinuation(isolation: isolation) { waiters.append($0) }
    }

    func wakeIfIdle() {
        guard busy == 0 else { return }
        let w = waiters
        waiters = []
        w.forEach { $0.resume() }
    }
}

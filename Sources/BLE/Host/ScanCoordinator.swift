import BLEHCI
import BLEHost
import BLEWire

/// Scanning (Vol 4 Part E §7.8.10–11): turns the controller's scanner on and off around the
/// sans-IO `Scanner`, and feeds the consumer's stream. Radio commands of one scan after another
/// go strictly in order: a new scan waits for the previous one's disable (Set Scan Parameters
/// while scanning is disallowed). Isolated to the host actor that owns it.
final class ScanCoordinator {
    private var scanner = Scanner()
    private var consumer: AsyncThrowingStream<ScannedDevice, any Error>.Continuation?
    /// Whether the controller is scanning, as far as the host has told it.
    private var radioEnabled = false
    /// Whether the controller's scanner is on (or a disable is still on its way).
    var isRadioEnabled: Bool { radioEnabled || radioBusy > 0 }
    /// Disables in flight, and the scans waiting for them to finish.
    private var radioBusy = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    var nextDeadline: Duration? { scanner.nextDeadline }

    /// Starts scanning; devices go to `continuation` until the deadline, `stop`, or the
    /// consumer going away (`finish`).
    func start(active: Bool, filter: ScanFilter, timeout: Duration?, ownAddressType: OwnAddressType,
               continuation: AsyncThrowingStream<ScannedDevice, any Error>.Continuation,
               _ host: isolated HostController) async throws -> UInt64 {
        if let failure = host.failure { throw failure }
        guard let id = scanner.begin(active: active, filter: filter, timeout: timeout) else {
            throw BLEError.busy("a scan is already running")
        }
        consumer = continuation
        await waitForIdleRadio(host)
        await host.privacy.prepareRadio(host)
        do {
            let c = host.configuration
            try await host.commandReturning(.leSetScanParameters(
                type: active ? .active : .passive, interval: c.scanInterval, window: c.scanWindow,
                ownAddressType: ownAddressType, filterPolicy: 0))
            // Stopped while starting (a connect, the consumer going away): never enable.
            guard scanner.runningID == id else { throw CancellationError() }
            // The controller's duplicate filter stays off: the host filters, and needs every
            // report to keep RSSI and last-seen times current (for ageing out quiet devices).
            try await host.commandReturning(.leSetScanEnable(enable: true, filterDuplicates: false))
            radioEnabled = true
            guard scanner.runningID == id else {
                await disableRadio(host)
                throw CancellationError()
            }
        } catch {
            if scanner.end(id) { consumer = nil }
            throw error
        }
        scanner.enabled(id, now: host.now)
        host.rescheduleTimer()
        return id
    }

    /// Ends scan `id`, if it still runs, and finishes its stream (with `error`, if given); the
    /// controller's scanner is turned off in the background.
    func finish(_ id: UInt64, error: (any Error)? = nil, _ host: isolated HostController) {
        guard scanner.end(id) else { return }
        consumer?.finish(throwing: error)
        consumer = nil
        host.rescheduleTimer()
        guard host.failure == nil else { return }
        host.spawn("turning the scanner off") { await host.run { await $0.scanning.disableRadio($0) } }
    }

    /// Ends any scan and waits until the controller has confirmed it (so a connect can follow).
    func stop(_ host: isolated HostController) async {
        if let id = scanner.runningID, scanner.end(id) {
            consumer?.finish()
            consumer = nil
            host.rescheduleTimer()
        }
        await disableRadio(host)
    }

    /// Turns scanning off on the controller if it is on; later scans wait for this.
    func disableRadio(_ host: isolated HostController) async {
        guard radioEnabled, host.failure == nil else { return }
        radioEnabled = false
        radioBusy += 1
        do {
            try await host.commandReturning(.leSetScanEnable(enable: false, filterDuplicates: false))
        } catch {
            host.log("LE Set Scan Enable (off): \(error)")
        }
        radioBusy -= 1
        if radioBusy == 0 {
            let waiters = idleWaiters
            idleWaiters = []
            waiters.forEach { $0.resume() }
        }
    }

    /// Runs `body` with the controller's scanner off for a moment, and on again after it if the
    /// scan still runs (a new RPA: LE Set Random Address is refused while scanning, Vol 4 Part E
    /// §7.8.4). Scans starting meanwhile wait for it.
    func withRadioPaused(_ host: isolated HostController, _ body: (isolated HostController) async -> Void) async {
        guard radioEnabled, let id = scanner.runningID, host.failure == nil else {
            await body(host)
            return
        }
        radioBusy += 1
        do {
            try await host.commandReturning(.leSetScanEnable(enable: false, filterDuplicates: false))
            radioEnabled = false
            await body(host)
            if scanner.runningID == id {
                try await host.commandReturning(.leSetScanEnable(enable: true, filterDuplicates: false))
                radioEnabled = true
            }
        } catch {
            host.log("pausing the scan for a new RPA: \(error)")
        }
        radioBusy -= 1
        if radioBusy == 0 {
            let waiters = idleWaiters
            idleWaiters = []
            waiters.forEach { $0.resume() }
        }
    }

    private func waitForIdleRadio(_ host: isolated HostController) async {
        guard radioBusy > 0 else { return }
        await withCheckedContinuation(isolation: host) { idleWaiters.append($0) }
    }

    func receive(_ report: LEAdvertisingReport, _ host: isolated HostController) {
        guard let consumer else { return }
        for var device in scanner.receive(report, now: host.now) {
            device.identity = host.privacy.identity(of: device.address, host)
            consumer.yield(device)
        }
    }

    func expire(now: Duration, _ host: isolated HostController) {
        if let id = scanner.expired(now: now) { finish(id, host) }
    }

    /// The controller or transport failed: the stream ends with `error`.
    func fail(_ error: BLEError, _ host: isolated HostController) {
        if let id = scanner.runningID, scanner.end(id) {
            consumer?.finish(throwing: error)
            consumer = nil
        }
    }
}

import BLEHCI
import BLEHost
import BLEWire

/// Scanning (Vol 4 Part E §7.8.10–11, or §7.8.64–65 when the host uses the extended commands):
/// turns the controller's scanner on and off around the sans-IO `Scanner`, and feeds each scan's
/// consumer. Scans share the one scanner: the first
/// turns it on, a later one joins it (turning it to active scanning when it wants scan
/// responses and the radio scans passively, or on a PHY the radio does not scan yet), the last
/// to end turns it off. Radio commands go
/// strictly in order: a start waits for a disable or pause in flight (Set Scan Parameters while
/// scanning is disallowed). Isolated to the host actor that owns it, which it knows only as a
/// `ScanDriver`.
final class ScanCoordinator {
    private var scanner = Scanner()
    /// The scanner's output not yet handed to the consumers: the host delivers it at the end of
    /// each batch of frames (`deliver`), or sooner when `deliveryBatch` devices are waiting, and
    /// before any scan ends, so a consumer gets its devices before its end. Emptied each time
    /// (its storage is kept).
    private var deliveries = Scanner.Deliveries()
    /// Devices held back at most: far below the consumer's buffer (`ScanResults.bufferLimit`),
    /// so a consumer that keeps up loses nothing to a long burst of events.
    private static let deliveryBatch = 256
    /// Each running scan's consumer: exactly the scanner's running scans (added right after
    /// `Scanner.begin`, removed right after `Scanner.end`), so an empty table means no scan and
    /// no deadline (`nextDeadline`).
    private var consumers: [UInt64: ScanBuffer] = [:]
    /// The PHYs each running scan listens on.
    private var scanPHYs: [UInt64: LEPHYSet] = [:]
    /// The duty cycle of each running scan that asked for one (`ScanCycle`), in §7.8.65's units.
    private var scanCycles: [UInt64: ScanCycleUnits] = [:]
    /// The cycle the controller's scanner runs with; nil: it listens all the time.
    private var radioCycle: ScanCycleUnits?
    /// The own address type the scanner was last turned on with (a cycle change reuses it).
    private var radioOwnAddressType: OwnAddressType?
    /// The cycle the running scans want: theirs when every one asked for the same, none (all
    /// the time) when any did not.
    private var wantedCycle: ScanCycleUnits? {
        guard scanCycles.count == consumers.count, let first = scanCycles.values.first,
              scanCycles.values.allSatisfy({ $0 == first }) else { return nil }
        return first
    }
    /// Whether the controller is scanning, as far as the host has told it, and how.
    private var radioEnabled = false
    private var radioActive = false
    private var radioPHYs: LEPHYSet = []
    /// Every PHY a running scan listens on.
    private var wantedPHYs: LEPHYSet { scanPHYs.values.reduce(into: LEPHYSet()) { $0.formUnion($1) } }
    /// Whether the controller's scanner is on (or a command turning it is still on its way).
    var isRadioEnabled: Bool { radioEnabled || radioBusy > 0 }
    /// Radio commands in flight (a start, a disable, a pause), and the scans waiting for them.
    private var radioBusy = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// A scan is turning the scanner on. Not counted in `radioBusy` while the privacy part
    /// prepares the radio (it loads the resolving list only while the scanner is idle), but
    /// other starts and disables wait for it.
    private var starting = false

    /// Whether any scan runs.
    var hasRunningScans: Bool { !consumers.isEmpty }

    /// The earliest deadline of the running scans (their timeouts, the devices held for scan
    /// responses); nil when none runs. Asked after every batch of frames (`rescheduleTimer`).
    var nextDeadline: Duration? {
        guard !consumers.isEmpty else { return nil }
        return Self.nextDeadline(of: &scanner)
    }

    /// `scanner.nextDeadline`, read where the scanner is: a getter of another module called on
    /// a stored property of this class would be handed a copy of the scanner (each of its
    /// arrays retained, then released), which the profile showed after every frame.
    private static func nextDeadline(of scanner: inout Scanner) -> Duration? {
        scanner.nextDeadline
    }

    /// Starts a scan on `phys` (LE 1M, LE Coded: the coded PHY needs the extended commands);
    /// devices go to `consumer` until the deadline, `stop`, or the consumer going away
    /// (`finish`). Other scans running meanwhile go on.
    /// With `cycle` the controller listens only part of each period (§7.8.65): that needs the
    /// extended commands, and every other running scan with a cycle to have the same one.
    func start(active: Bool, phys: LEPHYSet = .le1M, filter: ScanFilter, timeout: Duration?, ownAddressType: OwnAddressType,
               cycle: ScanCycleUnits? = nil, consumer: ScanBuffer,
               _ host: isolated some ScanDriver) async throws -> UInt64 {
        if let failure = host.failure { throw failure }
        try ListeningPHYs.validate(phys, for: .scanning, extended: host.usesExtendedCommands, supported: host.supportedPHYs)
        if let cycle {
            guard host.usesExtendedCommands else {
                throw BLEError.unsupported("a scan cycle needs the extended scanning commands (Vol 4 Part E §7.8.65)")
            }
            if scanCycles.values.contains(where: { $0 != cycle }) {
                throw BLEError.busy("another scan runs with another scan cycle")
            }
        }
        guard let id = scanner.begin(active: active, filter: filter, timeout: timeout) else {
            throw BLEError.busy("\(Scanner.maximumScans) scans are running already")
        }
        consumers[id] = consumer
        scanPHYs[id] = phys
        scanCycles[id] = cycle
        do {
            try await turnRadioOn(active: active, phys: phys, ownAddressType: ownAddressType, host)
            // Stopped while starting (a connect, the consumer going away).
            guard scanner.isRunning(id) else { throw CancellationError() }
        } catch {
            if scanner.end(id) { forget(id) }
            if scanner.runningIDs.isEmpty {
                await disableRadio(host)
            } else if !isRadioEnabled {
                // The controller refused this scan's parameters or enable after the scanner went
                // off for them: the scans left get it back as they had it.
                await restoreRadio(ownAddressType: ownAddressType, host)
            }
            throw error
        }
        scanner.enabled(id, now: host.now)
        host.rescheduleTimer()
        return id
    }


    /// A scan ended: its consumer and PHYs are forgotten; returns the consumer.
    @discardableResult
    private func forget(_ id: UInt64) -> ScanBuffer? {
        scanPHYs[id] = nil
        scanCycles[id] = nil
        return consumers.removeValue(forKey: id)
    }

    /// Makes the controller scan (actively when `active`, on `phys` among others), unless it
    /// does already, or no scan is left to want it.
    private func turnRadioOn(active: Bool, phys: LEPHYSet, ownAddressType: OwnAddressType, _ host: isolated some ScanDriver) async throws {
        while radioBusy > 0 || starting { await waitForIdleRadio(host) }
        if radioEnabled && (radioActive || !active) && radioPHYs.isSuperset(of: phys) && radioCycle == wantedCycle { return }
        starting = true
        defer {
            starting = false
            wakeIfIdle()
        }
        try await switchRadioOn(ownAddressType: ownAddressType, host)
    }

    /// Turns the scanner back on for the running scans after one joining them was refused (its
    /// scan type or PHYs); if the controller refuses theirs too, they end with its error rather
    /// than wait in silence.
    private func restoreRadio(ownAddressType: OwnAddressType, _ host: isolated some ScanDriver) async {
        let phys = wantedPHYs
        do {
            try await turnRadioOn(active: scanner.wantsActiveScanning, phys: phys, ownAddressType: ownAddressType, host)
        } catch {
            endAll(error: error, host)
        }
    }

    private func switchRadioOn(ownAddressType: OwnAddressType, _ host: isolated some ScanDriver) async throws {
        if radioEnabled {
            // Passive until now, and this scan wants scan responses, or a PHY not scanned yet,
            // or another cycle: the parameters change, which needs the scanner off (§7.8.10,
            // §7.8.64).
            radioBusy += 1
            defer { releaseRadio() }
            try await turnControllerScanOff(host)
            radioEnabled = false
        }
        // With the scanner off and idle: a due RPA is renewed, the resolving list loaded.
        await host.prepareRadioForScanning()
        radioBusy += 1
        defer { releaseRadio() }
        // Every scan ended while the radio was made ready (a connect, `stopScan`): nothing to scan.
        guard !scanner.runningIDs.isEmpty else { return }
        let wantsActive = scanner.wantsActiveScanning
        let wantsPHYs = wantedPHYs
        let wantsCycle = wantedCycle
        try await host.commandReturning(Self.parameters(active: wantsActive, phys: wantsPHYs, ownAddressType: ownAddressType,
                                                        host.configuration, extended: host.usesExtendedCommands))
        guard !scanner.runningIDs.isEmpty else { return }
        try await host.commandReturning(Self.enable(true, extended: host.usesExtendedCommands, cycle: wantsCycle))
        radioEnabled = true
        radioActive = wantsActive
        radioPHYs = wantsPHYs
        radioCycle = wantsCycle
        radioOwnAddressType = ownAddressType
        // A scan without a cycle ended while this went on: the ones left want theirs back.
        if !scanner.runningIDs.isEmpty && radioCycle != wantedCycle { host.spawn("scan cycle") { await host.run { await $0.scanning.followWantedCycle($0) } } }
        // Every scan ended while it was turned on: off again (a scan starting meanwhile waits).
        if scanner.runningIDs.isEmpty {
            try await turnControllerScanOff(host)
            radioEnabled = false
        }
    }

    /// LE Set Scan Parameters (§7.8.10), or LE Set Extended Scan Parameters (§7.8.64) with one
    /// entry per PHY, each with the configured interval and window.
    static func parameters(active: Bool, phys: LEPHYSet, ownAddressType: OwnAddressType, _ c: HostConfiguration,
                           extended: Bool) -> HCICommand {
        let type: LEScanType = active ? .active : .passive
        guard extended else {
            return .leSetScanParameters(type: type, interval: c.scanInterval, window: c.scanWindow,
                                        ownAddressType: ownAddressType, filterPolicy: 0)
        }
        let entry = ExtendedScanPHYParameters(type: type, interval: c.scanInterval, window: c.scanWindow)
        return .leSetExtendedScanParameters(ownAddressType: ownAddressType, le1M: phys.contains(.le1M) ? entry : nil,
                                            leCoded: phys.contains(.leCoded) ? entry : nil)
    }

    /// LE Set Scan Enable (§7.8.11) or LE Set Extended Scan Enable (§7.8.65, until disabled,
    /// listening all the time or as `cycle` says). The controller's duplicate filter stays off:
    /// the host filters, and needs every report to keep RSSI and last-seen times current (for
    /// ageing out quiet devices).
    static func enable(_ on: Bool, extended: Bool, cycle: ScanCycleUnits? = nil) -> HCICommand {
        guard extended else { return .leSetScanEnable(enable: on, filterDuplicates: false) }
        guard on, let cycle else { return .leSetExtendedScanEnable(enable: on) }
        return .leSetExtendedScanEnable(enable: true, duration: cycle.duration, period: cycle.period)
    }

    private func releaseRadio() {
        radioBusy -= 1
        wakeIfIdle()
    }

    /// Wakes the waiters once no radio command is in flight; each looks again at what it waits for.
    private func wakeIfIdle() {
        guard radioBusy == 0 else { return }
        let waiters = idleWaiters
        idleWaiters = []
        waiters.forEach { $0.resume() }
    }

    private func waitForIdleRadio(_ host: isolated some ScanDriver) async {
        await withCheckedContinuation(isolation: host) { idleWaiters.append($0) }
    }

    /// Ends scan `id`, if it still runs, and finishes its stream (with `error`, if given) after
    /// the devices it held for their scan responses; when it was the last, the controller's
    /// scanner is turned off in the background.
    func finish(_ id: UInt64, error: (any Error)? = nil, _ host: isolated some ScanDriver) {
        scanner.releaseAllHolds(of: id, into: &deliveries)
        deliver(host)
        guard scanner.end(id) else { return }
        forget(id)?.close(error: error)
        host.rescheduleTimer()
        guard host.failure == nil else { return }
        if !scanner.runningIDs.isEmpty {
            // The last scan without a cycle ended: the scans left get theirs.
            if radioEnabled && radioCycle != wantedCycle { host.spawn("scan cycle") { await host.run { await $0.scanning.followWantedCycle($0) } } }
            return
        }
        host.spawn("turning the scanner off") { await host.run { await $0.scanning.disableRadio($0) } }
    }

    /// Turns the scanner to the cycle the running scans want, when it runs with another (the
    /// last scan that wanted it listening all the time has ended); after any radio command in
    /// flight. If the controller refuses, the scans end with its error.
    func followWantedCycle(_ host: isolated some ScanDriver) async {
        while (radioBusy > 0 || starting) && host.failure == nil { await waitForIdleRadio(host) }
        guard radioEnabled, !scanner.runningIDs.isEmpty, radioCycle != wantedCycle, host.failure == nil,
              let ownAddressType = radioOwnAddressType else { return }
        starting = true
        defer {
            starting = false
            wakeIfIdle()
        }
        do {
            try await switchRadioOn(ownAddressType: ownAddressType, host)
        } catch {
            endAll(error: error, host)
        }
    }

    /// Ends every scan and waits until the controller has confirmed it (so a connect can follow).
    func stop(_ host: isolated some ScanDriver) async {
        endAll(error: nil, host)
        host.rescheduleTimer()
        await disableRadio(host)
    }

    private func endAll(error: (any Error)?, _ host: isolated some ScanDriver) {
        for id in scanner.runningIDs { scanner.releaseAllHolds(of: id, into: &deliveries) }
        deliver(host)
        for id in scanner.runningIDs where scanner.end(id) {
            forget(id)?.close(error: error)
        }
    }

    /// Turns scanning off on the controller if it is on and no scan wants it (one may have
    /// started since this was asked for, and joined); it waits for radio commands in flight
    /// first (a start, a pause), so their end is what it decides on. Later scans wait for it.
    /// LE Set Scan Enable (off), Vol 4 Part E §7.8.11 (or §7.8.65); then the scanner forgets the
    /// parts of extended advertisements under way (`Scanner.controllerStoppedScanning`).
    private func turnControllerScanOff(_ host: isolated some ScanDriver) async throws {
        try await host.commandReturning(Self.enable(false, extended: host.usesExtendedCommands))
        scanner.controllerStoppedScanning()
    }

    func disableRadio(_ host: isolated some ScanDriver) async {
        while (radioBusy > 0 || starting) && host.failure == nil { await waitForIdleRadio(host) }
        guard radioEnabled, scanner.runningIDs.isEmpty, host.failure == nil else { return }
        radioEnabled = false
        radioBusy += 1
        defer { releaseRadio() }
        do {
            try await turnControllerScanOff(host)
        } catch {
            host.log("LE Set Scan Enable (off): \(error)")
        }
    }

    /// Runs `body` with the controller's scanner off for a moment, and on again after it if the
    /// scan still runs (a new RPA: LE Set Random Address is refused while scanning, Vol 4 Part E
    /// §7.8.4). Scans starting meanwhile wait for it.
    func withRadioPaused<Host: ScanDriver>(_ host: isolated Host, _ body: (isolated Host) async -> Void) async {
        // Not behind `starting`: a start's own preparation pauses through here, with the
        // scanner off (then `body` just runs).
        while radioBusy > 0 && host.failure == nil { await waitForIdleRadio(host) }
        guard radioEnabled, !scanner.runningIDs.isEmpty, host.failure == nil else {
            await body(host)
            return
        }
        radioBusy += 1
        defer { releaseRadio() }
        do {
            try await turnControllerScanOff(host)
            radioEnabled = false
        } catch {
            host.log("pausing the scan for a new RPA: \(error)")
            return
        }
        await body(host)
        guard !scanner.runningIDs.isEmpty else { return }
        do {
            try await host.commandReturning(Self.enable(true, extended: host.usesExtendedCommands, cycle: radioCycle))
            radioEnabled = true
        } catch {
            // The scanner stays off: the scans end with the error rather than wait in silence.
            host.log("resuming the scan after a new RPA: \(error)")
            endAll(error: error, host)
        }
    }

    /// The reports of one HCI event: each goes through the scanner, and each device it gives
    /// goes to its scan's consumer, in order.
    func receive(_ reports: [LEAdvertisingReport], _ host: isolated some ScanDriver) {
        guard !consumers.isEmpty else { return }
        let now = host.now
        for report in reports { scanner.receive(report, now: now, into: &deliveries) }
        if deliveries.count >= Self.deliveryBatch { deliver(host) }
    }

    /// An LE Advertising Report or LE Extended Advertising Report event (its code, length and
    /// parameters), read in place: false when `event` is not a well-formed one, which the host
    /// then decodes as any other event (and drops, with a log, when it is malformed).
    func receive(event: [UInt8], _ host: isolated some ScanDriver) -> Bool {
        // Not an advertising report: not even the clock is read.
        guard event.count > 2, event[0] == HCIEvent.Code.leMeta,
              event[2] == LEMetaEvent.Subevent.advertisingReport || event[2] == LEMetaEvent.Subevent.extendedAdvertisingReport
        else { return false }
        let now = consumers.isEmpty ? .zero : host.now
        guard scanner.receive(event: event, now: now, into: &deliveries) else { return false }
        if deliveries.count >= Self.deliveryBatch { deliver(host) }
        return true
    }

    /// Hands the devices waiting to their scans' consumers, in order: each consumer's run of
    /// devices in one buffer operation.
    func deliver(_ host: isolated some ScanDriver) {
        guard !deliveries.isEmpty else { return }
        deliveries.resolveIdentities { host.identity(of: $0) }
        if let id = deliveries.singleScan {
            // One scan running (the common case): the devices move to its buffer uncopied.
            let consumer = consumers[id]
            deliveries.moveDevices { consumer?.push(moving: &$0) }
            return
        }
        let ids = deliveries.ids
        var start = 0
        while start < ids.count {
            let id = ids[start]
            var end = start + 1
            while end < ids.count && ids[end] == id { end += 1 }
            consumers[id]?.push(contentsOf: deliveries.devices[start..<end])
            start = end
        }
        deliveries.removeAll()
    }

    /// The timer fired: devices whose wait for a scan response ran out go to their consumers,
    /// and scans past their timeout end.
    func expire(now: Duration, _ host: isolated some ScanDriver) {
        scanner.releaseHolds(now: now, into: &deliveries)
        deliver(host)
        for id in scanner.expired(now: now) { finish(id, host) }
    }

    /// The controller or transport failed: every stream ends with `error`.
    func fail(_ error: BLEError, _ host: isolated some ScanDriver) {
        endAll(error: error, host)
    }
}

/// What scanning needs from the host beyond `HostServices`: itself (for its own tasks), and
/// of privacy, the radio made ready (an RPA renewed, the resolving list loaded, Vol 6 Part B
/// §6.2.1) and an advertiser's address resolved to its identity.
protocol ScanDriver: HostServices {
    var scanning: ScanCoordinator { get }
    /// Makes the radio ready to scan; called with the scanner off.
    func prepareRadioForScanning() async
    /// The identity `address` (a resolvable private address) resolves to, if known.
    func identity(of address: DeviceAddress) -> DeviceAddress?
    /// Whether the controller is driven with the extended commands (`AdvertisingCommandSet`).
    var usesExtendedCommands: Bool { get }
    /// The PHYs the controller has (`ControllerInfo.supportedPHYs`).
    var supportedPHYs: LEPHYSet { get }
}

/// A `ScanCycle` in the units LE Set Extended Scan Enable takes (§7.8.65): Duration in 10 ms,
/// Period in 1.28 s.
struct ScanCycleUnits: Hashable, Sendable {
    var duration: UInt16
    var period: UInt16
}

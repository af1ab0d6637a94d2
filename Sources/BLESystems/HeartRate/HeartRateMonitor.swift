import BLE
import BLEHost
import BLEProfiles
import BLEWire

/// The heart-rate monitor of SEEDS.md S3 as a reusable flow: `ble heart-rate` runs it against a
/// controller, `ble demo` and the tests against the virtual radio (everything sleeps on the
/// host's clock, so it runs in virtual time too).
///
/// It scans continuously for the Heart Rate service (180D) and keeps a live list in which a
/// monitor not heard for 10 s drops off. It connects to the named monitor, or to the strongest
/// one, but refuses one heard weaker than the RSSI gate (−70 dBm by default), saying so with its
/// RSSI: without a target it keeps scanning for a stronger one; with a target it stops with
/// `HeartRateMonitorError.tooWeak` (the user picked that device, and it is refused). Once
/// connected it discovers 180D, reads Body Sensor Location (2A38, HRS §3.2) and subscribes to
/// Heart Rate Measurement (2A37, HRS §3.1), reporting each decoded value. When the link goes
/// down it goes back to scanning; when the monitor stays connected but silent for
/// `silenceLimit` it stops with `CentralFlowError.silent`.
struct HeartRateMonitor: Sendable {
    let central: Central
    let options: HeartRateMonitorOptions
    let emit: @Sendable (HeartRateMonitorEvent) -> Void

    init(central: Central, options: HeartRateMonitorOptions, emit: @escaping @Sendable (HeartRateMonitorEvent) -> Void) {
        self.central = central
        self.options = options
        self.emit = emit
    }

    /// Runs until `options.count` measurements have arrived (then returns), or until cancelled
    /// or a failure that scanning again would not cure.
    func run() async throws {
        var received = 0
        while true {
            let device = try await choose()
            do {
                received = try await follow(device, received: received)
                if let count = options.count, received >= count { return }
            } catch let error as BLEError where Self.isLinkFailure(error) {
                emit(.disconnected(device.address, reason: "\(error)"))
            }
        }
    }

    /// Connecting can fail, and a link can drop, for reasons a new attempt may not share.
    static func isLinkFailure(_ error: BLEError) -> Bool {
        switch error {
        case .disconnected, .timeout, .connectionFailed, .notConnected: return true
        default: return false
        }
    }

    // MARK: Scanning

    /// Scans until a monitor passes the rules above; returns it with the scan stopped.
    func choose() async throws -> ScannedDevice {
        emit(.scanning)
        let clock = central.clock
        let watch = central.watch(filter: ScanFilter(serviceUUIDs: [BLEProfiles.HeartRateProfile.service]), maximumAge: options.maximumAge)
        var list = MonitorList(window: options.selectionDelay)
        for try await item in ticking(watch, every: options.refreshInterval, on: clock) {
            switch item {
            case let .element(change):
                list.apply(change)
                emit(.device(change))
            case let .tick(now):
                emit(.tick(now: now))
            }
            switch list.decide(options, now: clock.now()) {
            case .wait:
                continue
            case let .refuse(device):
                emit(.refused(device, minimumRSSI: options.minimumRSSI))
            case let .fail(device):
                throw HeartRateMonitorError.tooWeak(device, minimumRSSI: options.minimumRSSI)
            case let .connect(device):
                return device
            }
        }
        try Task.checkCancellation()
        throw HeartRateMonitorError.scanEnded
    }

    // MARK: Connected

    /// Connects, subscribes and reports measurements until the link goes down (returns the
    /// running total) or the count is reached (disconnects, returns it).
    func follow(_ device: ScannedDevice, received: Int) async throws -> Int {
        emit(.connecting(device))
        let peripheral = try await central.connect(device.address, timeout: options.connectTimeout)
        do {
            let total = try await subscribe(peripheral, name: device.advertisement.localName, received: received)
            if peripheral.state == .connected { try? await peripheral.disconnect() }
            return total
        } catch {
            if peripheral.state == .connected { try? await peripheral.disconnect() }
            throw error
        }
    }

    private func subscribe(_ peripheral: Peripheral, name: String?, received: Int) async throws -> Int {
        if options.mtu > 23 {
            do { _ = try await peripheral.exchangeMTU(options.mtu) } catch BLEError.gatt(.att) {
                // Request Not Supported: ATT_MTU stays 23 (Vol 3 Part G §4.3.1).
            }
        }
        emit(.connected(peripheral.address, name: name, mtu: peripheral.mtu))
        let service = BLEProfiles.HeartRateProfile.service
        guard let heartRate = try await peripheral.discoverServices([service]).first else {
            throw HeartRateMonitorError.notAHeartRateMonitor(peripheral.address, missing: service)
        }
        let characteristics = try await peripheral.discoverCharacteristics(for: heartRate)
        let measurementUUID = BLEProfiles.HeartRateProfile.measurement
        guard let measurement = characteristics.first(where: { $0.uuid == measurementUUID }) else {
            throw HeartRateMonitorError.notAHeartRateMonitor(peripheral.address, missing: measurementUUID)
        }
        // Body Sensor Location is optional (HRS §3.2): shown when there is one. A monitor that
        // refuses the read (an ATT error, e.g. Insufficient Authentication) still measures, so
        // the location shows as unreadable and the flow goes on; a lost link still ends it.
        if let location = characteristics.first(where: { $0.uuid == BLEProfiles.HeartRateProfile.bodySensorLocation }) {
            do {
                let value = try await peripheral.readValue(for: location)
                emit(.bodySensorLocation(value.first.map(BodySensorLocation.describe) ?? "(empty)"))
            } catch let BLEError.gatt(.att(code, _, _)) {
                emit(.bodySensorLocation("unreadable (\(code))"))
            }
        }
        let values = await peripheral.notifications(for: measurement)
        try await peripheral.setNotifyValue(true, for: measurement)
        emit(.subscribed)
        // A monitor that stays connected but stops measuring would keep `--count` waiting for
        // ever: after `silenceLimit` without a notification the flow ends with
        // `CentralFlowError.silent`.
        let clock = central.clock
        let watchdog = SilenceWatchdog(clock: clock, limit: options.silenceLimit, waitingFor: "heart-rate measurement")
        return try await withWatchdog(watchdog) { [self] in
            var total = received
            for await value in values {
                watchdog.touch()
                do throws(HeartRateError) {
                    emit(.measurement(try HeartRateMeasurement(decoding: value), at: clock.now()))
                    total += 1
                } catch {
                    emit(.malformed(value, error))
                }
                if let count = options.count, total >= count {
                    try? await peripheral.setNotifyValue(false, for: measurement)
                    return total
                }
            }
            try Task.checkCancellation()
            emit(.disconnected(peripheral.address, reason: peripheral.disconnectReason.map { "\($0)" } ?? "link closed"))
            return total
        }
    }
}

/// The monitors heard, and the rule that picks one (pure, so it is tested on its own).
///
/// A monitor is judged by the strongest RSSI heard from it over the last `window` (one second),
/// and only once it has been on the list that long: one reading is noise (real RSSI swings by
/// 10 dB from one advertisement to the next, rootcanal draws it at random), the best of a
/// second's worth is what the link can do now. The window slides, so a monitor carried away
/// is judged by where it is now, not by how close it once was, and one brought closer passes
/// as soon as it is heard strongly enough. The latest reading always counts, however old (a
/// monitor that advertises less than once a second). Without a target the strongest such
/// monitor is chosen.
struct MonitorList: Sendable {
    enum Decision: Equatable, Sendable {
        case wait
        /// Too weak to connect to; tell the user (once per monitor while it is in the list).
        /// The device carries the RSSI it was judged by.
        case refuse(ScannedDevice)
        /// The named monitor is too weak: stop.
        case fail(ScannedDevice)
        case connect(ScannedDevice)
    }

    private struct Reading: Sendable {
        let at: Duration
        let rssi: Int
    }

    /// How far back readings count (`HeartRateMonitorOptions.selectionDelay`).
    let window: Duration
    private(set) var devices: [DeviceAddress: ScannedDevice] = [:]
    /// Each listed device's readings within `window` of its latest, oldest first (the latest
    /// always kept).
    private var readings: [DeviceAddress: [Reading]] = [:]
    private var refused: Set<DeviceAddress> = []

    init(window: Duration = .seconds(1)) {
        self.window = window
    }

    mutating func apply(_ change: DeviceListChange) {
        switch change {
        case let .appeared(d), let .updated(d):
            devices[d.address] = d
            var kept = readings[d.address] ?? []
            kept.append(Reading(at: d.lastSeen, rssi: Int(d.rssi ?? -127)))
            kept.removeAll { d.lastSeen - $0.at > window }
            readings[d.address] = kept
        case let .disappeared(d):
            devices[d.address] = nil
            readings[d.address] = nil
            refused.remove(d.address)
        }
    }

    /// Strongest (latest RSSI) first, as `DeviceList.sorted`: the order the list is shown in.
    var sorted: [ScannedDevice] {
        devices.values.sorted { (Int($0.rssi ?? -127), $1.address.description) > (Int($1.rssi ?? -127), $0.address.description) }
    }

    /// `device` with the RSSI it is judged by at `now`: the strongest within the window, or
    /// the latest reading when the window holds none.
    private func judged(_ device: ScannedDevice, now: Duration) -> (device: ScannedDevice, rssi: Int) {
        let heard = readings[device.address] ?? []
        let recent = heard.filter { now - $0.at <= window }.map(\.rssi)
        let best = recent.max() ?? heard.last?.rssi ?? Int(device.rssi ?? -127)
        var d = device
        d.rssi = Int8(clamping: best)
        return (d, best)
    }

    mutating func decide(_ options: HeartRateMonitorOptions, now: Duration) -> Decision {
        let heardLongEnough = devices.values.filter { now - $0.firstSeen >= window }.map { judged($0, now: now) }
        if let target = options.target {
            let type = options.targetType?.peerType
            guard let (device, rssi) = heardLongEnough.first(where: { d, _ in d.address.address == target && (type == nil || type == d.address.type.peerType) }) else { return .wait }
            return rssi >= options.minimumRSSI ? .connect(device) : .fail(device)
        }
        guard let (best, rssi) = heardLongEnough.max(by: { ($0.rssi, $1.device.address.description) < ($1.rssi, $0.device.address.description) }) else { return .wait }
        if rssi >= options.minimumRSSI { return .connect(best) }
        guard refused.insert(best.address).inserted else { return .wait }
        return .refuse(best)
    }
}

import BLE
import BLEProfiles
import BLEWire

/// The heart-rate monitor of docs/SYSTEMS.md S3 as a reusable flow: `ble heart-rate` runs it against a
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
public struct HeartRateMonitor: Sendable {
    /// The central it scans and connects with.
    public let central: Central
    /// How it runs.
    public let options: HeartRateMonitorOptions
    /// Where its events go.
    public let emit: @Sendable (HeartRateMonitorEvent) -> Void

    /// A monitor on `central`; nothing happens until `run`.
    public init(central: Central, options: HeartRateMonitorOptions, emit: @escaping @Sendable (HeartRateMonitorEvent) -> Void) {
        self.central = central
        self.options = options
        self.emit = emit
    }

    /// Runs until `options.count` measurements have arrived (then returns), or until cancelled
    /// or a failure that scanning again would not cure.
    public func run() async throws {
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
        let watch = central.watch(filter: ScanFilter(serviceUUIDs: [HeartRateProfile.service]), maximumAge: options.maximumAge)
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
        try await exchangeMTU(options.mtu, on: peripheral)
        emit(.connected(peripheral.address, name: name, mtu: peripheral.mtu))
        let service = HeartRateProfile.service
        guard let heartRate = try await peripheral.discoverServices([service]).first else {
            throw HeartRateMonitorError.notAHeartRateMonitor(peripheral.address, missing: service)
        }
        let characteristics = try await peripheral.discoverCharacteristics(for: heartRate)
        let measurementUUID = HeartRateProfile.measurement
        guard let measurement = characteristics.first(where: { $0.uuid == measurementUUID }) else {
            throw HeartRateMonitorError.notAHeartRateMonitor(peripheral.address, missing: measurementUUID)
        }
        // Body Sensor Location is optional (HRS §3.2): shown when there is one. A monitor that
        // refuses the read (an ATT error, e.g. Insufficient Authentication) still measures, so
        // the location shows as unreadable and the flow goes on; a lost link still ends it.
        if let location = characteristics.first(where: { $0.uuid == HeartRateProfile.bodySensorLocation }) {
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
        let clock = central.clock
        let (total, linkDown) = try await countNotifications(values, of: measurement, on: peripheral, clock: clock, start: received,
                                                             limit: options.count, silenceLimit: options.silenceLimit,
                                                             waitingFor: "heart-rate measurement") { [self] value in
            do throws(HeartRateError) {
                emit(.measurement(try HeartRateMeasurement(decoding: value), at: clock.now()))
                return true
            } catch {
                emit(.malformed(value, error))
                return false
            }
        }
        if linkDown {
            emit(.disconnected(peripheral.address, reason: peripheral.disconnectReason.map { "\($0)" } ?? "link closed"))
        }
        return total
    }
}

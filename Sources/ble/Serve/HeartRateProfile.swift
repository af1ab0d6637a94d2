import BLE
import BLEHost
import BLEProfiles
import BLEWire
import Synchronization

/// `ble serve heart-rate`: the Heart Rate Service (0x180D) of SEEDS.md S3, every value through
/// the BLEProfiles codec. Measurements (HRS spec §3.1) come from `HeartRateVariantCycle`, so any
/// 24 in a row go through every flag combination (8/16-bit value, sensor contact not supported /
/// not detected / detected, Energy Expended, RR-Intervals). Body Sensor Location (§3.2) reads
/// Chest. The Control Point (§3.3) resets Energy Expended on 0x01 and answers anything else with
/// ATT error 0x80 (Control Point Value Not Supported).
///
/// The cycle advances only when a measurement reaches at least one central: the first central to
/// subscribe gets measurement 0 of the cycle, and a test can predict every value it receives.
struct HeartRateProfile: ServeProfile {
    static let name = "heart-rate"
    static let summary = "Heart Rate Service 180D with simulated measurements cycling through every flag variant"

    static let service = BLEProfiles.HeartRateProfile.service
    static let measurement = BLEProfiles.HeartRateProfile.measurement
    static let bodySensorLocation = BLEProfiles.HeartRateProfile.bodySensorLocation
    static let controlPoint = BLEProfiles.HeartRateProfile.controlPoint
    /// The location this simulated sensor reports.
    static let location = BodySensorLocation.chest
    /// One measurement a second, as a chest strap sends them.
    static let measurementInterval: Duration = .seconds(1)

    var handles: GATTServiceHandles?
    let cycle = SharedHeartRateCycle()

    mutating func install(on manager: PeripheralManager) async throws {
        let first = HeartRateVariantCycle.measurement(at: 0, energyExpended: 0).encoded()
        let handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.measurement, properties: [.notify], permissions: [], value: first),
            GATTCharacteristicDefinition(uuid: Self.bodySensorLocation, properties: [.read], permissions: [.read], value: Self.location.encoded),
            // No maximum length below ATT's 512: a longer value must reach the handler to get
            // 0x80 (HRS §3.3), not Invalid Attribute Value Length from the server.
            GATTCharacteristicDefinition(uuid: Self.controlPoint, properties: [.write], permissions: [.write], value: nil),
        ]))
        self.handles = handles
        if let cp = handles.valueHandle(for: Self.controlPoint) {
            let cycle = self.cycle
            await manager.setWriteHandler(forHandle: cp) { request in
                // The Control Point takes Write Requests only (HRS §3.3); a command is ignored.
                guard request.kind != .command else { return .success(()) }
                // A prepared write's piece at an offset is not the command byte either.
                guard request.offset == 0 else { return .failure(ATTErrorCode(rawValue: BLEProfiles.HeartRateProfile.controlPointNotSupported)) }
                switch HeartRateControlPoint.command(from: request.value) {
                case .success(.resetEnergyExpended):
                    cycle.resetEnergyExpended()
                    return .success(())
                case let .failure(refused):
                    return .failure(ATTErrorCode(rawValue: refused.attErrorCode))
                }
            }
        }
    }

    func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        let data = AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([Self.service]).localName(name).build()
        // Appearance 0x0341: Heart Rate Sensor, Heart Rate Belt (Assigned Numbers §2.6).
        let response = AdvertisingData.Builder().appearance(0x0341).build()
        return (data, response)
    }

    /// Every second, the cycle's next measurement to every subscribed central; with nobody
    /// subscribed the measurement is kept for the next one.
    func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = handles?.valueHandle(for: Self.measurement) else { return }
        while !Task.isCancelled {
            try await manager.host.clock.sleep(for: Self.measurementInterval)
            let next = cycle.peek()
            let sent = try await manager.updateValueWaiting(next.encoded(), forHandle: handle)
            if sent > 0 { cycle.advance() }
        }
    }
}

/// The measurement cycle, shared by the sending loop and the Control Point handler.
final class SharedHeartRateCycle: Sendable {
    private let cycle = Mutex(HeartRateVariantCycle())

    /// The measurement that goes out next, without consuming it.
    func peek() -> HeartRateMeasurement {
        cycle.withLock { HeartRateVariantCycle.measurement(at: $0.index, energyExpended: $0.energyExpended) }
    }

    /// The peeked measurement was delivered: move on (Energy Expended grows by 1 kJ).
    func advance() {
        cycle.withLock { _ = $0.next() }
    }

    /// Heart Rate Control Point 0x01 (HRS §3.3).
    func resetEnergyExpended() {
        cycle.withLock { $0.resetEnergyExpended() }
    }

    /// Measurements delivered so far.
    var index: UInt64 { cycle.withLock { $0.index } }

    /// The Energy Expended count the next measurement carries (when it has the field).
    var energyExpended: UInt16 { cycle.withLock { $0.energyExpended } }
}

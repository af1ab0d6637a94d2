import BLE
import BLEProfiles
import BLEWire
import Synchronization

/// `ble serve heart-rate`: the Heart Rate Service (0x180D) of docs/SYSTEMS.md S3, every value through
/// the BLEProfiles codec. Measurements (HRS spec §3.1) come from `HeartRateVariantCycle`, so any
/// 24 in a row go through every flag combination (8/16-bit value, sensor contact not supported /
/// not detected / detected, Energy Expended, RR-Intervals). Body Sensor Location (§3.2) reads
/// Chest. The Control Point (§3.3) resets Energy Expended on 0x01 and answers anything else with
/// ATT error 0x80 (Control Point Value Not Supported).
///
/// The cycle advances only when a measurement reaches at least one central: the first central to
/// subscribe gets measurement 0 of the cycle, and a test can predict every value it receives.
public struct HeartRateServeProfile: ServeProfile {
    /// The name `ble serve` takes.
    public static let name = "heart-rate"
    /// The line `ble serve --help` shows.
    public static let summary = "Heart Rate Service 180D with simulated measurements cycling through every flag variant"

    /// The location this simulated sensor reports.
    public static let location = BodySensorLocation.chest
    /// One measurement a second, as a chest strap sends them.
    public static let measurementInterval: Duration = .seconds(1)

    /// The service's handles once installed.
    var handles: GATTServiceHandles?
    /// The measurement cycle, shared with the Control Point handler (tests read its state).
    public let cycle = SharedHeartRateCycle()

    /// The profile with `ble serve`'s defaults (`configure` changes what the command gives).
    public init() {}

    /// Adds the Heart Rate Service and the Control Point handler.
    public mutating func install(on manager: PeripheralManager) async throws {
        let first = HeartRateVariantCycle.measurement(at: 0, energyExpended: 0).encoded()
        let handles = try await manager.add(GATTServiceDefinition(uuid: HeartRateProfile.service, characteristics: [
            GATTCharacteristicDefinition(uuid: HeartRateProfile.measurement, properties: [.notify], permissions: [], value: first),
            GATTCharacteristicDefinition(uuid: HeartRateProfile.bodySensorLocation, properties: [.read], permissions: [.read], value: Self.location.encoded),
            // No maximum length below ATT's 512: a longer value must reach the handler to get
            // 0x80 (HRS §3.3), not Invalid Attribute Value Length from the server.
            GATTCharacteristicDefinition(uuid: HeartRateProfile.controlPoint, properties: [.write], permissions: [.write], value: nil),
        ]))
        self.handles = handles
        if let cp = handles.valueHandle(for: HeartRateProfile.controlPoint) {
            let cycle = self.cycle
            await manager.setWriteHandler(forHandle: cp) { request in
                // The Control Point takes Write Requests only (HRS §3.3); a command is ignored.
                guard request.kind != .command else { return .success(()) }
                // A prepared write's piece at an offset is not the command byte either.
                guard request.offset == 0 else { return .failure(ATTErrorCode(rawValue: HeartRateProfile.controlPointNotSupported)) }
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

    /// 180D and the name, with the Heart Rate Belt appearance in the scan response.
    public func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        let data = AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([HeartRateProfile.service]).localName(name).build()
        // Appearance 0x0341: Heart Rate Sensor, Heart Rate Belt (Assigned Numbers §2.6).
        let response = AdvertisingData.Builder().appearance(0x0341).build()
        return (data, response)
    }

    /// Every second, the cycle's next measurement to every subscribed central; with nobody
    /// subscribed the measurement is kept for the next one.
    ///
    /// The measurement is made on the host right before it is queued (also after a wait for
    /// room), so one made after a Control Point reset always counts from 0; a reset while it is
    /// on its way is not undone when the cycle moves on (`SharedHeartRateCycle`).
    public func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = handles?.valueHandle(for: HeartRateProfile.measurement) else { return }
        let cycle = self.cycle
        while !Task.isCancelled {
            try await manager.clock.sleep(for: Self.measurementInterval)
            let sent = try await manager.updateValueWaiting(forHandle: handle) { cycle.make().encoded() }
            if sent > 0 { cycle.delivered() }
        }
    }
}

/// The measurement cycle, shared by the sending loop and the Control Point handler.
///
/// Making a measurement and moving past it once delivered are two steps with a send between
/// them, and a reset can come in between. Each reset starts a new generation; the cycle moves
/// past a delivered measurement counting its 1 kJ only if no reset came since it was made, so
/// the reset's 0 is what the next measurement says.
public final class SharedHeartRateCycle: Sendable {
    private struct State {
        var cycle = HeartRateVariantCycle()
        /// Resets so far.
        var generation: UInt64 = 0
        /// The generation the last measurement was made in.
        var madeIn: UInt64 = 0
    }

    private let state = Mutex(State())

    /// A cycle at measurement 0 with no energy expended.
    public init() {}

    /// The measurement that goes out next, without consuming it; remembers the generation.
    public func make() -> HeartRateMeasurement {
        state.withLock { s in
            s.madeIn = s.generation
            return HeartRateVariantCycle.measurement(at: s.cycle.index, energyExpended: s.cycle.energyExpended)
        }
    }

    /// The last measurement made was delivered: move on, counting its 1 kJ unless a reset came
    /// since it was made.
    public func delivered() {
        state.withLock { s in s.cycle.advance(countingEnergy: s.madeIn == s.generation) }
    }

    /// Heart Rate Control Point 0x01 (HRS §3.3).
    public func resetEnergyExpended() {
        state.withLock { s in
            s.cycle.resetEnergyExpended()
            s.generation &+= 1
        }
    }

    /// Measurements delivered so far.
    public var index: UInt64 { state.withLock { $0.cycle.index } }

    /// The Energy Expended count the next measurement carries (when it has the field).
    public var energyExpended: UInt16 { state.withLock { $0.cycle.energyExpended } }
}

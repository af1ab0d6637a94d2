import BLE
import BLEHost
import BLEWire

/// `ble serve heart-rate`: the Heart Rate Service (0x180D) with simulated measurements that go
/// through every flag variant of the Heart Rate Measurement (HRS spec §3.1): 8- and 16-bit
/// values, sensor contact not supported / not detected / detected, Energy Expended, and
/// RR-Intervals. Body Sensor Location reads Chest; the Control Point resets Energy Expended on
/// 0x01 and refuses anything else with ATT error 0x80 (Control Point Not Supported).
struct HeartRateProfile: ServeProfile {
    static let name = "heart-rate"
    static let summary = "Heart Rate Service 180D with simulated measurements cycling through every flag variant"

    static let service = BluetoothUUID(0x180D)
    static let measurement = BluetoothUUID(0x2A37)
    static let bodySensorLocation = BluetoothUUID(0x2A38)
    static let controlPoint = BluetoothUUID(0x2A39)

    var handles: GATTServiceHandles?
    let energy = EnergyCounter()

    mutating func install(on manager: PeripheralManager) async throws {
        let handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.measurement, properties: [.notify], permissions: [], value: [0x00, 60]),
            GATTCharacteristicDefinition(uuid: Self.bodySensorLocation, properties: [.read], permissions: [.read], value: [0x01]),
            GATTCharacteristicDefinition(uuid: Self.controlPoint, properties: [.write], permissions: [.write], value: nil, maximumLength: 1),
        ]))
        self.handles = handles
        if let cp = handles.valueHandle(for: Self.controlPoint) {
            let energy = self.energy
            await manager.setWriteHandler(forHandle: cp) { request in
                // The Control Point takes Write Requests only (HRS §3.3); a command is ignored.
                guard request.kind != .command else { return .success(()) }
                guard request.value == [0x01] else { return .failure(ATTErrorCode(rawValue: 0x80)) }
                energy.reset()
                return .success(())
            }
        }
    }

    func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        let data = AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([Self.service]).localName(name).build()
        let response = AdvertisingData.Builder().appearance(0x0341).build()
        return (data, response)
    }

    func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = handles?.valueHandle(for: Self.measurement) else { return }
        var step = 0
        while !Task.isCancelled {
            try await manager.host.clock.sleep(for: .seconds(1))
            let value = Self.measurement(step: step, energy: energy.add(kilojoules: 1))
            step += 1
            _ = try await manager.updateValueWaiting(value, forHandle: handle)
        }
    }

    /// The measurement for simulation step `step`: the flag byte cycles through all 32
    /// combinations of format, contact (bits 1–2), energy (bit 3) and RR (bit 4).
    static func measurement(step: Int, energy: UInt16) -> [UInt8] {
        let flags = UInt8(step % 32)
        let bpm = 60 + (step * 7) % 120
        var bytes: [UInt8] = [flags]
        if flags & 0x01 != 0 {
            bytes += [UInt8(bpm & 0xFF), UInt8(bpm >> 8)]
        } else {
            bytes.append(UInt8(min(bpm, 255)))
        }
        if flags & 0x08 != 0 { bytes += [UInt8(energy & 0xFF), UInt8(energy >> 8)] }
        if flags & 0x10 != 0 {
            // RR interval in 1/1024 s for the simulated rate, twice.
            let rr = UInt16(clamping: 60 * 1024 / max(1, bpm))
            bytes += [UInt8(rr & 0xFF), UInt8(rr >> 8), UInt8(rr & 0xFF), UInt8(rr >> 8)]
        }
        return bytes
    }
}

/// Energy Expended in kJ, shared between the simulation and the Control Point handler.
final class EnergyCounter: Sendable {
    private let kilojoules = Counter()
    func add(kilojoules n: UInt16) -> UInt16 { UInt16(clamping: kilojoules.increment(by: Int(n))) }
    func reset() { kilojoules.reset() }
}

import BLE
import BLEProfiles
import BLEWire

/// `ble serve sample`: the M5Stack peripheral of docs/SYSTEMS.md S2. A read/write characteristic
/// (properties 0x0A) that reads "Hello World" until a central writes something else (ServeLog
/// prints each write), and a notify characteristic (0x10) that sends "Notify Data NNN" every
/// second while anyone is subscribed.
public struct SampleServeProfile: ServeProfile {
    /// The name `ble serve` takes.
    public static let name = "sample"
    /// The line `ble serve --help` shows.
    public static let summary = "S2 step-by-step sample: read/write \"\(SampleProfile.initialValue)\" and \"Notify Data NNN\" every second"

    /// How often the notify characteristic sends.
    public static let interval: Duration = .seconds(1)

    var notifyHandle: UInt16?

    /// The profile with `ble serve`'s defaults (`configure` changes what the command gives).
    public init() {}

    /// Adds the service with its two characteristics.
    public mutating func install(on manager: PeripheralManager) async throws {
        let handles = try await manager.add(GATTServiceDefinition(uuid: SampleProfile.service, characteristics: [
            // Read (0x02) | Write (0x08) = SampleProfile.readWriteProperties; writes replace the value.
            GATTCharacteristicDefinition(uuid: SampleProfile.readWrite, properties: [.read, .write], permissions: [.read, .write],
                                         value: Array(SampleProfile.initialValue.utf8)),
            // Notify (0x10) = SampleProfile.notifyProperties.
            GATTCharacteristicDefinition(uuid: SampleProfile.notify, properties: [.notify], permissions: [],
                                         value: Array(SampleProfile.notifyData(0).utf8)),
        ]))
        notifyHandle = handles.valueHandle(for: SampleProfile.notify)
    }

    /// The 128-bit service UUID and as much of the name as fits; the whole name in the scan response.
    public func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        let data = AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([SampleProfile.service]).localName(name).build()
        let response = AdvertisingData.Builder().localName(name).build()
        return (data.shorteningLocalName(toFit: AdvertisingData.legacyLimit), response.shorteningLocalName(toFit: AdvertisingData.legacyLimit))
    }

    /// Every second: the next "Notify Data NNN" to every subscribed central, waiting for room
    /// rather than dropping one. The count starts again at 001 when nobody is subscribed.
    public func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = notifyHandle else { return }
        var n = 0
        while !Task.isCancelled {
            try await manager.clock.sleep(for: Self.interval)
            let text = SampleProfile.notifyData(n + 1)
            let centrals = try await manager.updateValueWaiting(Array(text.utf8), forHandle: handle)
            guard centrals > 0 else {
                n = 0
                continue
            }
            n += 1
            log.line("notified", [("handle", .int(Int(handle))), ("centrals", .int(centrals)), ("text", .string(text))],
                     text: "notified: \"\(text)\" to \(centrals) central\(centrals == 1 ? "" : "s")")
        }
    }
}

import BLE
import BLEWire

/// `ble serve battery`: the Battery Service (0x180F) with Battery Level (0x2A19, read and
/// notify), draining by 1 % every 10 s and recharging from 20 % to 100 %.
public struct BatteryServeProfile: ServeProfile {
    /// The name `ble serve` takes.
    public static let name = "battery"
    /// The line `ble serve --help` shows.
    public static let summary = "Battery Service 180F whose level drains and is notified"

    /// Battery Service.
    public static let service = BluetoothUUID(0x180F)
    /// Battery Level (a percentage).
    public static let level = BluetoothUUID(0x2A19)

    var handles: GATTServiceHandles?

    /// The profile with `ble serve`'s defaults (`configure` changes what the command gives).
    public init() {}

    /// Adds the Battery Service at 100 %.
    public mutating func install(on manager: PeripheralManager) async throws {
        handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.level, properties: [.read, .notify], permissions: [.read], value: [100]),
        ]))
    }

    /// 180F and the name.
    public func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
        (AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([Self.service]).localName(name).build(), nil)
    }

    /// Drains 1 % every 10 s (back to 100 % after 20 %), notifying subscribers.
    public func run(on manager: PeripheralManager, log: ServeLog) async throws {
        guard let handle = handles?.valueHandle(for: Self.level) else { return }
        var level = 100
        while !Task.isCancelled {
            try await manager.clock.sleep(for: .seconds(10))
            level = level <= 20 ? 100 : level - 1
            _ = try await manager.updateValueWaiting([UInt8(level)], forHandle: handle)
            await manager.setValue([UInt8(level)], forHandle: handle)
        }
    }
}

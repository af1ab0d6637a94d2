import CoreBluetooth

/// S2's step-by-step central (an M5Stack peripheral): each step printed as it happens.
public final class SampleCentral: ExampleApp, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let serviceUUID = CBUUID(string: "068c47b7-fc04-4d47-975a-7952be1a576f")
    static let readWriteUUID = CBUUID(string: "e3737b3f-a08d-405b-b32d-35a8f6c64c5d")
    static let notifyUUID = CBUUID(string: "c9da2ce8-d119-40d5-90f7-ef24627e8193")

    let notifications: Int
    var central: CBCentralManager!
    var peripheral: CBPeripheral?
    var received = 0

    /// An app that ends after `notifications` notifications.
    public init(notifications: Int = 3, queue: DispatchQueue? = nil) {
        self.notifications = notifications
        super.init(queue: queue)
    }

    /// Creates the manager.
    public func start() {
        central = CBCentralManager(delegate: self, queue: queue)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        show("state: \(Self.name(of: central.state))")
        if central.state == .poweredOn {
            central.scanForPeripherals(withServices: [Self.serviceUUID], options: [CBCentralManagerScanOptionAllowDuplicatesKey: false])
        }
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        show("discovered: \(peripheral.name ?? "unnamed") rssi \(RSSI)")
        central.stopScan()
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        show("connected: \(peripheral.state == .connected)")
        peripheral.discoverServices([Self.serviceUUID])
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        show("connected: false (\(error?.localizedDescription ?? "?"))")
        done(1)
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        show("disconnected")
        done(error == nil ? 0 : 1)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] {
            show("service: \(service.uuid)")
            peripheral.discoverCharacteristics(nil, for: service)
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] {
            show("characteristic: \(characteristic.uuid) properties 0x\(String(characteristic.properties.rawValue, radix: 16))")
            if characteristic.properties.contains(.read) { peripheral.readValue(for: characteristic) }
            if characteristic.uuid == Self.readWriteUUID {
                let text = String(format: "Write Data %03d", Int.random(in: 0...999))
                show("writing: \(text)")
                peripheral.writeValue(Data(text.utf8), for: characteristic, type: .withResponse)
            }
            if characteristic.properties.contains(.notify) { peripheral.setNotifyValue(true, for: characteristic) }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        show("wrote: \(error?.localizedDescription ?? "ok")")
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        show("notifying: \(characteristic.isNotifying)\(error.map { " (\($0.localizedDescription))" } ?? "")")
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value else { return }
        let bytes = value.map { String(format: "%02x", $0) }.joined(separator: " ")
        show("value \(characteristic.uuid): [\(bytes)] \"\(String(data: value, encoding: .utf8) ?? "")\"")
        if characteristic.uuid == Self.notifyUUID, characteristic.isNotifying {
            received += 1
            if received == notifications { central.cancelPeripheralConnection(peripheral) }
        }
    }
}

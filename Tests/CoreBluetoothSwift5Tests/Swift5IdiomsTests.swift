// Written the way iOS apps write their BLE class (Swift 5 language mode): implicitly unwrapped
// managers, `@unknown default`, a `Timer.scheduledTimer` scan timeout, `String(data:encoding:)`,
// forced casts of advertisement data. It must compile against `import CoreBluetooth` unchanged.
import CoreBluetooth
import XCTest

class HeartRateMonitor: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    var centralManager: CBCentralManager!
    var heartRatePeripheral: CBPeripheral!
    var scanTimer: Timer?
    var log: [String] = []
    var l2capPSM: CBL2CAPPSM?
    let heartRateServiceCBUUID = CBUUID(string: "0x180D".replacingOccurrences(of: "0x", with: ""))
    let heartRateMeasurementCharacteristicCBUUID = CBUUID(string: "2A37")
    let bodySensorLocationCharacteristicCBUUID = CBUUID(string: "2A38")

    func start() {
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .unknown: log.append("central.state is .unknown")
        case .resetting: log.append("central.state is .resetting")
        case .unsupported: log.append("central.state is .unsupported")
        case .unauthorized: log.append("central.state is .unauthorized")
        case .poweredOff: log.append("central.state is .poweredOff")
        case .poweredOn:
            log.append("central.state is .poweredOn")
            centralManager.scanForPeripherals(withServices: [heartRateServiceCBUUID])
            scanTimer = Timer.scheduledTimer(withTimeInterval: 10, repeats: false) { [weak self] _ in
                self?.centralManager.stopScan()
            }
        @unknown default:
            log.append("unknown state")
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        let timestamp = advertisementData["kCBAdvDataTimestamp"] as! Double
        let name = advertisementData[CBAdvertisementDataLocalNameKey] as? String ?? peripheral.name!
        if let manufacturer = advertisementData[CBAdvertisementDataManufacturerDataKey] as? Data {
            log.append("manufacturer \(manufacturer.count) bytes")
        }
        if let services = advertisementData[CBAdvertisementDataServiceDataKey] as? [CBUUID: Data] {
            log.append("service data \(services.count)")
        }
        let connectable = (advertisementData[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue ?? false
        log.append("\(name) \(RSSI.intValue) dBm at \(timestamp) connectable \(connectable)")
        heartRatePeripheral = peripheral
        heartRatePeripheral.delegate = self
        centralManager.stopScan()
        scanTimer?.invalidate()
        centralManager.connect(heartRatePeripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.append("Connected!")
        central.registerForConnectionEvents(options: [.serviceUUIDs: [heartRateServiceCBUUID]])
        if let psm = l2capPSM { peripheral.openL2CAPChannel(psm) }
        heartRatePeripheral.discoverServices([heartRateServiceCBUUID])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        if let error = error as? CBError, error.code == .connectionTimeout {
            central.connect(peripheral, options: nil)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let services = peripheral.services else { return }
        for service in services {
            peripheral.discoverCharacteristics(nil, for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let characteristics = service.characteristics else { return }
        for characteristic in characteristics {
            if characteristic.properties.contains(.read) {
                peripheral.readValue(for: characteristic)
            }
            if characteristic.properties.contains(.notify) {
                peripheral.setNotifyValue(true, for: characteristic)
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        switch characteristic.uuid {
        case bodySensorLocationCharacteristicCBUUID:
            log.append(String(data: characteristic.value ?? Data(), encoding: .utf8) ?? "?")
        case heartRateMeasurementCharacteristicCBUUID:
            guard let characteristicData = characteristic.value else { return }
            let byteArray = [UInt8](characteristicData)
            let bpm = byteArray[0] & 0x01 == 0 ? Int(byteArray[1]) : (Int(byteArray[1]) << 8) + Int(byteArray[2])
            log.append("\(bpm) bpm")
        default:
            log.append("Unhandled Characteristic UUID: \(characteristic.uuid)")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel = channel else { return }
        channel.inputStream.open()
        channel.outputStream.open()
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: Error?) {
        log.append("disconnected at \(timestamp), reconnecting \(isReconnecting)")
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error = error {
            switch error {
            case CBATTError.writeNotPermitted: log.append("not permitted")
            default: log.append(error.localizedDescription)
            }
        }
    }
}

final class Swift5IdiomsTests: XCTestCase {
    /// The class above compiles; its state callback runs and is answered with the usual switch.
    func testIdiomaticClassCompilesAndGetsItsStateCallback() {
        let monitor = HeartRateMonitor()
        let saved = ProcessInfo.processInfo.environment["BLE_HCI"]
        setenv("BLE_HCI", "virtual", 1)
        defer { if let saved = saved { setenv("BLE_HCI", saved, 1) } else { unsetenv("BLE_HCI") } }
        monitor.start()
        let deadline = Date().addingTimeInterval(15)
        while monitor.log.isEmpty, Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.05))
        }
        XCTAssertEqual(monitor.log.first, "central.state is .poweredOn")
        monitor.centralManager.stopScan()
        monitor.scanTimer?.invalidate()
    }
}

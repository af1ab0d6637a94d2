import CoreBluetooth

/// S4's accelerometer peripheral: service 0011, characteristic 0012 (notify, readable); advertises
/// as BLE001; every 0.2 s, while a central is subscribed, notifies x, y, z as three little-endian
/// Float32 from a simulated motion; when the queue is full it waits for `isReady` instead of
/// dropping samples.
public final class AccelerometerPeripheral: ExampleApp, CBPeripheralManagerDelegate, @unchecked Sendable {
    static let serviceUUID = CBUUID(string: "0011")
    static let characteristicUUID = CBUUID(string: "0012")

    let duration: Double
    public private(set) var manager: CBPeripheralManager!
    let characteristic = CBMutableCharacteristic(type: characteristicUUID, properties: [.notify, .read], value: nil, permissions: [.readable])
    var tick = 0
    var waitingForRoom = false
    var sent = 0

    /// A peripheral that stops after `duration` seconds (0: never).
    public init(duration: Double = 0, queue: DispatchQueue? = nil) {
        self.duration = duration
        super.init(queue: queue)
    }

    /// Creates the manager.
    public func start() {
        manager = CBPeripheralManager(delegate: self, queue: queue)
    }

    public func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        show("state: \(Self.name(of: peripheral.state))")
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: Self.serviceUUID, primary: true)
        service.characteristics = [characteristic]
        peripheral.add(service)
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "BLE001", CBAdvertisementDataServiceUUIDsKey: [Self.serviceUUID]])
    }

    public func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        show(error.map { "advertising failed: \($0.localizedDescription)" } ?? "advertising as BLE001")
        sample()
        if duration > 0 {
            after(duration) { [self] in
                manager.stopAdvertising()
                show("sent \(sent) samples")
                done(0)
            }
        }
    }

    /// One sample every 0.2 s while anyone is subscribed.
    func sample() {
        after(0.2) { [self] in sample() }
        tick += 1
        guard !waitingForRoom, !(characteristic.subscribedCentrals ?? []).isEmpty else { return }
        send()
    }

    func send() {
        let t = Float(tick) * 0.2
        let values: [Float] = [sin(t), cos(t), 0.5 * sin(2 * t)]
        var bytes = Data()
        for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { bytes.append(contentsOf: $0) } }
        if manager.updateValue(bytes, for: characteristic, onSubscribedCentrals: nil) {
            sent += 1
        } else {
            waitingForRoom = true
        }
    }

    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        waitingForRoom = false
        send()
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        show("subscribed: \(central.identifier)")
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        show("unsubscribed: \(central.identifier)")
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        show("read request at \(request.offset)")
        request.value = Data(count: 12)
        peripheral.respond(to: request, withResult: .success)
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        show("write request: \(requests.count)")
        peripheral.respond(to: requests[0], withResult: .writeNotPermitted)
    }
}

/// S4's charting central: scans 5 s without a filter, lists devices whose name contains "ble",
/// picks the first, connects to it by identifier, subscribes to 0011/0012 and shows x, y, z.
public final class AccelerometerCentral: ExampleApp, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let samples: Int
    let scanSeconds: Double
    /// How many scans of `scanSeconds` may pass with nothing listed before the app gives up.
    let scanRounds: Int
    var central: CBCentralManager!
    var listed: [UUID: String] = [:]
    var order: [UUID] = []
    var chosen: CBPeripheral?
    var received = 0

    /// An app that ends after `samples` samples (0: never). The scan lists devices for
    /// `scanSeconds`; when none is listed by then it scans on, `scanSeconds` at a time, for up
    /// to `giveUpSeconds` in all (infinity: until one is), and at least one scan. The default,
    /// 0, gives up after the first.
    public init(samples: Int = 0, scanSeconds: Double = 5, giveUpSeconds: Double = 0, queue: DispatchQueue? = nil) {
        self.samples = samples
        self.scanSeconds = scanSeconds
        self.scanRounds = Self.rounds(scanSeconds: scanSeconds, giveUpSeconds: giveUpSeconds)
        super.init(queue: queue)
    }

    /// Creates the manager.
    public func start() {
        central = CBCentralManager(delegate: self, queue: queue)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        show("state: \(Self.name(of: central.state))")
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: nil)
        after(scanSeconds) { [self] in pick(round: 1) }
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard let name = advertisementData[CBAdvertisementDataLocalNameKey] as? String ?? peripheral.name,
              name.lowercased().contains("ble"), listed[peripheral.identifier] == nil else { return }
        listed[peripheral.identifier] = name
        order.append(peripheral.identifier)
        show("\(order.count). \(name) \(RSSI) dBm")
    }

    /// How many scans of `scanSeconds` fit in `giveUpSeconds` (a hair of rounding allowed, so
    /// 0.3 s holds three of 0.1 s), at least one; `Int.max` for ever.
    static func rounds(scanSeconds: Double, giveUpSeconds: Double) -> Int {
        guard scanSeconds > 0, giveUpSeconds.isFinite else { return scanSeconds > 0 && giveUpSeconds == .infinity ? .max : 1 }
        let fit = (giveUpSeconds / scanSeconds * (1 + 1e-9)).rounded(.down)
        return fit >= Double(Int.max) ? .max : max(1, Int(fit))
    }

    /// Ends the scan after `round` scans with the first device listed, or scans on while none
    /// is and rounds are left.
    func pick(round: Int) {
        if order.isEmpty, round < scanRounds {
            return after(scanSeconds) { [self] in pick(round: round + 1) }
        }
        central.stopScan()
        guard let first = order.first, let peripheral = central.retrievePeripherals(withIdentifiers: [first]).first else {
            show("no device named like \"ble\"")
            return done(1)
        }
        show("connecting to \(listed[first] ?? "?")")
        chosen = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([CBUUID(string: "0011")])
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        show("disconnected")
        done(error == nil ? 0 : 1)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first else { return done(1) }
        peripheral.discoverCharacteristics([CBUUID(string: "0012")], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return done(1) }
        peripheral.setNotifyValue(true, for: characteristic)
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value, value.count == 12 else { return }
        let floats = (0..<3).map { i in
            Float(bitPattern: value[(i * 4)..<(i * 4 + 4)].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) })
        }
        show(String(format: "x %+.3f  y %+.3f  z %+.3f", floats[0], floats[1], floats[2]))
        received += 1
        if samples > 0, received == samples { central.cancelPeripheralConnection(peripheral) }
    }
}

import CoreBluetooth

/// S3's heart-rate monitor: scans for 180D, refuses weak signals, subscribes to Heart Rate
/// Measurement (decoded per the Heart Rate Service specification) and scans again after a disconnect.
///
/// The RSSI gate (docs/SYSTEMS.md S3, as `ble heart-rate` applies it): a monitor heard weaker than
/// `minimumRSSI` is refused with a line showing its RSSI, once, and every later advertisement
/// is judged again, so a monitor brought closer is taken. That needs every advertisement, not
/// only changed ones: the scan asks for duplicates (`CBCentralManagerScanOptionAllowDuplicatesKey`,
/// as Apple's docs advise for tracking RSSI).
public final class HeartRateMonitor: ExampleApp, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let heartRateUUID = CBUUID(string: "180D")
    static let measurementUUID = CBUUID(string: "2A37")
    static let bodySensorLocationUUID = CBUUID(string: "2A38")
    static let locations = ["Other", "Chest", "Wrist", "Finger", "Hand", "Ear Lobe", "Foot"]
    /// The RSSI `didDiscover` gives when none is available (Apple's `CBCentralManagerDelegate` docs).
    static let rssiUnavailable = 127

    let measurements: Int
    let minimumRSSI: Int
    /// Only monitors whose name contains this (nil: any).
    let nameContains: String?
    var central: CBCentralManager!
    var monitor: CBPeripheral?
    var count = 0
    /// Monitors shown during this scan, and those refused (each is shown and refused once per scan).
    var shown: Set<UUID> = []
    var refused: Set<UUID> = []

    /// An app that ends after `measurements` measurements (0: never), taking only monitors
    /// whose name contains `nameContains` when given, heard at `minimumRSSI` dBm or better.
    public init(measurements: Int = 0, minimumRSSI: Int = -70, nameContains: String? = nil, queue: DispatchQueue? = nil) {
        self.measurements = measurements
        self.minimumRSSI = minimumRSSI
        self.nameContains = nameContains
        super.init(queue: queue)
    }

    /// The app `cb-heart-rate`'s command line asks for.
    public convenience init(_ arguments: HeartRateMonitorArguments, queue: DispatchQueue? = nil) {
        self.init(measurements: arguments.measurements, minimumRSSI: arguments.minimumRSSI,
                  nameContains: arguments.nameContains, queue: queue)
    }

    /// Creates the manager.
    public func start() {
        central = CBCentralManager(delegate: self, queue: queue)
    }

    /// Scans for 180D, every advertisement reported, the monitors seen so far forgotten. Takes
    /// the manager from the callback: the first state callback may run before `start` has
    /// stored it in `central`.
    func scan(_ central: CBCentralManager) {
        shown = []
        refused = []
        central.scanForPeripherals(withServices: [Self.heartRateUUID],
                                   options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        show("state: \(Self.name(of: central.state))")
        if central.state == .poweredOn { scan(central) }
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard monitor == nil else { return }
        if let nameContains, !(peripheral.name ?? "").contains(nameContains) { return }
        let rssi = RSSI.intValue
        let name = peripheral.name ?? "unnamed device"
        if shown.insert(peripheral.identifier).inserted {
            let timestamp = Date(timeIntervalSinceReferenceDate: (advertisementData["kCBAdvDataTimestamp"] as? NSNumber)?.doubleValue ?? 0)
            show("monitor: \(name) \(rssi == Self.rssiUnavailable ? "RSSI unknown" : "\(rssi) dBm") at \(timestamp)")
        }
        // Judged again on every advertisement: one without an RSSI cannot pass.
        guard rssi != Self.rssiUnavailable, rssi >= minimumRSSI else {
            if refused.insert(peripheral.identifier).inserted {
                let heard = rssi == Self.rssiUnavailable ? "RSSI unknown" : "signal \(rssi) dBm"
                show("not connecting to \(name): \(heard) is weaker than \(minimumRSSI) dBm; waiting for it to come closer")
            }
            return
        }
        if refused.contains(peripheral.identifier) { show("\(name) now \(rssi) dBm") }
        central.stopScan()
        monitor = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        show("connected to \(peripheral.name ?? "unnamed device")")
        peripheral.discoverServices([Self.heartRateUUID])
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        show("could not connect\(error.map { ": \($0.localizedDescription)" } ?? "")")
        monitor = nil
        scan(central)
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        show("disconnected\(error.map { ": \($0.localizedDescription)" } ?? "")")
        monitor = nil
        if measurements > 0, count >= measurements { return done(0) }
        scan(central)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == Self.heartRateUUID }) else { return }
        peripheral.discoverCharacteristics([Self.measurementUUID, Self.bodySensorLocationUUID], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] {
            if characteristic.uuid == Self.bodySensorLocationUUID { peripheral.readValue(for: characteristic) }
            if characteristic.uuid == Self.measurementUUID { peripheral.setNotifyValue(true, for: characteristic) }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard let value = characteristic.value else { return }
        switch characteristic.uuid {
        case Self.bodySensorLocationUUID:
            let location = value.first.map { Int($0) < Self.locations.count ? Self.locations[Int($0)] : "Reserved" } ?? "?"
            show("body sensor location: \(location)")
        case Self.measurementUUID:
            show(Self.describe(measurement: [UInt8](value)))
            count += 1
            if measurements > 0, count == measurements { central.cancelPeripheralConnection(peripheral) }
        default:
            break
        }
    }

    /// A Heart Rate Measurement, decoded: flags bit 0 the value's format, bits 1-2 sensor
    /// contact, bit 3 Energy Expended, bit 4 RR-Intervals.
    public static func describe(measurement bytes: [UInt8]) -> String {
        guard let flags = bytes.first else { return "heart rate: (empty)" }
        var i = 1
        func u16() -> Int? {
            guard i + 1 < bytes.count else { return nil }
            defer { i += 2 }
            return Int(bytes[i]) | Int(bytes[i + 1]) << 8
        }
        let bpm: Int?
        if flags & 0x01 == 0 {
            bpm = i < bytes.count ? Int(bytes[i]) : nil
            i += 1
        } else {
            bpm = u16()
        }
        var text = "heart rate: \(bpm.map(String.init) ?? "?") bpm"
        switch (flags >> 1) & 0x03 {
        case 0b10: text += ", no skin contact"
        case 0b11: text += ", contact"
        default: break
        }
        if flags & 0x08 != 0, let energy = u16() { text += ", energy \(energy) kJ" }
        if flags & 0x10 != 0 {
            var rr: [String] = []
            while let r = u16() { rr.append(String(format: "%.3f s", Double(r) / 1024)) }
            text += ", RR " + rr.joined(separator: " ")
        }
        return text
    }
}

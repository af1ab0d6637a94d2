import BLEWire

/// The accelerometer peripheral and charting central of docs/SYSTEMS.md S4: one service, one notify
/// characteristic carrying `AccelerometerSample`s.
public enum AccelerometerProfile {
    /// The primary service (a 16-bit UUID chosen by the article, not a SIG-assigned one).
    public static let service: BluetoothUUID = "0011"
    /// The sample characteristic: notify, with a readable value permission.
    public static let sample: BluetoothUUID = "0012"
    /// Characteristic properties of `sample`: Notify (0x10). Core spec Vol 3 Part G §3.3.1.1.
    public static let sampleProperties: UInt8 = 0x10
    /// The local name the peripheral advertises (with `service`).
    public static let localName = "BLE001"
    /// How often the peripheral samples and notifies: every 0.2 s.
    public static let sampleInterval: Duration = .milliseconds(200)
    /// How long the central scans before listing what it found.
    public static let scanDuration: Duration = .seconds(5)

    /// Whether the central lists a device: its advertised local name contains "ble", in any case.
    /// The central scans without a service filter and picks by name (docs/SYSTEMS.md S4).
    public static func isCandidate(localName name: String?) -> Bool {
        guard let name else { return false }
        return name.lowercased().contains("ble")
    }
}

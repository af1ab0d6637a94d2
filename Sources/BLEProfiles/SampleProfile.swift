import BLEWire

/// The step-by-step sample of docs/SYSTEMS.md S2 (an M5Stack peripheral and a central whose logic lives
/// in a package): one read/write characteristic and one notify characteristic.
public enum SampleProfile {
    /// The primary service.
    public static let service: BluetoothUUID = "068c47b7-fc04-4d47-975a-7952be1a576f"

    /// Read + write; reads `initialValue` until the central writes `writeData(_:)`.
    public static let readWrite: BluetoothUUID = "e3737b3f-a08d-405b-b32d-35a8f6c64c5d"
    /// Characteristic properties of `readWrite`: Read (0x02) | Write (0x08).
    /// Core spec Vol 3 Part G §3.3.1.1.
    public static let readWriteProperties: UInt8 = 0x0A

    /// Notify only; the peripheral sends `notifyData(_:)` periodically.
    public static let notify: BluetoothUUID = "c9da2ce8-d119-40d5-90f7-ef24627e8193"
    /// Characteristic properties of `notify`: Notify (0x10). Core spec Vol 3 Part G §3.3.1.1.
    public static let notifyProperties: UInt8 = 0x10

    /// What `readWrite` holds before anything is written.
    public static let initialValue = "Hello World"

    /// "Write Data 042": what the central writes, `n` shown with three digits.
    ///
    /// The article draws `n` at random from 0...999; a value outside that range is reduced
    /// modulo 1000 so that the text always has exactly three digits.
    public static func writeData(_ n: Int) -> String { "Write Data " + threeDigits(n) }

    /// "Notify Data 042": what the peripheral notifies, `n` as in `writeData(_:)`.
    public static func notifyData(_ n: Int) -> String { "Notify Data " + threeDigits(n) }

    /// `n` modulo 1000 (never negative), zero-filled to three digits.
    static func threeDigits(_ n: Int) -> String {
        let value = ((n % 1000) + 1000) % 1000
        let digits = String(value)
        return String(repeating: "0", count: 3 - digits.count) + digits
    }
}

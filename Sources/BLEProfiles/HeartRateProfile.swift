import BLEWire

/// The standard Heart Rate Service used by docs/SYSTEMS.md S3: UUIDs and the one service-specific
/// ATT error code. Heart Rate Service specification v1.0 (HRS) §2–§3; UUIDs from the Bluetooth
/// Assigned Numbers.
public enum HeartRateProfile {
    /// Heart Rate service.
    public static let service: BluetoothUUID = "180D"
    /// Heart Rate Measurement (notify): `HeartRateMeasurement`. HRS §3.1.
    public static let measurement: BluetoothUUID = "2A37"
    /// Body Sensor Location (read): `BodySensorLocation`. HRS §3.2.
    public static let bodySensorLocation: BluetoothUUID = "2A38"
    /// Heart Rate Control Point (write): `HeartRateControlPoint`. HRS §3.3.
    public static let controlPoint: BluetoothUUID = "2A39"

    /// "Control Point Value Not Supported": the ATT application error (Core spec Vol 3 Part F
    /// §3.4.1.1, range 0x80–0x9F) a server returns for a Control Point write it does not know.
    /// HRS §3.3.
    public static let controlPointNotSupported: UInt8 = 0x80
}

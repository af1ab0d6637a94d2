/// Where a heart rate sensor is worn: the Body Sensor Location characteristic (0x2A38), one byte.
/// Heart Rate Service spec v1.0 (HRS) §3.2; docs/SYSTEMS.md S3. Values 7–255 are reserved.
public enum BodySensorLocation: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case other = 0
    case chest = 1
    case wrist = 2
    case finger = 3
    case hand = 4
    case earLobe = 5
    case foot = 6

    /// The spec's name: "Other", "Chest", "Wrist", "Finger", "Hand", "Ear Lobe", "Foot".
    public var name: String {
        switch self {
        case .other: return "Other"
        case .chest: return "Chest"
        case .wrist: return "Wrist"
        case .finger: return "Finger"
        case .hand: return "Hand"
        case .earLobe: return "Ear Lobe"
        case .foot: return "Foot"
        }
    }

    public var description: String { name }

    /// A name for any byte a peer may send: the location's name, or "reserved (0x07)".
    public static func describe(_ raw: UInt8) -> String {
        if let location = BodySensorLocation(rawValue: raw) { return location.name }
        let hex = String(raw, radix: 16, uppercase: true)
        return "reserved (0x" + (hex.count < 2 ? "0" : "") + hex + ")"
    }

    /// Decodes the characteristic value as read: its first byte. Bytes after it are ignored
    /// (a later spec version may add some); none, or a reserved value, is a typed error.
    public init(decoding value: [UInt8]) throws(HeartRateError) {
        guard let raw = value.first else { throw .emptyBodySensorLocation }
        guard let location = BodySensorLocation(rawValue: raw) else { throw .reservedBodySensorLocation(raw) }
        self = location
    }

    /// The characteristic value.
    public var encoded: [UInt8] { [rawValue] }
}

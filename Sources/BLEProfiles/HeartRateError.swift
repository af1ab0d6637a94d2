/// Why a Heart Rate Service value could not be decoded (HRS §3.1, §3.2; docs/SYSTEMS.md S3).
/// These come from a peer, so a short or odd value is an error, never a trap.
public enum HeartRateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A Heart Rate Measurement with no bytes at all (not even the flags).
    case empty
    /// The Heart Rate Measurement Value field is shorter than its flag says (1 or 2 bytes).
    case truncatedValue(needed: Int, remaining: Int)
    /// The flags announce Energy Expended but fewer than 2 bytes follow the value.
    case truncatedEnergyExpended(remaining: Int)
    /// The RR-Interval field has an odd number of bytes: its last interval is cut in half.
    case oddRRIntervalLength(Int)
    /// A Body Sensor Location value with no bytes.
    case emptyBodySensorLocation
    /// A Body Sensor Location value the service spec reserves (7–255).
    case reservedBodySensorLocation(UInt8)

    public var description: String {
        switch self {
        case .empty:
            return "Heart Rate Measurement: empty value (no flags byte)"
        case let .truncatedValue(needed, remaining):
            return "Heart Rate Measurement: heart rate value needs \(needed) byte(s), \(remaining) left"
        case let .truncatedEnergyExpended(remaining):
            return "Heart Rate Measurement: Energy Expended flagged but only \(remaining) byte(s) left (needs 2)"
        case let .oddRRIntervalLength(length):
            return "Heart Rate Measurement: RR-Interval field of \(length) bytes is not a whole number of 2-byte intervals"
        case .emptyBodySensorLocation:
            return "Body Sensor Location: empty value"
        case let .reservedBodySensorLocation(raw):
            return "Body Sensor Location: \(BodySensorLocation.describe(raw))"
        }
    }
}

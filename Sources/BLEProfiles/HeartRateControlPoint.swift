/// The Heart Rate Control Point characteristic (0x2A39), written by the client.
/// Heart Rate Service spec v1.0 (HRS) §3.3; docs/SYSTEMS.md S3.
///
/// The only command is 0x01, Reset Energy Expended; a server answers any other value with the ATT
/// application error 0x80 (`HeartRateProfile.controlPointNotSupported`).
public enum HeartRateControlPoint {
    /// A command a client can write.
    public enum Command: UInt8, Equatable, Sendable, CaseIterable {
        /// Sets the Energy Expended count back to 0.
        case resetEnergyExpended = 0x01

        /// The value a client writes.
        public var value: [UInt8] { [rawValue] }
    }

    /// A written value that is not a known command: the server responds with `attErrorCode`.
    public struct ControlPointError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The value as written.
        public var value: [UInt8]

        public init(value: [UInt8]) { self.value = value }

        /// The ATT Error Response code to send back: 0x80, Control Point Value Not Supported.
        public var attErrorCode: UInt8 { HeartRateProfile.controlPointNotSupported }

        public var description: String {
            let shown = value.isEmpty ? "an empty value" : "value " + value.map(Self.hex).joined(separator: " ")
            return "Heart Rate Control Point: \(shown) is not a supported command (ATT error 0x80)"
        }

        private static func hex(_ byte: UInt8) -> String {
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count < 2 ? "0" + digits : digits
        }
    }

    /// The command a written value asks for. The value must be exactly the one command byte:
    /// empty, longer, or unknown values are errors carrying ATT error 0x80.
    public static func command(from value: [UInt8]) -> Result<Command, ControlPointError> {
        guard value.count == 1, let byte = value.first, let command = Command(rawValue: byte) else {
            return .failure(ControlPointError(value: value))
        }
        return .success(command)
    }
}

/// One accelerometer reading, x, y, z in g: the 12-byte value of `AccelerometerProfile.sample`
/// (docs/SYSTEMS.md S4), three IEEE 754 Float32 little-endian, x first. The article sent the phone's
/// native order, which is little-endian on every phone it ran on; this fixes it as such.
public struct AccelerometerSample: Equatable, Sendable {
    public var x: Float
    public var y: Float
    public var z: Float

    public init(x: Float, y: Float, z: Float) {
        self.x = x
        self.y = y
        self.z = z
    }

    /// Bytes in one notification.
    public static let encodedLength = 12

    /// The characteristic value: x, y, z as Float32 little-endian.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.encodedLength)
        for component in [x, y, z] {
            let bits = component.bitPattern
            for shift in stride(from: UInt32(0), to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: bits >> shift)) }
        }
        return out
    }

    /// Decodes a notified value, which must be exactly 12 bytes. Any bit pattern is a Float, so
    /// NaN and infinities come through as they were sent (NaN is not equal to itself).
    public init(decoding value: [UInt8]) throws(AccelerometerError) {
        guard value.count == Self.encodedLength else { throw .wrongLength(value.count) }
        func component(_ index: Int) -> Float {
            var bits: UInt32 = 0
            for byte in 0..<4 { bits |= UInt32(value[4 * index + byte]) << (8 * UInt32(byte)) }
            return Float(bitPattern: bits)
        }
        self.init(x: component(0), y: component(1), z: component(2))
    }

    /// Parses a line from a sample file or stdin: three finite numbers separated by whitespace
    /// ("0.1 -0.2 0.98") or by commas with optional whitespace ("0.1, -0.2, 0.98").
    /// Anything else (wrong count, empty field, not a number, NaN or infinity) is nil, so a
    /// reader can skip headers and comments.
    public init?(line: String) {
        let fields: [Substring]
        if line.contains(",") {
            fields = line.split(separator: ",", omittingEmptySubsequences: false).map(Self.trimmed)
        } else {
            fields = line.split(whereSeparator: \.isWhitespace)
        }
        guard fields.count == 3 else { return nil }
        var values: [Float] = []
        for field in fields {
            guard let value = Float(field), value.isFinite else { return nil }
            values.append(value)
        }
        self.init(x: values[0], y: values[1], z: values[2])
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return text
    }
}

/// Why an accelerometer value could not be decoded (docs/SYSTEMS.md S4).
public enum AccelerometerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The value was not exactly 12 bytes.
    case wrongLength(Int)

    public var description: String {
        switch self {
        case let .wrongLength(count):
            return "accelerometer sample: \(count) bytes, expected \(AccelerometerSample.encodedLength) (three Float32 little-endian)"
        }
    }
}

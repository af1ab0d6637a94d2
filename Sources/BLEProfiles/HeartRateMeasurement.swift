import BLEWire

/// One Heart Rate Measurement characteristic value (0x2A37). Heart Rate Service spec v1.0 (HRS)
/// §3.1; docs/SYSTEMS.md S3 (where the article got the flag bits and the byte order wrong).
///
/// Layout, all little-endian:
/// - Flags (1 byte): bit 0 value format (0 = UInt8, 1 = UInt16); bits 1–2 sensor contact
///   (0b00 / 0b01 not supported, 0b10 supported but not detected, 0b11 detected); bit 3 Energy
///   Expended present; bit 4 RR-Intervals present; bits 5–7 reserved (ignored when decoding,
///   sent as 0).
/// - Heart Rate Measurement Value: UInt8 or UInt16, beats per minute.
/// - Energy Expended (if bit 3): UInt16, kilojoules since the last reset.
/// - RR-Intervals (if bit 4): UInt16 each, in 1/1024 s, oldest first, as many as the value holds.
public struct HeartRateMeasurement: Equatable, Sendable {
    /// Flags bit 0: how wide the heart rate value is on the wire.
    public enum ValueFormat: Equatable, Sendable, CaseIterable {
        case uint8
        case uint16
    }

    /// Flags bits 1–2.
    public enum SensorContact: Equatable, Sendable, CaseIterable {
        /// 0b00 or 0b01: the sensor cannot tell whether it touches the skin.
        case notSupported
        /// 0b10: it can tell, and it does not (the rate may be meaningless).
        case notDetected
        /// 0b11: it can tell, and it does.
        case detected

        /// The two flag bits, before shifting into place (0b01 is never sent).
        var flagBits: UInt8 {
            switch self {
            case .notSupported: return 0b00
            case .notDetected: return 0b10
            case .detected: return 0b11
            }
        }

        init(flagBits: UInt8) {
            switch flagBits & 0b11 {
            case 0b10: self = .notDetected
            case 0b11: self = .detected
            default: self = .notSupported
            }
        }
    }

    static let formatBit: UInt8 = 0x01
    static let contactShift: UInt8 = 1
    static let energyBit: UInt8 = 0x08
    static let rrBit: UInt8 = 0x10

    /// The heart rate, beats per minute.
    public var beatsPerMinute: UInt16
    /// The width the value is (or was) sent with.
    public var valueFormat: ValueFormat
    public var sensorContact: SensorContact
    /// Energy expended since the last reset, kJ; nil when the field is absent. The sensor holds
    /// it at 0xFFFF once it gets there (HRS §3.1).
    public var energyExpended: UInt16?
    /// RR-Intervals in units of 1/1024 s, oldest first.
    public var rrIntervals: [UInt16]

    /// The RR-Intervals in seconds.
    public var rrIntervalSeconds: [Double] { rrIntervals.map { Double($0) / 1024 } }

    public init(beatsPerMinute: UInt16, valueFormat: ValueFormat = .uint8, sensorContact: SensorContact = .notSupported,
                energyExpended: UInt16? = nil, rrIntervals: [UInt16] = []) {
        self.beatsPerMinute = beatsPerMinute
        self.valueFormat = valueFormat
        self.sensorContact = sensorContact
        self.energyExpended = energyExpended
        self.rrIntervals = rrIntervals
    }

    /// The default `maximumLength`: a notification's value on the minimum LE ATT_MTU of 23,
    /// ATT_MTU − 3 (Core spec Vol 3 Part F §3.4.7.1).
    public static let defaultMaximumLength = 20

    /// Whether the value goes out as UInt16: as asked, or because it does not fit a UInt8.
    private var sendsWideValue: Bool { valueFormat == .uint16 || beatsPerMinute > 0xFF }

    /// Bytes before the RR-Intervals: flags, value, Energy Expended.
    private var fixedLength: Int { 1 + (sendsWideValue ? 2 : 1) + (energyExpended == nil ? 0 : 2) }

    /// How many of `rrIntervals` (the oldest ones) fit in a value of at most `maximumLength`
    /// bytes; a sender can carry the rest over to its next notification (HRS §3.1).
    public func fittingRRIntervalCount(maximumLength: Int = defaultMaximumLength) -> Int {
        min(rrIntervals.count, max(0, maximumLength - fixedLength) / 2)
    }

    /// The characteristic value, at most `maximumLength` bytes where that can be met.
    ///
    /// Only the RR-Intervals are cut to fit (the oldest are kept; `fittingRRIntervalCount` says
    /// how many), and bit 4 is set only if at least one is sent. The flags, the value and Energy
    /// Expended are always sent, even if `maximumLength` is smaller than they are.
    /// A `.uint8` format with `beatsPerMinute` over 255 is sent as UInt16 (bit 0 set) rather than
    /// truncated, so it decodes with `valueFormat == .uint16`.
    public func encoded(maximumLength: Int = defaultMaximumLength) -> [UInt8] {
        let rrCount = fittingRRIntervalCount(maximumLength: maximumLength)
        var flags = sensorContact.flagBits << Self.contactShift
        if sendsWideValue { flags |= Self.formatBit }
        if energyExpended != nil { flags |= Self.energyBit }
        if rrCount > 0 { flags |= Self.rrBit }

        var writer = ByteWriter(capacity: fixedLength + 2 * rrCount)
        writer.u8(flags)
        if sendsWideValue {
            writer.u16(beatsPerMinute)
        } else {
            writer.u8(UInt8(truncatingIfNeeded: beatsPerMinute))
        }
        if let energyExpended { writer.u16(energyExpended) }
        for interval in rrIntervals.prefix(rrCount) { writer.u16(interval) }
        return writer.bytes
    }

    /// Decodes a value as notified.
    ///
    /// Reserved flag bits 5–7 (reserved for future use) are ignored, and so are bytes after
    /// the last field when bit 4 is clear (room for future fields). Bit 4 with no interval bytes
    /// decodes to no intervals.
    public init(decoding value: [UInt8]) throws(HeartRateError) {
        var reader = ByteReader(value)
        guard let flags = try? reader.readU8() else { throw .empty }

        let format: ValueFormat = flags & Self.formatBit == 0 ? .uint8 : .uint16
        let rate: UInt16
        switch format {
        case .uint8:
            guard let narrow = try? reader.readU8() else { throw .truncatedValue(needed: 1, remaining: reader.remaining) }
            rate = UInt16(narrow)
        case .uint16:
            guard let wide = try? reader.readU16() else { throw .truncatedValue(needed: 2, remaining: reader.remaining) }
            rate = wide
        }

        var energy: UInt16?
        if flags & Self.energyBit != 0 {
            guard let value = try? reader.readU16() else { throw .truncatedEnergyExpended(remaining: reader.remaining) }
            energy = value
        }

        var intervals: [UInt16] = []
        if flags & Self.rrBit != 0 {
            guard reader.remaining % 2 == 0 else { throw .oddRRIntervalLength(reader.remaining) }
            intervals.reserveCapacity(reader.remaining / 2)
            while let interval = try? reader.readU16() { intervals.append(interval) }
        }

        self.init(beatsPerMinute: rate, valueFormat: format, sensorContact: SensorContact(flagBits: flags >> Self.contactShift),
                  energyExpended: energy, rrIntervals: intervals)
    }
}

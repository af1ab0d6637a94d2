/// Heart Rate Measurements for a simulated monitor that cycle through every flag combination
/// (2 value formats × 3 sensor-contact states × Energy Expended or not × RR-Intervals or not = 24),
/// so one run of a test peripheral or `ble serve heart-rate` exercises every decoding path of a
/// central (HRS §3.1; docs/SYSTEMS.md S3).
///
/// Deterministic: the n-th measurement depends only on n and the energy count. Values are
/// plausible: the rate climbs from 60 to 180 bpm and back over 240 measurements, Energy Expended
/// grows by 1 kJ per measurement (reset by the Control Point, held at 0xFFFF), and RR-Intervals
/// match the rate (60 / bpm × 1024).
public struct HeartRateVariantCycle: Sequence, IteratorProtocol, Sendable {
    /// Distinct flag combinations in one cycle.
    public static let combinationCount = 24
    /// Measurements from 60 bpm up to 180 and back.
    static let rampLength: UInt64 = 240

    /// Measurements produced so far; the next one has this index.
    public private(set) var index: UInt64 = 0
    /// The Energy Expended count, kJ, that the next measurement reports when it has the field.
    public private(set) var energyExpended: UInt16 = 0

    public init() {}

    /// The next measurement; the cycle never ends.
    public mutating func next() -> HeartRateMeasurement? {
        let measurement = Self.measurement(at: index, energyExpended: energyExpended)
        advance(countingEnergy: true)
        return measurement
    }

    /// Moves past the measurement at `index`. Energy Expended grows by 1 kJ only when
    /// `countingEnergy`: a server whose count was reset while that measurement was on its way
    /// keeps the reset's 0 for the next one.
    public mutating func advance(countingEnergy: Bool) {
        index &+= 1
        if countingEnergy && energyExpended < .max { energyExpended += 1 }
    }

    /// What the Control Point's Reset Energy Expended does (HRS §3.3).
    public mutating func resetEnergyExpended() { energyExpended = 0 }

    /// The measurement with index `n`: flag combination `n % 24`, in the order value format
    /// fastest, then sensor contact, then Energy Expended, then RR-Intervals.
    public static func measurement(at n: UInt64, energyExpended: UInt16) -> HeartRateMeasurement {
        let combination = n % UInt64(combinationCount)
        let format: HeartRateMeasurement.ValueFormat = combination % 2 == 0 ? .uint8 : .uint16
        let contact = HeartRateMeasurement.SensorContact.allCases[Int(combination / 2 % 3)]
        let hasEnergy = combination / 6 % 2 == 1
        let hasRR = combination / 12 == 1

        let rate = beatsPerMinute(at: n)
        var intervals: [UInt16] = []
        if hasRR {
            let interval = rrInterval(beatsPerMinute: rate)
            // Two beats in every other cycle, slightly apart, as between real notifications.
            intervals = n / UInt64(combinationCount) % 2 == 0 ? [interval] : [interval + 4, interval - 4]
        }
        return HeartRateMeasurement(beatsPerMinute: rate, valueFormat: format, sensorContact: contact,
                                    energyExpended: hasEnergy ? energyExpended : nil, rrIntervals: intervals)
    }

    /// 60 → 180 → 60 bpm, one step per measurement.
    static func beatsPerMinute(at n: UInt64) -> UInt16 {
        let phase = n % rampLength
        let half = rampLength / 2
        return UInt16(60 + (phase <= half ? phase : rampLength - phase))
    }

    /// One beat at `rate`, in 1/1024 s, rounded: 60 / rate × 1024 (341...1024 for 60...180 bpm).
    static func rrInterval(beatsPerMinute rate: UInt16) -> UInt16 {
        let bpm = UInt32(Swift.max(rate, 1))
        return UInt16(clamping: (60 * 1024 + bpm / 2) / bpm)
    }
}

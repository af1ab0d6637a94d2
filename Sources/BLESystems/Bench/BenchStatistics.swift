/// Minimum, maximum, mean and sample standard deviation of a series, as bumble-bench reports
/// its per-run speeds, RTTs and jitter (Python's `statistics.mean` and `statistics.stdev`: the
/// deviation divides by n − 1, and is 0 for fewer than two values rather than an error).
public struct BenchStatistics: Equatable, Sendable {
    /// The smallest value.
    public var minimum: Double
    /// The largest value.
    public var maximum: Double
    /// The arithmetic mean.
    public var average: Double
    /// The sample standard deviation (n − 1), 0 for a single value.
    public var standardDeviation: Double

    /// The statistics of `values`, nil when there are none.
    public init?(_ values: [Double]) {
        guard let first = values.first else { return nil }
        var lo = first, hi = first, sum = 0.0
        for v in values {
            lo = min(lo, v)
            hi = max(hi, v)
            sum += v
        }
        let mean = sum / Double(values.count)
        var squares = 0.0
        for v in values { squares += (v - mean) * (v - mean) }
        minimum = lo
        maximum = hi
        average = mean
        standardDeviation = values.count >= 2 ? (squares / Double(values.count - 1)).squareRoot() : 0
    }

    /// `min=…, max=…, average=…, stdev=…` with `decimals` places, bumble-bench's wording.
    public func text(decimals: Int = 2) -> String {
        "min=\(NumberText.fixed(minimum, decimals)), max=\(NumberText.fixed(maximum, decimals)), "
            + "average=\(NumberText.fixed(average, decimals)), stdev=\(NumberText.fixed(standardDeviation, decimals))"
    }
}

/// When each packet of a run arrived against when its timestamp says it should have, given the
/// first packet's arrival (bumble-bench's jitter): a packet with a zero timestamp, and the first
/// of a run, count as on time.
public struct BenchJitter: Sendable {
    private var firstArrival: Duration?
    private var firstTimestamp: UInt32 = 0
    /// Each packet's lateness so far, in seconds (negative: early).
    public private(set) var values: [Double] = []

    /// No packets yet.
    public init() {}

    /// Records a packet that arrived `now`; returns its jitter in seconds.
    public mutating func record(timestamp: UInt32, at now: Duration) -> Double {
        var jitter = 0.0
        if let first = firstArrival {
            if timestamp != 0 {
                let expected = first.benchSeconds + Double(Int64(timestamp) - Int64(firstTimestamp)) / 1_000_000
                jitter = now.benchSeconds - expected
            }
        } else {
            firstArrival = now
            firstTimestamp = timestamp
        }
        values.append(jitter)
        return jitter
    }

    /// The signed and absolute jitter around its mean, and its histogram, once a run has at
    /// least three packets.
    public var summary: BenchJitterSummary? {
        guard values.count >= 3, let raw = BenchStatistics(values) else { return nil }
        let adjusted = values.map { $0 - raw.average }
        guard let signed = BenchStatistics(adjusted), let absolute = BenchStatistics(adjusted.map(abs)) else { return nil }
        return BenchJitterSummary(signed: signed, absolute: absolute, histogram: Self.histogram(adjusted, range: signed))
    }

    /// bumble-bench's histogram: 20 bins of equal width from the smallest to the largest value,
    /// each value counted in the highest bin whose lower edge it reaches.
    static func histogram(_ values: [Double], range: BenchStatistics, bins: Int = 20) -> [BenchJitterSummary.Bin] {
        let width = (range.maximum - range.minimum) / Double(bins)
        var result = (0..<bins).map { BenchJitterSummary.Bin(lowerBound: range.minimum + Double($0) * width, count: 0) }
        for v in values {
            if let i = result.indices.last(where: { v >= result[$0].lowerBound }) { result[i].count += 1 }
        }
        return result
    }
}

/// A run's jitter around its mean, signed and absolute, in seconds, with its histogram.
public struct BenchJitterSummary: Equatable, Sendable {
    /// One bin of the histogram: the values from `lowerBound` up to the next bin's.
    public struct Bin: Equatable, Sendable {
        public var lowerBound: Double
        public var count: Int
    }

    /// Lateness minus the mean lateness.
    public var signed: BenchStatistics
    /// The same, as magnitudes.
    public var absolute: BenchStatistics
    /// The signed values in 20 bins.
    public var histogram: [Bin]
}

extension Duration {
    /// The duration in seconds, as a Double.
    var benchSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

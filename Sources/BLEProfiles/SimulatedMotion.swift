#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import BLEWire

/// A stand-in for a phone's accelerometer on a machine that has none (docs/SYSTEMS.md S4): a device
/// lying roughly flat and being moved gently. Gravity gives z ≈ 1 g; slow sinusoids of a few
/// tenths of a g, with seed-dependent phases, move x, y and z; and small seeded noise (±0.01 g,
/// changing every millisecond) keeps the chart from looking synthetic.
///
/// A pure function of elapsed time: the same seed and time always give the same sample, whatever
/// was asked before, so a peripheral can sample on its clock and a test can ask for any instant.
public struct SimulatedMotion: Sendable {
    public let seed: UInt64

    /// One slow wave on one axis: amplitude in g, period in seconds, phase from the seed.
    private struct Wave: Sendable {
        var amplitude: Double
        var period: Double
        var phase: Double

        func value(at seconds: Double) -> Double {
            amplitude * sin(2 * Double.pi * seconds / period + phase)
        }
    }

    private let xWaves: [Wave]
    private let yWaves: [Wave]
    private let zWaves: [Wave]

    static let gravity = 1.0
    static let noiseAmplitude = 0.01

    public init(seed: UInt64 = 1) {
        self.seed = seed
        var rng = SplitMix64(seed: seed)
        func wave(_ amplitude: Double, _ period: Double) -> Wave {
            Wave(amplitude: amplitude, period: period, phase: Double.pi * SplitMix64.signedUnit(rng.next()))
        }
        xWaves = [wave(0.20, 3.7), wave(0.05, 0.9)]
        yWaves = [wave(0.15, 5.3), wave(0.04, 1.3)]
        zWaves = [wave(0.05, 2.9)]
    }

    /// The reading `elapsed` after the start (any duration, negative or huge, gives finite values).
    public func sample(at elapsed: Duration) -> AccelerometerSample {
        let (seconds, attoseconds) = elapsed.components
        let time = Double(seconds) + Double(attoseconds) * 1e-18
        // Milliseconds since the start, wrapping instead of trapping at the extremes.
        let millisecond = UInt64(bitPattern: seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000)

        func axis(_ waves: [Wave], base: Double, index: UInt64) -> Float {
            var value = base
            for wave in waves { value += wave.value(at: time) }
            let noiseBits = SplitMix64.mix(seed ^ SplitMix64.mix(millisecond &* 3 &+ index))
            value += Self.noiseAmplitude * SplitMix64.signedUnit(noiseBits)
            return Float(value)
        }
        return AccelerometerSample(x: axis(xWaves, base: 0, index: 0),
                                   y: axis(yWaves, base: 0, index: 1),
                                   z: axis(zWaves, base: Self.gravity, index: 2))
    }
}

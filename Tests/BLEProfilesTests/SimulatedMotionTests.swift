import XCTest
@testable import BLEProfiles

/// The simulated motion source (docs/SYSTEMS.md S4): deterministic and plausible.
final class SimulatedMotionTests: XCTestCase {
    private func series(_ motion: SimulatedMotion, count: Int = 3000) -> [AccelerometerSample] {
        (0..<count).map { motion.sample(at: AccelerometerProfile.sampleInterval * $0) }
    }

    func testSameSeedSameSamples() {
        XCTAssertEqual(series(SimulatedMotion(seed: 7)), series(SimulatedMotion(seed: 7)))
        XCTAssertEqual(series(SimulatedMotion()), series(SimulatedMotion(seed: 1)))
    }

    func testDifferentSeedsDiffer() {
        XCTAssertNotEqual(series(SimulatedMotion(seed: 1), count: 10), series(SimulatedMotion(seed: 2), count: 10))
    }

    func testPureFunctionOfTime() {
        let motion = SimulatedMotion(seed: 3)
        let forward = series(motion, count: 50)
        let backward = (0..<50).reversed().map { motion.sample(at: AccelerometerProfile.sampleInterval * $0) }
        XCTAssertEqual(forward, backward.reversed())
        XCTAssertEqual(motion.sample(at: .milliseconds(1234)), motion.sample(at: .milliseconds(1234)))
        XCTAssertNotEqual(motion.sample(at: .milliseconds(1000)), motion.sample(at: .milliseconds(1200)))
    }

    func testPlausibleMotion() {
        let samples = series(SimulatedMotion(seed: 42)) // 10 minutes at 5 Hz
        for s in samples {
            XCTAssert(abs(s.x) < 0.5 && abs(s.y) < 0.5, "\(s)")
            XCTAssert((0.8...1.2).contains(s.z), "\(s)")
        }
        let meanZ = samples.map { Double($0.z) }.reduce(0, +) / Double(samples.count)
        let meanX = samples.map { Double($0.x) }.reduce(0, +) / Double(samples.count)
        XCTAssertEqual(meanZ, 1.0, accuracy: 0.02)
        XCTAssertEqual(meanX, 0.0, accuracy: 0.02)
        // It moves: x spans a good part of its range, and consecutive samples are not all equal.
        let xs = samples.map(\.x)
        XCTAssertGreaterThan((xs.max() ?? 0) - (xs.min() ?? 0), 0.3)
        XCTAssertGreaterThan(Set(samples.map(\.z)).count, samples.count / 2)
    }

    func testExtremeTimesGiveFiniteValues() {
        let motion = SimulatedMotion(seed: .max)
        for time in [Duration.zero, .seconds(-5), .seconds(Int64.max), .seconds(Int64.min), .nanoseconds(1)] {
            let s = motion.sample(at: time)
            XCTAssert(s.x.isFinite && s.y.isFinite && s.z.isFinite, "\(time)")
        }
    }

    func testSamplesSurviveTheWire() throws {
        let s = SimulatedMotion().sample(at: .seconds(3))
        XCTAssertEqual(try AccelerometerSample(decoding: s.encoded()), s)
    }
}

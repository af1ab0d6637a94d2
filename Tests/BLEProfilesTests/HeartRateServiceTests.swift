import XCTest
@testable import BLEProfiles

/// Body Sensor Location (HRS §3.2), the Control Point (HRS §3.3) and the simulated monitor's
/// measurement cycle (docs/SYSTEMS.md S3).
final class HeartRateServiceTests: XCTestCase {
    func testBodySensorLocations() throws {
        XCTAssertEqual(BodySensorLocation.allCases.map(\.rawValue), [0, 1, 2, 3, 4, 5, 6])
        XCTAssertEqual(BodySensorLocation.allCases.map(\.name), ["Other", "Chest", "Wrist", "Finger", "Hand", "Ear Lobe", "Foot"])
        XCTAssertEqual(BodySensorLocation.earLobe.description, "Ear Lobe")
        XCTAssertEqual(try BodySensorLocation(decoding: [0x01]), .chest)
        XCTAssertEqual(try BodySensorLocation(decoding: [0x06, 0xAA]), .foot)
        XCTAssertEqual(BodySensorLocation.wrist.encoded, [0x02])
    }

    func testUnknownBodySensorLocations() {
        XCTAssertNil(BodySensorLocation(rawValue: 7))
        XCTAssertEqual(BodySensorLocation.describe(7), "reserved (0x07)")
        XCTAssertEqual(BodySensorLocation.describe(0xFF), "reserved (0xFF)")
        XCTAssertEqual(BodySensorLocation.describe(5), "Ear Lobe")
        XCTAssertThrowsError(try BodySensorLocation(decoding: [])) {
            XCTAssertEqual($0 as? HeartRateError, .emptyBodySensorLocation)
        }
        XCTAssertThrowsError(try BodySensorLocation(decoding: [0x80])) {
            XCTAssertEqual($0 as? HeartRateError, .reservedBodySensorLocation(0x80))
        }
    }

    func testControlPointAcceptsOnlyResetEnergyExpended() {
        XCTAssertEqual(HeartRateControlPoint.command(from: [0x01]), .success(.resetEnergyExpended))
        XCTAssertEqual(HeartRateControlPoint.Command.resetEnergyExpended.value, [0x01])
        for value: [UInt8] in [[], [0x00], [0x02], [0xFF], [0x01, 0x00], [0x00, 0x01]] {
            guard case let .failure(error) = HeartRateControlPoint.command(from: value) else {
                XCTFail("\(value) accepted"); continue
            }
            XCTAssertEqual(error.value, value)
            XCTAssertEqual(error.attErrorCode, 0x80)
        }
        XCTAssertEqual(HeartRateControlPoint.ControlPointError(value: [0x02, 0x0A]).description,
                       "Heart Rate Control Point: value 02 0A is not a supported command (ATT error 0x80)")
        XCTAssertEqual(HeartRateControlPoint.ControlPointError(value: []).description,
                       "Heart Rate Control Point: an empty value is not a supported command (ATT error 0x80)")
    }

    func testCycleCoversEveryFlagCombinationEach24Measurements() throws {
        var cycle = HeartRateVariantCycle()
        for round in 0..<3 {
            var flags = Set<UInt8>()
            for _ in 0..<HeartRateVariantCycle.combinationCount {
                let m = try XCTUnwrap(cycle.next())
                let bytes = m.encoded()
                flags.insert(bytes[0])
                XCTAssertEqual(try HeartRateMeasurement(decoding: bytes), m)
            }
            XCTAssertEqual(flags.count, 24, "round \(round)")
        }
        XCTAssertEqual(cycle.index, 72)
    }

    func testCycleValuesArePlausible() throws {
        var cycle = HeartRateVariantCycle()
        var rates: [UInt16] = []
        var lastEnergy: UInt16?
        for m in cycle.prefix(480) {
            rates.append(m.beatsPerMinute)
            XCTAssert((60...180).contains(m.beatsPerMinute))
            if let energy = m.energyExpended {
                if let lastEnergy { XCTAssertGreaterThan(energy, lastEnergy) }
                lastEnergy = energy
            }
            for seconds in m.rrIntervalSeconds {
                XCTAssertEqual(seconds, 60 / Double(m.beatsPerMinute), accuracy: 0.01)
            }
        }
        XCTAssertEqual(rates.min(), 60)
        XCTAssertEqual(rates.max(), 180)
        XCTAssertEqual(Array(rates.prefix(3)), [60, 61, 62])
        XCTAssertEqual(HeartRateVariantCycle.rrInterval(beatsPerMinute: 60), 1024)
        XCTAssertEqual(HeartRateVariantCycle.rrInterval(beatsPerMinute: 72), 853)
        XCTAssertEqual(HeartRateVariantCycle.rrInterval(beatsPerMinute: 0), 61440)
        // Sequence iteration works on a copy: the original has not advanced.
        XCTAssertEqual(cycle.index, 0)
        _ = cycle.next()
        XCTAssertEqual(cycle.index, 1)
    }

    func testCycleIsDeterministicAndEnergyResets() throws {
        var a = HeartRateVariantCycle(), b = HeartRateVariantCycle()
        XCTAssertEqual(Array(a.prefix(100)), Array(b.prefix(100)))
        for _ in 0..<54 { _ = a.next() }
        XCTAssertEqual(a.energyExpended, 54)
        a.resetEnergyExpended()
        XCTAssertEqual(a.energyExpended, 0)
        // Index 54 = combination 6: UInt8, not supported, with energy, no RR.
        let m = try XCTUnwrap(a.next())
        XCTAssertEqual(m.energyExpended, 0)
        XCTAssertEqual(HeartRateVariantCycle.measurement(at: 54, energyExpended: 0), m)
        // Far out indices neither trap nor lose the pattern (UInt64.max - 9 is combination 6 too).
        XCTAssertEqual(HeartRateVariantCycle.measurement(at: .max - 9, energyExpended: .max).energyExpended, .max)
        XCTAssert((60...180).contains(HeartRateVariantCycle.measurement(at: .max, energyExpended: 0).beatsPerMinute))
        _ = b
    }

    func testCycleEnergyStopsAtItsMaximum() {
        var cycle = HeartRateVariantCycle()
        for _ in 0..<70_000 { _ = cycle.next() }
        XCTAssertEqual(cycle.energyExpended, 0xFFFF)
    }
}

extension HeartRateServiceTests {
    func testAdvancingWithoutCountingEnergyKeepsTheCount() {
        var cycle = HeartRateVariantCycle()
        cycle.advance(countingEnergy: true)
        cycle.advance(countingEnergy: false)
        XCTAssertEqual(cycle.index, 2)
        XCTAssertEqual(cycle.energyExpended, 1)
    }
}

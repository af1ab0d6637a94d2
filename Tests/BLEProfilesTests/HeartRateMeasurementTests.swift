import XCTest
import BLEWire
@testable import BLEProfiles

/// Heart Rate Measurement (0x2A37) encoding and decoding, HRS §3.1 (docs/SYSTEMS.md S3).
final class HeartRateMeasurementTests: XCTestCase {
    typealias HRM = HeartRateMeasurement

    private func decode(_ hex: String) throws -> HRM {
        try HRM(decoding: try XCTUnwrap([UInt8](hexString: hex)))
    }

    private func assertDecodeFails(_ hex: String, _ expected: HeartRateError, line: UInt = #line) {
        XCTAssertThrowsError(try decode(hex), line: line) { error in
            XCTAssertEqual(error as? HeartRateError, expected, line: line)
        }
    }

    func testProfileUUIDs() {
        XCTAssertEqual(HeartRateProfile.service, BluetoothUUID(0x180D))
        XCTAssertEqual(HeartRateProfile.measurement, BluetoothUUID(0x2A37))
        XCTAssertEqual(HeartRateProfile.bodySensorLocation, BluetoothUUID(0x2A38))
        XCTAssertEqual(HeartRateProfile.controlPoint, BluetoothUUID(0x2A39))
        XCTAssertEqual(HeartRateProfile.controlPointNotSupported, 0x80)
    }

    /// Hand-built values following the field layout of HRS §3.1.
    func testWorkedExamples() throws {
        // 72 bpm, nothing else.
        XCTAssertEqual(try decode("00 48"), HRM(beatsPerMinute: 72))
        // Contact detected (bits 1-2 = 0b11) + RR (bit 4): 72 bpm, one interval of 853/1024 s.
        XCTAssertEqual(try decode("16 48 5503"), HRM(beatsPerMinute: 72, sensorContact: .detected, rrIntervals: [853]))
        // UInt16 value (bit 0) + energy (bit 3) + RR: 300 bpm, 1000 kJ, intervals 512 and 256.
        XCTAssertEqual(try decode("19 2C01 E803 0002 0001"),
                       HRM(beatsPerMinute: 300, valueFormat: .uint16, energyExpended: 1000, rrIntervals: [512, 256]))
        // Contact supported but not detected (0b10) + energy: 80 bpm, 10000 kJ.
        XCTAssertEqual(try decode("0C 50 1027"), HRM(beatsPerMinute: 80, sensorContact: .notDetected, energyExpended: 10_000))
        // Byte order matters: the article read 16-bit fields big-endian.
        XCTAssertEqual(try decode("01 0001").beatsPerMinute, 256)
    }

    func testGoldenEncodings() {
        XCTAssertEqual(HRM(beatsPerMinute: 72).encoded(), [0x00, 0x48])
        XCTAssertEqual(HRM(beatsPerMinute: 72, sensorContact: .detected, rrIntervals: [853]).encoded(), [0x16, 0x48, 0x55, 0x03])
        XCTAssertEqual(HRM(beatsPerMinute: 300, valueFormat: .uint16, energyExpended: 1000, rrIntervals: [512, 256]).encoded(),
                       [0x19, 0x2C, 0x01, 0xE8, 0x03, 0x00, 0x02, 0x00, 0x01])
        XCTAssertEqual(HRM(beatsPerMinute: 80, sensorContact: .notDetected, energyExpended: 10_000).encoded(), [0x0C, 0x50, 0x10, 0x27])
    }

    func testEveryFlagCombinationRoundTrips() throws {
        var seen = Set<[UInt8]>()
        for format in HRM.ValueFormat.allCases {
            for contact in HRM.SensorContact.allCases {
                for energy in [nil, UInt16(0xBEEF)] {
                    for intervals in [[], [UInt16(0x0400), 0x0155, 0xFFFF]] {
                        let m = HRM(beatsPerMinute: format == .uint8 ? 0xC8 : 0x1234, valueFormat: format,
                                    sensorContact: contact, energyExpended: energy, rrIntervals: intervals)
                        let bytes = m.encoded()
                        XCTAssertEqual(try HRM(decoding: bytes), m, "\(m)")
                        seen.insert([bytes[0]])
                    }
                }
            }
        }
        XCTAssertEqual(seen.count, 24, "each combination has its own flags byte")
    }

    func testSensorContactBits() throws {
        XCTAssertEqual(try decode("00 48").sensorContact, .notSupported)
        XCTAssertEqual(try decode("02 48").sensorContact, .notSupported, "0b01 also means not supported")
        XCTAssertEqual(try decode("04 48").sensorContact, .notDetected)
        XCTAssertEqual(try decode("06 48").sensorContact, .detected)
    }

    func testReservedFlagBitsAreIgnored() throws {
        XCTAssertEqual(try decode("E0 48"), HRM(beatsPerMinute: 72))
        XCTAssertEqual(try decode("FF 2C01 E803 0002"),
                       HRM(beatsPerMinute: 300, valueFormat: .uint16, sensorContact: .detected, energyExpended: 1000, rrIntervals: [512]))
    }

    func testTrailingBytesWithoutRRAreIgnored() throws {
        XCTAssertEqual(try decode("00 48 AABBCC"), HRM(beatsPerMinute: 72))
    }

    func testRRFlagWithNoIntervals() throws {
        XCTAssertEqual(try decode("10 48"), HRM(beatsPerMinute: 72))
    }

    func testTruncatedValuesAreTypedErrors() {
        XCTAssertThrowsError(try HRM(decoding: [])) { XCTAssertEqual($0 as? HeartRateError, .empty) }
        assertDecodeFails("00", .truncatedValue(needed: 1, remaining: 0))
        assertDecodeFails("01", .truncatedValue(needed: 2, remaining: 0))
        assertDecodeFails("01 48", .truncatedValue(needed: 2, remaining: 1))
        assertDecodeFails("08 48", .truncatedEnergyExpended(remaining: 0))
        assertDecodeFails("08 48 E8", .truncatedEnergyExpended(remaining: 1))
        assertDecodeFails("09 2C01 E8", .truncatedEnergyExpended(remaining: 1))
        assertDecodeFails("10 48 55", .oddRRIntervalLength(1))
        assertDecodeFails("10 48 5503 00", .oddRRIntervalLength(3))
        assertDecodeFails("18 48 E803 5503 00", .oddRRIntervalLength(3))
    }

    func testEveryPrefixOfAValidValueDecodesOrThrows() {
        let full = HRM(beatsPerMinute: 300, valueFormat: .uint16, sensorContact: .detected, energyExpended: 5, rrIntervals: [1, 2, 3]).encoded()
        for length in 0...full.count {
            _ = try? HRM(decoding: Array(full.prefix(length)))
        }
        XCTAssertEqual(try HRM(decoding: Array(full.prefix(5))).rrIntervals, [], "a cut at an interval boundary is fewer intervals")
    }

    func testRRIntervalsAreCutToFitOldestFirst() throws {
        let intervals = (1...12).map { UInt16($0) * 100 }
        // 20 bytes: flags + UInt8 + energy leaves 16 bytes = 8 intervals; without energy 9.
        let withEnergy = HRM(beatsPerMinute: 70, energyExpended: 3, rrIntervals: intervals)
        XCTAssertEqual(withEnergy.fittingRRIntervalCount(), 8)
        XCTAssertEqual(try HRM(decoding: withEnergy.encoded()).rrIntervals, Array(intervals.prefix(8)))
        XCTAssertEqual(withEnergy.encoded().count, 20)

        let plain = HRM(beatsPerMinute: 70, rrIntervals: intervals)
        XCTAssertEqual(try HRM(decoding: plain.encoded()).rrIntervals, Array(intervals.prefix(9)))
        XCTAssertEqual(plain.encoded().count, 20)

        let wide = HRM(beatsPerMinute: 70, valueFormat: .uint16, energyExpended: 3, rrIntervals: intervals)
        XCTAssertEqual(wide.fittingRRIntervalCount(), 7)
        XCTAssertEqual(wide.encoded().count, 19)

        // A larger MTU carries them all.
        XCTAssertEqual(try HRM(decoding: withEnergy.encoded(maximumLength: 244)).rrIntervals, intervals)
        XCTAssertEqual(withEnergy.encoded(maximumLength: 9).count, 8, "an odd byte of room is left unused")
    }

    func testNoRoomForIntervalsDropsTheRRFlagButNotTheFixedFields() throws {
        let m = HRM(beatsPerMinute: 72, energyExpended: 9, rrIntervals: [800])
        for limit in [-1, 0, 1, 4, 5] {
            let bytes = m.encoded(maximumLength: limit)
            XCTAssertEqual(bytes, [0x08, 0x48, 0x09, 0x00], "limit \(limit)")
        }
        XCTAssertEqual(m.encoded(maximumLength: 6), [0x18, 0x48, 0x09, 0x00, 0x20, 0x03])
    }

    func testWideRateInNarrowFormatIsSentAsUInt16() throws {
        let m = HRM(beatsPerMinute: 300, valueFormat: .uint8)
        XCTAssertEqual(m.encoded(), [0x01, 0x2C, 0x01])
        XCTAssertEqual(try HRM(decoding: m.encoded()), HRM(beatsPerMinute: 300, valueFormat: .uint16))
        XCTAssertEqual(HRM(beatsPerMinute: 255).encoded(), [0x00, 0xFF])
    }

    func testRRIntervalSeconds() {
        XCTAssertEqual(HRM(beatsPerMinute: 60, rrIntervals: [1024, 512, 0]).rrIntervalSeconds, [1.0, 0.5, 0.0])
    }

    func testErrorMessages() {
        XCTAssertEqual(HeartRateError.empty.description, "Heart Rate Measurement: empty value (no flags byte)")
        XCTAssertEqual(HeartRateError.oddRRIntervalLength(3).description,
                       "Heart Rate Measurement: RR-Interval field of 3 bytes is not a whole number of 2-byte intervals")
        XCTAssertEqual(HeartRateError.reservedBodySensorLocation(7).description, "Body Sensor Location: reserved (0x07)")
    }
}

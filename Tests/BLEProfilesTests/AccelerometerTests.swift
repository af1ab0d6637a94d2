import XCTest
import BLEWire
@testable import BLEProfiles

/// The accelerometer sample codec, its line parser and the profile constants (docs/SYSTEMS.md S4).
final class AccelerometerTests: XCTestCase {
    typealias Sample = AccelerometerSample

    func testProfileConstants() {
        XCTAssertEqual(AccelerometerProfile.service, BluetoothUUID(0x0011))
        XCTAssertEqual(AccelerometerProfile.sample, BluetoothUUID(0x0012))
        XCTAssertEqual(AccelerometerProfile.service.description, "0011")
        XCTAssertEqual(AccelerometerProfile.sampleProperties, 0x10)
        XCTAssertEqual(AccelerometerProfile.localName, "BLE001")
        XCTAssertEqual(AccelerometerProfile.sampleInterval, .milliseconds(200))
        XCTAssertEqual(AccelerometerProfile.scanDuration, .seconds(5))
    }

    func testCentralListsNamesContainingBLE() {
        XCTAssertTrue(AccelerometerProfile.isCandidate(localName: "BLE001"))
        XCTAssertTrue(AccelerometerProfile.isCandidate(localName: "my ble sensor"))
        XCTAssertTrue(AccelerometerProfile.isCandidate(localName: "Ble"))
        XCTAssertFalse(AccelerometerProfile.isCandidate(localName: "Bluetooth"))
        XCTAssertFalse(AccelerometerProfile.isCandidate(localName: ""))
        XCTAssertFalse(AccelerometerProfile.isCandidate(localName: nil))
    }

    func testGoldenLittleEndianBytes() throws {
        let sample = Sample(x: 1.0, y: -2.0, z: 0.5)
        let bytes = try XCTUnwrap([UInt8](hexString: "0000803F 000000C0 0000003F"))
        XCTAssertEqual(sample.encoded(), bytes)
        XCTAssertEqual(try Sample(decoding: bytes), sample)
        // 9.81 is 0x411CF5C3.
        XCTAssertEqual(Sample(x: 9.81, y: 0, z: -0.0).encoded(), [0xC3, 0xF5, 0x1C, 0x41, 0, 0, 0, 0, 0, 0, 0, 0x80])
    }

    func testSpecialValuesRoundTripBitForBit() throws {
        let specials: [Float] = [-0.0, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .nan]
        for value in specials {
            let bytes = Sample(x: value, y: 0, z: 0).encoded()
            let decoded = try Sample(decoding: bytes)
            XCTAssertEqual(decoded.x.bitPattern, value.bitPattern)
            XCTAssertEqual(decoded.encoded(), bytes)
        }
    }

    func testWrongLengthsAreTypedErrors() {
        for count in [0, 1, 11, 13, 24] {
            XCTAssertThrowsError(try Sample(decoding: [UInt8](repeating: 0, count: count))) { error in
                XCTAssertEqual(error as? AccelerometerError, .wrongLength(count))
            }
        }
        XCTAssertEqual(AccelerometerError.wrongLength(11).description,
                       "accelerometer sample: 11 bytes, expected 12 (three Float32 little-endian)")
    }

    func testLineParsing() {
        XCTAssertEqual(Sample(line: "1 2 3"), Sample(x: 1, y: 2, z: 3))
        XCTAssertEqual(Sample(line: "0.1 -0.2 0.98"), Sample(x: 0.1, y: -0.2, z: 0.98))
        XCTAssertEqual(Sample(line: "1.5,-2,3e-1"), Sample(x: 1.5, y: -2, z: 0.3))
        XCTAssertEqual(Sample(line: " 1 , 2 ,\t3 "), Sample(x: 1, y: 2, z: 3))
        XCTAssertEqual(Sample(line: "\t1   2\t\t3  \r"), Sample(x: 1, y: 2, z: 3))
        XCTAssertEqual(Sample(line: "+1 -0 .5"), Sample(x: 1, y: 0, z: 0.5))
    }

    func testMalformedLinesAreNil() {
        for line in ["", "   ", "1 2", "1 2 3 4", "1,2", "1,2,3,4", "1,,2,3", "1,2,", ",1,2", "1,2 3",
                     "x y z", "# x y z", "1 2 three", "1 2 nan", "1 inf 2", "1 2 1e39", "1;2;3"] {
            XCTAssertNil(Sample(line: line), line)
        }
    }
}

import XCTest
@testable import BLEWire

/// ByteReader/ByteWriter, BDAddress and BluetoothUUID: the primitives every decoder builds on.
final class WirePrimitivesTests: XCTestCase {
    func testReaderReadsLittleEndian() throws {
        var r = ByteReader([0x01, 0x34, 0x12, 0x56, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 0xFF])
        XCTAssertEqual(try r.readU8(), 0x01)
        XCTAssertEqual(try r.readU16(), 0x1234)
        XCTAssertEqual(try r.readU24(), 0x12_3456)
        XCTAssertEqual(try r.readU32(), 0x1234_5678)
        XCTAssertEqual(try r.readI8(), -1)
        XCTAssertTrue(r.isAtEnd)
    }

    func testReaderThrowsTruncatedInsteadOfTrapping() {
        var r = ByteReader([0x01])
        XCTAssertThrowsError(try r.readU16()) { error in
            XCTAssertEqual((error as? WireError)?.kind, .truncated(needed: 2, remaining: 1))
        }
        XCTAssertEqual(r.offset, 0, "a failed read consumes nothing")
        XCTAssertThrowsError(try r.readBytes(-1))
        XCTAssertThrowsError(try r.skip(2))
        XCTAssertEqual(r.readRemaining(), [0x01])
        XCTAssertEqual(r.readRemaining(), [])
    }

    func testReaderContextNamesTheField() {
        var r = ByteReader([0x00])
        XCTAssertThrowsError(try r.reading("ATT MTU") { (r: inout ByteReader) throws(WireError) in try r.readU16() }) { error in
            XCTAssertEqual((error as? WireError)?.context, "ATT MTU")
        }
    }

    func testWriterIsLittleEndian() {
        var w = ByteWriter()
        w.u8(0xAA)
        w.u16(0x1234)
        w.u24(0x56_789A)
        w.u32(0xDEAD_BEEF)
        w.i8(-2)
        w.append([0x01, 0x02])
        XCTAssertEqual(w.bytes, [0xAA, 0x34, 0x12, 0x9A, 0x78, 0x56, 0xEF, 0xBE, 0xAD, 0xDE, 0xFE, 0x01, 0x02])
        var w64 = ByteWriter()
        w64.u64(0x0102_0304_0506_0708)
        var r = ByteReader(w64.bytes)
        XCTAssertEqual(try r.readU64(), 0x0102_0304_0506_0708)
    }

    func testHexStrings() {
        XCTAssertEqual([0x0A, 0xFF, 0x00].hexString, "0aff00")
        XCTAssertEqual([UInt8](hexString: "0x0A ff:00"), [0x0A, 0xFF, 0x00])
        XCTAssertNil([UInt8](hexString: "abc"))
        XCTAssertNil([UInt8](hexString: "zz"))
    }

    func testBDAddressParseAndPrint() throws {
        let a = try XCTUnwrap(BDAddress(string: "c0:11:22:33:44:55"))
        XCTAssertEqual(a.rawValue, 0xC011_2233_4455)
        XCTAssertEqual(a.description, "C0:11:22:33:44:55")
        XCTAssertEqual(a.littleEndianBytes, [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0])
        XCTAssertEqual(BDAddress(littleEndian: a.littleEndianBytes), a)
        XCTAssertEqual(BDAddress(string: "C0-11-22-33-44-55"), a)
        XCTAssertEqual(a.randomKind, .staticRandom)
        XCTAssertNil(BDAddress(string: "C0:11:22:33:44"))
        XCTAssertNil(BDAddress(string: "C0:11:22:33:44:5G"))
        XCTAssertNil(BDAddress(string: "C0:11:22:33:44:555"))
        XCTAssertEqual(DeviceAddress(string: "C0:11:22:33:44:55/random"), DeviceAddress(a, type: .random))
        XCTAssertEqual(DeviceAddress(a, type: .public).description, "C0:11:22:33:44:55/public")
    }

    func testUUIDSpellingsAreEqual() throws {
        let short = BluetoothUUID(0x180D)
        XCTAssertEqual(BluetoothUUID(string: "180D"), short)
        XCTAssertEqual(BluetoothUUID(string: "0x180d"), short)
        XCTAssertEqual(BluetoothUUID(string: "0000180D"), short)
        XCTAssertEqual(BluetoothUUID(uint32: 0x180D), short)
        XCTAssertEqual(BluetoothUUID(string: "0000180d-0000-1000-8000-00805f9b34fb"), short)
        XCTAssertEqual(BluetoothUUID(string: "0000180D00001000800000805F9B34FB"), short)
        XCTAssertEqual(short.uint16, 0x180D)
        XCTAssertEqual(short.description, "180D")
        XCTAssertEqual(short.fullString, "0000180d-0000-1000-8000-00805f9b34fb")
        XCTAssertEqual(Set([short, BluetoothUUID(uint32: 0x180D)]).count, 1)
    }

    func testUUIDForms() throws {
        let vendor = try XCTUnwrap(BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        XCTAssertNil(vendor.uint16)
        XCTAssertNil(vendor.uint32)
        XCTAssertEqual(vendor.description, "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        XCTAssertEqual(try BluetoothUUID(littleEndian: vendor.littleEndian128), vendor)
        XCTAssertEqual(vendor.attBytes.count, 16)

        let u32 = BluetoothUUID(uint32: 0x1234_5678)
        XCTAssertEqual(u32.description, "12345678")
        XCTAssertNil(u32.uint16)
        XCTAssertEqual(try BluetoothUUID(littleEndian: [0x78, 0x56, 0x34, 0x12]), u32)
        XCTAssertEqual(try BluetoothUUID(littleEndian: [0x0D, 0x18]), BluetoothUUID(0x180D))
        XCTAssertEqual(BluetoothUUID(0x2A37).attBytes, [0x37, 0x2A])
        XCTAssertThrowsError(try BluetoothUUID(littleEndian: [1, 2, 3]))

        XCTAssertNil(BluetoothUUID(string: "180"))
        XCTAssertNil(BluetoothUUID(string: "XYZW"))
        XCTAssertNil(BluetoothUUID(string: "6E400001B5A3-F393-E0A9-E50E24DCCA9E-"))
    }
}

import XCTest
@testable import BLEWire

/// Decoding AD structures (Core spec Vol 3 Part C §11, CSS Part A §1).
final class AdvertisingDataTests: XCTestCase {
    typealias AD = AdvertisingData

    /// Flags, complete 16-bit list with 180D, complete name "Polar H7".
    static let heartRateMonitor: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x09, 0x09] + Array("Polar H7".utf8)

    /// An iBeacon: flags, then Apple (0x004C) manufacturer data 02 15 + UUID + major + minor + power.
    static let iBeacon: [UInt8] = [UInt8](hexString:
        "020106 1AFF4C00 0215 E2C56DB5DFFB48D2B060D0F5A71096E0 0001 0002 C5")!

    func testHeartRateMonitor() {
        let ad = AD(bytes: Self.heartRateMonitor)
        XCTAssertNil(ad.malformed)
        XCTAssertEqual(ad.structures.count, 3)
        XCTAssertEqual(ad.flags, [.leGeneralDiscoverable, .brEdrNotSupported])
        XCTAssertEqual(ad.serviceUUIDs, [BluetoothUUID(0x180D)])
        XCTAssertTrue(ad.serviceUUIDsComplete)
        XCTAssertEqual(ad.localName, "Polar H7")
        XCTAssertFalse(ad.isNameShortened)
        XCTAssertNil(ad.txPowerLevel)
        XCTAssertEqual(ad.manufacturerData, [])
        XCTAssertEqual(ad.description, "flags=LE General,BR/EDR Not Supported services=[180D] name=\"Polar H7\"")
        XCTAssertEqual(ad.summary, ad.description)
        XCTAssertEqual(ad.encode(), Self.heartRateMonitor, "re-encoding gives the same bytes")
    }

    func testIBeacon() throws {
        let ad = AD(bytes: Self.iBeacon)
        XCTAssertNil(ad.malformed)
        let m = try XCTUnwrap(ad.manufacturerData.first)
        XCTAssertEqual(ad.manufacturerData.count, 1)
        XCTAssertEqual(m.companyID, 0x004C)
        XCTAssertEqual(m.companyName, "Apple, Inc.")
        XCTAssertEqual(m.data.count, 23)
        XCTAssertEqual(Array(m.data.prefix(2)), [0x02, 0x15])
        XCTAssertEqual(m.data.last, 0xC5)
        XCTAssertTrue(ad.description.contains("mfr=Apple, Inc.(0x004C):0215e2c56db5"), ad.description)
    }

    func testEveryFieldDecodes() throws {
        let bytes = [UInt8](hexString: """
            02 0A F8
            05 02 0F18 0A18
            05 05 78563412
            11 06 9ECADC240EE5A9E093F3A3B5010040 6E
            05 14 0D18 0F18
            11 15 9ECADC240EE5A9E093F3A3B5020040 6E
            05 16 AAFE 10 00
            03 19 4103
            05 12 0600 FFFF
            03 1A 4000
            02 1C 02
            08 24 17 2F2F612E6263
            07 17 060504030201
            08 1B 665544332211 01
            04 FF 5900 AB
            03 2A 0102
            07 08 50 6F 6C 61 72 00
            """)!
        let ad = AD(bytes: bytes)
        XCTAssertNil(ad.malformed)
        XCTAssertEqual(ad.txPowerLevel, -8)
        let nus = try XCTUnwrap(BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        XCTAssertEqual(ad.serviceUUIDs, ["180F", "180A", BluetoothUUID(uint32: 0x1234_5678), nus])
        XCTAssertFalse(ad.serviceUUIDsComplete, "an incomplete list is present")
        XCTAssertEqual(ad.solicitedServiceUUIDs, ["180D", "180F", "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"])
        XCTAssertEqual(ad.serviceData, [AD.ServiceData(uuid: "FEAA", data: [0x10, 0x00])])
        XCTAssertEqual(ad.appearance, 0x0341)
        XCTAssertEqual(ad.appearanceName, "Heart Rate Sensor: Heart Rate Belt")
        XCTAssertEqual(ad.peripheralConnectionIntervalRange, AD.ConnectionIntervalRange(minimum: 6, maximum: nil))
        XCTAssertEqual(ad.peripheralConnectionIntervalRange?.minimumMilliseconds, 7.5)
        XCTAssertEqual(ad.advertisingInterval, 0x40)
        XCTAssertEqual(ad.advertisingIntervalMilliseconds, 40)
        XCTAssertEqual(ad.leRole, .bothPeripheralPreferred)
        XCTAssertEqual(ad.uri?.scheme, "https:")
        XCTAssertEqual(ad.uri?.string, "https://a.bc")
        XCTAssertEqual(ad.publicTargetAddresses, [BDAddress(rawValue: 0x0102_0304_0506)])
        XCTAssertEqual(ad.randomTargetAddresses, [])
        XCTAssertEqual(ad.leDeviceAddress, DeviceAddress(BDAddress(rawValue: 0x1122_3344_5566), type: .random))
        XCTAssertEqual(ad.manufacturerData, [AD.ManufacturerData(companyID: 0x0059, data: [0xAB])])
        XCTAssertEqual(ad.manufacturerData.first?.companyName, "Nordic Semiconductor ASA")
        XCTAssertEqual(ad.localName, "Polar", "trailing NUL padding dropped")
        XCTAssertTrue(ad.isNameShortened)
        XCTAssertEqual(ad.data(of: AD.ADType(0x2A)), [[0x01, 0x02]], "unknown types are kept raw")
        XCTAssertEqual(ad.encode(), bytes)

        let text = ad.description
        for part in ["tx=-8dBm", "services=[180F, 180A, 12345678, 6e400001-b5a3-f393-e0a9-e50e24dcca9e, …]",
                     "shortName=\"Polar\"", "appearance=Heart Rate Sensor: Heart Rate Belt (0x0341)",
                     "serviceData=FEAA:1000", "connInterval=7.5-anyms", "advInterval=40ms",
                     "uri=\"https://a.bc\"", "ad[0x2A]=0102", "leAddress=11:22:33:44:55:66/random"] {
            XCTAssertTrue(text.contains(part), "\(part) missing from \(text)")
        }
    }

    func testCompleteNameWinsOverShortened() {
        let ad = AD(bytes: [0x03, 0x08, 0x41, 0x42, 0x04, 0x09, 0x41, 0x42, 0x43])
        XCTAssertEqual(ad.localName, "ABC")
        XCTAssertFalse(ad.isNameShortened)
    }

    func testInvalidUTF8NameDecodesLossily() {
        let ad = AD(bytes: [0x04, 0x09, 0x48, 0xFF, 0x49])
        XCTAssertEqual(ad.localName, "H\u{FFFD}I")
    }

    func testZeroLengthEndsSignificantPart() {
        let ad = AD(bytes: [0x02, 0x01, 0x06, 0x00, 0x03, 0x03, 0x0D, 0x18])
        XCTAssertNil(ad.malformed)
        XCTAssertEqual(ad.structures.count, 1)
        XCTAssertEqual(ad.serviceUUIDs, [])
        // Zero padding after the data, as legacy PDUs often carry, is not an error.
        XCTAssertEqual(AD(bytes: Self.heartRateMonitor + [UInt8](repeating: 0, count: 14)), AD(bytes: Self.heartRateMonitor))
    }

    func testLengthPastEndIsMalformedAndKeepsEarlierStructures() throws {
        let ad = AD(bytes: [0x02, 0x01, 0x06, 0x05, 0x09, 0x41, 0x42])
        XCTAssertEqual(ad.structures.count, 1)
        XCTAssertEqual(ad.flags, [.leGeneralDiscoverable, .brEdrNotSupported])
        let error = try XCTUnwrap(ad.malformed)
        XCTAssertEqual(error.kind, .truncated(needed: 5, remaining: 3))
        XCTAssertTrue(error.context.contains("offset 3"), error.context)
        XCTAssertNil(ad.localName)
        XCTAssertTrue(ad.description.contains("malformed("), ad.description)

        let lone = AD(bytes: [0x01])
        XCTAssertEqual(lone.structures, [])
        XCTAssertNotNil(lone.malformed)
    }

    func testShortFieldsReadAsAbsent() {
        let ad = AD(bytes: [0x01, 0x0A, 0x02, 0x19, 0x01, 0x02, 0xFF, 0x4C, 0x04, 0x03, 0x0D, 0x18, 0x01,
                            0x02, 0x16, 0xAA, 0x03, 0x12, 0x06, 0x00, 0x07, 0x1B, 1, 2, 3, 4, 5, 6, 0x01, 0x01])
        XCTAssertNil(ad.malformed)
        XCTAssertNil(ad.txPowerLevel)
        XCTAssertNil(ad.appearance)
        XCTAssertEqual(ad.manufacturerData, [])
        XCTAssertEqual(ad.serviceUUIDs, ["180D"], "the odd trailing byte is ignored")
        XCTAssertEqual(ad.serviceData, [])
        XCTAssertNil(ad.peripheralConnectionIntervalRange)
        XCTAssertNil(ad.leDeviceAddress)
        XCTAssertEqual(ad.flags, [], "an empty Flags structure means no bits set")
        XCTAssertTrue(ad.description.contains("ad[0xFF]=4c"), "a short structure is still shown: \(ad.description)")
    }

    func testEveryPrefixAndCorruptionDecodesWithoutTrapping() {
        let samples = [Self.heartRateMonitor, Self.iBeacon, [UInt8](repeating: 0xFF, count: 31)]
        for sample in samples {
            for end in 0...sample.count {
                let ad = AD(bytes: Array(sample[..<end]))
                _ = (ad.flags, ad.serviceUUIDs, ad.localName, ad.manufacturerData, ad.serviceData, ad.appearance,
                     ad.uri, ad.leDeviceAddress, ad.description, ad.encode())
            }
            for i in sample.indices {
                for value: UInt8 in [0x00, 0x01, 0x02, 0x7F, 0xFF] {
                    var corrupt = sample
                    corrupt[i] = value
                    _ = AD(bytes: corrupt).description
                }
            }
        }
        // Every single-structure type with every short length.
        for type in 0...255 {
            for length in 0...20 {
                let ad = AD(bytes: [UInt8(length + 1), UInt8(type)] + [UInt8](repeating: 0xC3, count: length))
                XCTAssertEqual(ad.structures.count, 1)
                _ = ad.description
            }
        }
    }

    func testURISchemes() {
        XCTAssertEqual(AD(bytes: [0x05, 0x24, 0x01, 0x61, 0x3A, 0x62]).uri?.string, "a:b", "U+0001: scheme written out")
        let unknownScheme = AD(bytes: [0x05, 0x24, 0xC2, 0x80, 0x2F, 0x2F]).uri
        XCTAssertEqual(unknownScheme?.schemeCode, 0x80, "the code point is UTF-8 encoded")
        XCTAssertNil(unknownScheme?.string)
        XCTAssertEqual(unknownScheme?.remainder, "//")
        XCTAssertNil(AD(bytes: [0x01, 0x24]).uri)
    }

    func testLERoleReservedValuesKept() {
        XCTAssertEqual(AD(bytes: [0x02, 0x1C, 0x07]).leRole, .reserved(7))
        XCTAssertEqual(AD.LERole(rawValue: 7).rawValue, 7)
    }

    func testAdvertisingIntervalLong() {
        XCTAssertEqual(AD(bytes: [0x04, 0x2F, 0x00, 0x00, 0x01]).advertisingInterval, 0x01_0000)
        XCTAssertEqual(AD(bytes: [0x05, 0x2F, 0x00, 0x00, 0x00, 0x01]).advertisingInterval, 0x0100_0000)
    }
}

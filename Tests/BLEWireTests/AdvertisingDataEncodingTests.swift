import XCTest
@testable import BLEWire

/// Building, encoding and merging advertising data.
final class AdvertisingDataEncodingTests: XCTestCase {
    typealias AD = AdvertisingData

    func testBuilderMatchesGoldenBytes() throws {
        let data = AD.Builder()
            .flags([.leGeneralDiscoverable, .brEdrNotSupported])
            .serviceUUIDs(["180D"])
            .localName("Polar H7")
            .build()
        XCTAssertEqual(try data.encode(limit: AD.legacyLimit), AdvertisingDataTests.heartRateMonitor)
    }

    func testBuilderGroupsUUIDsBySize() throws {
        let nus = try XCTUnwrap(BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let data = AD.Builder().serviceUUIDs(["180D", nus, "180F", BluetoothUUID(uint32: 0x1234_5678), "180D"], complete: false).build()
        XCTAssertEqual(data.structures.map(\.type), [.incompleteServiceUUIDs16, .incompleteServiceUUIDs32, .incompleteServiceUUIDs128])
        XCTAssertEqual(data.structures[0].data, [0x0D, 0x18, 0x0F, 0x18])
        XCTAssertEqual(AD(bytes: data.encode()).serviceUUIDs, ["180D", "180F", BluetoothUUID(uint32: 0x1234_5678), nus])
    }

    func testEveryBuilderFieldRoundTrips() throws {
        let address = try XCTUnwrap(BDAddress(string: "C0:11:22:33:44:55"))
        let data = AD.Builder()
            .flags([.leLimitedDiscoverable])
            .localName("Thermo", complete: false)
            .solicitedServiceUUIDs(["1812"])
            .txPowerLevel(-4)
            .appearance(0x0341)
            .manufacturerData(companyID: 0x004C, data: [0x02, 0x15])
            .serviceData("FEAA", [0x10])
            .serviceData(BluetoothUUID(uint32: 0xABCD_EF01), [0x20])
            .peripheralConnectionIntervalRange(minimum: 24, maximum: nil)
            .advertisingInterval(160)
            .advertisingInterval(0x12_3456)
            .leRole(.peripheralOnly)
            .uri("https://example.com")
            .publicTargetAddresses([address])
            .randomTargetAddresses([address])
            .leDeviceAddress(DeviceAddress(address, type: .random))
            .adding(AD.ADType(0x3D), [0x99])
            .build()
        let decoded = AD(bytes: data.encode())
        XCTAssertEqual(decoded, data)
        XCTAssertEqual(decoded.flags, [.leLimitedDiscoverable])
        XCTAssertEqual(decoded.localName, "Thermo")
        XCTAssertTrue(decoded.isNameShortened)
        XCTAssertEqual(decoded.solicitedServiceUUIDs, ["1812"])
        XCTAssertEqual(decoded.txPowerLevel, -4)
        XCTAssertEqual(decoded.appearance, 0x0341)
        XCTAssertEqual(decoded.manufacturerData, [AD.ManufacturerData(companyID: 0x004C, data: [0x02, 0x15])])
        XCTAssertEqual(decoded.serviceData, [AD.ServiceData(uuid: "FEAA", data: [0x10]),
                                             AD.ServiceData(uuid: BluetoothUUID(uint32: 0xABCD_EF01), data: [0x20])])
        XCTAssertEqual(decoded.peripheralConnectionIntervalRange, AD.ConnectionIntervalRange(minimum: 24, maximum: nil))
        XCTAssertEqual(decoded.advertisingInterval, 160, "0x1A comes first")
        XCTAssertEqual(decoded.data(of: .advertisingIntervalLong), [[0x56, 0x34, 0x12]])
        XCTAssertEqual(decoded.leRole, .peripheralOnly)
        XCTAssertEqual(decoded.data(of: .uri), [[0x17] + Array("//example.com".utf8)])
        XCTAssertEqual(decoded.uri?.string, "https://example.com")
        XCTAssertEqual(decoded.publicTargetAddresses, [address])
        XCTAssertEqual(decoded.randomTargetAddresses, [address])
        XCTAssertEqual(decoded.leDeviceAddress, DeviceAddress(address, type: .random))
    }

    func testURIWithoutKnownSchemeUsesEmptySchemeCode() {
        let data = AD.Builder().uri("x-custom:thing").build()
        XCTAssertEqual(data.structures.first?.data.first, 0x01)
        XCTAssertEqual(AD(bytes: data.encode()).uri?.string, "x-custom:thing")
    }

    func testEncodingLimit() throws {
        let data = AD.Builder()
            .flags([.leGeneralDiscoverable])
            .localName("A rather long device name for one packet")
            .build()
        XCTAssertEqual(data.encodedCount, 3 + 2 + 40)
        XCTAssertThrowsError(try data.encode(limit: 31)) { error in
            XCTAssertEqual(error as? AD.EncodingError, .exceedsLimit(size: 45, limit: 31))
            XCTAssertEqual("\(error)", "advertising data is 45 bytes, over the limit of 31")
        }
        XCTAssertEqual(try data.encode(limit: 251).count, 45)

        let shortened = data.shorteningLocalName(toFit: 31)
        XCTAssertEqual(try shortened.encode(limit: 31).count, 31)
        XCTAssertTrue(shortened.isNameShortened)
        XCTAssertEqual(shortened.localName, "A rather long device name ")
        XCTAssertEqual(AD.Builder().localName("ok").build().shorteningLocalName(toFit: 31),
                       AD.Builder().localName("ok").build())
    }

    func testShorteningCutsAtCharacterBoundary() {
        let data = AD.Builder().localName(String(repeating: "é", count: 20)).build()   // 40 bytes
        let shortened = data.shorteningLocalName(toFit: 31)
        XCTAssertEqual(shortened.localName, String(repeating: "é", count: 14))
        XCTAssertLessThanOrEqual(shortened.encodedCount, 31)
    }

    func testOverlongStructure() {
        let data = AD(structures: [.init(type: .manufacturerSpecificData, data: [UInt8](repeating: 1, count: 300))])
        XCTAssertThrowsError(try data.encode(limit: 1650)) { error in
            XCTAssertEqual(error as? AD.EncodingError, .structureTooLong(type: .manufacturerSpecificData, dataLength: 300))
        }
        let clipped = data.encode()
        XCTAssertEqual(clipped.count, 256)
        XCTAssertEqual(clipped[0], 255)
    }

    func testMergingScanResponse() {
        let advertisement = AD.Builder()
            .flags([.leGeneralDiscoverable, .brEdrNotSupported])
            .serviceUUIDs(["180D", "180F"], complete: false)
            .localName("HR", complete: false)
            .txPowerLevel(0)
            .manufacturerData(companyID: 0x004C, data: [0x01])
            .serviceData("FEAA", [0x01])
            .build()
        let response = AD.Builder()
            .serviceUUIDs(["180F", "180A"])
            .localName("HR Monitor")
            .txPowerLevel(4)
            .manufacturerData(companyID: 0x004C, data: [0x01])
            .manufacturerData(companyID: 0x0059, data: [0x02])
            .serviceData("FEAA", [0x02])
            .build()
        let merged = advertisement.merging(response)
        XCTAssertEqual(merged.flags, [.leGeneralDiscoverable, .brEdrNotSupported])
        XCTAssertEqual(merged.serviceUUIDs, ["180D", "180F", "180A"])
        XCTAssertEqual(merged.localName, "HR Monitor")
        XCTAssertFalse(merged.isNameShortened)
        XCTAssertEqual(merged.txPowerLevel, 4, "the scan response wins")
        XCTAssertEqual(merged.manufacturerData.map(\.companyID), [0x004C, 0x0059], "identical entry not repeated")
        XCTAssertEqual(merged.serviceData, [AD.ServiceData(uuid: "FEAA", data: [0x02])])
        XCTAssertEqual(merged.description,
                       "flags=LE General,BR/EDR Not Supported services=[180D, 180F, 180A, …] name=\"HR Monitor\" tx=4dBm "
                       + "mfr=Apple, Inc.(0x004C):01 mfr=Nordic Semiconductor ASA(0x0059):02 serviceData=FEAA:02")
    }

    func testMergingKeepsCompleteNameOverShortenedResponse() {
        let advertisement = AD.Builder().localName("Complete Name").build()
        let merged = advertisement.merging(AD.Builder().localName("Compl", complete: false).build())
        XCTAssertEqual(merged.localName, "Complete Name")
        XCTAssertFalse(merged.isNameShortened)
        let both = AD.Builder().localName("Old", complete: false).build()
            .merging(AD.Builder().localName("New", complete: false).build())
        XCTAssertEqual(both.localName, "New")
        XCTAssertEqual(both.data(of: .shortenedLocalName).count, 1)
    }

    func testMergingEmptyAndMalformed() {
        let ad = AD(bytes: AdvertisingDataTests.heartRateMonitor)
        XCTAssertEqual(ad.merging(AD()), ad)
        XCTAssertEqual(AD().merging(ad).localName, "Polar H7")
        let broken = AD(bytes: [0x05, 0x09, 0x41])
        XCTAssertEqual(ad.merging(broken).malformed, broken.malformed)
        // Repeated unknown structures in the response are all kept.
        let response = AD(structures: [.init(type: AD.ADType(0x2A), data: [1]), .init(type: AD.ADType(0x2A), data: [2])])
        let merged = AD(structures: [.init(type: AD.ADType(0x2A), data: [0])]).merging(response)
        XCTAssertEqual(merged.data(of: AD.ADType(0x2A)), [[1], [2]])
    }
}

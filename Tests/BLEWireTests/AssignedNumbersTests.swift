import XCTest
@testable import BLEWire

final class AssignedNumbersTests: XCTestCase {
    func testGATTNames() {
        XCTAssertEqual(AssignedNumbers.serviceName("180D"), "Heart Rate")
        XCTAssertEqual(AssignedNumbers.characteristicName("2A37"), "Heart Rate Measurement")
        XCTAssertEqual(AssignedNumbers.descriptorName("2902"), "Client Characteristic Configuration")
        XCTAssertNil(AssignedNumbers.serviceName("2A37"))
        XCTAssertNil(AssignedNumbers.characteristicName("180D"))
        XCTAssertEqual(AssignedNumbers.name(for: "180D"), "Heart Rate")
        XCTAssertEqual(AssignedNumbers.name(for: "2A37"), "Heart Rate Measurement")
        XCTAssertEqual(AssignedNumbers.name(for: "2902"), "Client Characteristic Configuration")
        XCTAssertNil(AssignedNumbers.name(for: "FFFFFFFF"))
    }

    func testLookupUsesFull128BitValue() {
        XCTAssertEqual(AssignedNumbers.serviceName("0000180d-0000-1000-8000-00805f9b34fb"), "Heart Rate")
        XCTAssertEqual(AssignedNumbers.serviceName(BluetoothUUID(uint32: 0x180D)), "Heart Rate")
    }

    func testVendor128BitUUIDs() {
        // Nordic UART Service, a vendor UUID in the data set.
        XCTAssertNotNil(AssignedNumbers.serviceName("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        XCTAssertNotNil(AssignedNumbers.serviceName("6e400001-b5a3-f393-e0a9-e50e24dcca9e"))
    }

    func testCompanies() {
        XCTAssertEqual(AssignedNumbers.companyName(0x004C), "Apple, Inc.")
        XCTAssertEqual(AssignedNumbers.companyName(0x0000), "Ericsson AB")
        XCTAssertEqual(AssignedNumbers.companyName(0x0059), "Nordic Semiconductor ASA")
    }

    func testAppearance() {
        XCTAssertEqual(AssignedNumbers.appearanceName(0x0341), "Heart Rate Sensor: Heart Rate Belt")
        XCTAssertEqual(AssignedNumbers.appearanceName(0x0340), "Heart Rate Sensor")
        XCTAssertEqual(AssignedNumbers.appearanceName(0x037F), "Heart Rate Sensor", "unlisted subcategory: category only")
        XCTAssertEqual(AssignedNumbers.appearanceCategoryName(0x0341), "Heart Rate Sensor")
        XCTAssertEqual(AssignedNumbers.appearanceName(0x0000), "Unknown")
        XCTAssertNil(AssignedNumbers.appearanceName(0xFFC0))
    }

    func testEveryTableParsedFully() {
        // The generator wrote these counts into the file; parsing must keep every line.
        XCTAssertEqual(AssignedNumbers.services.count, AssignedNumbers.serviceTable.split(separator: "\n").count)
        XCTAssertEqual(AssignedNumbers.characteristics.count, AssignedNumbers.characteristicTable.split(separator: "\n").count)
        XCTAssertEqual(AssignedNumbers.descriptors.count, AssignedNumbers.descriptorTable.split(separator: "\n").count)
        XCTAssertEqual(AssignedNumbers.companies.count, AssignedNumbers.companyTable.split(separator: "\n").count)
        XCTAssertGreaterThan(AssignedNumbers.companies.count, 3000)
        XCTAssertEqual(AssignedNumbers.appearanceSubcategories.count,
                       AssignedNumbers.appearanceSubcategoryTable.split(separator: "\n").count)
    }
}

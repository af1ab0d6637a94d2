import XCTest
import BLEWire
@testable import BLEHost

/// The attribute database: layout, changes, and the Database Hash worked example of Core spec
/// Vol 3 Part G Appendix B.
final class GATTServerDatabaseTests: XCTestCase {
    /// The example database of Vol 3 Part G Appendix B: GAP (Device Name read/write,
    /// Appearance), GATT (Service Changed + CCCD, Client Supported Features, Database Hash),
    /// Glucose 0x1808 at 0x000E including Battery 0x180F (secondary, at 0x0014), whose
    /// measurement has a CCCD and an Extended Properties descriptor.
    func exampleDatabase() throws -> GATTServerDatabase {
        var db = GATTServerDatabase(deviceName: "Example", appearance: 0, deviceNameWritable: true)
        try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180F), isPrimary: false, characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A19), properties: [.read], permissions: [.read], value: [100]),
        ]), startingAt: 0x0014)
        try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0x1808), includes: [BluetoothUUID(0x180F)], characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A18), properties: [.read, .indicate], permissions: [.read],
                                         value: nil, extendedProperties: []),
        ]), startingAt: 0x000E)
        return db
    }

    /// The hashed message and the hash itself, against the spec's example.
    func testDatabaseHashWorkedExample() throws {
        let db = try exampleDatabase()
        let expectedInput = "010000280018020003280a0300002a04000328020500012a06000028011807000328200800052a0900"
            + "02290a0003280a0b00292b0c000328020d002a2b0e00002808180f000228140016000f1810000328a21100182a"
            + "12000229130000290000140001280f1815000328021600192a"
        XCTAssertEqual(db.databaseHashInput().hexString, expectedInput)
        XCTAssertEqual(try db.databaseHash().hexString, "f1ca2d48ecf58bac8a8830bbb9fba990")
        // The characteristic carries it least significant octet first.
        XCTAssertEqual(try db.databaseHashCharacteristicValue().hexString, "90a9fbb9bb30888aac8bf5ec482dcaf1")
        XCTAssertEqual(db.value(forHandle: db.databaseHashHandle)?.hexString, "90a9fbb9bb30888aac8bf5ec482dcaf1")
        XCTAssertEqual(db.serviceChangedRange, 0x0E...0x16)
        // And over the air.
        var h = GATTServerHarness(database: db)
        h.run(["C: 0a 0d00", "S: 0b 90a9fbb9bb30888aac8bf5ec482dcaf1",
               "C: 08 0100 ffff 2a2b", "S: 09 12 0d00 90a9fbb9bb30888aac8bf5ec482dcaf1"])
    }

    /// Built-in services sit at the example's handles.
    func testBuiltInLayout() {
        let db = GATTServerDatabase(deviceName: "Name", appearance: 0x0340)
        XCTAssertEqual(db.deviceNameHandle, 3)
        XCTAssertEqual(db.appearanceHandle, 5)
        XCTAssertEqual(db.serviceChangedHandle, 8)
        XCTAssertEqual(db.clientSupportedFeaturesHandle, 11)
        XCTAssertEqual(db.databaseHashHandle, 13)
        XCTAssertEqual(db.lastHandle, 13)
        XCTAssertEqual(db.value(forHandle: 3), Array("Name".utf8))
        XCTAssertEqual(db.value(forHandle: 5), [0x40, 0x03])
        XCTAssertNil(db.serviceChangedRange)
        XCTAssertEqual(db.services.map(\.range), [1...5, 6...13])
    }

    /// Adding and removing services: handles, the Service Changed range, the hash, errors.
    func testAddRemove() throws {
        var db = GATTServerDatabase(deviceName: "N", appearance: 0)
        let hash0 = try db.databaseHash()
        let a = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xA000), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xA001), properties: [.read, .notify], permissions: [.read], value: [1],
                                         userDescription: "x", presentationFormat: .init(format: 0x04),
                                         descriptors: [GATTDescriptorDefinition(uuid: BluetoothUUID(0xA0FF), permissions: [.read], value: nil)]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xA002), properties: [.write], permissions: [.write], value: nil),
        ]))
        XCTAssertEqual(a.range, 14...22)
        let c = try XCTUnwrap(a[BluetoothUUID(0xA001)])
        XCTAssertEqual(c.declarationHandle, 15)
        XCTAssertEqual(c.valueHandle, 16)
        XCTAssertEqual(c.cccdHandle, 17)
        XCTAssertEqual(c.userDescriptionHandle, 18)
        XCTAssertEqual(c.presentationFormatHandle, 19)
        XCTAssertEqual(c.descriptorHandles, [20])
        XCTAssertEqual(c.endHandle, 20)
        XCTAssertEqual(db.value(forHandle: 19), [0x04, 0x00, 0x00, 0x27, 0x01, 0x00, 0x00])
        XCTAssertEqual(a[BluetoothUUID(0xA002)]?.valueHandle, 22)
        XCTAssertEqual(db.serviceChangedRange, 14...22)
        XCTAssertNotEqual(try db.databaseHash(), hash0)
        XCTAssertEqual(db.characteristic(valueHandle: 16)?.cccdHandle, 17)
        XCTAssertEqual(db.service(containing: 20)?.uuid, BluetoothUUID(0xA000))

        let b = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xB000), includes: [BluetoothUUID(0xA000)], characteristics: []))
        XCTAssertEqual(b.range, 23...24)
        XCTAssertThrowsError(try db.remove(serviceStartingAt: 14))
        XCTAssertThrowsError(try db.remove(serviceStartingAt: 15))
        XCTAssertThrowsError(try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC000), characteristics: []), startingAt: 20))
        XCTAssertThrowsError(try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC000), includes: [BluetoothUUID(0xEEEE)], characteristics: [])))
        XCTAssertThrowsError(try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC000), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC001), properties: [.notify], permissions: [], value: nil,
                                         descriptors: [GATTDescriptorDefinition(uuid: GATTUUID.clientCharacteristicConfiguration,
                                                                                permissions: [.read], value: [0, 0])]),
        ])))
        XCTAssertThrowsError(try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC000), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xC001), properties: [.read], permissions: [.read], value: [1, 2], maximumLength: 1),
        ])))
        XCTAssertEqual(db.lastHandle, 24)

        db.serviceChangedRange = nil
        try db.remove(serviceStartingAt: 23)
        try db.remove(serviceStartingAt: 14)
        XCTAssertEqual(db.serviceChangedRange, 14...24)
        XCTAssertEqual(try db.databaseHash(), hash0)
        XCTAssertNil(db.attribute(at: 16))

        // The ATT server forgets the removed handles' CCCDs; reads of them are Invalid Handle.
        var h = GATTServerHarness(database: db)
        h.server.restoreSubscriptions([16: 1])
        h.server.forgetHandles(in: 14...24)
        XCTAssertEqual(h.server.cccd(valueHandle: 16), 0)
        h.run(["C: 0a 1000", "S: 01 0a 1000 01"])
    }

    /// A service at 0xFFFF fits exactly when it has one attribute; the next add finds no room.
    func testHandleSpaceEnd() throws {
        var db = GATTServerDatabase(deviceName: "N", appearance: 0)
        try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC000), characteristics: []), startingAt: 0xFFFF)
        XCTAssertThrowsError(try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xC001), characteristics: [])))
        var h = GATTServerHarness(database: db)
        h.run(["C: 10 0e00 ffff 0028", "S: 11 06 ffff ffff 00c0", "C: 04 ffff ffff", "S: 05 01 ffff 0028"])
    }

    /// setValue only changes stored values within their maximum length.
    func testSetValue() {
        var db = GATTServerFixture.database()
        XCTAssertTrue(db.setValue([1, 2], forHandle: 0x10))
        XCTAssertEqual(db.value(forHandle: 0x10), [1, 2])
        XCTAssertFalse(db.setValue([1], forHandle: 0x21), "dynamic")
        XCTAssertFalse(db.setValue([1], forHandle: 0x0F), "declaration")
        XCTAssertFalse(db.setValue([UInt8](repeating: 0, count: 21), forHandle: 0x1F), "too long")
        XCTAssertFalse(db.setValue([1], forHandle: 0x9999))
    }
}

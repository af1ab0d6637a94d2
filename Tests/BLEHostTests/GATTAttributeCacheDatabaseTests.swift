import BLEHost
import BLEWire
import XCTest

/// The whole-database part of the attribute cache (Core spec Vol 3 Part G §2.5.2): what a dump
/// records, when it can be given back whole, what a Service Changed range (§7.1) does to it,
/// and its place in the cache file.
final class GATTAttributeCacheDatabaseTests: XCTestCase {
    static let gap = GATTService(uuid: BluetoothUUID(0x1800), handleRange: 0x0001...0x0005)
    static let hr = GATTService(uuid: BluetoothUUID(0x180D), handleRange: 0x0006...0x000B)
    static let name = GATTCharacteristic(uuid: BluetoothUUID(0x2A00), declarationHandle: 0x0002, valueHandle: 0x0003, properties: [.read], endHandle: 0x0003)
    static let appearance = GATTCharacteristic(uuid: BluetoothUUID(0x2A01), declarationHandle: 0x0004, valueHandle: 0x0005, properties: [.read], endHandle: 0x0005)
    static let measurement = GATTCharacteristic(uuid: BluetoothUUID(0x2A37), declarationHandle: 0x0008, valueHandle: 0x0009, properties: [.notify], endHandle: 0x000A)
    static let cccd = GATTDescriptor(handle: 0x000A, uuid: BluetoothUUID(0x2902))
    static let location = GATTCharacteristic(uuid: BluetoothUUID(0x2A38), declarationHandle: 0x000B, valueHandle: 0x000C, properties: [.read], endHandle: 0x000B)
    static let include = GATTIncludedService(declarationHandle: 0x0007, serviceHandleRange: 0x0020...0x0025,
                                             uuid: BluetoothUUID(0xFEE0))

    static var dump: [GATTAttributeCache.ServiceEntry] {
        [.init(service: gap, includedServices: [], characteristics: [.init(characteristic: name, descriptors: []), .init(characteristic: appearance, descriptors: [])]),
         .init(service: hr, includedServices: [include], characteristics: [.init(characteristic: measurement, descriptors: [cccd])])]
    }

    func testARecordedDumpComesBackWholeAndServesLookups() {
        var cache = GATTAttributeCache(databaseHash: Array(repeating: 7, count: 16))
        XCTAssertNil(cache.database, "nothing known")
        cache.record(database: Self.dump)
        XCTAssertEqual(cache.database, Self.dump)
        XCTAssertEqual(cache.services, [Self.gap, Self.hr])
        XCTAssertEqual(cache.firstCharacteristic(BluetoothUUID(0x2A37)), .found(Self.measurement))
        XCTAssertEqual(cache.descriptors(ofValueHandle: 0x0009), [Self.cccd])
        XCTAssertEqual(cache.covered, [0x0001...0x000B])
        XCTAssertFalse(cache.isEmpty)
    }

    func testAServiceChangedRangeMakesTheDatabaseUnknownButKeepsWhatItDidNotTouch() {
        var cache = GATTAttributeCache()
        cache.record(database: Self.dump)
        cache.invalidate(0x0006...0x000B)
        XCTAssertNil(cache.database)
        XCTAssertNil(cache.services)
        XCTAssertEqual(cache.firstCharacteristic(BluetoothUUID(0x2A00)), .found(Self.name), "outside the range")
        XCTAssertEqual(cache.firstCharacteristic(BluetoothUUID(0x2A37)), .search(0x0006...0xFFFF))
    }

    /// A characteristic learned later by a search, whose descriptors were never discovered,
    /// makes the database not whole: a dump must then discover.
    func testACharacteristicWithoutKnownDescriptorsMakesTheDatabaseNotWhole() {
        var cache = GATTAttributeCache()
        cache.record(database: Self.dump)
        cache.record(GATTCharacteristicSearch(characteristics: [Self.measurement, Self.location], covered: 0x0006...0x000B))
        XCTAssertNil(cache.database)
        cache.record(descriptors: [], of: Self.location)
        XCTAssertNotNil(cache.database)
        cache.removeAll()
        XCTAssertNil(cache.database)
    }

    func testANewDumpReplacesTheServicesAndTheirCharacteristics() {
        var cache = GATTAttributeCache()
        cache.record(database: Self.dump)
        let smaller = [GATTAttributeCache.ServiceEntry(service: Self.gap, includedServices: [],
                                                       characteristics: [.init(characteristic: Self.name, descriptors: [])])]
        cache.record(database: smaller)
        XCTAssertEqual(cache.database, smaller)
        XCTAssertEqual(cache.includedServices.keys.sorted(), [0x0001])
    }

    func testTheFileKeepsTheServicesAndReadsTheFirstVersion() throws {
        var cache = GATTAttributeCache(databaseHash: Array(repeating: 1, count: 16))
        cache.record(database: Self.dump)
        cache.recordSubscription(valueHandle: 0x0009, bits: 1)
        let bytes = GATTCacheFileFormat.encode(cache)
        let decoded = try GATTCacheFileFormat.decode(bytes)
        XCTAssertEqual(decoded, cache)
        XCTAssertEqual(decoded.database, Self.dump)

        // A version 1 file: the same without the services section.
        var withoutServices = GATTAttributeCache(databaseHash: Array(repeating: 1, count: 16))
        withoutServices.record(database: Self.dump)
        withoutServices.invalidate(0xFFFF...0xFFFF)
        var old = GATTCacheFileFormat.encode(withoutServices)
        XCTAssertEqual(Array(old.suffix(3)), [0xFF, 0xFF, 0xFF], "no list: 0xFFFF; no Server Supported Features: 0xFF")
        old.removeLast(3)
        old[GATTCacheFileFormat.magic.count] = 1
        let read = try GATTCacheFileFormat.decode(old)
        XCTAssertNil(read.services)
        XCTAssertEqual(read.characteristics, withoutServices.characteristics)
        old[GATTCacheFileFormat.magic.count] = GATTCacheFileFormat.version + 1
        XCTAssertThrowsError(try GATTCacheFileFormat.decode(old), "an unknown version")
    }

    func testHostileServiceSectionsAreTypedErrors() throws {
        var cache = GATTAttributeCache()
        cache.record(database: Self.dump)
        let bytes = GATTCacheFileFormat.encode(cache)
        for n in 0..<bytes.count {
            XCTAssertThrowsError(try GATTCacheFileFormat.decode(Array(bytes.prefix(n))), "prefix \(n)")
        }
        // The services section: overlapping services, an include outside its service.
        func services(_ body: [UInt8]) -> [UInt8] {
            // Between the subscriptions and the Server Supported Features section (0xFF: not read).
            Array(GATTCacheFileFormat.encode(GATTAttributeCache()).dropLast(3)) + body + [0xFF]
        }
        let overlapping: [UInt8] = [0x02, 0x00, 0x01, 0x00, 0x05, 0x00, 0x01, 0x02, 0x00, 0x18, 0x00, 0x00,
                                    0x05, 0x00, 0x09, 0x00, 0x01, 0x02, 0x0D, 0x18, 0x00, 0x00]
        XCTAssertThrowsError(try GATTCacheFileFormat.decode(services(overlapping)))
        let straying: [UInt8] = [0x01, 0x00, 0x01, 0x00, 0x05, 0x00, 0x01, 0x02, 0x00, 0x18,
                                 0x01, 0x00, 0x09, 0x00, 0x20, 0x00, 0x25, 0x00, 0x02, 0x01, 0x18]
        XCTAssertThrowsError(try GATTCacheFileFormat.decode(services(straying)))
        let fine: [UInt8] = [0x01, 0x00, 0x01, 0x00, 0x05, 0x00, 0x01, 0x02, 0x00, 0x18,
                             0x01, 0x00, 0x03, 0x00, 0x20, 0x00, 0x25, 0x00, 0x02, 0x01, 0x18]
        XCTAssertEqual(try GATTCacheFileFormat.decode(services(fine)).services?.count, 1)
        let huge: [UInt8] = [0xFE, 0xFF]
        XCTAssertThrowsError(try GATTCacheFileFormat.decode(services(huge)))
    }
}

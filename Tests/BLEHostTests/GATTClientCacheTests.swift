import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// The targeted discovery and the attribute cache of the GATT client (Core spec Vol 3 Part G
/// §2.5.2, §4.6.2, §4.7.1, §7.3), as PDU scripts and on their own. The database of the scripts:
/// GAP 0x0001–0x0005 (2A00 at 0x0003, 2A01 at 0x0005), GATT 0x0006–0x000D (2A05 at 0x0008 with
/// its CCCD at 0x0009, 2B29 at 0x000B, 2B2A at 0x000D), Heart Rate from 0x000E (2A37 at 0x0010
/// with its CCCD at 0x0011, 2A38 at 0x0013).
final class GATTClientCacheTests: XCTestCase {
    static let hrSearch = [
        "C: 08 0100 ffff 0328",
        "S: 09 07 0200 02 0300 002a 0400 02 0500 012a 0700 20 0800 052a",
        "C: 08 0800 ffff 0328",
        "S: 09 07 0a00 0a 0b00 292b 0c00 02 0d00 2a2b 0f00 10 1000 372a",
        "C: 08 1000 ffff 0328",
        "S: 09 07 1200 02 1300 382a",
    ]

    func search() throws -> GATTCharacteristicSearch {
        let outcome = runGATTClientScript(FindCharacteristicProcedure(uuid: BluetoothUUID(0x2A37)), Self.hrSearch)
        return try XCTUnwrap(try outcome.result?.get().characteristicSearch)
    }

    /// GATT/CL/GAD: the search stops at the declaration after the target, with no request for
    /// the rest of the database, and keeps what it saw, ends bounded.
    func testTheSearchStopsOnceTheTargetAndTheNextDeclarationAreSeen() throws {
        let s = try search()
        XCTAssertEqual(s.covered, 0x0001...0x0011)
        XCTAssertEqual(s.characteristics.map(\.uuid), [0x2A00, 0x2A01, 0x2A05, 0x2B29, 0x2B2A, 0x2A37].map { BluetoothUUID($0) })
        XCTAssertEqual(s.characteristics.map(\.endHandle), [0x0003, 0x0006, 0x0009, 0x000B, 0x000E, 0x0011])
    }

    func testASearchForAnAbsentTypeCoversTheWholeRange() throws {
        let outcome = runGATTClientScript(FindCharacteristicProcedure(uuid: BluetoothUUID(0x2A99), range: 0x000E...0xFFFF), [
            "C: 08 0e00 ffff 0328",
            "S: 09 07 0f00 10 1000 372a 1200 02 1300 382a",
            "C: 08 1300 ffff 0328",
            "S: 01 08 1300 0a",
        ])
        let s = try XCTUnwrap(try outcome.result?.get().characteristicSearch)
        XCTAssertEqual(s.covered, 0x000E...0xFFFF)
        XCTAssertEqual(s.characteristics.last?.endHandle, 0xFFFF)
    }

    func testAHostileSearchAnswerFailsInsteadOfLooping() {
        let outcome = runGATTClientScript(FindCharacteristicProcedure(uuid: BluetoothUUID(0x2A37)), [
            "C: 08 0100 ffff 0328",
            "S: 09 07 0200 02 0300 002a",
            "C: 08 0300 ffff 0328",
            "S: 09 07 0200 02 0300 002a",
        ])
        guard case .failure(.protocolViolation)? = outcome.result else { return XCTFail("\(String(describing: outcome.result))") }
    }

    /// Descriptors end at the next declaration (§3.3.3): a range reaching into the next service
    /// ends there without another request.
    func testDescriptorDiscoveryStopsAtTheNextServiceDeclaration() throws {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0011...0x0015), [
            "C: 04 1100 1500",
            "S: 05 01 1100 0229 1200 0028",
        ])
        XCTAssertEqual(try outcome.result?.get().descriptors, [GATTDescriptor(handle: 0x0011, uuid: BluetoothUUID(0x2902))])
    }

    /// §7.3: one Read By Type for the hash, never a second for the rest of the database.
    func testTheDatabaseHashIsOneRequest() throws {
        let hash = "000102030405060708090a0b0c0d0e0f"
        let outcome = runGATTClientScript(ReadDatabaseHashProcedure(), ["C: 08 0100 ffff 2a2b", "S: 09 12 0d00 " + hash])
        XCTAssertEqual(try outcome.result?.get().handleValues?.first?.value.hexString.lowercased(), hash)
        let none = runGATTClientScript(ReadDatabaseHashProcedure(), ["C: 08 0100 ffff 2a2b", "S: 01 08 0100 0a"])
        XCTAssertEqual(try none.result?.get().handleValues, [])
        let short = runGATTClientScript(ReadDatabaseHashProcedure(), ["C: 08 0100 ffff 2a2b", "S: 09 04 0d00 0102"])
        guard case .failure(.malformedResponse)? = short.result else { return XCTFail("\(String(describing: short.result))") }
    }

    // MARK: The cache

    func filledCache() throws -> GATTAttributeCache {
        var cache = GATTAttributeCache(databaseHash: Array(0..<16))
        cache.record(try search())
        return cache
    }

    func testLookupsAnswerFromTheCoveredPrefixAndSayWhereToSearchOtherwise() throws {
        let cache = try filledCache()
        guard case let .found(hr) = cache.firstCharacteristic(BluetoothUUID(0x2A37)) else { return XCTFail() }
        XCTAssertEqual(hr.valueHandle, 0x0010)
        XCTAssertEqual(cache.firstCharacteristic(BluetoothUUID(0x2A38)), .search(0x0012...0xFFFF))
        var whole = cache
        whole.record(GATTCharacteristicSearch(characteristics: [], covered: 0x0012...0xFFFF))
        XCTAssertEqual(whole.firstCharacteristic(BluetoothUUID(0x2A38)), .absent)
        XCTAssertEqual(whole.covered, [0x0001...0xFFFF])
    }

    /// Service Changed (§7.1) drops what overlaps the range and its coverage, nothing else.
    func testInvalidatingARangeKeepsTheRest() throws {
        var cache = try filledCache()
        guard case let .found(hr) = cache.firstCharacteristic(BluetoothUUID(0x2A37)) else { return XCTFail() }
        cache.record(descriptors: [GATTDescriptor(handle: 0x0011, uuid: BluetoothUUID(0x2902))], of: hr)
        cache.recordSubscription(valueHandle: 0x0010, bits: 1)
        cache.invalidate(0x000E...0x0013)
        XCTAssertEqual(cache.firstCharacteristic(BluetoothUUID(0x2A37)), .search(0x000C...0xFFFF),
                       "2B2A's end reached into the range, so it went too")
        guard case .found = cache.firstCharacteristic(BluetoothUUID(0x2A05)) else { return XCTFail() }
        XCTAssertNil(cache.descriptors(ofValueHandle: 0x0010))
        XCTAssertTrue(cache.subscriptions.isEmpty)
        XCTAssertEqual(cache.covered, [0x0001...0x000B])
    }

    // MARK: The file

    func testTheFileRoundTrips() throws {
        var cache = try filledCache()
        guard case let .found(hr) = cache.firstCharacteristic(BluetoothUUID(0x2A37)) else { return XCTFail() }
        cache.record(descriptors: [GATTDescriptor(handle: 0x0011, uuid: BluetoothUUID(0x2902))], of: hr)
        cache.recordSubscription(valueHandle: 0x0010, bits: 1)
        cache.enabledRobustCaching = true
        XCTAssertEqual(try GATTCacheFileFormat.decode(GATTCacheFileFormat.encode(cache)), cache)
        XCTAssertEqual(try GATTCacheFileFormat.decode(GATTCacheFileFormat.encode(GATTAttributeCache())), GATTAttributeCache())
        for features: [UInt8]? in [nil, [], [0x01]] {
            cache.serverFeatures = features
            XCTAssertEqual(try GATTCacheFileFormat.decode(GATTCacheFileFormat.encode(cache)).serverFeatures, features)
        }
    }

    /// A version 2 file (no Server Supported Features section) is still read, with the value
    /// not known.
    func testAVersion2FileIsStillRead() throws {
        var cache = try filledCache()
        cache.serverFeatures = [0x01]
        var bytes = GATTCacheFileFormat.encode(cache)
        bytes[GATTCacheFileFormat.magic.count] = 2
        bytes.removeLast(2)  // the section: length 1, then 0x01
        let read = try GATTCacheFileFormat.decode(bytes)
        XCTAssertNil(read.serverFeatures)
        cache.serverFeatures = nil
        XCTAssertEqual(read, cache)
    }

    /// Every truncation, and thousands of random corruptions, are a typed error or a cache that
    /// passes the checks, never a crash.
    func testCorruptAndHostileFilesAreTypedErrors() throws {
        var cache = try filledCache()
        cache.recordSubscription(valueHandle: 0x0010, bits: 1)
        let bytes = GATTCacheFileFormat.encode(cache)
        for n in 0..<bytes.count {
            XCTAssertThrowsError(try GATTCacheFileFormat.decode(Array(bytes.prefix(n))), "prefix \(n)")
        }
        XCTAssertThrowsError(try GATTCacheFileFormat.decode(bytes + [0]))
        var random = SplitMix64(seed: 12)
        for _ in 0..<5_000 {
            var mutated = bytes
            for _ in 0..<(1 + Int(random.next() % 4)) {
                mutated[Int(random.next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            if let decoded = try? GATTCacheFileFormat.decode(mutated) {
                // What passes is internally consistent: handles ordered, inside coverage.
                for c in decoded.characteristics {
                    XCTAssertTrue(c.declarationHandle < c.valueHandle && c.valueHandle <= c.endHandle)
                    XCTAssertTrue(decoded.covered.contains { $0.contains(c.declarationHandle) })
                }
            }
        }
        // A count claiming more entries than the file holds is refused before allocating.
        var huge = GATTCacheFileFormat.magic + [GATTCacheFileFormat.version, 0, 0]
        huge += [0xFF, 0xFF]
        XCTAssertThrowsError(try GATTCacheFileFormat.decode(huge))
    }
}

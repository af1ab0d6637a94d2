import XCTest
import BLEWire
@testable import BLEHost

/// Server side of the GATT test suite's GAR category (reading), including the BI error cases,
/// as PDU scripts against `GATTServerFixture` (handle map in GATTServerScript.swift).
final class GATTServerReadTests: XCTestCase {
    let long = GATTServerFixture.longValue

    /// GATT/SR/GAR/BV-01-C: Read Characteristic Value.
    func testGAR_BV01_Read() {
        var h = GATTServerHarness()
        h.run(["C: 0a 1000", "S: 0b 68656c6c6f", "C: 0a 0300", "S: 0b 54657374", "C: 0a 0500", "S: 0b 4003"])
    }

    /// GATT/SR/GAR/BI-01-C: Invalid Handle.
    func testGAR_BI01_InvalidHandle() {
        var h = GATTServerHarness()
        h.run(["C: 0a 0000", "S: 01 0a 0000 01", "C: 0a ff00", "S: 01 0a ff00 01", "C: 0a ffff", "S: 01 0a ffff 01"])
    }

    /// GATT/SR/GAR/BI-02-C: Read Not Permitted (a write-only value, and Service Changed).
    func testGAR_BI02_ReadNotPermitted() {
        var h = GATTServerHarness()
        h.run(["C: 0a 1f00", "S: 01 0a 1f00 02", "C: 0a 0800", "S: 01 0a 0800 02"])
    }

    /// GATT/SR/GAR/BI-03-C / BI-04-C: insufficient authentication and authorization; encryption
    /// per Vol 3 Part C §10.3.1 (no LTK → Insufficient Authentication, bonded → Insufficient
    /// Encryption).
    func testGAR_BI03_BI04_Security() {
        var h = GATTServerHarness()
        h.run([
            "C: 0a 1900", "S: 01 0a 1900 05",
            "C: 0a 1b00", "S: 01 0a 1b00 05",
            "C: 0a 1d00", "S: 01 0a 1d00 08",
        ])
        h.security = LinkSecurity(hasLongTermKey: true)
        h.run(["C: 0a 1900", "S: 01 0a 1900 0f", "C: 0a 1b00", "S: 01 0a 1b00 0f"])
        h.security = LinkSecurity(encrypted: true, hasLongTermKey: true)
        h.run(["C: 0a 1900", "S: 0b 42", "C: 0a 1b00", "S: 01 0a 1b00 05", "C: 0a 1d00", "S: 01 0a 1d00 08"])
        h.security = LinkSecurity(encrypted: true, authenticated: true, authorized: true, hasLongTermKey: true)
        h.run(["C: 0a 1900", "S: 0b 42", "C: 0a 1b00", "S: 0b 43", "C: 0a 1d00", "S: 0b 44"])
    }

    /// GATT/SR/GAR/BV-04-C: Read Long Characteristic Value with Read Blob, to the end and past it.
    func testGAR_BV04_ReadLong() {
        var h = GATTServerHarness()
        h.run([
            "C: 0a 1400", "S: 0b \(Array(long[0..<22]).hexString)",
            "C: 0c 1400 1600", "S: 0d \(Array(long[22...]).hexString)",
            "C: 0c 1400 1e00", "S: 0d",
            "C: 0c 1400 1f00", "S: 01 0c 1400 07",
            // A short application value may be read in parts too.
            "C: 0c 1000 0200", "S: 0d 6c6c6f",
        ])
    }

    /// Read Blob error cases: handle, permission and security errors.
    func testGAR_ReadBlobErrors() {
        var h = GATTServerHarness()
        h.run([
            "C: 0c 0000 0000", "S: 01 0c 0000 01",
            "C: 0c 1f00 0000", "S: 01 0c 1f00 02",
            "C: 0c 1900 0000", "S: 01 0c 1900 05",
            "C: 0c 1d00 0000", "S: 01 0c 1d00 08",
        ])
    }

    /// §3.4.4.5: fixed-length server values no longer than ATT_MTU − 1 answer Attribute Not Long.
    func testGAR_ReadBlobAttributeNotLong() {
        var h = GATTServerHarness()
        h.run([
            "C: 0c 1700 0000", "S: 01 0c 1700 0b",
            "C: 0c 0f00 0000", "S: 01 0c 0f00 0b",
            "C: 0c 0e00 0100", "S: 01 0c 0e00 0b",
        ])
    }

    /// GATT/SR/GAR/BV-03-C: Read Using Characteristic UUID (Read By Type), values cut to
    /// ATT_MTU − 4, errors on the first match, dynamic values asked for.
    func testGAR_BV03_ReadByType() {
        var h = GATTServerHarness()
        h.dynamicReads[0x21] = .success([1, 2, 3])
        h.run([
            "C: 08 0100 ffff a1aa", "S: 09 07 1000 68656c6c6f",
            "C: 08 0100 ffff a2aa", "S: 09 15 1400 \(Array(long[0..<19]).hexString)",
            "C: 08 0100 ffff 0229", "S: 09 04 0900 0000 1700 0000 2600 0000",
            "C: 08 0100 ffff a4aa", "S: 01 08 1900 05",
            "C: 08 0100 ffff a7aa", "S: 01 08 1f00 02",
            "C: 08 0100 ffff a8aa", "S: 09 05 2100 010203",
            "C: 08 0100 ffff bbbb", "S: 01 08 0100 0a",
            "C: 08 0200 0100 a1aa", "S: 01 08 0200 01",
        ])
    }

    /// §3.4.4.1: an attribute that would fail ends the list after earlier ones; a value of a
    /// different length ends it too.
    func testGAR_ReadByTypeStopsAtErrorAndLengthChange() throws {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let u = BluetoothUUID(0xBEEF)
        try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBEE0), characteristics: [
            GATTCharacteristicDefinition(uuid: u, properties: [.read], permissions: [.read], value: [1]),
            GATTCharacteristicDefinition(uuid: u, properties: [.read], permissions: [.read], value: [2]),
            GATTCharacteristicDefinition(uuid: u, properties: [.read], permissions: [.readEncrypted], value: [3]),
            GATTCharacteristicDefinition(uuid: u, properties: [.read], permissions: [.read], value: [4, 4]),
        ]))
        var h = GATTServerHarness(database: db)
        h.run([
            "C: 08 0100 ffff efbe", "S: 09 03 1000 01 1200 02",
            "C: 08 1300 ffff efbe", "S: 01 08 1400 05",
            "C: 08 1500 ffff efbe", "S: 09 04 1600 0404",
        ])
    }

    /// GATT/SR/GAR/BV-05-C: Read Multiple, values concatenated and cut at ATT_MTU − 1.
    func testGAR_BV05_ReadMultiple() {
        var h = GATTServerHarness()
        h.run([
            "C: 0e 1000 1600", "S: 0f 68656c6c6f 01",
            "C: 0e 1000 1400", "S: 0f 68656c6c6f \(Array(long[0..<17]).hexString)",
            "C: 0e 1000 ff00", "S: 01 0e ff00 01",
            "C: 0e 1000 1f00", "S: 01 0e 1f00 02",
            "C: 0e 1900 1000", "S: 01 0e 1900 05",
            "C: 0e 1000 1d00", "S: 01 0e 1d00 08",
        ])
    }

    /// GATT/SR/GAR/BV-08-C (Core 5.2+): Read Multiple Variable Length, with the §3.4.4.12 cut.
    func testGAR_ReadMultipleVariable() {
        var h = GATTServerHarness()
        let nineteen = (0..<19).map { UInt8(0xA0 + $0) }
        h.dynamicReads[0x21] = .success(nineteen)
        h.run([
            "C: 20 1000 1600", "S: 21 0500 68656c6c6f 0100 01",
            // The long value's tuple keeps its full length (30) but is cut at ATT_MTU − 1.
            "C: 20 1000 1400", "S: 21 0500 68656c6c6f 1e00 \(Array(long[0..<13]).hexString)",
            "C: 20 1400 1000", "S: 21 1e00 \(Array(long[0..<20]).hexString)",
            // 21 octets used: the next Value Length field would be split, so the list ends before it.
            "C: 20 2100 1000", "S: 21 1300 \(nineteen.hexString)",
            "C: 20 1000 0000", "S: 01 20 0000 01",
            "C: 20 1b00 1000", "S: 01 20 1b00 05",
        ])
    }

    /// Dynamic values: the application answers, or fails (Unlikely Error, or its own code).
    func testGAR_DynamicReadAnsweredAndFailing() {
        var h = GATTServerHarness()
        h.dynamicReads[0x21] = .success(long)
        h.dynamicReads[0x23] = .failure(.unlikelyError)
        h.run([
            "C: 0a 2100", "S: 0b \(Array(long[0..<22]).hexString)",
            "C: 0c 2100 1600", "S: 0d \(Array(long[22...]).hexString)",
            "C: 0c 2100 1f00", "S: 01 0c 2100 07",
            "C: 0a 2300", "S: 01 0a 2300 0e",
            "C: 0e 1000 2300", "S: 01 0e 2300 0e",
        ])
        h.dynamicReads[0x23] = .failure(ATTErrorCode(0x80))
        h.run(["C: 0a 2300", "S: 01 0a 2300 80"])
    }

    /// A dynamic read answered later: the response waits, and a request that arrives meanwhile
    /// (breaking §3.3.2) is answered after it.
    func testGAR_DeferredAnswerAndHeldRequest() {
        var db = GATTServerFixture.database()
        var server = ATTServer()
        var actions = server.receive([0x0A, 0x21, 0x00], database: &db, security: .none, now: .zero)
        guard case let .read(id, handle, offset)? = actions.first, actions.count == 1 else {
            return XCTFail("expected one read, got \(actions)")
        }
        XCTAssertEqual(handle, 0x21)
        XCTAssertEqual(offset, 0)
        XCTAssertEqual(server.receive([0x0A, 0x10, 0x00], database: &db, security: .none, now: .zero), [])
        XCTAssertEqual(server.completeRead(id: id + 100, result: .success([9]), database: &db, security: .none, now: .zero), [])
        actions = server.completeRead(id: id, result: .success([7]), database: &db, security: .none, now: .zero)
        XCTAssertEqual(actions, [.send([0x0B, 0x07]), .send([0x0B] + Array("hello".utf8))])
        // Answering twice does nothing.
        XCTAssertEqual(server.completeRead(id: id, result: .success([7]), database: &db, security: .none, now: .zero), [])
    }

    /// The Database Hash and Client Supported Features characteristics.
    func testGAR_DatabaseHashAndClientFeatures() throws {
        var h = GATTServerHarness()
        let hash = try h.database.databaseHashCharacteristicValue()
        XCTAssertEqual(hash.count, 16)
        h.run(["C: 0a 0d00", "S: 0b \(hash.hexString)", "C: 0a 0b00", "S: 0b 00"])
        XCTAssertEqual(h.database.value(forHandle: 0x0D), hash)
    }
}

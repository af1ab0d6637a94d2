import XCTest
import BLEWire
@testable import BLEHost

/// Server side of the GATT test suite's GAW category (writing), including long and reliable
/// writes, as PDU scripts against `GATTServerFixture` (handle map in GATTServerScript.swift).
final class GATTServerWriteTests: XCTestCase {
    /// GATT/SR/GAW/BV-03-C: Write Characteristic Value; the stored value changes for everyone.
    func testGAW_BV03_WriteRequest() {
        var h = GATTServerHarness()
        h.run(["C: 12 1000 776f726c64", "S: 13", "C: 0a 1000", "S: 0b 776f726c64"])
        XCTAssertEqual(h.events, [.valueWritten(handle: 0x10, value: Array("world".utf8))])
        XCTAssertEqual(h.database.value(forHandle: 0x10), Array("world".utf8))
        // An empty write truncates a variable-length value (§3.4.5.1).
        h.run(["C: 12 1000", "S: 13", "C: 0a 1000", "S: 0b"])
    }

    /// GATT/SR/GAW/BV-01-C: Write Without Response: applied, never answered.
    func testGAW_BV01_WriteCommand() {
        var h = GATTServerHarness()
        h.run(["C: 52 1000 6869", "C: 0a 1000", "S: 0b 6869"])
        // Failures are silent: not permitted, unknown handle, too long.
        h.run(["C: 52 1400 00", "C: 52 ff00 00", "C: 52 1f00 \(String(repeating: "00", count: 21))",
               "C: 0a 1400", "S: 0b \(GATTServerFixture.longValue[0..<22].map { $0 }.hexString)"])
        // To a dynamic value: handed to the application as a command.
        h.run(["C: 52 2100 0102"])
        XCTAssertEqual(h.writes.count, 1)
        XCTAssertEqual(h.writes.first?.kind, .command)
        XCTAssertEqual(h.writes.first?.value, [1, 2])
    }

    /// GATT/SR/GAW/BI-02-C, BI-03-C: Invalid Handle and Write Not Permitted.
    func testGAW_BI02_BI03_Errors() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 ff00 00", "S: 01 12 ff00 01",
            "C: 12 0000 00", "S: 01 12 0000 01",
            "C: 12 1400 00", "S: 01 12 1400 03",
            "C: 12 0f00 00", "S: 01 12 0f00 03",
            "C: 12 0d00 00", "S: 01 12 0d00 03",
        ])
    }

    /// GATT/SR/GAW/BI-05-C style: a value longer than the maximum is Invalid Attribute Value Length.
    func testGAW_InvalidAttributeValueLength() {
        var h = GATTServerHarness()
        let twenty = String(repeating: "ab", count: 20)
        h.run([
            "C: 12 1f00 \(twenty)ab", "S: 01 12 1f00 0d",
            "C: 12 1f00 \(twenty)", "S: 13",
        ])
    }

    /// Write security: the CCCD of an encrypted value needs encryption to write.
    func testGAW_WriteSecurity() throws {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let handles = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBEE0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xBEE1), properties: [.read, .notify],
                                         permissions: [.readEncrypted, .writeAuthenticated], value: [0]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xBEE2), properties: [.write],
                                         permissions: [.writeAuthorized], value: [0]),
        ]))
        let value = handles.characteristics[0].valueHandle
        let cccd = try XCTUnwrap(handles.characteristics[0].cccdHandle)
        let authorized = handles.characteristics[1].valueHandle
        var h = GATTServerHarness(database: db)
        h.run([
            "C: 12 \(le16(Int(value))) 01", "S: 01 12 \(le16(Int(value))) 05",
            "C: 12 \(le16(Int(cccd))) 0100", "S: 01 12 \(le16(Int(cccd))) 05",
            "C: 12 \(le16(Int(authorized))) 01", "S: 01 12 \(le16(Int(authorized))) 08",
            "C: 16 \(le16(Int(value))) 0000 01", "S: 01 16 \(le16(Int(value))) 05",
        ])
        h.security = LinkSecurity(encrypted: true, hasLongTermKey: true)
        h.run([
            "C: 12 \(le16(Int(cccd))) 0100", "S: 13",
            "C: 12 \(le16(Int(value))) 01", "S: 01 12 \(le16(Int(value))) 05",
        ])
    }

    /// GATT/SR/GAW/BV-05-C: Write Long Characteristic Value with Prepare/Execute Write.
    func testGAW_BV05_LongWrite() {
        var h = GATTServerHarness()
        let first = (0..<18).map { UInt8($0) }, second = (18..<36).map { UInt8($0) }
        h.run([
            "C: 16 1000 0000 \(first.hexString)", "S: 17 1000 0000 \(first.hexString)",
            "C: 16 1000 1200 \(second.hexString)", "S: 17 1000 1200 \(second.hexString)",
            "C: 18 01", "S: 19",
            "C: 0a 1000", "S: 0b \((first + second)[0..<22].map { $0 }.hexString)",
            "C: 0c 1000 1600", "S: 0d \((first + second)[22...].map { $0 }.hexString)",
        ])
        XCTAssertEqual(h.database.value(forHandle: 0x10), first + second)
    }

    /// 512 octets is the most a value takes (Vol 3 Part F §3.2.9); 513 prepared octets are
    /// refused at Execute Write with Invalid Attribute Value Length, and nothing is written.
    func testGAW_LongWriteOver512RefusedAtExecute() {
        var h = GATTServerHarness()
        var script: [String] = []
        var offset = 0
        let total = (0..<513).map { UInt8($0 & 0xFF) }
        // 18-octet parts up to 512, then the 513th octet alone (so dropping it leaves 512).
        while offset < total.count {
            let end = offset < 512 ? min(offset + 18, 512) : total.count
            let part = Array(total[offset..<end])
            script += ["C: 16 1000 \(le16(offset)) \(part.hexString)", "S: 17 1000 \(le16(offset)) \(part.hexString)"]
            offset = end
        }
        h.run(script + ["C: 18 01", "S: 01 18 1000 0d", "C: 0a 1000", "S: 0b 68656c6c6f"])
        // Exactly 512 is fine; the queue was cleared by the failed execution.
        script.removeLast(2)
        h.run(script + ["C: 18 01", "S: 19"])
        XCTAssertEqual(h.database.value(forHandle: 0x10), Array(total[0..<512]))
    }

    /// §3.4.6.3: an offset past the current end is Invalid Offset at execution, with the handle.
    func testGAW_InvalidOffsetAtExecute() {
        var h = GATTServerHarness()
        h.run([
            "C: 16 1000 0a00 41", "S: 17 1000 0a00 41",
            "C: 18 01", "S: 01 18 1000 07",
            "C: 0a 1000", "S: 0b 68656c6c6f",
            // A write at the current end appends.
            "C: 16 1000 0500 21", "S: 17 1000 0500 21",
            "C: 18 01", "S: 19",
            "C: 0a 1000", "S: 0b 68656c6c6f21",
        ])
    }

    /// GATT/SR/GAW/BI-07-C style: Prepare Queue Full, and permissions checked at prepare time.
    func testGAW_PrepareQueueFullAndPermissions() {
        var h = GATTServerHarness(server: ATTServer(prepareQueueLimit: 2))
        h.run([
            "C: 16 1000 0000 61", "S: 17 1000 0000 61",
            "C: 16 1000 0100 62", "S: 17 1000 0100 62",
            "C: 16 1000 0200 63", "S: 01 16 1000 09",
            "C: 16 1400 0000 00", "S: 01 16 1400 03",
            "C: 16 ff00 0000 00", "S: 01 16 ff00 01",
            "C: 18 01", "S: 19",
            "C: 0a 1000", "S: 0b 6162",
        ])
    }

    /// Execute Write with flag 0x00 cancels every prepared write (§3.4.6.3).
    func testGAW_ExecuteCancel() {
        var h = GATTServerHarness()
        h.run([
            "C: 16 1000 0000 7a7a", "S: 17 1000 0000 7a7a",
            "C: 18 00", "S: 19",
            "C: 18 01", "S: 19",
            "C: 0a 1000", "S: 0b 68656c6c6f",
        ])
    }

    /// GATT/SR/GAW/BV-10-C: Reliable Writes: each Prepare Write Response echoes the request
    /// exactly, and the execution writes several characteristics at once.
    func testGAW_BV10_ReliableWrite() {
        var h = GATTServerHarness()
        h.run([
            "C: 16 1000 0000 414243", "S: 17 1000 0000 414243",
            "C: 16 1f00 0000 0102", "S: 17 1f00 0000 0102",
            "C: 16 2100 0000 0908", "S: 17 2100 0000 0908",
            "C: 18 01", "S: 19",
            "C: 0a 1000", "S: 0b 414243",
        ])
        XCTAssertEqual(h.database.value(forHandle: 0x1F), [1, 2])
        XCTAssertEqual(h.writes.count, 1)
        XCTAssertEqual(h.writes.first?.kind, .prepared)
        XCTAssertEqual(h.writes.first?.value, [9, 8])
        XCTAssertEqual(h.events, [.valueWritten(handle: 0x10, value: [0x41, 0x42, 0x43]),
                                  .valueWritten(handle: 0x1F, value: [1, 2])])
    }

    /// Dynamic values: a Write Request waits for the application; its error goes to the client;
    /// a long write reaches it as one merged write.
    func testGAW_DynamicWrites() {
        var h = GATTServerHarness()
        h.run(["C: 12 2100 0102", "S: 13"])
        h.dynamicWrites[0x21] = .failure(ATTErrorCode(0x80))
        h.run(["C: 12 2100 0304", "S: 01 12 2100 80"])
        h.dynamicWrites[0x21] = nil
        let a = (0..<18).map { UInt8($0) }, b = (18..<30).map { UInt8($0) }
        h.run([
            "C: 16 2100 0000 \(a.hexString)", "S: 17 2100 0000 \(a.hexString)",
            "C: 16 2100 1200 \(b.hexString)", "S: 17 2100 1200 \(b.hexString)",
            "C: 18 01", "S: 19",
        ])
        XCTAssertEqual(h.writes.map(\.kind), [.request, .request, .prepared])
        XCTAssertEqual(h.writes.last?.value, a + b)
        XCTAssertEqual(h.writes.last?.offset, 0)
        // An application error during execution is reported with the handle.
        h.dynamicWrites[0x21] = .failure(.unlikelyError)
        h.run(["C: 16 2100 0000 01", "S: 17 2100 0000 01", "C: 18 01", "S: 01 18 2100 0e"])
    }

    /// CCCD writes: per connection, reported as subscription changes, 0xFD for an unsupported
    /// bit, fixed two-octet length.
    func testGAW_CCCD() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 1700 0100", "S: 13",
            "C: 0a 1700", "S: 0b 0100",
            "C: 12 1700 0300", "S: 13",
            "C: 12 1700 0300", "S: 13",
            "C: 12 2600 0200", "S: 01 12 2600 fd",
            "C: 12 1700 010000", "S: 01 12 1700 0d",
            // One octet replaces the low octet only (fixed-length value, §3.4.5.1).
            "C: 12 1700 02", "S: 13",
            "C: 0a 1700", "S: 0b 0200",
        ])
        XCTAssertEqual(h.events, [
            .subscriptionChanged(valueHandle: 0x16, notifications: true, indications: false),
            .subscriptionChanged(valueHandle: 0x16, notifications: true, indications: true),
            .subscriptionChanged(valueHandle: 0x16, notifications: false, indications: true),
        ])
        XCTAssertEqual(h.server.cccd(valueHandle: 0x16), 2)
        XCTAssertEqual(h.server.subscriptions, [0x16: 2])
    }

    /// Vol 3 Part G §7.2: Client Supported Features bits, once set, cannot be cleared.
    func testGAW_ClientSupportedFeatures() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 0b00 01", "S: 13",
            "C: 12 0b00 00", "S: 01 12 0b00 13",
            "C: 12 0b00 05", "S: 13",
            "C: 0a 0b00", "S: 0b 05",
        ])
        XCTAssertEqual(h.server.clientSupportedFeatures, [5])
    }

    /// Writing a writable Device Name and a writable User Description.
    func testGAW_DeviceNameAndUserDescription() throws {
        var db = GATTServerDatabase(deviceName: "Old", appearance: 0, deviceNameWritable: true)
        let handles = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBEE0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xBEE1), properties: [.read], permissions: [.read], value: [0],
                                         extendedProperties: .writableAuxiliaries, userDescription: "a"),
        ]))
        let ud = try XCTUnwrap(handles.characteristics[0].userDescriptionHandle)
        var h = GATTServerHarness(database: db)
        h.run(["C: 12 0300 4e6577", "S: 13", "C: 0a 0300", "S: 0b 4e6577",
               "C: 12 \(le16(Int(ud))) 62", "S: 13", "C: 0a \(le16(Int(ud)))", "S: 0b 62"])
        XCTAssertEqual(h.database.value(forHandle: h.database.deviceNameHandle), Array("New".utf8))
    }
}

import XCTest
import BLEWire
@testable import BLEHost

/// Requests a client sends while the application answers an earlier one are held, and judged
/// when they are served by the link's security at that moment, not by the security the earlier
/// request arrived with: an authorization withdrawn, or encryption lost, in between counts.
final class GATTServerHeldRequestSecurityTests: XCTestCase {
    private static func le(_ handle: UInt16) -> [UInt8] { [UInt8(handle & 0xFF), UInt8(handle >> 8)] }

    func testHeldReadsAreJudgedWithTheSecurityOfTheMomentTheyAreServed() throws {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], permissions: [.read, .write], value: nil),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read], permissions: [.readAuthorized], value: [0x44]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF3), properties: [.read], permissions: [.readEncrypted], value: [0x42]),
        ]))
        let (dynamic, authorized, encrypted) = (h.characteristics[0].valueHandle, h.characteristics[1].valueHandle, h.characteristics[2].valueHandle)
        let granted = LinkSecurity(encrypted: true, authorized: true, hasLongTermKey: true)
        let withdrawn = LinkSecurity(hasLongTermKey: true)
        var server = ATTServer()

        var actions = server.receive([0x0A] + Self.le(dynamic), database: &db, security: granted, now: .zero)
        guard case let .read(id, _, _)? = actions.first else { return XCTFail("expected a read for the application, got \(actions)") }
        XCTAssertEqual(server.receive([0x0A] + Self.le(authorized), database: &db, security: granted, now: .zero), [])
        XCTAssertEqual(server.receive([0x0A] + Self.le(encrypted), database: &db, security: granted, now: .zero), [])
        actions = server.completeRead(id: id, result: .success([7]), database: &db, security: withdrawn, now: .zero)
        XCTAssertEqual(actions, [
            .send([0x0B, 0x07]),
            .send([0x01, 0x0A] + Self.le(authorized) + [0x08]),  // Insufficient Authorization
            .send([0x01, 0x0A] + Self.le(encrypted) + [0x0F]),   // Insufficient Encryption
        ])

        // The same after a write the application answers.
        actions = server.receive([0x12] + Self.le(dynamic) + [0x01], database: &db, security: granted, now: .zero)
        guard case let .write(writeID, _, _, _, _)? = actions.first else { return XCTFail("expected a write for the application, got \(actions)") }
        XCTAssertEqual(server.receive([0x0A] + Self.le(authorized), database: &db, security: granted, now: .zero), [])
        actions = server.completeWrite(id: writeID, result: .success(()), database: &db, security: withdrawn, now: .zero)
        XCTAssertEqual(actions, [.send([0x13]), .send([0x01, 0x0A] + Self.le(authorized) + [0x08])])
    }
}

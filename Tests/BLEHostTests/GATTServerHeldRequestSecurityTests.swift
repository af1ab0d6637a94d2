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

    /// Two dynamic values that need the application, then a fixed one that needs authorization.
    private static func database() throws -> (GATTServerDatabase, first: UInt16, second: UInt16, authorized: UInt16) {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], permissions: [.readAuthorized, .writeAuthorized], value: nil),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], permissions: [.readAuthorized, .writeAuthorized], value: nil),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read], permissions: [.readAuthorized], value: [0x44]),
        ]))
        return (db, h.characteristics[0].valueHandle, h.characteristics[1].valueHandle, h.characteristics[2].valueHandle)
    }

    /// A Read By Type that asks the application for one value and goes on after the answer is
    /// judged for the rest by the security of the moment it goes on.
    func testReadByTypeGoingOnAfterTheApplicationIsJudgedByTheSecurityThen() throws {
        var (db, first, _, _) = try Self.database()
        let granted = LinkSecurity(encrypted: true, authorized: true, hasLongTermKey: true)
        let withdrawn = LinkSecurity(encrypted: true, hasLongTermKey: true)
        var server = ATTServer()
        var actions = server.receive([0x08] + Self.le(first) + [0xFF, 0xFF, 0xF1, 0xFF], database: &db, security: granted, now: .zero)
        guard case let .read(id, handle, _)? = actions.first, handle == first else { return XCTFail("expected a read of the first value, got \(actions)") }
        actions = server.completeRead(id: id, result: .success([1]), database: &db, security: withdrawn, now: .zero)
        XCTAssertEqual(actions, [.send([0x01, 0x08] + Self.le(first) + [0x08])],
                       "the first value fails now that authorization is withdrawn; nothing is read further")
    }

    /// The same for Read Multiple: the second dynamic value is not asked for after the
    /// authorization was withdrawn while the application answered the first.
    func testReadMultipleGoingOnAfterTheApplicationIsJudgedByTheSecurityThen() throws {
        var (db, first, second, authorized) = try Self.database()
        let granted = LinkSecurity(encrypted: true, authorized: true, hasLongTermKey: true)
        let withdrawn = LinkSecurity(encrypted: true, hasLongTermKey: true)
        var server = ATTServer()
        var actions = server.receive([0x0E] + Self.le(first) + Self.le(second) + Self.le(authorized), database: &db, security: granted, now: .zero)
        guard case let .read(id, handle, _)? = actions.first, handle == first else { return XCTFail("expected a read of the first value, got \(actions)") }
        actions = server.completeRead(id: id, result: .success([1]), database: &db, security: withdrawn, now: .zero)
        XCTAssertEqual(actions, [.send([0x01, 0x0E] + Self.le(first) + [0x08])])
    }

    /// An Execute Write whose first run the application answers writes the later runs only if
    /// the link's security then still allows them.
    func testExecuteWriteGoingOnAfterTheApplicationIsJudgedByTheSecurityThen() throws {
        var (db, first, second, _) = try Self.database()
        let granted = LinkSecurity(encrypted: true, authorized: true, hasLongTermKey: true)
        let withdrawn = LinkSecurity(encrypted: true, hasLongTermKey: true)
        var server = ATTServer()
        XCTAssertEqual(server.receive([0x16] + Self.le(first) + [0, 0, 0xAA], database: &db, security: granted, now: .zero),
                       [.send([0x17] + Self.le(first) + [0, 0, 0xAA])])
        XCTAssertEqual(server.receive([0x16] + Self.le(second) + [0, 0, 0xBB], database: &db, security: granted, now: .zero),
                       [.send([0x17] + Self.le(second) + [0, 0, 0xBB])])
        var actions = server.receive([0x18, 0x01], database: &db, security: granted, now: .zero)
        guard case let .write(id, handle, _, _, _)? = actions.first, handle == first else { return XCTFail("expected the first run for the application, got \(actions)") }
        actions = server.completeWrite(id: id, result: .success(()), database: &db, security: withdrawn, now: .zero)
        XCTAssertEqual(actions, [.send([0x01, 0x18] + Self.le(second) + [0x08])],
                       "the second run is refused, not handed to the application")
    }

    /// An encrypted link's security.
    private static let encrypted = LinkSecurity(encrypted: true, hasLongTermKey: true)

    /// A client with robust caching on whose read of a dynamic value waits for the application:
    /// the database, the server, a fixed value's handle, and the read's id.
    private static func robustCachingClientAwaitingARead() throws -> (GATTServerDatabase, ATTServer, fixed: UInt16, id: UInt64) {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read], permissions: [.read], value: nil),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read], permissions: [.read], value: [0x42]),
        ]))
        var server = ATTServer()
        server.restoreClientSupportedFeatures([0x01])
        let actions = server.receive([0x0A] + le(h.characteristics[0].valueHandle), database: &db, security: encrypted, now: .zero)
        guard case let .read(id, _, _)? = actions.first else {
            XCTFail("expected a read for the application, got \(actions)")
            throw CancellationError()
        }
        return (db, server, h.characteristics[1].valueHandle, id)
    }

    /// A request held while the application answers an earlier one gets the robust-caching
    /// verdict when it is served: the database changed meanwhile, so a change-unaware client
    /// that enabled robust caching gets Database Out Of Sync (Vol 3 Part G §2.5.2.1).
    func testHeldRequestGetsTheChangeAwarenessVerdictWhenServed() throws {
        var (db, server, fixed, id) = try Self.robustCachingClientAwaitingARead()
        let security = Self.encrypted
        XCTAssertEqual(server.receive([0x0A] + Self.le(fixed), database: &db, security: security, now: .zero), [])
        server.databaseChanged()
        let actions = server.completeRead(id: id, result: .success([7]), database: &db, security: security, now: .zero)
        XCTAssertEqual(actions, [.send([0x0B, 0x07]), .send([0x01, 0x0A, 0x00, 0x00, 0x12])])
        XCTAssertFalse(server.isChangeAware)
    }

    /// Two requests held behind one the application answers, the database changing meanwhile:
    /// both get Database Out Of Sync. The second was sent before the client saw the first
    /// error, so it is not "the next request" that makes the client change-aware (§2.5.2.1).
    func testASecondHeldRequestIsNotTakenAsTheRequestAfterOutOfSync() throws {
        var (db, server, fixed, id) = try Self.robustCachingClientAwaitingARead()
        let security = Self.encrypted
        XCTAssertEqual(server.receive([0x0A] + Self.le(fixed), database: &db, security: security, now: .zero), [])
        XCTAssertEqual(server.receive([0x0A] + Self.le(fixed), database: &db, security: security, now: .zero), [])
        server.databaseChanged()
        let actions = server.completeRead(id: id, result: .success([7]), database: &db, security: security, now: .zero)
        let outOfSync: ServerAction = .send([0x01, 0x0A, 0x00, 0x00, 0x12])
        XCTAssertEqual(actions, [.send([0x0B, 0x07]), outOfSync, outOfSync])
        XCTAssertFalse(server.isChangeAware)
        // The client's next request, sent after it saw the errors, makes it change-aware.
        XCTAssertEqual(server.receive([0x0A] + Self.le(fixed), database: &db, security: security, now: .zero), [.send([0x0B, 0x42])])
        XCTAssertTrue(server.isChangeAware)
    }

    /// Two characteristics: a fixed value anyone may write, and one that needs authorization.
    private static func writableDatabase() throws -> (GATTServerDatabase, open: UInt16, authorized: UInt16) {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let h = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], permissions: [.read, .write], value: [0x00]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.read, .write], permissions: [.read, .writeAuthorized], value: [0x00]),
        ]))
        return (db, h.characteristics[0].valueHandle, h.characteristics[1].valueHandle)
    }

    /// An Execute Write whose queue holds a run the link may no longer write (authorization
    /// withdrawn since it was prepared) writes nothing: the queue is all or nothing
    /// (Vol 3 Part F §3.4.6.3), not written up to the refused run.
    func testAnExecuteWriteRefusedForPermissionsWritesNothing() throws {
        var (db, open, authorized) = try Self.writableDatabase()
        let granted = LinkSecurity(encrypted: true, authorized: true, hasLongTermKey: true)
        let withdrawn = LinkSecurity(encrypted: true, hasLongTermKey: true)
        var server = ATTServer()
        XCTAssertEqual(server.receive([0x16] + Self.le(open) + [0, 0, 0xAA], database: &db, security: granted, now: .zero),
                       [.send([0x17] + Self.le(open) + [0, 0, 0xAA])])
        XCTAssertEqual(server.receive([0x16] + Self.le(authorized) + [0, 0, 0xBB], database: &db, security: granted, now: .zero),
                       [.send([0x17] + Self.le(authorized) + [0, 0, 0xBB])])
        let actions = server.receive([0x18, 0x01], database: &db, security: withdrawn, now: .zero)
        XCTAssertEqual(actions, [.send([0x01, 0x18] + Self.le(authorized) + [0x08])])
        XCTAssertEqual(db.value(forHandle: open), [0x00], "the first run is not written either")
    }

    /// A service removed while the application answers an Execute Write's first run, and another
    /// added at its handles: the runs queued for the removed service are not written into the
    /// new one; the Execute Write ends with Invalid Handle for the first of them.
    func testAnExecuteWriteDoesNotWriteHeldRunsIntoAServiceAddedAtTheirHandles() throws {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let first = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.write], permissions: [.write], value: nil),
        ]))
        let second = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFE0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFE1), properties: [.read, .write], permissions: [.read, .write], value: [0x00]),
        ]))
        let (dynamic, removed) = (first.characteristics[0].valueHandle, second.characteristics[0].valueHandle)
        let security = LinkSecurity(encrypted: true, hasLongTermKey: true)
        var server = ATTServer()
        _ = server.receive([0x16] + Self.le(dynamic) + [0, 0, 0xAA], database: &db, security: security, now: .zero)
        _ = server.receive([0x16] + Self.le(removed) + [0, 0, 0xBB], database: &db, security: security, now: .zero)
        var actions = server.receive([0x18, 0x01], database: &db, security: security, now: .zero)
        guard case let .write(id, handle, _, _, _)? = actions.first, handle == dynamic else { return XCTFail("expected the first run for the application, got \(actions)") }

        try db.remove(serviceStartingAt: second.range.lowerBound)
        server.forgetHandles(in: second.range)
        let replacement = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFD0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFD1), properties: [.read, .write], permissions: [.read, .write], value: [0x00]),
        ]), startingAt: second.range.lowerBound)
        XCTAssertEqual(replacement.characteristics[0].valueHandle, removed)

        actions = server.completeWrite(id: id, result: .success(()), database: &db, security: security, now: .zero)
        XCTAssertEqual(actions, [.send([0x01, 0x18] + Self.le(removed) + [0x01])])
        XCTAssertEqual(db.value(forHandle: removed), [0x00], "the new service's value is not written")
    }
}

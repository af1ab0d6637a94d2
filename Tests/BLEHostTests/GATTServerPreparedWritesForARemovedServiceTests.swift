import XCTest
import BLEWire
@testable import BLEHost

/// Review 25b: prepared writes still in the queue (no Execute Write yet) for a service removed
/// meanwhile. `forgetHandles` drops them from the queue, so the client's later Execute Write
/// writes the rest and is answered with success: the client is told its queued write to the
/// removed service was made. The in-flight case (b3e680b) ends with Invalid Handle instead.
final class GATTServerPreparedWritesForARemovedServiceTests: XCTestCase {
    private static func le(_ handle: UInt16) -> [UInt8] { [UInt8(handle & 0xFF), UInt8(handle >> 8)] }

    func testAnExecuteWriteWhoseQueuedRunsLostTheirServiceIsNotAnsweredWithSuccess() throws {
        var db = GATTServerDatabase(deviceName: "T", appearance: 0)
        let kept = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .write], permissions: [.read, .write], value: [0x00]),
        ]))
        let gone = try db.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFE0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFE1), properties: [.read, .write], permissions: [.read, .write], value: [0x00]),
        ]))
        let (keptHandle, goneHandle) = (kept.characteristics[0].valueHandle, gone.characteristics[0].valueHandle)
        let security = LinkSecurity(encrypted: true, hasLongTermKey: true)
        var server = ATTServer()
        XCTAssertEqual(server.receive([0x16] + Self.le(keptHandle) + [0, 0, 0xAA], database: &db, security: security, now: .zero),
                       [.send([0x17] + Self.le(keptHandle) + [0, 0, 0xAA])])
        XCTAssertEqual(server.receive([0x16] + Self.le(goneHandle) + [0, 0, 0xBB], database: &db, security: security, now: .zero),
                       [.send([0x17] + Self.le(goneHandle) + [0, 0, 0xBB])])

        try db.remove(serviceStartingAt: gone.range.lowerBound)
        server.forgetHandles(in: gone.range)

        let actions = server.receive([0x18, 0x01], database: &db, security: security, now: .zero)
        XCTAssertNotEqual(actions, [.send([0x19])],
                          "the client's prepared write to the removed service was dropped, yet the Execute Write reports success")
        XCTAssertEqual(actions, [.send([0x01, 0x18] + Self.le(goneHandle) + [0x01])], "expected Invalid Handle for the removed run")
        XCTAssertEqual(db.value(forHandle: keptHandle), [0x00], "an Execute Write that fails writes nothing (all or nothing)")
    }
}

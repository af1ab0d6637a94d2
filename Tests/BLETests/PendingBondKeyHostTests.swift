@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// A bond removed or replaced while its key is encrypting a link (the LTK Request answered
/// with it, the Encryption Change not yet in): when the change arrives, the link speaks for a
/// bond only if that bond is still the one whose key was given; `bondGone` withdraws a gone
/// bond's key from the links already encrypted with it, and this covers the window before.
final class PendingBondKeyHostTests: XCTestCase {
    let fixture = BondedLinkFixture(own: BDAddress(rawValue: 0xC1_02_03_04_05_3E),
                                    peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_E1), type: .public),
                                    ltk: [UInt8](repeating: 0xE1, count: 16))
    var victim: DeviceAddress { fixture.peer }

    func testABondRemovedWhileItsKeyIsEncryptingALinkDoesNotLeaveTheLinkSpeakingForABond() async throws {
        let store = try fixture.store()
        let t = HostUnderTest()
        let m = try await fixture.openPeripheral(t, store: store)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.read], value: [0x42]),
        ]))
        let cccd = try XCTUnwrap(handles.characteristics.first?.cccdHandle)
        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }

        await fixture.connectCentral(t, to: m)
        // The central encrypts with the bond's key: the host answers the LTK Request...
        try await fixture.requestTheBondKey(t)
        // ...and, before the Encryption Change, the application forgets the bond.
        let removed = try await m.removeBond(victim)
        XCTAssertTrue(removed)
        await t.controller.sendNow(.encryptionChange(status: .success, handle: 0x0041, enabled: true))
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12] + le(cccd) + [0x01, 0x00])
        try await t.controller.waitForL2CAP(channel: 0x0004) { $0.contains([0x13]) }

        let flagged = await m.host.run { $0.connections.links[0x0041]?.encryptedWithBondKey }
        XCTAssertEqual(flagged, false, "the link speaks for a bond that was removed before its encryption completed")

        // The consequence: a bond made later under that identity gets the link's subscriptions.
        let later = Bond(peer: victim, peerLongTermKey: [UInt8](repeating: 0xF1, count: 16), localLongTermKey: [UInt8](repeating: 0xF1, count: 16),
                         secureConnections: true, authenticated: false, keySize: 16)
        let stored = await m.host.run { $0.security.store(later, replacing: true, $0) }
        XCTAssertTrue(stored)
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0041, reason: .remoteUserTerminatedConnection))
        _ = await m.waitForConnectedCentrals(0)
        let bond = try XCTUnwrap(try store.bonds().first { $0.peer == victim })
        XCTAssertEqual(bond.peerLongTermKey, [UInt8](repeating: 0xF1, count: 16))
        XCTAssertEqual(bond.clientConfigurations, [:], "a bond the link's key never made got the link's subscriptions")
        await m.close()
    }

    /// The same window with a replacement: the bond is replaced (another pairing under that
    /// identity) between the LTK Request Reply with the old key and the Encryption Change. The
    /// link, encrypted with the old key, is restored the new bond's CCCDs (`bondedClientReturned`
    /// looks the bond up again) and is flagged as proving it (`hasRestoredBondedSubscriptions`).
    func testALinkEncryptedWithAReplacedBondsKeyIsNotGivenTheNewBondsSubscriptions() async throws {
        let store = try fixture.store()
        let t = HostUnderTest()
        let m = try await fixture.openPeripheral(t, store: store)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.read], value: [0x42]),
        ]))
        let valueHandle = try XCTUnwrap(handles.characteristics.first?.valueHandle)
        await fixture.connectCentral(t, to: m)
        try await fixture.requestTheBondKey(t)
        var replacement = Bond(peer: victim, peerLongTermKey: [UInt8](repeating: 0xF2, count: 16), localLongTermKey: [UInt8](repeating: 0xF2, count: 16),
                               secureConnections: true, authenticated: false, keySize: 16)
        replacement.clientConfigurations = [valueHandle: 0x0001]
        let r = replacement
        let stored = await m.host.run { $0.security.store(r, replacing: true, $0) }
        XCTAssertTrue(stored)
        await t.controller.sendNow(.encryptionChange(status: .success, handle: 0x0041, enabled: true))
        await waitUntil(within: .seconds(5)) { await m.host.run { $0.connections.links[0x0041]?.security.encrypted } == true }
        let subs = await m.host.run { $0.connections.links[0x0041]?.server.subscriptions ?? [:] }
        let proved = await m.host.run { $0.connections.links[0x0041]?.server.hasRestoredBondedSubscriptions }
        XCTAssertEqual(subs, [:], "a link encrypted with the old key got the new bond's CCCDs")
        XCTAssertEqual(proved, false, "a link that proved only the replaced key counts as proving the new bond")
        await m.close()
    }
}

@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// Review 25b: `Link.encryptedWithBondKey` (86dd9cb) is a flag, not "encrypted with *this*
/// bond's key": it stays set when the bond whose key encrypted the link is removed, and when the
/// link closes `saveSubscriptions` / `rememberChangeAwareness` look the bond up again by the
/// link's address. If another device has bonded under that identity meanwhile (nothing protects
/// a removed bond's identity), the old link's subscriptions go into the newcomer's bond, whose
/// key never encrypted that link, and are restored to the newcomer on its next encryption.
final class RemovedBondLinkStateGoesToANewBondHostTests: XCTestCase {
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_0B)
    var ownAddress: DeviceAddress { DeviceAddress(own, type: .random) }
    let victim = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_B1), type: .public)
    let victimLTK = [UInt8](repeating: 0xB1, count: 16)
    let stranger = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_B2), type: .random)


    typealias Initiator = MaliciousCentralPairingHostTests.Initiator

    func testALinkEncryptedWithARemovedBondsKeyDoesNotSaveItsSubscriptionsIntoAnotherDevicesBond() async throws {
        let store = WatchedBondStore()
        try store.save(Bond(peer: victim, peerLongTermKey: victimLTK, localLongTermKey: victimLTK,
                            secureConnections: true, authenticated: false, keySize: 16))
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = store
        let m = try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(own), configuration: config)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.read], value: [0x42]),
        ]))
        let c = try XCTUnwrap(handles.characteristics.first)
        let cccd = try XCTUnwrap(c.cccdHandle)
        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }

        // The bonded device encrypts with its bond's key and subscribes.
        await t.centralConnects(from: victim, handle: 0x0041)
        await m.waitForConnectedCentrals(1)
        await t.controller.sendNow(.le(.longTermKeyRequest(handle: 0x0041, randomNumber: 0, encryptedDiversifier: 0)))
        _ = try await t.controller.waitForCommand(.leLongTermKeyRequestReply, within: .seconds(5))
        await t.controller.sendNow(.encryptionChange(status: .success, handle: 0x0041, enabled: true))
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12] + le(cccd) + [0x01, 0x00])
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.contains([0x13]) }

        // The application removes its bond while it is connected.
        let removed = try await m.removeBond(victim)
        XCTAssertTrue(removed)

        // Another device, from an address of its own, pairs and names that identity.
        await t.centralConnects(from: stranger, handle: 0x0042)
        await m.waitForConnectedCentrals(2)
        let before = await t.controller.l2capPayloads(channel: 0x0006).count
        let claim = SMPLocalIdentity(identityResolvingKey: [UInt8](repeating: 0xEE, count: 16), identityAddress: victim,
                                     signatureKey: [UInt8](repeating: 0xEF, count: 16))
        let newcomer = Initiator(
            SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: claim, initiatorAddress: stranger, responderAddress: ownAddress),
            handle: 0x0042, consumedSoFar: before)
        await newcomer.begin(t.controller)
        let done = await t.controller.play("the newcomer's pairing", within: .seconds(20),
            step: { await newcomer.step(t.controller) }, until: { await newcomer.finished })
        XCTAssertTrue(done)
        let (identity, oldKey) = (victim, victimLTK)
        let stored = await store.wait("the newcomer's bond") { $0.contains { $0.peer == identity && $0.peerLongTermKey != oldKey } }
        XCTAssertTrue(stored, "the newcomer bonded under the removed identity")

        // The first link, encrypted with the removed bond's key, closes.
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0041, reason: .remoteUserTerminatedConnection))
        await m.waitForConnectedCentrals(1)
        // Read before the newcomer's own link closes (its close saves its own, empty, CCCDs).
        let bond = try XCTUnwrap(try store.bonds().first { $0.peer == victim })
        XCTAssertNotEqual(bond.peerLongTermKey, victimLTK)
        XCTAssertEqual(bond.clientConfigurations, [:],
                       "the newcomer's bond got the subscriptions of a link its key never encrypted")
        let restored = await m.host.run { $0.server.bondedChangeAwareness.keys.map { $0 } }
        XCTAssertEqual(restored, [], "the removed bond's link left change awareness under the identity")
        await m.close()
    }
}

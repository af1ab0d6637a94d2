@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// A bond keeps the address its peer paired from when that was not its identity
/// (`Bond.connectionAddress`: a device that connects with a static random address and gives
/// its public one, as Bumble does), and the host finds that bond by it. A stranger that pairs
/// from an address of its own and names that connection address as its identity must not get a
/// bond under it: `bond(for:)` looks identities up first, so the stranger's bond would shadow
/// the real one at that address (Vol 6 Part B §1.3; the shadowing `BondReplacement` refuses
/// for the address a pairing comes from, and for a claimed identity another bond has).
final class IdentityClaimOfAConnectionAddressHostTests: XCTestCase {
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_08)
    var ownAddress: DeviceAddress { DeviceAddress(own, type: .random) }
    /// The bonded device: its public identity, and the static random address it connects from.
    let victim = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_AB), type: .public)
    let victimConnects = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let victimLTK = [UInt8](repeating: 0xAB, count: 16)
    /// The stranger's own address, which no bond knows.
    let stranger = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_99), type: .random)


    func manager(_ t: HostUnderTest, store: any BondStore) async throws -> PeripheralManager {
        try await t.openPeripheral(own: own, store: store)
    }

    func testAStrangerClaimingABondedDevicesConnectionAddressAsItsIdentityDoesNotShadowTheBond() async throws {
        let store = WatchedBondStore()
        try store.save(Bond(peer: victim, connectionAddress: victimConnects, peerLongTermKey: victimLTK, localLongTermKey: victimLTK,
                            peerIdentityResolvingKey: [UInt8](repeating: 0xAC, count: 16),
                            secureConnections: true, authenticated: true, keySize: 16))
        let t = HostUnderTest()
        let m = try await manager(t, store: store)
        await t.centralConnects(from: stranger, handle: 0x0041)
        // Just Works from an address nobody is bonded at: no bond protects it.
        let claim = SMPLocalIdentity(identityResolvingKey: [UInt8](repeating: 0xEE, count: 16), identityAddress: victimConnects,
                                     signatureKey: [UInt8](repeating: 0xEF, count: 16))
        let attacker = MaliciousCentralPairingHostTests.Initiator(
            SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: claim, initiatorAddress: stranger, responderAddress: ownAddress),
            handle: 0x0041, consumedSoFar: 0)
        await attacker.begin(t.controller)
        let done = await t.controller.play("the stranger's pairing", within: .seconds(20),
            step: { await attacker.step(t.controller) }, until: { await attacker.finished })
        XCTAssertTrue(done)
        // The host either stores the stranger's bond or refuses it and drops the link.
        let settled = await firstOf("the host's verdict", within: .seconds(10),
                                    { await store.becomes { $0.count > 1 } },
                                    { (try? await t.controller.waitForCommand(.disconnect)) != nil })
        XCTAssertNotNil(settled)
        let at = victimConnects
        let found = await m.host.run { $0.security.bond(for: at, $0)?.peer }
        XCTAssertEqual(found, victim, "the bonded device's connection address now finds the stranger's bond")
        await m.close()
        XCTAssertFalse(try store.bonds().contains { $0.peer.sameDevice(as: victimConnects) },
                       "a bond was stored under another bond's connection address")

        // After a restart the bonded device reconnects from its usual address and encrypts.
        let t2 = HostUnderTest()
        let m2 = try await manager(t2, store: store)
        await t2.centralConnects(from: victimConnects, handle: 0x0042)
        await t2.controller.sendNow(.le(.longTermKeyRequest(handle: 0x0042, randomNumber: 0, encryptedDiversifier: 0)))
        let reply = try await t2.controller.waitForCommand(.leLongTermKeyRequestReply, within: .seconds(5))
        XCTAssertEqual(Array(reply.parameters[2..<18]), victimLTK, "the bonded device's address is answered with the stranger's LTK")
        await m2.close()
    }
}

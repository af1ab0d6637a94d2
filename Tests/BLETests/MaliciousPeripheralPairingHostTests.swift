@testable import BLE
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import BLETestSupport
import Synchronization
import XCTest

/// Attacks by a malicious peripheral behind the fake controller, talking
/// SMP to our central: each must leave the bonds and passkeys as they were.
final class MaliciousPeripheralPairingHostTests: XCTestCase {
    let attackerAddress = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    let centralAddress = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_01), type: .public)
    /// The bonded victim's public identity.
    let victim = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_AA), type: .public)

    /// A peripheral we never bonded with asks for security (Security Request), pairs Just Works
    /// and distributes the identity address of a device we hold a level 4 bond with. The claim
    /// comes from an address that bond does not know: the pairing is refused, the link dropped,
    /// and the victim's bond stays as it was.
    func testAPeerTriggeredJustWorksPairingDoesNotReplaceAStrongerBondOfTheIdentityItClaims() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let store = InMemoryBondStore()
        try store.save(Bond(peer: victim, peerLongTermKey: Array(repeating: 0xAA, count: 16),
                            localLongTermKey: Array(repeating: 0xAA, count: 16),
                            peerIdentityResolvingKey: Array(repeating: 0xAB, count: 16),
                            secureConnections: true, authenticated: true, keySize: 16))
        var config = HostConfiguration()
        config.security.bondStore = store
        let central = try await Central.open(transport: t.hostEnd, configuration: config)
        _ = try await central.connect(attackerAddress, timeout: .seconds(5))

        let evil = SMPLocalIdentity(identityResolvingKey: Array(repeating: 0xEE, count: 16), identityAddress: victim,
                                    signatureKey: Array(repeating: 0xEF, count: 16))
        let attacker = ResponderSMPPeer(SMPPairing(role: .responder, settings: SMPPairingSettings(), identity: evil,
                                           initiatorAddress: centralAddress, responderAddress: attackerAddress))
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x01])  // Security Request
        let dropped = await t.controller.play("the host refusing the claimed identity", within: .seconds(20),
                                              step: { await attacker.step(t.controller) },
                                              until: { await t.controller.commands.contains { $0.opcode == .disconnect } })
        XCTAssertTrue(dropped, "the link of the false claim is dropped")
        let encrypted = await attacker.encrypted
        XCTAssertTrue(encrypted, "the attack pairing got as far as encryption")
        let bond = try XCTUnwrap(try store.bonds().first { $0.peer == victim })
        XCTAssertTrue(bond.authenticated, "the level 4 bond stands")
        XCTAssertEqual(bond.peerLongTermKey, Array(repeating: 0xAA, count: 16), "the victim's key stands")
        XCTAssertEqual(try store.bonds().count, 1, "nothing else was stored")
        await central.close()
    }

    /// A fixed passkey is used for one pairing: a legacy initiator sends Mconfirm and Mrand
    /// before it can check the peer, so one exchange lets the peer find the passkey offline
    /// (2^20 c1), however the peer ends the pairing. The next pairing shows a fresh one.
    func testAFixedPasskeyLeakedToAPeerThatEndsWithUnspecifiedReasonIsRetired() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let shown = Mutex<[UInt32]>([])
        var config = HostConfiguration()
        config.security.bondStore = InMemoryBondStore()
        config.security.pairing.ioCapability = .displayOnly
        config.security.pairing.secureConnections = false
        config.security.pairing.displayedPasskey = 123_456
        config.security.agent = FixedPairingAgent(onDisplay: { v, _ in shown.withLock { $0.append(v) } })
        let central = try await Central.open(transport: t.hostEnd, configuration: config)
        let p = try await central.connect(attackerAddress, timeout: .seconds(5))
        let response = SMPPDU.pairingResponse(SMPPairingFeatures(
            ioCapability: .keyboardOnly, authRequirements: [.bonding, .mitm],
            initiatorKeyDistribution: [], responderKeyDistribution: [])).encode()
        for _ in 0..<2 {
            let before = await t.controller.l2capPayloads(channel: 0x0006).count
            let pairing = Task { try? await p.pair() }
            try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(5)) { $0.count > before }
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: response)
            try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(5)) { $0.count > before + 1 }  // Mconfirm
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x03] + Array(repeating: 0x5A, count: 16))
            try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(5)) { $0.count > before + 2 }  // Mrand
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x05, 0x08])
            _ = await pairing.value
        }
        let values = shown.withLock { $0 }
        XCTAssertEqual(values.count, 2)
        XCTAssertEqual(values.first, 123_456)
        XCTAssertNotEqual(values.first, values.last, "the passkey the first peer could compute offline was shown again")
        await central.close()
    }
}

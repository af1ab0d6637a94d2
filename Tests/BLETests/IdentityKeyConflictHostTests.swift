@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// An IRK a peer distributes that is another bond's, or ours, is a conflict: the pairing is
/// refused and nothing stored, since resolution would attribute RPAs to the wrong device and
/// could block the real bond (Core v5.4 Vol 6 Part B §1.3.2.3). An all-zero IRK (a device
/// without one, Vol 3 Part H §3.6.4) resolves nothing.
final class IdentityKeyConflictHostTests: XCTestCase {
    typealias Initiator = MaliciousCentralPairingHostTests.Initiator
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_06)
    var ownAddress: DeviceAddress { DeviceAddress(own, type: .random) }
    let bonded = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_AA), type: .public)
    let bondedIRK = [UInt8](repeating: 0xAB, count: 16)

    func manager(_ t: HostUnderTest, store: any BondStore) async throws -> PeripheralManager {
        try await t.openPeripheral(own: own, store: store)
    }

    /// A stranger pairs Just Works and distributes `irk` with an identity of its own; returns
    /// whether the host dropped the link.
    func pair(distributing irk: [UInt8], store: InMemoryBondStore) async throws -> (stranger: DeviceAddress, dropped: Bool) {
        let t = HostUnderTest()
        let m = try await manager(t, store: store)
        let stranger = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_77), type: .public)
        await t.centralConnects(from: stranger, handle: 0x0041)
        let identity = SMPLocalIdentity(identityResolvingKey: irk, identityAddress: stranger, signatureKey: [UInt8](repeating: 0xEF, count: 16))
        let a = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: identity,
                                     initiatorAddress: stranger, responderAddress: ownAddress), handle: 0x0041, consumedSoFar: 0)
        await a.begin(t.controller)
        let done = await t.controller.play("the pairing", within: .seconds(20),
            step: { await a.step(t.controller) }, until: { await a.finished })
        XCTAssertTrue(done)
        let dropped = await t.controller.sent(.disconnect, "the host dropping the link")
        await m.close()
        return (stranger, dropped)
    }

    func storeWithABond() throws -> InMemoryBondStore {
        let store = InMemoryBondStore()
        try store.save(Bond(peer: bonded, peerLongTermKey: [UInt8](repeating: 0xAA, count: 16), localLongTermKey: [UInt8](repeating: 0xAA, count: 16),
                            peerIdentityResolvingKey: bondedIRK, secureConnections: true, authenticated: true, keySize: 16))
        return store
    }

    func testAnIRKAnotherBondHasIsRefused() async throws {
        let store = try storeWithABond()
        let (stranger, dropped) = try await pair(distributing: bondedIRK, store: store)
        XCTAssertTrue(dropped, "the claim is refused and the link dropped")
        XCTAssertNil(try store.bonds().first { $0.peer.sameDevice(as: stranger) }, "no bond with a copied IRK")
    }

    func testOurOwnIRKSentBackIsRefused() async throws {
        let store = try storeWithABond()
        let ours = try store.localIdentity().identityResolvingKey
        let (stranger, dropped) = try await pair(distributing: ours, store: store)
        XCTAssertTrue(dropped, "the reflection is refused and the link dropped")
        XCTAssertNil(try store.bonds().first { $0.peer.sameDevice(as: stranger) }, "no bond with our own IRK")
    }

    func testAnAllZeroIRKResolvesNothing() throws {
        let zero = [UInt8](repeating: 0, count: 16)
        let rpa = try ResolvablePrivateAddress.generate(irk: zero, random: [0x12, 0x34, 0x56])
        XCTAssertFalse(ResolvablePrivateAddress.resolves(rpa, irk: zero))
        let bond = Bond(peer: bonded, peerIdentityResolvingKey: zero, secureConnections: true, authenticated: false, keySize: 16)
        XCTAssertFalse(bond.matches(DeviceAddress(rpa, type: .random)))
    }

    /// Connecting to a bonded identity scans for its RPA first only when its bond has an IRK
    /// that can resolve one: an all-zero IRK resolves nothing, so a scan would only wait out
    /// its timeout.
    func testABondWithAnAllZeroIRKIsNotScannedForNorResolved() async throws {
        for (irk, scans) in [([UInt8](repeating: 0, count: 16), false), (bondedIRK, true)] {
            let t = HostUnderTest()
            await t.controller.start()
            let store = InMemoryBondStore()
            try store.save(Bond(peer: bonded, peerLongTermKey: [UInt8](repeating: 0xAA, count: 16), peerIdentityResolvingKey: irk,
                                secureConnections: true, authenticated: true, keySize: 16))
            var config = HostConfiguration()
            config.security.bondStore = store
            let central = try await Central.open(transport: t.hostEnd, configuration: config)
            let peer = bonded
            let needsScan = await central.host.run { $0.privacy.needsScan(toReach: peer, within: .seconds(60), $0) }
            XCTAssertEqual(needsScan, scans, "IRK \(irk.prefix(1))")
            await central.close()
        }
    }
}

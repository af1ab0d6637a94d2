@testable import BLE
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// An eviction whose removal took the evicted bond's file away and then failed (the directory's
/// fsync after the unlink): the store no longer lists that bond, so the host must not go on
/// using it either (finding 8: memory follows the disk), as `removeBond` already does for the
/// same failure (BondRemovalDurabilityTests).
final class BondEvictionSyncFailureTests: XCTestCase {
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_07)

    func bond(_ last: UInt64, authenticated: Bool) -> Bond {
        Bond(peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_00 | last), type: .public),
             peerLongTermKey: [UInt8](repeating: UInt8(last), count: 16), localLongTermKey: [UInt8](repeating: UInt8(last), count: 16),
             secureConnections: true, authenticated: authenticated, keySize: 16)
    }

    func testAnEvictionThatFailedAfterTheFileWentForgetsTheEvictedBond() async throws {
        let store = BondRemovalDurabilityTests.SyncFailingStore()
        let victim = bond(1, authenticated: false)
        try store.save(victim)
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = store
        config.security.maximumBonds = 1
        let m = try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(own), configuration: config)
        let before = await m.bondedDevices
        XCTAssertEqual(before.map(\.peer), [victim.peer])

        let newcomer = bond(2, authenticated: true)
        let stored = await m.host.run { $0.security.store(newcomer, replacing: false, $0) }
        XCTAssertFalse(stored, "the store reported a failure")
        XCTAssertEqual(try store.bonds().map(\.peer), [], "the evicted bond's file is gone")
        let bonds = await m.bondedDevices
        XCTAssertEqual(bonds.map(\.peer), [], "the host still uses an evicted bond its store no longer lists (gone after a restart)")
        let key = await m.host.run { $0.security.bond(for: victim.peer, $0)?.localLongTermKey }
        XCTAssertNil(key, "the evicted bond's key still answers LE Long Term Key Requests")
        await m.close()
    }
}

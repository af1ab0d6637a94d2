@testable import BLE
import BLEHost
import BLETestSupport
import BLEWire
import Synchronization
import XCTest

/// A bond leaves the host's memory only after its file is gone from the store: a removal or an
/// eviction the store could not carry out is reported, and the bond stays where it is, so a
/// restart cannot bring back a bond this run acted as if it had forgotten.
final class BondRemovalDurabilityTests: XCTestCase {
    /// A store whose removals fail, as a read-only or full disk makes them.
    final class RemovalFailingStore: BondStore {
        let inner = InMemoryBondStore()
        func bonds() throws -> [Bond] { try inner.bonds() }
        func save(_ bond: Bond) throws { try inner.save(bond) }
        func remove(_ peer: DeviceAddress) throws -> Bool { throw BLEError.transport("unlink: read-only file system") }
        func localIdentity() throws -> LocalIdentity { try inner.localIdentity() }
        func problems() -> [String] { [] }
    }

    let own = BDAddress(rawValue: 0xC1_02_03_04_05_06)

    func bond(_ last: UInt64, authenticated: Bool) -> Bond {
        Bond(peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_00 | last), type: .public),
             peerLongTermKey: [UInt8](repeating: UInt8(last), count: 16), localLongTermKey: [UInt8](repeating: UInt8(last), count: 16),
             secureConnections: true, authenticated: authenticated, keySize: 16)
    }

    func manager(_ t: HostUnderTest, store: any BondStore, maximumBonds: Int = 512) async throws -> PeripheralManager {
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = store
        config.security.maximumBonds = maximumBonds
        return try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(own), configuration: config)
    }

    func testARemovalTheStoreRefusedIsReportedAndTheBondStays() async throws {
        let store = RemovalFailingStore()
        let kept = bond(1, authenticated: true)
        try store.save(kept)
        let t = HostUnderTest()
        let m = try await manager(t, store: store)
        do {
            try await m.removeBond(kept.peer)
            XCTFail("the failed removal is reported")
        } catch {}
        let bonds = await m.bondedDevices
        XCTAssertEqual(bonds.map(\.peer), [kept.peer], "the host still knows the bond its store still has")
        await m.close()
    }

    func testAnEvictionTheStoreRefusedStoresNothingNew() async throws {
        let store = RemovalFailingStore()
        let victim = bond(1, authenticated: false)
        try store.save(victim)
        let t = HostUnderTest()
        let m = try await manager(t, store: store, maximumBonds: 1)
        let newcomer = bond(2, authenticated: true)
        let stored = await m.host.run { $0.security.store(newcomer, replacing: false, $0) }
        XCTAssertFalse(stored, "the new bond needs the evicted one's place on disk")
        XCTAssertEqual(try store.bonds().map(\.peer), [victim.peer], "no more bonds on disk than maximumBonds")
        let bonds = await m.bondedDevices
        XCTAssertEqual(bonds.map(\.peer), [victim.peer])
        await m.close()
    }
}

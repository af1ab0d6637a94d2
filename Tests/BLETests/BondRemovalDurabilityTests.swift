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

    /// A store whose removals take the file away but then fail, as an fsync of the directory
    /// that fails after the unlink did.
    final class SyncFailingStore: BondStore {
        let inner = InMemoryBondStore()
        func bonds() throws -> [Bond] { try inner.bonds() }
        func save(_ bond: Bond) throws { try inner.save(bond) }
        func remove(_ peer: DeviceAddress) throws -> Bool {
            _ = try inner.remove(peer)
            throw BLEError.transport("fsync: input/output error")
        }
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

    /// The store took the file away but could not make that durable: the failure is reported,
    /// and the host forgets the bond as its store has (it must not go on encrypting with keys
    /// the user asked to remove and the store no longer lists).
    func testARemovalThatFailedAfterTheFileWentIsReportedAndForgotten() async throws {
        let store = SyncFailingStore()
        let removed = bond(1, authenticated: true)
        try store.save(removed)
        let t = HostUnderTest()
        let m = try await manager(t, store: store)
        let known = await m.bondedDevices
        XCTAssertEqual(known.map(\.peer), [removed.peer])
        do {
            try await m.removeBond(removed.peer)
            XCTFail("the failed sync is reported")
        } catch {}
        let bonds = await m.bondedDevices
        XCTAssertEqual(bonds.map(\.peer), [], "the host forgets the bond its store no longer has")
        await m.close()
    }
}

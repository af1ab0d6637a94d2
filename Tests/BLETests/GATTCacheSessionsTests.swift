@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `GATTCacheSessions` on its own, driven by a `GATTCacheDriver` double instead of a host:
/// which entries it stores where, and what Service Changed and Database Out Of Sync do to them.
final class GATTCacheSessionsTests: XCTestCase {
    actor Driver: GATTCacheDriver, RecordingDriver {
        let caches = GATTCacheSessions()
        nonisolated let configuration: HostConfiguration
        var record = DriverRecord()
        var links: [UInt64: DeviceAddress] = [:]
        var features: [DeviceAddress: [UInt8]] = [:]

        init(store: InMemoryGATTCacheStore) {
            var c = HostConfiguration()
            c.gattCache = store
            configuration = c
        }
        func peer(ofLink linkID: UInt64) -> DeviceAddress? { links[linkID] }
        func serverFeatures(readFrom peer: DeviceAddress) -> [UInt8]? { features[peer] }

        func connect(_ linkID: UInt64, _ peer: DeviceAddress, features f: [UInt8]? = nil) {
            links[linkID] = peer
            features[peer] = f
        }
        func install(_ entry: GATTCacheSessions.Entry, linkID: UInt64) { caches.install(entry, linkID: linkID, self) }
        func servicesChanged(_ range: ClosedRange<UInt16>, linkID: UInt64) { caches.servicesChanged(range, linkID: linkID, self) }
        func outOfSync(linkID: UInt64) { caches.outOfSync(linkID: linkID, self) }
        func rekey(linkID: UInt64, peer: DeviceAddress, hash: [UInt8]?) { caches.rekey(linkID: linkID, peer: peer, databaseHash: hash, self) }
        func entry(_ linkID: UInt64) -> GATTCacheSessions.Entry? { caches.entry(linkID: linkID) }
    }

    let peer = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_C1), type: .public)
    let hash = [UInt8](repeating: 0xAB, count: 16)

    /// A cache installed for a link that is gone is not kept; one for a link that is up takes
    /// the Server Supported Features the client read before it, and is stored under its key.
    func testInstallKeepsOnlyALiveLinksCacheWithTheFeaturesReadBeforeIt() async throws {
        let store = InMemoryGATTCacheStore()
        let d = Driver(store: store)
        let key = GATTCacheKey.bonded(peer)
        await d.install(.init(key: key, cache: GATTAttributeCache(), loaded: false), linkID: 7)
        var entry = await d.entry(7)
        XCTAssertNil(entry, "a cache kept for a link that is not up")
        await d.connect(7, peer, features: [0x01])
        await d.install(.init(key: key, cache: GATTAttributeCache(), loaded: false), linkID: 7)
        entry = await d.entry(7)
        XCTAssertEqual(entry?.cache.serverFeatures, [0x01])
        XCTAssertEqual(try store.load(key)?.serverFeatures, [0x01], "stored with the features")
    }

    /// Service Changed from an unbonded server: its entry stops being stored under the old
    /// hash (which still describes the old database) until the new hash keys it again.
    func testAnUnbondedServersChangedDatabaseIsStoredOnlyUnderItsNewHash() async throws {
        let store = InMemoryGATTCacheStore()
        let d = Driver(store: store)
        await d.connect(3, peer)
        let oldKey = GATTCacheKey.unbonded(peer, databaseHash: hash)
        await d.install(.init(key: oldKey, cache: GATTAttributeCache(databaseHash: hash), loaded: true), linkID: 3)
        await d.servicesChanged(0x0001...0xFFFF, linkID: 3)
        let entry = await d.entry(3)
        XCTAssertNil(entry?.key)
        XCTAssertEqual(entry?.needsHash, true)
        let newHash = [UInt8](repeating: 0xCD, count: 16)
        await d.rekey(linkID: 3, peer: peer, hash: newHash)
        let rekeyed = await d.entry(3)
        XCTAssertEqual(rekeyed?.key, .unbonded(peer, databaseHash: newHash))
        XCTAssertNotNil(try store.load(.unbonded(peer, databaseHash: newHash)))
    }

    /// Database Out Of Sync drops the link's cache and a bonded peer's stored entry.
    func testOutOfSyncDropsTheLinksCacheAndABondedPeersStoredEntry() async throws {
        let store = InMemoryGATTCacheStore()
        let d = Driver(store: store)
        await d.connect(5, peer, features: [0x01])
        let key = GATTCacheKey.bonded(peer)
        await d.install(.init(key: key, cache: GATTAttributeCache(), loaded: false), linkID: 5)
        XCTAssertNotNil(try store.load(key))
        await d.outOfSync(linkID: 5)
        let entry = await d.entry(5)
        XCTAssertNil(entry)
        XCTAssertNil(try store.load(key))
    }
}

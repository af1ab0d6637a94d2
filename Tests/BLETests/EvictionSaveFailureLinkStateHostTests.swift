@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import Synchronization
import XCTest

/// Review 25c: faafe32 makes an evicted bond withdraw its key from the links it encrypted
/// (`bondKeyWithdrawn` after `store` evicts). But `store` has a second way to drop the evicted
/// bond from memory: when the new bond's `save` fails after the evicted bond's file went, it
/// sets `cachedBonds` without the evicted bond (SecurityCoordinator+Bonds.swift:88) and returns,
/// skipping both `forgetBondedClient` and `bondKeyWithdrawn`. The evicted bond's link keeps
/// `encryptedWithBondKey`, so when another device later bonds under that identity, the old
/// link's subscriptions go into the newcomer's bond at its close (the 25b finding again).
final class EvictionSaveFailureLinkStateHostTests: XCTestCase {
    let fixture = BondedLinkFixture(own: BDAddress(rawValue: 0xC1_02_03_04_05_0C),
                                    peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_C1), type: .public),
                                    ltk: [UInt8](repeating: 0xC1, count: 16))
    var victim: DeviceAddress { fixture.peer }

    /// Fails the next `save` once `failNextSave` is set (the disk full for the newcomer's file).
    final class SaveFailingStore: BondStore, @unchecked Sendable {
        let inner = InMemoryBondStore()
        let failNextSave = Mutex(false)
        func bonds() throws -> [Bond] { try inner.bonds() }
        func save(_ bond: Bond) throws {
            if failNextSave.withLock({ f in defer { f = false }; return f }) { throw BLEError.transport("no space left on device") }
            try inner.save(bond)
        }
        func remove(_ peer: DeviceAddress) throws -> Bool { try inner.remove(peer) }
        func localIdentity() throws -> LocalIdentity { try inner.localIdentity() }
        func problems() -> [String] { [] }
    }

    /// An authenticated bond evicts the victim's (the cap is one bond), and its own file cannot
    /// be written: not stored, and the evicted bond gone from memory and disk.
    func evictWithAFailedSave(_ m: PeripheralManager, _ store: SaveFailingStore,
                              file: StaticString = #filePath, line: UInt = #line) async {
        let newcomer = Bond(peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_C2), type: .public),
                            peerLongTermKey: [UInt8](repeating: 0xC2, count: 16), localLongTermKey: [UInt8](repeating: 0xC2, count: 16),
                            secureConnections: true, authenticated: true, keySize: 16)
        store.failNextSave.withLock { $0 = true }
        let stored = await m.host.run { $0.security.store(newcomer, replacing: false, $0) }
        XCTAssertFalse(stored, file: file, line: line)
        let bonds = await m.bondedDevices
        XCTAssertEqual(bonds.map(\.peer), [], "the evicted bond is gone from memory and disk", file: file, line: line)
    }

    func testAnEvictionWhoseNewBondFailedToSaveWithdrawsTheEvictedKeyFromItsLink() async throws {
        let store = SaveFailingStore()
        try store.save(fixture.bond())
        let t = HostUnderTest()
        let m = try await fixture.openPeripheral(t, store: store) { $0.security.maximumBonds = 1 }
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.read], value: [0x42]),
        ]))
        let cccd = try XCTUnwrap(handles.characteristics.first?.cccdHandle)
        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }

        // The bonded (unauthenticated) device encrypts with its bond's key and subscribes.
        await fixture.connectCentral(t, to: m)
        try await fixture.encryptWithTheBondKey(t)
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12] + le(cccd) + [0x01, 0x00])
        try await t.controller.waitForL2CAP(channel: 0x0004) { $0.contains([0x13]) }
        let flagged = await m.host.run { $0.connections.links[0x0041]?.encryptedWithBondKey }
        XCTAssertEqual(flagged, true)

        await evictWithAFailedSave(m, store)

        let still = await m.host.run { $0.connections.links[0x0041]?.encryptedWithBondKey }
        XCTAssertEqual(still, false, "the evicted bond is gone, yet its link still speaks for a bond (bondKeyWithdrawn skipped)")

        // The consequence: a bond made later under that identity gets the old link's state.
        let later = Bond(peer: victim, peerLongTermKey: [UInt8](repeating: 0xD1, count: 16), localLongTermKey: [UInt8](repeating: 0xD1, count: 16),
                         secureConnections: true, authenticated: false, keySize: 16)
        let storedLater = await m.host.run { $0.security.store(later, replacing: true, $0) }
        XCTAssertTrue(storedLater)
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0041, reason: .remoteUserTerminatedConnection))
        _ = await m.waitForConnectedCentrals(0)
        let bond = try XCTUnwrap(try store.bonds().first { $0.peer == victim })
        XCTAssertEqual(bond.peerLongTermKey, [UInt8](repeating: 0xD1, count: 16))
        XCTAssertEqual(bond.clientConfigurations, [:],
                       "a bond the evicted link's key never made got that link's subscriptions")
        await m.close()
    }
    func testAnEvictionWhoseNewBondFailedToSaveForgetsWhatTheEvictedClientLeftOnTheServer() async throws {
        let store = SaveFailingStore()
        try store.save(fixture.bond())
        let t = HostUnderTest()
        let m = try await fixture.openPeripheral(t, store: store) { $0.security.maximumBonds = 1 }
        let features = try await m.host.run { host -> UInt16 in
            try XCTUnwrap(host.server.database.attributes.first { $0.type == BluetoothUUID(0x2B29) }?.handle)
        }
        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }

        // The bonded device encrypts with its key, enables robust caching and leaves.
        await fixture.connectCentral(t, to: m)
        try await fixture.encryptWithTheBondKey(t)
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12] + le(features) + [0x01])
        try await t.controller.waitForL2CAP(channel: 0x0004) { $0.contains([0x13]) }
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0041, reason: .remoteUserTerminatedConnection))
        _ = await m.waitForConnectedCentrals(0)
        let v = victim
        let kept = await m.host.run { $0.server.bondedClientFeatures[v] }
        XCTAssertEqual(kept, [0x01])

        await evictWithAFailedSave(m, store)
        let left = await m.host.run { $0.server.bondedClientFeatures.keys.map { $0 } }
        XCTAssertEqual(left, [], "the evicted bond's client features stay for whoever bonds under its identity next (forgetBondedClient skipped)")
        await m.close()
    }
}

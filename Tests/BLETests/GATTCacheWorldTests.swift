import BLE
import BLEHost
import BLERuntime
import BLESystems
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// GATT caching end to end (Core spec Vol 3 Part G §2.5.2), two whole hosts on the virtual radio
/// in virtual time, each transition once: a bonded server that kept the CCCD (no request at
/// all to the first notification), Database Out Of Sync to a change-unaware client that enabled
/// robust caching (§2.5.2.1), and a Service Changed indication that makes the client search
/// again only the changed range (§7.1). Round trips are counted in a btsnoop capture of the
/// central's HCI (`RecordingTransport`, `ATTRoundTrips`).
final class GATTCacheWorldTests: XCTestCase {
    static let measurement = BluetoothUUID(0x2A37)

    func testABondedServerThatKeptTheCCCDTakesNoRequestToTheFirstNotification() async throws {
        try await VirtualWorld.run { world in
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own)
            let device = await world.radio.addDevice()
            let capture = RecordingTransport(wrapping: device.transport, executor: world.clock.taskExecutor)
            let store = InMemoryGATTCacheStore()
            var configuration = HostConfiguration()
            configuration.gattCache = store
            let central = try await Central.open(transport: capture, clock: world.clock, configuration: configuration)

            // Cold: pair, subscribe, first value, then Service Changed and robust caching.
            let first = try await central.connect(address)
            try await first.exchangeMTU()
            _ = try await first.pair()
            let located = try await first.characteristic(Self.measurement)
            let c = try XCTUnwrap(located)
            let values = await first.notifications(for: c)
            let wrote = try await first.enableUpdates(for: c)
            XCTAssertTrue(wrote)
            let value = await firstValue(values, within: .seconds(5), world)
            XCTAssertNotNil(value)
            await first.completeCaching()
            try await first.disconnect()
            XCTAssertEqual(store.fileNames.count, 1, "one entry, under the bonded identity: \(store.fileNames)")
            XCTAssertFalse(store.fileNames.first?.contains("-random-") == true && store.fileNames.first!.count > 40,
                           "a bonded peer's entry is not keyed by hash: \(store.fileNames)")

            // Bonded reconnection: no ATT request at all before the first notification.
            let again = try await central.connect(address)
            try await again.exchangeMTU()
            let relocated = try await again.characteristic(Self.measurement)
            let cached = try XCTUnwrap(relocated)
            XCTAssertEqual(cached, c)
            let moreValues = await again.notifications(for: cached)
            let wroteAgain = try await again.enableUpdates(for: cached)
            XCTAssertFalse(wroteAgain, "the server kept the CCCD")
            let kept = await firstValue(moreValues, within: .seconds(5), world)
            XCTAssertNotNil(kept, "the kept subscription delivers")
            let counted = try ATTRoundTrips(btsnoop: capture.btsnoop, connection: 2)
            XCTAssertTrue(counted.notified, "\(counted)")
            XCTAssertEqual(counted.count, 0, "bonded reconnection: \(counted)")
            print("round trips to the first notification, bonded reconnection on the virtual radio: \(counted)")
            try await again.disconnect()
            await central.close()
            await sensor.stop()
        }
    }

    /// A server whose database changes under a client that enabled robust caching but not
    /// Service Changed: the client's next request gets Database Out Of Sync, the client drops its
    /// cache, reads the hash (aware again) and finds the new characteristic.
    func testDatabaseOutOfSyncMakesTheClientDropItsCacheAndFindTheNewCharacteristic() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let p = try await rig.central.connect(rig.address)
            try await p.exchangeMTU()
            let features = try await p.characteristic(GATTUUID.clientSupportedFeatures)
            let csf = try XCTUnwrap(features)
            try await p.writeValue([0x01], for: csf)
            let before = try await p.characteristic(BluetoothUUID(0xFFF1))
            XCTAssertNil(before)
            let oldHash = try await p.readDatabaseHash()

            _ = try await rig.manager.add(GATTCacheRig.addedService)
            let requestsBefore = try ATTRoundTrips(btsnoop: rig.capture.btsnoop).count
            // The cache says there is no such characteristic; the server refuses the next request
            // (by handle: a characteristic's read would catch up and read again on its own).
            do {
                _ = try await p.readValue(handle: csf.valueHandle)
                XCTFail("a change-unaware client is answered Database Out Of Sync")
            } catch BLEError.gatt(.att(.databaseOutOfSync, _, _)) {}
            let found = try await p.characteristic(BluetoothUUID(0xFFF1))
            XCTAssertNotNil(found, "found after Database Out Of Sync")
            let value = try await p.readValue(for: try XCTUnwrap(found))
            XCTAssertEqual(value, [0x2A])
            let newHash = try await p.readDatabaseHash()
            XCTAssertNotEqual(newHash, oldHash)
            let all = try ATTRoundTrips(btsnoop: rig.capture.btsnoop)
            XCTAssertGreaterThan(all.count, requestsBefore + 2, "refused, hash read, searched again: \(all)")
            XCTAssertEqual(rig.store.fileNames.count, 2, "an entry per Database Hash of the unbonded server: \(rig.store.fileNames)")
            try await p.disconnect()
            await rig.close()
        }
    }

    /// Service Changed (§7.1) once the client subscribed to it: only the changed range is
    /// searched again, and the new characteristic is found there.
    func testServiceChangedMakesTheClientSearchOnlyTheChangedRange() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let (p, changes) = try await rig.connectedAndCached()
            let handles = try await rig.manager.add(GATTCacheRig.addedService)
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, handles.range)
            let found = try await p.characteristic(BluetoothUUID(0xFFF1))
            XCTAssertEqual(found.map { handles.range.contains($0.declarationHandle) }, true)
            try await p.disconnect()
            await rig.close()
        }
    }

    /// A bonded client away while the server's database changes is change-unaware when it comes
    /// back (§2.5.2.1): once its link is encrypted the server indicates Service Changed (§7.1),
    /// the client drops what its cache held in the range, and finds the new characteristic.
    func testABondedClientIsToldOfAChangeMadeWhileItWasAway() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let absent = try await rig.bondAndLeave(lookingUp: [BluetoothUUID(0xFFF1)])
            XCTAssertEqual(absent, [nil])
            _ = try await rig.manager.add(GATTCacheRig.addedService)

            let again = try await rig.central.connect(rig.address)
            let changes = await again.servicesChanged()
            // From the bonded cache, no request: this also arms the Service Changed handle.
            let sc = try await again.characteristic(GATTUUID.serviceChanged)
            XCTAssertNotNil(sc)
            try await again.encrypt()
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, 0x0001...0xFFFF, "the whole database, as the server does not say which part")
            let found = try await again.characteristic(BluetoothUUID(0xFFF1))
            XCTAssertNotNil(found, "found after Service Changed")
            try await again.disconnect()
            await rig.close()
        }
    }

    /// The same across a server restart with a changed database: the bond keeps the hash of the
    /// database the client knew (`Bond.servedDatabaseHash`), so the restarted server, which
    /// has no memory of the client, still finds it change-unaware and indicates Service Changed.
    func testABondedClientIsToldOfAChangeMadeWhileTheServerRestarted() async throws {
        try await VirtualWorld.run { world in
            let (rig, bonds, after) = try await Self.restartedServer(world, changing: true)
            let kept = try XCTUnwrap(bonds.bonds().first)
            XCTAssertNotNil(kept.servedDatabaseHash, "the bond keeps the hash the client knew")
            let again = try await rig.central.connect(rig.address)
            let changes = await again.servicesChanged()
            _ = try await again.characteristic(GATTUUID.serviceChanged)
            try await again.encrypt()
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, 0x0001...0xFFFF)
            try await again.disconnect()
            await rig.central.close()
            await after.close()
        }
    }

    /// A rig whose server bonded with the central, then restarted (same address and bond
    /// store, no memory of the client) with the added service when `changing`, advertising again.
    /// `editBond` changes the stored bond while the server is down (an older bond file).
    static func restartedServer(_ world: VirtualWorld, changing: Bool, editBond: (inout Bond) -> Void = { _ in })
        async throws -> (rig: GATTCacheRig, bonds: InMemoryBondStore, after: PeripheralManager) {
        let bonds = InMemoryBondStore()
        var serverConfiguration = HostConfiguration()
        serverConfiguration.security.bondStore = bonds
        let serverAddress = BDAddress(rawValue: 0x00_5A_B1_00_00_77)
        let rig = try await GATTCacheRig.open(world, name: "Restarting", serverAddress: serverAddress, server: serverConfiguration)
        try await rig.bondAndLeave()
        await rig.manager.close()
        var bond = try XCTUnwrap(try bonds.bonds().first)
        editBond(&bond)
        try bonds.save(bond)
        let (after, _) = try await world.addPeripheralManager(name: "Restarting", address: serverAddress, configuration: serverConfiguration)
        if changing { _ = try await after.add(GATTCacheRig.addedService) }
        try await after.startAdvertising(AdvertisingData())
        return (rig, bonds, after)
    }

    /// An unbonded server's entry is kept under the Database Hash it was read for: after a
    /// Service Changed indication the link's cache describes another database, which must not
    /// be stored under the old hash (a later connection to a server reporting that hash would
    /// load the new layout as the old one).
    func testServiceChangedDoesNotStoreTheNewDatabaseUnderTheOldHash() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let (p, changes) = try await rig.connectedAndCached()
            let read = try await p.readDatabaseHash()
            let oldHash = try XCTUnwrap(read)
            let handles = try await rig.manager.add(GATTCacheRig.addedService)
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, handles.range)
            let found = try await p.characteristic(BluetoothUUID(0xFFF1))
            XCTAssertNotNil(found)
            let newRead = try await p.readDatabaseHash()
            let newHash = try XCTUnwrap(newRead)
            try await p.disconnect()
            let old = try rig.store.load(.unbonded(p.address, databaseHash: oldHash))
            XCTAssertNil(old?.characteristics.first { $0.uuid == BluetoothUUID(0xFFF1) },
                         "the old hash's entry holds the new database: \(rig.store.fileNames)")
            let new = try rig.store.load(.unbonded(p.address, databaseHash: newHash))
            XCTAssertNotNil(new?.characteristics.first { $0.uuid == BluetoothUUID(0xFFF1) },
                            "what was learned after the change is kept under the new hash: \(rig.store.fileNames)")
            await rig.close()
        }
    }

    /// Client Supported Features persist across connections for a client with a trusted
    /// relationship (Vol 3 Part G §7.2), and `completeCaching` relies on it (a bonded server is
    /// not written again): a bonded client that enabled robust caching still has it on the
    /// next encrypted connection.
    func testABondedClientsRobustCachingPersistsAcrossConnections() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world, name: "Server")
            try await rig.bondAndLeave()
            let again = try await rig.central.connect(rig.address)
            try await again.encrypt()
            let located = try await again.characteristic(GATTUUID.clientSupportedFeatures)
            let csf = try XCTUnwrap(located)
            let value = try await again.readValue(for: csf)
            XCTAssertEqual(value.first.map { $0 & 0x01 }, 0x01, "robust caching kept for the bonded client: \(value)")
            try await again.disconnect()
            await rig.close()
        }
    }
}

import BLE
import BLEHost
import BLERuntime
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// A returning bonded client as our server sees it (Core spec Vol 3 Part G §2.5.2.1, §3.3.3.3,
/// §7.2), two whole hosts on the virtual radio in virtual time: its state is restored at
/// connection when its address names the bond (identity address, or an RPA its IRK resolves
/// in the host or the controller), so a request before encryption is judged by it; and a bond
/// stored without the served-database hash makes it change-unaware.
final class GATTCacheBondedClientWorldTests: XCTestCase {
    /// Asks the server something over the client's cached layout before the link is encrypted,
    /// and expects Database Out Of Sync: the client enabled robust caching and is change-unaware.
    static func assertOutOfSyncBeforeEncryption(_ p: Peripheral, file: StaticString = #filePath, line: UInt = #line) async throws {
        let level = await p.securityLevel
        XCTAssertEqual(level, .none, "the request goes before encryption", file: file, line: line)
        // From the bonded cache: no request.
        let located = try await p.characteristic(GATTUUID.clientSupportedFeatures)
        let csf = try XCTUnwrap(located, file: file, line: line)
        // By handle: a characteristic's read would catch up and read again on its own
        // (Peripheral+DatabaseChange.swift); a handle's shows the server's answer.
        do {
            _ = try await p.readValue(handle: csf.valueHandle)
            XCTFail("a change-unaware bonded client is answered Database Out Of Sync", file: file, line: line)
        } catch BLEError.gatt(.att(.databaseOutOfSync, _, _)) {}
        // The client catches up (hash read, change-aware) and finds what was added.
        let found = try await p.characteristic(BluetoothUUID(0xFFF1))
        XCTAssertNotNil(found, "found after Database Out Of Sync", file: file, line: line)
    }

    /// The client connects with its identity address (public): known at connection.
    func testAChangeUnawareBondedClientIsAnsweredOutOfSyncBeforeEncryption() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            try await rig.bondAndLeave()
            _ = try await rig.manager.add(GATTCacheRig.addedService)
            let again = try await rig.central.connect(rig.address)
            try await Self.assertOutOfSyncBeforeEncryption(again)
            try await again.disconnect()
            await rig.close()
        }
    }

    /// The client comes back with a new resolvable private address: the bond's IRK resolves it
    /// at connection, in the host (Bond.matches) or in the controller's resolving list.
    func testABondedClientWithANewRPAIsRecognisedAtConnection() async throws {
        for controllerResolution in [false, true] {
            try await VirtualWorld.run { world in
                var server = HostConfiguration()
                server.security.bondStore = InMemoryBondStore()
                server.security.usesControllerAddressResolution = controllerResolution
                var central = HostConfiguration()
                central.security.bondStore = InMemoryBondStore()
                central.security.usesControllerAddressResolution = controllerResolution
                let rotation: Duration = .seconds(60)
                let rig = try await GATTCacheRig.open(world, server: server, central: central, centralAddress: .resolvablePrivate(rotation: rotation))
                let events = await rig.manager.events
                try await rig.bondAndLeave()
                _ = try await rig.manager.add(GATTCacheRig.addedService)
                try await world.clock.sleep(for: rotation + .seconds(1))
                let again = try await rig.central.connect(rig.address)
                try await Self.assertOutOfSyncBeforeEncryption(again)
                var centrals: [DeviceAddress] = []
                for await e in events {
                    if case let .connected(c) = e { centrals.append(c.address) }
                    if centrals.count == 2 { break }
                }
                if !controllerResolution {
                    XCTAssertNotEqual(centrals.first, centrals.last, "the client came back with a new RPA")
                    XCTAssertTrue(centrals.allSatisfy { $0.address.randomKind == .resolvablePrivate }, "\(centrals)")
                }
                try await again.disconnect()
                await rig.close()
            }
        }
    }

    /// A bonded client's CCCDs (§3.3.3.3) are back once its link is encrypted with the bond's
    /// key, not at connection: a device copying its address must not receive what it
    /// subscribed to. On a characteristic that needs no encryption.
    func testABondedClientsSubscriptionDeliversOnceEncrypted() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let handles = try await rig.manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFE0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFE1), properties: [.read, .notify], permissions: [.read], value: [0x00]),
            ]))
            let valueHandle = try XCTUnwrap(handles[BluetoothUUID(0xFFE1)]?.valueHandle)
            let first = try await rig.central.connect(rig.address)
            _ = try await first.pair()
            let located = try await first.characteristic(BluetoothUUID(0xFFE1))
            let c = try XCTUnwrap(located)
            let wrote = try await first.enableUpdates(for: c)
            XCTAssertTrue(wrote)
            try await first.disconnect()

            let again = try await rig.central.connect(rig.address)
            let values = await again.notifications(for: c)
            // The server's host has seen the connection once the client's first request is answered.
            _ = try await again.readValue(for: c)
            let before = await rig.manager.updateValue([0x06], forHandle: valueHandle)
            XCTAssertEqual(before, .queued(centrals: 0), "the kept CCCD does not count before encryption")
            try await again.encrypt()
            let result = await rig.manager.updateValue([0x07], forHandle: valueHandle)
            XCTAssertEqual(result, .queued(centrals: 1), "the kept CCCD counts once encrypted with the bond's key")
            let value = await firstValue(values, within: .seconds(2), world)
            XCTAssertEqual(value, [0x07])
            try await again.disconnect()
            await rig.close()
        }
    }

    /// A bond from before the served-database hash was kept (an older bond file) gives the server
    /// nothing to show that the client saw the database as it is: the client is change-unaware
    /// and, the database having changed, is told with Service Changed once encrypted.
    func testABondWithoutAServedHashMakesTheClientChangeUnaware() async throws {
        try await VirtualWorld.run { world in
            let (rig, _, after) = try await GATTCacheWorldTests.restartedServer(world, changing: true) {
                $0.servedDatabaseHash = nil
                $0.clientSupportedFeatures = nil
            }
            let again = try await rig.central.connect(rig.address)
            let changes = await again.servicesChanged()
            _ = try await again.characteristic(GATTUUID.serviceChanged)
            try await again.encrypt()
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, 0x0001...0xFFFF, "Service Changed to the client of the old bond")
            try await again.disconnect()
            await rig.central.close()
            await after.close()
        }
    }

    /// Client Supported Features are kept with the bond (§7.2): a server restarted with a
    /// changed database still answers the change-unaware client Database Out Of Sync, before
    /// its link is encrypted.
    func testARestartedServerAnswersAChangeUnawareBondedClientOutOfSync() async throws {
        try await VirtualWorld.run { world in
            let (rig, bonds, after) = try await GATTCacheWorldTests.restartedServer(world, changing: true)
            XCTAssertEqual(try bonds.bonds().first?.clientSupportedFeatures.map { $0.first.map { $0 & 0x01 } }, 0x01,
                           "robust caching is kept with the bond")
            let again = try await rig.central.connect(rig.address)
            try await Self.assertOutOfSyncBeforeEncryption(again)
            try await again.disconnect()
            await rig.central.close()
            await after.close()
        }
    }

    /// The state restored at connection is read, never written, by a link not encrypted with the
    /// bond's key: a device that copies the bonded client's address, is answered Database Out Of
    /// Sync and catches up on its own link leaves the bonded client change-unaware, so the real
    /// client is still answered Out Of Sync when it returns (what such a device learns, and why
    /// the state is restored at connection at all, is in GATTServerChangeTracking.swift).
    func testACopierOfTheAddressDoesNotMakeTheBondedClientChangeAware() async throws {
        try await VirtualWorld.run { world in
            var central = HostConfiguration()
            let bonds = InMemoryBondStore()
            central.security.bondStore = bonds
            let rig = try await GATTCacheRig.open(world, central: central)
            let address = rig.central.controllerInfo.address
            try await rig.bondAndLeave()
            _ = try await rig.manager.add(GATTCacheRig.addedService)
            await rig.central.close()

            let (copier, _) = try await world.addCentral(address: address)
            let c = try await copier.connect(rig.address)
            do {
                _ = try await c.readValue(handle: 0x0003)  // the Device Name
                XCTFail("the copier's first request is judged by the bonded client's state")
            } catch BLEError.gatt(.att(.databaseOutOfSync, _, _)) {}
            let name = try await c.readValue(handle: 0x0003)  // the next request: change-aware on its own link
            XCTAssertEqual(String(decoding: name, as: UTF8.self), "Changing")
            try await c.disconnect()
            await copier.close()

            var returning = HostConfiguration()
            returning.security.bondStore = bonds
            returning.gattCache = rig.store
            let (again, _) = try await world.addCentral(address: address, configuration: returning)
            let p = try await again.connect(rig.address)
            try await Self.assertOutOfSyncBeforeEncryption(p)
            try await p.disconnect()
            await again.close()
            await rig.manager.close()
        }
    }

    /// A bond removed takes what its client left on the server with it: a device that pairs
    /// again from that address starts from its own state, not with the old bond's robust
    /// caching (which would answer its requests Database Out Of Sync after a change).
    func testARemovedBondTakesItsClientsKeptStateWithIt() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let address = rig.central.controllerInfo.address
            try await rig.bondAndLeave()  // robust caching on
            await rig.central.close()
            let removed = try await rig.manager.removeBond(DeviceAddress(address, type: .public))
            XCTAssertTrue(removed)

            let (again, _) = try await world.addCentral(address: address)
            let first = try await again.connect(rig.address)
            _ = try await first.pair()
            try await first.disconnect()
            _ = try await rig.manager.add(GATTCacheRig.addedService)
            let p = try await again.connect(rig.address)
            let name = try await p.readValue(handle: 0x0003)  // the new bond never enabled robust caching
            XCTAssertEqual(String(decoding: name, as: UTF8.self), "Changing")
            try await p.disconnect()
            await again.close()
            await rig.manager.close()
        }
    }
}

import BLE
import BLEHost
import BLETestSupport
import BLEVirtual
import BLEWire
import XCTest

/// A whole-database dump (`Peripheral.discoverDatabase`, what `ble gatt` prints) through the
/// attribute cache (Core spec Vol 3 Part G §2.5.2), two hosts on the virtual radio in virtual
/// time: a second dump of an unchanged server sends no discovery request, only the Database
/// Hash read (§7.3); a changed hash, a Service Changed range (§7.1) or a bonded server that
/// changed while the client was away makes it discover again. Requests are counted in a btsnoop
/// capture of the central's HCI.
final class GATTCacheDumpWorldTests: XCTestCase {
    /// The layout of a dump: services, includes, characteristics, descriptors.
    static func layout(_ db: GATTDatabaseSnapshot) -> [String] {
        db.services.map { s in
            "\(s.service) \(s.includedServices) " + s.characteristics.map { c in
                "\(c.characteristic) \(c.descriptors.map(\.descriptor))"
            }.joined(separator: ";")
        }
    }

    /// Discovery's opcodes: Read By Group Type (primary services, §4.4.1), Find By Type Value
    /// (§4.4.2), Find Information (descriptors, §4.7.1). Read By Type (0x08) also reads the hash.
    static let discoveryOnly: Set<UInt8> = [0x10, 0x06, 0x04]

    func testASecondDumpOfAnUnchangedServerSendsNoDiscoveryRequest() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let first = try await rig.central.connect(rig.address)
            let cold = try await first.discoverDatabase(readValues: false)
            XCTAssertFalse(cold.fromCache)
            XCTAssertFalse(cold.services.isEmpty)
            try await first.disconnect()
            let coldRequests = try ATTRoundTrips(btsnoop: rig.capture.btsnoop, connection: 1)
            XCTAssertFalse(Set(coldRequests.requests).isDisjoint(with: Self.discoveryOnly), "\(coldRequests)")

            let second = try await rig.central.connect(rig.address)
            let warm = try await second.discoverDatabase(readValues: false)
            XCTAssertTrue(warm.fromCache)
            XCTAssertEqual(Self.layout(warm), Self.layout(cold))
            XCTAssertEqual(second.services.map(\.uuid), cold.services.map(\.service.uuid), "Peripheral.services shows them")
            let counted = try ATTRoundTrips(btsnoop: rig.capture.btsnoop, connection: 2)
            // The Database Hash read (Read By Type) and the Service Changed subscription (a
            // Write Request: an unbonded server keeps no CCCD across connections, §3.3.3.3).
            XCTAssertEqual(counted.requests, [0x08, 0x12], "\(counted)")

            // With values: the reads, and still no discovery.
            let valued = try await second.discoverDatabase(readValues: true)
            XCTAssertTrue(valued.fromCache)
            let name = valued.services.flatMap(\.characteristics).first { $0.characteristic.uuid == BluetoothUUID(0x2A00) }
            XCTAssertEqual(try name?.value?.get(), Array("Changing".utf8))
            let after = try ATTRoundTrips(btsnoop: rig.capture.btsnoop, connection: 2)
            XCTAssertTrue(Set(after.requests).isDisjoint(with: Self.discoveryOnly), "\(after)")
            try await second.disconnect()
            await rig.close()
        }
    }

    func testAChangedDatabaseHashMeansDiscoveryAndTheNewService() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let first = try await rig.central.connect(rig.address)
            _ = try await first.discoverDatabase(readValues: false)
            try await first.disconnect()
            _ = try await rig.manager.add(GATTCacheRig.addedService)

            let second = try await rig.central.connect(rig.address)
            let dump = try await second.discoverDatabase(readValues: false)
            XCTAssertFalse(dump.fromCache, "another hash, another entry")
            XCTAssertTrue(dump.services.contains { $0.service.uuid == BluetoothUUID(0xFFF0) })
            try await second.disconnect()
            await rig.close()
        }
    }

    func testAServiceChangedRangeMakesTheNextDumpDiscover() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let p = try await rig.central.connect(rig.address)
            let changes = await p.servicesChanged()
            _ = try await p.discoverDatabase(readValues: false)
            let again = try await p.discoverDatabase(readValues: false)
            XCTAssertTrue(again.fromCache, "the same connection's cache")
            let handles = try await rig.manager.add(GATTCacheRig.addedService)
            let range = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(range, handles.range, "the dump subscribed to Service Changed")
            let changed = try await p.discoverDatabase(readValues: false)
            XCTAssertFalse(changed.fromCache)
            XCTAssertTrue(changed.services.contains { $0.service.uuid == BluetoothUUID(0xFFF0) })
            try await p.disconnect()
            await rig.close()
        }
    }

    /// A bonded server's entry is used as it is by lookups, but a dump checks the hash first:
    /// unchanged, no discovery; changed while the client was away, discovery of the new layout.
    func testABondedServersDumpChecksTheHash() async throws {
        try await VirtualWorld.run { world in
            let rig = try await GATTCacheRig.open(world)
            let first = try await rig.central.connect(rig.address)
            _ = try await first.pair()
            let cold = try await first.discoverDatabase(readValues: false)
            XCTAssertFalse(cold.fromCache)
            try await first.disconnect()

            let second = try await rig.central.connect(rig.address)
            let warm = try await second.discoverDatabase(readValues: false)
            XCTAssertTrue(warm.fromCache)
            XCTAssertEqual(Self.layout(warm), Self.layout(cold))
            try await second.disconnect()

            _ = try await rig.manager.add(GATTCacheRig.addedService)
            let third = try await rig.central.connect(rig.address)
            // The server tells a returning change-unaware bonded client once the link is
            // encrypted (§2.5.2.1, §7.1), and keeps it change-unaware until it is told on an
            // encrypted link: it is told here (the bonded cache, used with no request, arms the
            // Service Changed handle), or the next connection would rightly discover again.
            let changes = await third.servicesChanged()
            let sc = try await third.characteristic(GATTUUID.serviceChanged)
            XCTAssertNotNil(sc)
            try await third.encrypt()
            let told = await firstValue(changes, within: .seconds(5), world)
            XCTAssertNotNil(told, "Service Changed once encrypted")
            let changed = try await third.discoverDatabase(readValues: false)
            XCTAssertFalse(changed.fromCache, "the hash changed while the client was away")
            XCTAssertTrue(changed.services.contains { $0.service.uuid == BluetoothUUID(0xFFF0) })
            try await third.disconnect()

            let fourth = try await rig.central.connect(rig.address)
            let rewarmed = try await fourth.discoverDatabase(readValues: false)
            XCTAssertTrue(rewarmed.fromCache, "the new layout was stored under the bond")
            XCTAssertEqual(Self.layout(rewarmed), Self.layout(changed))
            try await fourth.disconnect()
            await rig.close()
        }
    }
}

import BLE
import BLEHost
import BLESystems
import BLEVirtual
import BLEWire
import XCTest
import BLETestSupport

/// `ble serve test` changes its database on request, so robust caching (Core spec Vol 3 Part G
/// §2.5.2.1) can be seen with a client connected: a write of `db-change` to the write-only
/// characteristic, or `requestDatabaseChange` (what `ble serve` does on SIGUSR1), adds one
/// primary service after the last handle, and the next one removes it again. Each change has a
/// new Database Hash (§7.3), a Service Changed indication of the changed range to the client
/// that enabled it (§7.1), and Database Out Of Sync to a change-unaware client that enabled
/// robust caching. Two centrals on the virtual radio: A subscribed to Service Changed, B with
/// robust caching only.
final class TestProfileDatabaseChangeWorldTests: XCTestCase {
    /// Client Supported Features in the server's GATT service (Vol 3 Part G §7.2).
    static let clientSupportedFeaturesHandle: UInt16 = 0x000B
    static let command = Array("db-change".utf8)

    struct Rig {
        let served: ServedProfile<TestServeProfile>
        let before: [GATTServiceHandles]
        let writeOnly: UInt16
        let a: Peripheral
        let b: Peripheral
    }

    static func open(_ world: VirtualWorld, profile: TestServeProfile = TestServeProfile()) async throws -> Rig {
        let served = try await world.serve(profile, name: "Toggle")
        let before = await served.manager.services
        let service = try XCTUnwrap(before.first { $0.uuid == TestServeProfile.service })
        let writeOnly = try XCTUnwrap(service[TestServeProfile.writeOnly]?.valueHandle)
        let own = await served.manager.address
        let address = try XCTUnwrap(own)
        let (centralA, _) = try await world.addCentral()
        let (centralB, _) = try await world.addCentral()
        let a = try await centralA.connect(address, timeout: .seconds(5))
        await a.completeCaching()
        let b = try await centralB.connect(address, timeout: .seconds(5))
        try await b.writeValue([0x01], handle: Self.clientSupportedFeaturesHandle)
        return Rig(served: served, before: before, writeOnly: writeOnly, a: a, b: b)
    }

    func testAWriteOfDbChangeAddsAServiceAfterTheLastHandleAndTheNextRemovesIt() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.open(world)
            let last = try XCTUnwrap(rig.before.last).range.upperBound
            let servicesBefore = try await rig.a.discoverServices()
            let hashBefore = try await rig.a.readDatabaseHash()

            // Any other value is stored and changes nothing; `db-change` by Write Request adds.
            try await rig.b.writeValue(Array("db-changed".utf8), handle: rig.writeOnly)
            var changes = await rig.a.servicesChanged()
            try await rig.b.writeValue(Self.command, handle: rig.writeOnly)
            let added = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(added, (last + 1)...(last + 3), "Service Changed covers the new service, after the last handle")
            let withService = await rig.served.manager.services
            XCTAssertEqual(Array(withService.dropLast()), rig.before, "every other service keeps its handles")
            XCTAssertEqual(withService.last?.uuid, TestServeProfile.uuid(0x000C))
            XCTAssertEqual(withService.last?.range, added)

            // B enabled robust caching and got no Service Changed: its next request is refused.
            do {
                _ = try await rig.b.readValue(handle: 0x0003)
                XCTFail("a change-unaware client is answered Database Out Of Sync")
            } catch BLEError.gatt(.att(.databaseOutOfSync, _, _)) {}

            let hashAdded = try await rig.a.readDatabaseHash()
            XCTAssertNotEqual(hashAdded, hashBefore)
            let servicesAdded = try await rig.a.discoverServices()
            XCTAssertEqual(Array(servicesAdded.dropLast()), servicesBefore, "the client finds the others where they were")
            XCTAssertEqual(servicesAdded.last?.uuid, TestServeProfile.uuid(0x000C))
            XCTAssertEqual(servicesAdded.last.map { $0.startHandle...$0.endHandle }, added)

            // `db-change` by Write Command removes it again: the same range, the first hash.
            changes = await rig.a.servicesChanged()
            try await rig.a.writeValue(Self.command, handle: rig.writeOnly, type: .withoutResponse)
            let removed = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(removed, added)
            let servicesAfter = await rig.served.manager.services
            XCTAssertEqual(servicesAfter, rig.before)
            let hashAfter = try await rig.a.readDatabaseHash()
            XCTAssertEqual(hashAfter, hashBefore, "the database is as it was")

            let stored = await rig.served.manager.value(forHandle: rig.writeOnly)
            XCTAssertEqual(stored, Self.command, "the value written is stored like any other")
            let logged = rig.served.events("databaseChanged")
            XCTAssertEqual(logged.map { $0["added"] as? Bool }, [true, false])
            XCTAssertEqual(logged.map { $0["trigger"] as? String }, ["write", "write"])
            XCTAssertEqual(logged.map { $0["start"] as? Int }, [Int(last + 1), Int(last + 1)])
            XCTAssertEqual(logged.map { $0["end"] as? Int }, [Int(last + 3), Int(last + 3)])
            XCTAssertEqual(logged.map { $0["hash"] as? String }, [hashAdded?.hexString, hashBefore?.hexString])
            try await rig.a.disconnect()
            try await rig.b.disconnect()
            await rig.served.stop()
        }
    }

    /// The out-of-band request (SIGUSR1 in `ble serve`) makes the same change, told to the
    /// subscribed client with the same range; the log's text line says what changed and why.
    func testARequestedChangeTogglesTheServiceAndIsLogged() async throws {
        try await VirtualWorld.run { world in
            let profile = TestServeProfile()
            let served = try await world.serve(profile, name: "Toggle", json: false)
            let before = await served.manager.services
            let last = try XCTUnwrap(before.last).range.upperBound
            let own = await served.manager.address
            let (central, _) = try await world.addCentral()
            let a = try await central.connect(try XCTUnwrap(own), timeout: .seconds(5))
            await a.completeCaching()
            let hashBefore = try await a.readDatabaseHash()
            let managerHashBefore = await served.manager.databaseHash
            XCTAssertEqual(managerHashBefore, hashBefore, "the manager's hash is the one clients read")

            var changes = await a.servicesChanged()
            XCTAssertTrue(profile.requestDatabaseChange(.signal("SIGUSR1")))
            let added = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(added, (last + 1)...(last + 3))
            let hashAdded = try await a.readDatabaseHash()
            XCTAssertNotEqual(hashAdded, hashBefore)
            let managerHashAdded = await served.manager.databaseHash
            XCTAssertEqual(managerHashAdded, hashAdded)
            let found = try await a.characteristic(TestServeProfile.toggledValue)
            let value = try await a.readValue(for: try XCTUnwrap(found))
            XCTAssertEqual(value, Array("toggled".utf8))

            changes = await a.servicesChanged()
            XCTAssertTrue(profile.requestDatabaseChange(.signal("SIGUSR1")))
            let removed = await firstValue(changes, within: .seconds(5), world)
            XCTAssertEqual(removed, added)
            let after = await served.manager.services
            XCTAssertEqual(after, before)

            let range = String(format: "0x%04X-0x%04X", Int(last + 1), Int(last + 3))
            let lines = served.log.all.filter { $0.hasPrefix("database changed") }
            XCTAssertEqual(lines, [
                "database changed (SIGUSR1): added service 8f3c000c-6c5a-4d2e-9b1f-2f0a1c3b4d5e \(range), hash \(try XCTUnwrap(hashAdded).hexString)",
                "database changed (SIGUSR1): removed service 8f3c000c-6c5a-4d2e-9b1f-2f0a1c3b4d5e \(range), hash \(try XCTUnwrap(hashBefore).hexString)",
            ])
            try await a.disconnect()
            await served.stop()
        }
    }

    /// Profiles other than `test` have no database change: `ble serve` says so on SIGUSR1.
    func testOtherProfilesRefuseADatabaseChange() {
        XCTAssertFalse(BatteryServeProfile().requestDatabaseChange(.signal("SIGUSR1")))
        XCTAssertFalse(HeartRateServeProfile().requestDatabaseChange(.signal("SIGUSR1")))
    }
}

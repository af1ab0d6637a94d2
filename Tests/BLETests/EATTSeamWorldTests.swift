@testable import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// The host's Enhanced ATT seam between two of our hosts on the virtual radio (Core spec Vol 3
/// Part G §5.3, Vol 3 Part F §3.2.11): `openEnhancedATTBearers` (what our GATT client calls)
/// raises security when refused for want of it, and each bearer then has a server slot on both
/// links, since every bearer carries both directions; closing one removes it on both sides.
final class EATTSeamWorldTests: XCTestCase {
    /// The local CIDs of a link's Enhanced ATT bearer servers and whether it is encrypted.
    static func bearers(_ host: HostController) async -> (cids: [UInt16], encrypted: Bool)? {
        await host.run { host in
            host.connections.links.all.first.map { (Array($0.enhancedServers.keys).sorted(), $0.security.encrypted) }
        }
    }

    /// Our peripheral offering Enhanced ATT, advertising as `name`, and our central connected
    /// to it, both confirming any pairing; `centralBearers`, when given, is the central's
    /// `enhancedATTBearers`; `prepare` sets the peripheral up further before it advertises.
    static func connected(in world: VirtualWorld, name: String, centralBearers: Int? = nil,
                          prepare: (PeripheralManager) async throws -> Void = { _ in }) async throws -> (PeripheralManager, Central, Peripheral) {
        var peripheral = HostConfiguration()
        peripheral.offersEnhancedATT = true
        peripheral.security.agent = FixedPairingAgent(confirms: true)
        var central = HostConfiguration()
        central.security.agent = FixedPairingAgent(confirms: true)
        if let centralBearers { central.enhancedATTBearers = centralBearers }
        let (manager, device) = try await world.addPeripheralManager(name: name, configuration: peripheral)
        try await prepare(manager)
        try await manager.startAdvertising(AdvertisingData.Builder().localName(name).build(),
                                           parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, _) = try await world.addCentral(configuration: central)
        let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
        return (manager, c, p)
    }

    func testOpenEnhancedATTBearersRaisesSecurityAndGivesBothSidesTheBearers() async throws {
        try await VirtualWorld.run { world in
            // The test opens the bearers itself: our GATT client opens none of its own after pairing.
            let (manager, c, p) = try await EATTSeamWorldTests.connected(in: world, name: "Seam", centralBearers: 0)

            // Refused as Insufficient Authentication on the unencrypted link, paired, opened.
            let opened = try await p.host.openEnhancedATTBearers(linkID: p.linkID, count: 3)
            XCTAssertEqual(opened.count, 3)
            let ours = await Self.bearers(p.host)
            XCTAssertEqual(ours?.encrypted, true)
            XCTAssertEqual(ours?.cids.map { ATTBearerID.enhanced(cid: $0) }, opened.sorted { "\($0)" < "\($1)" })
            let theirs = await Self.bearers(manager.host)
            XCTAssertEqual(theirs?.cids.count, 3, "the server side has a bearer for each")

            // Closing one: gone on both sides; the others and the unenhanced bearer go on.
            await p.host.closeEnhancedATTBearer(linkID: p.linkID, opened[0])
            // Answered after the Disconnection Response on the same link.
            _ = try await p.discoverServices()
            let oursAfter = await Self.bearers(p.host)
            XCTAssertEqual(oursAfter?.cids.count, 2)
            XCTAssertFalse(oursAfter?.cids.contains { ATTBearerID.enhanced(cid: $0) == opened[0] } ?? true)
            let theirsAfter = await Self.bearers(manager.host)
            XCTAssertEqual(theirsAfter?.cids.count, 2)
            let found = await p.host.run { [linkID = p.linkID] in $0.connections.links.handle(forID: linkID) }
            let handle = try XCTUnwrap(found)
            let sentOnClosed = await p.host.run { $0.sendATT([0x0A, 0x01, 0x00], handle: handle, bearer: opened[0]) }
            XCTAssertFalse(sentOnClosed, "nothing goes on a closed bearer")
            let sentOnOpen = await p.host.run { $0.sendATT([0x0A, 0x01, 0x00], handle: handle, bearer: opened[1]) }
            XCTAssertTrue(sentOnOpen)
            await c.close()
            await manager.close()
        }
    }

    func testACancelledOpenAnnouncesNoBearerAndClosesTheLateOnes() async throws {
        try await VirtualWorld.run { world in
            // The test opens the bearers itself: our GATT client opens none of its own after pairing.
            let (manager, c, p) = try await EATTSeamWorldTests.connected(in: world, name: "Seam", centralBearers: 0)
            _ = try await p.pair()

            // Cancelled before the peer answers: the request is out, the answer comes late.
            let opening = Task(executorPreference: world.clock.taskExecutor) {
                try await p.host.openEnhancedATTBearers(linkID: p.linkID, count: 2)
            }
            opening.cancel()
            // Until the late bearers are closed again, neither GATT role may have heard of them.
            var announced = false
            for _ in 0..<500 where !announced {
                announced = !(await Self.bearers(p.host)?.cids.isEmpty ?? true)
                try await world.clock.sleep(for: .milliseconds(2))
            }
            XCTAssertFalse(announced, "a bearer nobody waits for is not announced")
            let announcements = await p.host.run { $0.l2cap.attBearersAnnounced }
            XCTAssertEqual(announcements, 0, "not even for a moment")
            let result = await opening.result
            XCTAssertThrowsError(try result.get())
            let theirs = await Self.bearers(manager.host)
            XCTAssertEqual(theirs?.cids.count, 0, "the late bearers were closed")
            // The link goes on: the unenhanced bearer still serves.
            _ = try await p.discoverServices()
            await c.close()
            await manager.close()
        }
    }
}


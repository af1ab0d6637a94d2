@testable import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// How many Enhanced ATT bearers a link gets when the application opens some itself
/// (Core spec Vol 3 Part G §5.3, Vol 3 Part A §4.25; review finding 8): the background set-up
/// tops the link up to `HostConfiguration.enhancedATTBearers` counting the bearers already open
/// or being opened on request, so an explicit open on an unencrypted link (refused, paired,
/// retried) does not get the background's bearers on top of its own.
final class EATTBearerCapWorldTests: XCTestCase {
    func testAnExplicitOpenThatCausesPairingIsNotToppedUpByTheBackgroundSetUp() async throws {
        try await VirtualWorld.run { world in
            let (manager, c, p) = try await EATTSeamWorldTests.connected(in: world, name: "Cap", centralBearers: 2)

            // Refused on the unencrypted link, paired (which starts the background set-up), opened.
            let opened = try await p.host.openEnhancedATTBearers(linkID: p.linkID, count: 3)
            XCTAssertEqual(opened.count, 3)
            let settled = await p.enhancedATTBearersSettled()
            _ = try await p.discoverServices()
            XCTAssertEqual(settled, 3, "the 3 asked for already exceed the configured 2: the background opens none")
            let now = await p.enhancedATTBearerCount()
            XCTAssertEqual(now, 3)
            let theirs = await EATTSeamWorldTests.bearers(manager.host)
            XCTAssertEqual(theirs?.cids.count, 3)
            await c.close()
            await manager.close()
        }
    }

    func testTheBackgroundSetUpAloneOpensTheConfiguredCount() async throws {
        try await VirtualWorld.run { world in
            let (manager, c, p) = try await EATTSeamWorldTests.connected(in: world, name: "Cap2", centralBearers: 2)
            _ = try await p.pair()
            let settled = await p.enhancedATTBearersSettled()
            XCTAssertEqual(settled, 2)
            await c.close()
            await manager.close()
        }
    }

    /// Review finding 10: a caller of `enhancedATTBearersSettled` whose task is cancelled stops
    /// waiting at once. The set-up here hangs: its Server Supported Features read queues behind
    /// a read the peripheral never answers, so it would end only at the 30 s ATT timeout.
    func testACancelledWaitForTheSetUpReturnsAtOnce() async throws {
        try await VirtualWorld.run { world in
            let silent = BluetoothUUID(0xBE51)
            let (manager, c, p) = try await EATTSeamWorldTests.connected(in: world, name: "Cap3") { manager in
                _ = try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBE50), characteristics: [
                    GATTCharacteristicDefinition(uuid: silent, properties: [.read], permissions: [.read], value: nil),
                ]))
            }
            let service = try await p.discoverServices([BluetoothUUID(0xBE50)]).first
            let found = try await p.discoverCharacteristics([silent], for: XCTUnwrap(service))
            let held = try XCTUnwrap(found.first)
            // Never answered (the events are read, so the server waits for a response): the
            // unenhanced bearer stays busy until the transaction timeout.
            let events = await manager.events
            let read = Task(executorPreference: world.clock.taskExecutor) { try await p.readValue(for: held) }
            try await world.clock.sleep(for: .milliseconds(100))
            _ = try await p.pair()
            let waiter = Task(executorPreference: world.clock.taskExecutor) { await p.enhancedATTBearersSettled() }
            try await world.clock.sleep(for: .seconds(1))
            let cancelledAt = world.clock.now()
            waiter.cancel()
            let count = await waiter.value
            XCTAssertEqual(count, 0, "no bearer opened while the set-up hangs")
            XCTAssertLessThan(world.clock.now() - cancelledAt, .seconds(1),
                              "the cancelled wait returned at once, not at the set-up's 30 s timeout")
            read.cancel()
            _ = events
            await c.close()
            await manager.close()
        }
    }
}

import BLE
import BLEVirtual
import XCTest

/// `PeripheralManager.events` ends when the manager closes (review finding 1 of the stream and
/// server review): a `for await` over it used to wait for ever after `close()`.
final class PeripheralManagerEventsEndTests: XCTestCase {
    /// Whether `events` ends within 10 s of virtual time.
    private static func ends(_ events: PeripheralManagerEventStream, _ world: VirtualWorld) async -> (ended: Bool, seen: [PeripheralManagerEvent]) {
        await withTaskGroup(of: (Bool, [PeripheralManagerEvent]).self) { group in
            group.addTask(executorPreference: world.clock.taskExecutor) {
                var seen: [PeripheralManagerEvent] = []
                for await e in events { seen.append(e) }
                return (!Task.isCancelled, seen)
            }
            group.addTask(executorPreference: world.clock.taskExecutor) {
                try? await world.clock.sleep(for: .seconds(10))
                return (false, [])
            }
            let first = await group.next() ?? (false, [])
            group.cancelAll()
            return first
        }
    }

    func testAStreamMadeBeforeCloseEndsAfterTheEventsBefore() async throws {
        let result = try await VirtualWorld.run(airTimeModel: false) { world in
            let (manager, _) = try await world.addPeripheralManager(name: "E")
            let events = await manager.events
            try await manager.startAdvertising(AdvertisingData.Builder().localName("E").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            await manager.close()
            return await Self.ends(events, world)
        }
        XCTAssertTrue(result.ended, "the events stream ended after close()")
        XCTAssertTrue(result.seen.contains { if case .advertisingStarted = $0 { return true } else { return false } },
                      "the events before the close were read first")
    }

    func testAStreamMadeAfterCloseEndsAtOnce() async throws {
        let ended = try await VirtualWorld.run(airTimeModel: false) { world in
            let (manager, _) = try await world.addPeripheralManager(name: "E2")
            await manager.close()
            let events = await manager.events
            return await Self.ends(events, world).ended
        }
        XCTAssertTrue(ended)
    }
}

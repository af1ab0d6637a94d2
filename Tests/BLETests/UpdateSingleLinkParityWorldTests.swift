import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// `updateValue` on a host with one link checks, queues and drains that link in one access;
/// with more links it checks every target first and queues only if all have room.
/// With a second link that takes no part (connected, not subscribed) the general path runs for
/// the same single target: both must give the same result at every step, through a full queue
/// (`.queueFull`, nothing queued), the drain after it, and the ready signal.
final class UpdateSingleLinkParityWorldTests: XCTestCase {
    struct Outcome: Equatable {
        /// What `updateValue` answered, in order, until the first `.queueFull`.
        var results: [UpdateValueResult] = []
        /// What the subscribed central received after the path resumed.
        var received: [[UInt8]] = []
        var ready = false
    }

    /// Fills the one subscriber's queue with the peripheral's HCI path stalled, then resumes it
    /// and takes everything that arrives; `bystander` adds a connected central that never
    /// subscribes.
    static func run(bystander: Bool) async throws -> Outcome {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let rig = try await HotPathWorldTests.peripheral(world)
            let events = await rig.manager.events
            let (central, peripheral, stream, _) = try await HotPathWorldTests.central(world)
            var other: (Central, Peripheral, GATTCharacteristic, GATTCharacteristic)?
            if bystander { other = try await HotPathWorldTests.central(world) }
            let values = await peripheral.notifications(for: stream)
            try await peripheral.setNotifyValue(true, for: stream)
            for await event in events {
                if case .subscriptionChanged(_, _, true, _) = event { break }
            }
            await world.radio.stallHCI(rig.peripheralDevice.id)
            var outcome = Outcome()
            while outcome.results.last != .queueFull, outcome.results.count < 1_000 {
                outcome.results.append(await rig.manager.updateValue(HotPathWorldTests.value(outcome.results.count), forHandle: rig.streamHandle))
            }
            await world.radio.resumeHCI(rig.peripheralDevice.id)
            let queued = outcome.results.count - 1
            for await v in values {
                outcome.received.append(v)
                if outcome.received.count == queued { break }
            }
            for await event in events {
                if case .readyToUpdateSubscribers = event { outcome.ready = true; break }
            }
            // Nothing was queued by the refused update: the next one is the next to arrive.
            let next = await rig.manager.updateValue(HotPathWorldTests.value(queued), forHandle: rig.streamHandle)
            XCTAssertEqual(next, .queued(centrals: 1))
            for await v in values {
                outcome.received.append(v)
                break
            }
            try await peripheral.disconnect()
            if let other { try await other.1.disconnect(); await other.0.close() }
            await central.close()
            await rig.manager.close()
            return outcome
        }
    }

    func testOneLinkAndOneTargetAmongSeveralLinksGiveTheSameResults() async throws {
        let alone = try await Self.run(bystander: false)
        let amongOthers = try await Self.run(bystander: true)
        XCTAssertEqual(alone.results.last, .queueFull, "the bounded queue fills")
        XCTAssertGreaterThan(alone.results.count, 1)
        XCTAssertTrue(alone.results.dropLast().allSatisfy { $0 == .queued(centrals: 1) })
        XCTAssertEqual(alone.received, (0..<alone.results.count).map { HotPathWorldTests.value($0) }, "every value once, in order")
        XCTAssertTrue(alone.ready)
        XCTAssertEqual(alone, amongOthers)
    }
}

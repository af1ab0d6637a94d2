import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEVirtualRadio
import BLEWire
import Dispatch
import XCTest
import BLESystems

/// `ble accel`'s device prompt and Ctrl-C: the wait for a line ends on cancellation, and a
/// choice that comes after it starts no connection.
final class AccelerometerPromptTests: XCTestCase {
    /// A reader blocked for good (nobody types): cancelling the waiting task ends the wait at
    /// once with `CancellationError`.
    func testCancellingEndsTheWaitForALine() async throws {
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let (started, reading) = AsyncStream<Void>.makeStream()
        let waiting = Task {
            try await readLineFromStandardInput {
                reading.yield()
                release.wait()
                return "1"
            }
        }
        for await _ in started { break }  // the reader runs: the wait has begun
        waiting.cancel()
        let result = await waiting.result
        XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
    }

    /// A task cancelled before it asks does not wait at all.
    func testAnAlreadyCancelledTaskDoesNotWait() async throws {
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await readLineFromStandardInput { release.wait(); return "1" }
        }
        let result = await waiting.result
        XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
    }

    func testALineIsReturned() async throws {
        let line = try await readLineFromStandardInput { "2" }
        XCTAssertEqual(line, "2")
        let end = try await readLineFromStandardInput { nil }
        XCTAssertNil(end, "end of input")
    }

    /// Ctrl-C while the list is shown, then a choice anyway (Enter pressed later): the flow ends
    /// with `CancellationError` and never connects.
    func testAChoiceMadeAfterCancellationStartsNoConnection() async throws {
        try await VirtualWorld.run { world in
            let accel = try await AccelerometerWorldTests.serve(world, source: AccelerometerWorldTests.counting(100))
            let (central, _) = try await world.addCentral()
            let events = EventLog<AccelerometerCentralEvent>()
            let pick: AccelerometerCentral.Picker = { candidates in
                // A prompt that ignores cancellation, as the old one did.
                while !Task.isCancelled { try? await world.clock.sleep(for: .milliseconds(100)) }
                return candidates[0]
            }
            let flow = worldTask(world) {
                try await AccelerometerCentral(central: central, options: AccelerometerCentralOptions(), pick: pick, emit: events.emit).run()
            }
            for await event in events.stream {
                if case .found = event { break }
            }
            flow.cancel()
            let result = await flow.result
            XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
            try await world.clock.sleep(for: .seconds(1))
            let connecting = events.all.contains { if case .connecting = $0 { return true } else { return false } }
            XCTAssertFalse(connecting, "no connection attempt after Ctrl-C")
            let centrals = await accel.manager.connectedCentrals
            XCTAssertTrue(centrals.isEmpty)
            await central.close()
            await accel.stop()
        }
    }
}

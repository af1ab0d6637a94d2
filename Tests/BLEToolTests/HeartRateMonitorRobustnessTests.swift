import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEVirtualRadio
import BLEWire
import XCTest
import BLESystems

/// `ble heart-rate`'s monitor against sensors that are not `ble serve heart-rate`: one that
/// refuses to tell its location, one that goes quiet.
final class HeartRateMonitorRobustnessTests: XCTestCase {
    /// A Heart Rate sensor whose Body Sensor Location read is refused with `locationError`
    /// (readable when nil), notifying `measurements` measurements a second apart after a
    /// central subscribes, then nothing.
    static func sensor(in world: VirtualWorld, locationError: ATTErrorCode?, measurements: Int) async throws -> (PeripheralManager, Task<Void, Never>) {
        let (manager, _) = try await world.addPeripheralManager(name: "Odd HRM")
        let handles = try await manager.add(GATTServiceDefinition(uuid: HeartRateProfile.service, characteristics: [
            GATTCharacteristicDefinition(uuid: HeartRateProfile.measurement, properties: [.notify], permissions: [], value: nil),
            GATTCharacteristicDefinition(uuid: HeartRateProfile.bodySensorLocation, properties: [.read], permissions: [.read], value: nil),
        ]))
        let measurement = try XCTUnwrap(handles.valueHandle(for: HeartRateProfile.measurement))
        let location = try XCTUnwrap(handles.valueHandle(for: HeartRateProfile.bodySensorLocation))
        await manager.setReadHandler(forHandle: location) { _ in
            if let locationError { return .failure(locationError) }
            return .success(BodySensorLocation.wrist.encoded)
        }
        let events = await manager.events
        let data = AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs([HeartRateProfile.service]).localName("Odd HRM").build()
        try await manager.startAdvertising(data)
        let clock = world.clock
        let task = Task(executorPreference: clock.taskExecutor) {
            for await event in events {
                guard case let .subscriptionChanged(_, handle, true, _) = event, handle == measurement else { continue }
                for n in 0..<measurements {
                    do { try await clock.sleep(for: .seconds(1)) } catch { return }
                    let value = HeartRateVariantCycle.measurement(at: UInt64(n), energyExpended: 0).encoded()
                    _ = try? await manager.updateValueWaiting(value, forHandle: measurement)
                }
            }
        }
        return (manager, task)
    }

    /// An ATT error reading the optional Body Sensor Location: shown as unreadable, and the
    /// measurements still come.
    func testAnUnreadableLocationIsShownAndTheMonitorGoesOn() async throws {
        let events = try await VirtualWorld.run { world -> [HeartRateMonitorEvent] in
            let (manager, sensor) = try await Self.sensor(in: world, locationError: .insufficientAuthentication, measurements: 100)
            let (central, _) = try await world.addCentral()
            let events = EventLog<HeartRateMonitorEvent>()
            var options = HeartRateMonitorOptions()
            options.count = 3
            try await HeartRateMonitor(central: central, options: options, emit: events.emit).run()
            sensor.cancel()
            await central.close()
            await manager.close()
            return events.all
        }
        let locations = events.compactMap { event -> String? in if case let .bodySensorLocation(text) = event { return text } else { return nil } }
        XCTAssertEqual(locations, ["unreadable (Insufficient Authentication (0x05))"])
        XCTAssertEqual(HeartRateMonitorLines.lines(for: .bodySensorLocation(locations[0])), ["location    unreadable (Insufficient Authentication (0x05))"])
        XCTAssertEqual(HeartRateWorldTests.measurements(events).count, 3)
    }

    /// A sensor that stops measuring while connected: `--count` does not wait for ever, the
    /// flow ends with a typed error 10 s after the last measurement (a guard cancels it at 60 s).
    func testASilentSensorEndsTheRunWithATimeout() async throws {
        let (outcome, events, silentFor) = try await VirtualWorld.run { world -> (Result<Void, any Error>, [HeartRateMonitorEvent], Duration?) in
            let (manager, sensor) = try await Self.sensor(in: world, locationError: nil, measurements: 2)
            let (central, _) = try await world.addCentral()
            let events = EventLog<HeartRateMonitorEvent>()
            var options = HeartRateMonitorOptions()
            options.count = 5
            let monitor = worldTask(world) { [options] in try await HeartRateMonitor(central: central, options: options, emit: events.emit).run() }
            let guardTask = worldTask(world) {
                try await world.clock.sleep(for: .seconds(60))
                monitor.cancel()
            }
            let outcome = await monitor.result
            let ended = world.clock.now()
            guardTask.cancel()
            sensor.cancel()
            await central.close()
            await manager.close()
            let last = events.all.compactMap { event -> Duration? in if case let .measurement(_, at) = event { return at } else { return nil } }.last
            return (outcome, events.all, last.map { ended - $0 })
        }
        XCTAssertThrowsError(try outcome.get()) { error in
            XCTAssertEqual(error as? CentralFlowError, .silent(waitingFor: "heart-rate measurement", limit: .seconds(10)))
            XCTAssertEqual("\(error)", "timed out: no heart-rate measurement for 10 s")
        }
        XCTAssertEqual(HeartRateWorldTests.measurements(events).count, 2)
        let silent = try XCTUnwrap(silentFor)
        XCTAssertGreaterThanOrEqual(silent, .seconds(10))
        XCTAssertLessThan(silent, .seconds(11))
    }
}

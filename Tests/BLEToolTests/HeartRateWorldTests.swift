import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEVirtualRadio
import BLEWire
import XCTest
import BLESystems
import BLETestSupport

/// docs/SYSTEMS.md S3 end to end on the virtual radio in virtual time: `ble serve heart-rate`'s profile
/// and `ble heart-rate`'s monitor flow, both ours, one world.
final class HeartRateWorldTests: XCTestCase {
    static func serve(_ world: VirtualWorld, name: String = "HRM", at position: VirtualMedium.Position = .origin) async throws -> ServedProfile<HeartRateServeProfile> {
        try await world.serve(HeartRateServeProfile(), name: name, at: position, json: false)
    }

    static func measurements(_ events: [HeartRateMonitorEvent]) -> [HeartRateMeasurement] {
        events.compactMap { event -> HeartRateMeasurement? in if case let .measurement(m, _) = event { return m } else { return nil } }
    }

    func testAll24FlagVariantsArriveDecodedAsSent() async throws {
        try await VirtualWorld.run { world in
            let sensor = try await Self.serve(world)
            let (central, _) = try await world.addCentral()
            let events = EventLog<HeartRateMonitorEvent>()
            var options = HeartRateMonitorOptions()
            options.count = 24
            try await HeartRateMonitor(central: central, options: options, emit: events.emit).run()

            let received = Self.measurements(events.all)
            // The cycle advances only on delivery: the first subscriber gets measurements 0…23,
            // Energy Expended n with measurement n (nobody reset it).
            let sent = (0..<24).map { HeartRateVariantCycle.measurement(at: UInt64($0), energyExpended: UInt16($0)) }
            XCTAssertEqual(received, sent)
            let variants = Set(received.map { "\($0.valueFormat) \($0.sensorContact) \($0.energyExpended != nil) \(!$0.rrIntervals.isEmpty)" })
            XCTAssertEqual(variants.count, 24, "every flag combination once")
            XCTAssertTrue(events.all.contains { if case .bodySensorLocation("Chest") = $0 { return true } else { return false } })
            XCTAssertFalse(events.all.contains { if case .refused = $0 { return true } else { return false } })
            await central.close()
            await sensor.stop()
        }
    }

    func testControlPointResetsEnergyOnOneAndRefusesAnythingElseWith0x80() async throws {
        try await VirtualWorld.run { world in
            let sensor = try await Self.serve(world)
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(serviceUUIDs: ["180D"]), timeout: .seconds(5))
            let peripheral = try await central.connect(found.address)
            let services = try await peripheral.discoverServices(["180D"])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics(for: service)
            let measurement = try XCTUnwrap(characteristics.first { $0.uuid == "2A37" })
            let controlPoint = try XCTUnwrap(characteristics.first { $0.uuid == "2A39" })
            let values = await peripheral.notifications(for: measurement)
            try await peripheral.setNotifyValue(true, for: measurement)
            var seen = 0
            for await _ in values {
                seen += 1
                if seen == 8 { break }
            }
            XCTAssertEqual(sensor.profile.cycle.energyExpended, 8, "1 kJ per measurement delivered")
            try await peripheral.writeValue(HeartRateControlPoint.Command.resetEnergyExpended.value, for: controlPoint)
            XCTAssertEqual(sensor.profile.cycle.energyExpended, 0, "0x01 resets Energy Expended (HRS §3.3)")

            for refused in [[0x02], [0x00], [UInt8]()] as [[UInt8]] {
                do {
                    try await peripheral.writeValue(refused, for: controlPoint)
                    XCTFail("\(refused) was accepted")
                } catch let BLEError.gatt(.att(code, handle, _)) {
                    XCTAssertEqual(code.rawValue, 0x80, "Control Point Value Not Supported for \(refused)")
                    XCTAssertEqual(handle, controlPoint.valueHandle)
                }
            }
            // The next measurement that carries Energy Expended counts from the reset.
            for await value in values {
                let m = try HeartRateMeasurement(decoding: value)
                guard let energy = m.energyExpended else { continue }
                XCTAssertLessThan(energy, 8)
                break
            }
            try await peripheral.disconnect()
            await central.close()
            await sensor.stop()
        }
    }

    func testAMonitorBelowTheRSSIGateIsRefusedUntilItComesCloser() async throws {
        try await VirtualWorld.run { world in
            // 0 dBm at 50 m: 40 + 20·log10(50) ≈ 74 dB of path loss, so −74 dBm.
            let sensor = try await Self.serve(world, at: VirtualMedium.Position(x: 50, y: 0))
            let (central, _) = try await world.addCentral()
            let events = EventLog<HeartRateMonitorEvent>()
            var options = HeartRateMonitorOptions()
            options.count = 1
            let monitor = worldTask(world) { [options] in try await HeartRateMonitor(central: central, options: options, emit: events.emit).run() }
            var refusedAt: Duration?
            for await event in events.stream {
                switch event {
                case let .refused(device, minimum):
                    XCTAssertEqual(device.rssi, -74)
                    XCTAssertEqual(minimum, -70)
                    XCTAssertEqual(HeartRateMonitorLines.refusal(device, minimumRSSI: minimum),
                                   "refused     HRM \(device.address): RSSI -74 dBm is weaker than -70 dBm; waiting for a stronger monitor")
                    refusedAt = world.clock.now()
                    // Keep refusing while it stays far: then bring it closer.
                    try await world.clock.sleep(for: .seconds(3))
                    await world.radio.move(sensor.device.id, to: .origin)
                case .connecting:
                    XCTAssertNotNil(refusedAt, "no connection attempt while it was too weak")
                default:
                    break
                }
                if case .measurement = event { break }
            }
            try await monitor.value
            let refusals = events.all.filter { if case .refused = $0 { return true } else { return false } }
            XCTAssertEqual(refusals.count, 1, "refused once, not at every advertisement")
            await central.close()
            await sensor.stop()
        }
    }

    func testANamedMonitorBelowTheGateEndsTheRunWithItsRSSI() async throws {
        try await VirtualWorld.run { world in
            let sensor = try await Self.serve(world, at: VirtualMedium.Position(x: 50, y: 0))
            let (central, _) = try await world.addCentral()
            var options = HeartRateMonitorOptions()
            options.target = sensor.device.address
            do {
                try await HeartRateMonitor(central: central, options: options, emit: { _ in }).run()
                XCTFail("connected to a monitor at -74 dBm")
            } catch let error as HeartRateMonitorError {
                guard case let .tooWeak(device, minimum) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(device.rssi, -74)
                XCTAssertEqual(minimum, -70)
                XCTAssertEqual("\(error)", "refusing to connect to HRM (\(device.address)): RSSI -74 dBm is weaker than -70 dBm (--min-rssi)")
            }
            await central.close()
            await sensor.stop()
        }
    }

    func testAfterADisconnectTheMonitorScansAgainAndReconnects() async throws {
        try await VirtualWorld.run { world in
            let sensor = try await Self.serve(world)
            let (central, _) = try await world.addCentral()
            let events = EventLog<HeartRateMonitorEvent>()
            var options = HeartRateMonitorOptions()
            options.count = 4
            let monitor = worldTask(world) { [options] in try await HeartRateMonitor(central: central, options: options, emit: events.emit).run() }
            var measurements = 0
            for await event in events.stream {
                guard case .measurement = event else { continue }
                measurements += 1
                if measurements == 2 {
                    for c in await sensor.manager.connectedCentrals { try await sensor.manager.disconnect(c) }
                }
                if measurements == 4 { break }
            }
            try await monitor.value
            let names = events.all.compactMap { event -> String? in
                switch event {
                case .scanning: return "scanning"
                case .connecting: return "connecting"
                case .measurement: return "measurement"
                case .disconnected: return "disconnected"
                default: return nil
                }
            }
            XCTAssertEqual(names, ["scanning", "connecting", "measurement", "measurement", "disconnected",
                                   "scanning", "connecting", "measurement", "measurement"])
            XCTAssertEqual(Self.measurements(events.all).map(\.beatsPerMinute), [60, 61, 62, 63], "nothing lost or repeated across the reconnect")
            await central.close()
            await sensor.stop()
        }
    }

    func testAMonitorNotHeardFor10SecondsDropsOffTheList() async throws {
        try await VirtualWorld.run { world in
            let sensor = try await Self.serve(world)
            let (central, _) = try await world.addCentral()
            let events = EventLog<HeartRateMonitorEvent>()
            var options = HeartRateMonitorOptions()
            // A target nobody has: the monitor only lists.
            options.target = BDAddress(rawValue: 0xC0DE_0000_0001)
            let monitor = worldTask(world) { [options] in try await HeartRateMonitor(central: central, options: options, emit: events.emit).run() }
            var screen = HeartRateMonitorScreen(minimumRSSI: -70)
            var movedAt: Duration?
            for await event in events.stream {
                screen.apply(event, now: world.clock.now())
                switch event {
                case .device(.appeared):
                    XCTAssertEqual(screen.list.sorted.map(\.address.address), [sensor.device.address])
                    try await world.clock.sleep(for: .seconds(2))
                    await world.radio.move(sensor.device.id, to: VirtualMedium.Position(x: 100_000, y: 0))
                    movedAt = world.clock.now()
                case let .device(.disappeared(device)):
                    let silent = world.clock.now() - device.lastSeen
                    XCTAssertGreaterThanOrEqual(silent, .seconds(10))
                    XCTAssertLessThan(silent, .seconds(12))
                    XCTAssertNotNil(movedAt)
                    XCTAssertTrue(screen.list.sorted.isEmpty)
                    XCTAssertTrue(screen.lines().contains("(none heard yet)"))
                default:
                    continue
                }
                if case .device(.disappeared) = event { break }
            }
            monitor.cancel()
            _ = await monitor.result
            await central.close()
            await sensor.stop()
        }
    }
}

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

/// docs/SYSTEMS.md S4 end to end on the virtual radio in virtual time: `ble serve accel`'s profile and
/// `ble accel`'s charting central.
final class AccelerometerWorldTests: XCTestCase {
    /// Samples whose x counts 0, 1, 2…, so order and gaps show.
    static func counting(_ n: Int) -> AccelerometerSampleSource {
        .samples((0..<n).map { AccelerometerSample(x: Float($0), y: 0, z: 1) })
    }

    static func serve(_ world: VirtualWorld, name: String = "BLE001", source: AccelerometerSampleSource,
                      interval: Duration = AccelerometerProfile.sampleInterval,
                      controller: VirtualControllerConfiguration = VirtualControllerConfiguration()) async throws -> ServedProfile<AccelerometerServeProfile> {
        var profile = AccelerometerServeProfile()
        profile.source = source
        profile.interval = interval
        return try await world.serve(profile, name: name, controller: controller, json: false)
    }

    static func samples(_ events: [AccelerometerCentralEvent]) -> [(AccelerometerSample, Duration)] {
        events.compactMap { event -> (AccelerometerSample, Duration)? in if case let .sample(s, at) = event { return (s, at) } else { return nil } }
    }

    /// `ble serve` installs, advertises, then starts `run`: a central that subscribes in between
    /// still gets samples (the profile listens from `install` on).
    func testASubscriptionBeforeRunStartsIsNotMissed() async throws {
        let sent = try await VirtualWorld.run { world -> Int in
            let (manager, _) = try await world.addPeripheralManager(name: "BLE001")
            var profile = AccelerometerServeProfile()
            profile.source = Self.counting(1000)
            try await profile.install(on: manager)
            let (data, response) = profile.advertisement(name: "BLE001")
            try await manager.startAdvertising(data, scanResponse: response)
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "BLE001"), timeout: .seconds(5))
            let peripheral = try await central.connect(found.address)
            let services = try await peripheral.discoverServices([AccelerometerProfile.service])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics([AccelerometerProfile.sample], for: service)
            let sample = try XCTUnwrap(characteristics.first)
            try await peripheral.setNotifyValue(true, for: sample)
            let running = profile
            let task = worldTask(world) { try await running.run(on: manager, log: .silent) }
            try await world.clock.sleep(for: .seconds(3))
            task.cancel()
            _ = await task.result
            try await peripheral.disconnect()
            await central.close()
            await manager.close()
            return running.state.snapshot.sent
        }
        XCTAssertGreaterThanOrEqual(sent, 14, "3 s subscribed at 5 Hz")
    }

    /// A peripheral whose source ended stays connected and silent: `--count` does not wait
    /// for ever, the flow ends with a typed error 10 s after the last sample (a guard cancels
    /// it at 60 s).
    func testASilentPeripheralEndsTheRunWithATimeout() async throws {
        let (outcome, samples) = try await VirtualWorld.run { world -> (Result<Int, any Error>, Int) in
            let accel = try await Self.serve(world, source: Self.counting(3))
            let (central, _) = try await world.addCentral()
            let events = EventLog<AccelerometerCentralEvent>()
            var options = AccelerometerCentralOptions()
            options.count = 10
            options.target = AddressArgument(address: accel.device.address, type: .public)
            let flow = worldTask(world) { [options] in try await AccelerometerCentral(central: central, options: options, emit: events.emit).run() }
            let guardTask = worldTask(world) {
                try await world.clock.sleep(for: .seconds(60))
                flow.cancel()
            }
            let outcome = await flow.result
            guardTask.cancel()
            await central.close()
            await accel.stop()
            return (outcome, Self.samples(events.all).count)
        }
        XCTAssertThrowsError(try outcome.get()) { error in
            XCTAssertEqual(error as? CentralFlowError, .silent(waitingFor: "sample", limit: .seconds(10)))
        }
        XCTAssertEqual(samples, 3)
    }

    func testSamplesFlowOnlyWhileACentralIsSubscribed() async throws {
        try await VirtualWorld.run { world in
            let accel = try await Self.serve(world, source: Self.counting(1000))
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "BLE001"), timeout: .seconds(5))
            let peripheral = try await central.connect(found.address)
            let services = try await peripheral.discoverServices([AccelerometerProfile.service])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics([AccelerometerProfile.sample], for: service)
            let sample = try XCTUnwrap(characteristics.first)
            XCTAssertEqual(sample.properties, [.notify], "Notify only, as the article's characteristic")
            let values = await peripheral.notifications(for: sample)

            try await world.clock.sleep(for: .seconds(3))
            XCTAssertEqual(accel.profile.state.snapshot.sent, 0, "connected but not subscribed: nothing is sampled")
            let before = try await peripheral.readValue(for: sample)
            XCTAssertEqual(before, [UInt8](repeating: 0, count: 12), "readable: zeros before the first sample")

            try await peripheral.setNotifyValue(true, for: sample)
            var received: [(Float, Duration)] = []
            for await value in values {
                received.append((try AccelerometerSample(decoding: value).x, world.clock.now()))
                if received.count == 10 { break }
            }
            XCTAssertEqual(received.map(\.0), (0..<10).map(Float.init), "from the first sample, in order")
            let span = received[9].1 - received[0].1
            XCTAssertGreaterThan(span, .milliseconds(1_700), "5 Hz: nine intervals of 0.2 s")
            XCTAssertLessThan(span, .milliseconds(2_100))
            let last = try await peripheral.readValue(for: sample)
            XCTAssertEqual(try AccelerometerSample(decoding: last).x, 9, "a read returns the last sample")

            try await peripheral.setNotifyValue(false, for: sample)
            let stopped = accel.profile.state.snapshot.sent
            try await world.clock.sleep(for: .seconds(3))
            XCTAssertLessThanOrEqual(accel.profile.state.snapshot.sent, stopped + 1, "at most the sample already in flight after unsubscribing")
            let pausedAt = accel.profile.state.snapshot.sent
            try await world.clock.sleep(for: .seconds(3))
            XCTAssertEqual(accel.profile.state.snapshot.sent, pausedAt, "nothing sampled while nobody is subscribed")

            try await peripheral.setNotifyValue(true, for: sample)
            var resumed: [Float] = []
            for await value in values {
                resumed.append(try AccelerometerSample(decoding: value).x)
                if resumed.count == 3 { break }
            }
            XCTAssertEqual(resumed, [10, 11, 12], "the source goes on where it paused: nothing skipped")

            let log = accel.log.all
            XCTAssertEqual(log.filter { $0.hasPrefix("subscribed:") }.count, 2, "\(log)")
            XCTAssertEqual(log.filter { $0.hasPrefix("unsubscribed:") }.count, 1, "\(log)")
            XCTAssertEqual(log.filter { $0.hasPrefix("read:") }.count, 2, "reads are logged: \(log)")
            try await peripheral.disconnect()
            await central.close()
            await accel.stop()
        }
    }

    func testWritesAreRefusedAndLogged() async throws {
        try await VirtualWorld.run { world in
            let accel = try await Self.serve(world, source: Self.counting(10))
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "BLE001"), timeout: .seconds(5))
            let peripheral = try await central.connect(found.address)
            let services = try await peripheral.discoverServices([AccelerometerProfile.service])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics([AccelerometerProfile.sample], for: service)
            let sample = try XCTUnwrap(characteristics.first)
            do {
                try await peripheral.writeValue([1, 2, 3], for: sample)
                XCTFail("a write was accepted")
            } catch let BLEError.gatt(.att(code, _, _)) {
                XCTAssertEqual(code, .writeNotPermitted)
            }
            XCTAssertTrue(accel.log.all.contains { $0.hasPrefix("write: ") && $0.hasSuffix("refused: Write Not Permitted (0x03)") }, "\(accel.log.all)")
            try await peripheral.disconnect()
            await central.close()
            await accel.stop()
        }
    }

    /// A link that carries one PDU per connection event cannot keep up with a sample every 2 ms:
    /// the queue fills, the peripheral waits for the ready signal, and every sample still
    /// arrives, in order.
    func testOrderIsKeptAndNothingDroppedUnderBackpressure() async throws {
        try await VirtualWorld.run { world in
            var slow = VirtualControllerConfiguration()
            slow.maximumPDUsPerConnectionEvent = 1
            let accel = try await Self.serve(world, source: Self.counting(300), interval: .milliseconds(2), controller: slow)
            let (central, _) = try await world.addCentral()
            let events = EventLog<AccelerometerCentralEvent>()
            var options = AccelerometerCentralOptions()
            options.count = 300
            options.target = AddressArgument(address: accel.device.address, type: .public)
            try await AccelerometerCentral(central: central, options: options, emit: events.emit).run()
            XCTAssertEqual(Self.samples(events.all).map { Int($0.0.x) }, Array(0..<300))
            let state = accel.profile.state.snapshot
            XCTAssertGreaterThan(state.queueFullWaits, 0, "the queue was full at least once")
            XCTAssertEqual(state.sent, 300)
            XCTAssertTrue(accel.log.all.contains("queue full: waiting for the ready signal"), "\(accel.log.all.prefix(20))")
            XCTAssertTrue(accel.log.all.contains("ready to update subscribers: sending again"))
            await central.close()
            await accel.stop()
        }
    }

    func testTheCentralListsBleNamesAndTakesTheFirstAdvertisingTheService() async throws {
        try await VirtualWorld.run { world in
            // "Cable box" contains "ble" but is no accelerometer; "Thermo" is not listed at all.
            let (cable, _) = try await world.addPeripheralManager(name: "Cable box")
            try await cable.startAdvertising(AdvertisingData.Builder().flags(discoverableFlags).localName("Cable box").build())
            let (thermo, _) = try await world.addPeripheralManager(name: "Thermo")
            try await thermo.startAdvertising(AdvertisingData.Builder().flags(discoverableFlags).serviceUUIDs(["0011"]).localName("Thermo").build())
            let accel = try await Self.serve(world, source: .simulated(SimulatedMotion(seed: 7)))
            let (central, _) = try await world.addCentral()
            let events = EventLog<AccelerometerCentralEvent>()
            var options = AccelerometerCentralOptions()
            options.count = 5
            let start = world.clock.now()
            try await AccelerometerCentral(central: central, options: options, emit: events.emit).run()

            let found = events.all.compactMap { event -> [ScannedDevice]? in if case let .found(list) = event { return list } else { return nil } }.first ?? []
            XCTAssertEqual(Set(found.compactMap(\.advertisement.localName)), ["Cable box", "BLE001"])
            let chosen = events.all.compactMap { event -> ScannedDevice? in if case let .chose(d) = event { return d } else { return nil } }.first
            XCTAssertEqual(chosen?.address.address, accel.device.address)
            let samples = Self.samples(events.all)
            XCTAssertEqual(samples.count, 5)
            XCTAssertGreaterThanOrEqual(samples[0].1 - start, .seconds(5), "after the 5 s scan")
            for (sample, _) in samples {
                XCTAssertEqual(Double(sample.z), 1, accuracy: 0.1, "simulated motion: gravity on z")
            }
            await central.close()
            await cable.close()
            await thermo.close()
            await accel.stop()
        }
    }

    func testTheUserPicksFromTheListAndANameAloneIsNotEnoughWithoutOne() async throws {
        try await VirtualWorld.run { world in
            let (cable, _) = try await world.addPeripheralManager(name: "Cable box")
            try await cable.startAdvertising(AdvertisingData.Builder().flags(discoverableFlags).localName("Cable box").build())
            let (central, _) = try await world.addCentral()
            do {
                try await AccelerometerCentral(central: central, options: AccelerometerCentralOptions(), emit: { _ in }).run()
                XCTFail("connected to a device without 0011")
            } catch let error as AccelerometerCentralError {
                guard case let .noAccelerometer(found) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(found.map(\.advertisement.localName), ["Cable box"])
            }
            // A user may pick it anyway; it then turns out not to be an accelerometer.
            let picked = AccelerometerCentral(central: central, options: AccelerometerCentralOptions(), pick: { $0[0] }, emit: { _ in })
            do {
                try await picked.run()
                XCTFail("a device without 0011 was charted")
            } catch let error as AccelerometerCentralError {
                guard case let .missing(_, uuid) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(uuid, AccelerometerProfile.service)
            }
            await central.close()
            await cable.close()
        }
    }

    func testADisconnectEndsTheCentralWithATypedError() async throws {
        try await VirtualWorld.run { world in
            let accel = try await Self.serve(world, source: Self.counting(100))
            let (central, _) = try await world.addCentral()
            let events = EventLog<AccelerometerCentralEvent>()
            var options = AccelerometerCentralOptions()
            options.target = AddressArgument(address: accel.device.address, type: nil)
            let run = worldTask(world) { [options] in try await AccelerometerCentral(central: central, options: options, emit: events.emit).run() }
            for await event in events.stream {
                guard case let .sample(s, _) = event, s.x == 2 else { continue }
                await world.radio.dropLinks(of: accel.device.id)
                break
            }
            let result = await run.result
            guard case let .failure(BLEError.disconnected(reason)) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(reason, .connectionTimeout)
            await central.close()
            await accel.stop()
        }
    }
}

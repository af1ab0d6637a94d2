import BLE
import BLEProfiles
import BLESystems
import BLETestSupport
import BLEVirtual
import Foundation
import XCTest

/// The four seed systems (docs/SYSTEMS.md S1–S4) on every controller profile
/// (`VirtualControllerProfile`): both devices on 4.0, 4.2, 5.0 and default, then a 4.0 central
/// facing a default peripheral and the reverse (`ProfilePair.matrix`). Each runs the code paths
/// of the system's own tests (`ble serve`'s profile from `world.serve`, the command's central
/// flow) and checks the same outcomes: data intact, counts right. In virtual time, each world
/// bounded.
final class ProfileMatrixSystemTests: XCTestCase {
    static let limit = Duration.seconds(120)

    /// The controllers each world's two devices got, as their controllers report them.
    private static func checkProfiles(_ world: VirtualWorld, central: VirtualDevice, peripheral: VirtualDevice,
                                      _ pair: ProfilePair, file: StaticString = #filePath, line: UInt = #line) async {
        let c = await world.radio.controller(central.id)?.configuration.profile
        let p = await world.radio.controller(peripheral.id)?.configuration.profile
        XCTAssertEqual(c, pair.central, "\(pair)", file: file, line: line)
        XCTAssertEqual(p, pair.peripheral, "\(pair)", file: file, line: line)
    }

    /// S1: a 300-byte text through the framed stream, and a 20 kB file:// image byte for byte.
    func testEchoTextAndImageOnEveryProfile() async throws {
        let bytes = imageBytes(count: 20_000, seed: 11)
        let directory = try temporaryDirectory(for: self)
        let file = directory.appendingPathComponent("matrix.bin")
        try Data(bytes).write(to: file)
        let profile = try echoServer(serving: directory)
        let text = String((0..<300).map { Character(UnicodeScalar(UInt8(0x61 + $0 % 26))) })
        await forEachPair { pair in
            let (textReply, image, states, frames) = try await VirtualWorld.run(limit: Self.limit) { world in
                let server = try await world.serve(profile, name: "EchoServer", controller: pair.peripheralController)
                let (central, device) = try await world.addCentral(controller: pair.centralController)
                await Self.checkProfiles(world, central: device, peripheral: server.device, pair)
                let events = Collected<EchoCentralEvent>()
                let textReply = try await EchoCentral.exchange(.text(text), using: central) { events.append($0) }
                let image = try await EchoCentral.exchange(.url(file.absoluteString), using: central) { _ in }
                await central.close()
                await server.stop()
                return (textReply, image, EchoSystemTests.states(events.all), server.events("frame").count)
            }
            XCTAssertEqual(textReply, .text("You said: " + text), "\(pair)")
            XCTAssertEqual(states, EchoSystemTests.everyState, "\(pair)")
            XCTAssertEqual(image.code, .image, "\(pair)")
            XCTAssertEqual(image.body.count, bytes.count, "\(pair)")
            XCTAssertTrue(image.body == bytes, "\(pair): byte-exact")
            XCTAssertEqual(frames, 2, "\(pair): one frame per exchange")
        }
    }

    /// S2: read, write, read back, three notifications, unsubscribe.
    func testSampleOnEveryProfile() async throws {
        await forEachPair { pair in
            let (result, stored, notified) = try await VirtualWorld.run(limit: Self.limit) { world in
                let server = try await world.serve(SampleServeProfile(), name: "M5Stack", controller: pair.peripheralController)
                let (central, device) = try await world.addCentral(controller: pair.centralController)
                await Self.checkProfiles(world, central: device, peripheral: server.device, pair)
                var options = SampleCentral.Options()
                options.writeNumber = 7
                options.count = 3
                let result = try await SampleCentral.run(using: central, options: options) { _ in }
                await central.close()
                let stored = await SampleSystemTests.storedReadWriteValue(server.manager)
                await server.stop()
                return (result, stored, server.events("notified").compactMap { $0["text"] as? String })
            }
            XCTAssertEqual(result.initialValue, Array("Hello World".utf8), "\(pair)")
            XCTAssertEqual(result.written, Array("Write Data 007".utf8), "\(pair)")
            XCTAssertEqual(result.readBack, Array("Write Data 007".utf8), "\(pair)")
            XCTAssertEqual(result.notifications.map { String(decoding: $0, as: UTF8.self) },
                           ["Notify Data 001", "Notify Data 002", "Notify Data 003"], "\(pair)")
            XCTAssertEqual(stored, Array("Write Data 007".utf8), "\(pair)")
            XCTAssertEqual(Array(notified.prefix(3)), ["Notify Data 001", "Notify Data 002", "Notify Data 003"], "\(pair)")
        }
    }

    /// S3: the monitor gets 12 measurements decoded exactly as the variant cycle sent them, and
    /// the Body Sensor Location.
    func testHeartRateOnEveryProfile() async throws {
        await forEachPair { pair in
            let events = try await VirtualWorld.run(limit: Self.limit) { world in
                let sensor = try await world.serve(HeartRateServeProfile(), name: "HRM", controller: pair.peripheralController, json: false)
                let (central, device) = try await world.addCentral(controller: pair.centralController)
                await Self.checkProfiles(world, central: device, peripheral: sensor.device, pair)
                let events = Collected<HeartRateMonitorEvent>()
                var options = HeartRateMonitorOptions()
                options.count = 12
                try await HeartRateMonitor(central: central, options: options, emit: { events.append($0) }).run()
                await central.close()
                await sensor.stop()
                return events.all
            }
            let received = events.compactMap { event -> HeartRateMeasurement? in
                if case let .measurement(m, _) = event { return m } else { return nil }
            }
            let sent = (0..<12).map { HeartRateVariantCycle.measurement(at: UInt64($0), energyExpended: UInt16($0)) }
            XCTAssertEqual(received, sent, "\(pair)")
            XCTAssertTrue(events.contains { if case .bodySensorLocation("Chest") = $0 { return true } else { return false } }, "\(pair)")
            XCTAssertFalse(events.contains { if case .malformed = $0 { return true } else { return false } }, "\(pair)")
        }
    }

    /// S4: 50 samples counting 0…49 at 5 Hz, in order, none lost.
    func testAccelerometerOnEveryProfile() async throws {
        await forEachPair { pair in
            let (samples, sent) = try await VirtualWorld.run(limit: Self.limit) { world in
                var profile = AccelerometerServeProfile()
                profile.source = .samples((0..<1000).map { AccelerometerSample(x: Float($0), y: 0, z: 1) })
                let accel = try await world.serve(profile, name: "BLE001", controller: pair.peripheralController, json: false)
                let (central, device) = try await world.addCentral(controller: pair.centralController)
                await Self.checkProfiles(world, central: device, peripheral: accel.device, pair)
                let events = Collected<AccelerometerCentralEvent>()
                var options = AccelerometerCentralOptions()
                options.count = 50
                options.target = AddressArgument(address: accel.device.address, type: .public)
                try await AccelerometerCentral(central: central, options: options, emit: { events.append($0) }).run()
                await central.close()
                let sent = accel.profile.state.snapshot.sent
                await accel.stop()
                return (events.all.compactMap { event -> Float? in if case let .sample(s, _) = event { return s.x } else { return nil } }, sent)
            }
            XCTAssertEqual(samples, (0..<50).map(Float.init), "\(pair): from the first sample, in order")
            XCTAssertGreaterThanOrEqual(sent, 50, "\(pair)")
        }
    }
}

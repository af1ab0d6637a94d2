import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEWire
import XCTest
import BLESystems
import BLETestSupport

/// docs/SYSTEMS.md S2 end to end on the virtual radio, in virtual time: `ble serve sample`'s profile
/// against `ble sample`'s central (the functions the commands run).
final class SampleSystemTests: XCTestCase {
    func testTheSampleCentralWalksEveryStep() async throws {
        let (result, events, stored, notified) = try await VirtualWorld.run { world in
            let server = try await world.serve(SampleServeProfile.self, name: "M5Stack")
            let (central, _) = try await world.addCentral()
            let events = Collected<SampleCentralEvent>()
            var options = SampleCentral.Options()
            options.writeNumber = 42
            options.count = 3
            let result = try await SampleCentral.run(using: central, options: options) { events.append($0) }
            await central.close()
            let stored = await Self.storedReadWriteValue(server.manager)
            await server.stop()
            return (result, events.all, stored, server.events("notified").compactMap { $0["text"] as? String })
        }
        XCTAssertEqual(result.initialValue, Array("Hello World".utf8))
        XCTAssertEqual(result.written, Array("Write Data 042".utf8))
        XCTAssertEqual(result.readBack, Array("Write Data 042".utf8))
        XCTAssertEqual(result.notifications.map { String(decoding: $0, as: UTF8.self) }, ["Notify Data 001", "Notify Data 002", "Notify Data 003"])
        XCTAssertEqual(stored, Array("Write Data 042".utf8), "the write replaced the peripheral's value")
        XCTAssertEqual(Array(notified.prefix(3)), ["Notify Data 001", "Notify Data 002", "Notify Data 003"])

        let lines = events.map(SampleCentralLines.line(for:))
        let steps = lines.map { $0.prefix(1) }
        XCTAssertEqual(steps, ["1", "2", "3", "4", "5", "5", "6", "7", "8", "9", "9", "9", "8", " "], lines.joined(separator: "\n"))
        XCTAssertEqual(lines[0], "1 state          poweredOn")
        XCTAssertTrue(lines[1].hasPrefix("2 found          M5Stack  "), lines[1])
        XCTAssertTrue(lines[2].hasSuffix(": yes"), lines[2])
        XCTAssertTrue(lines[3].hasPrefix("4 service        068c47b7-fc04-4d47-975a-7952be1a576f ["), lines[3])
        XCTAssertTrue(lines[4].contains("e3737b3f-a08d-405b-b32d-35a8f6c64c5d") && lines[4].contains("properties 0x0A"), lines[4])
        XCTAssertTrue(lines[5].contains("c9da2ce8-d119-40d5-90f7-ef24627e8193") && lines[5].contains("properties 0x10"), lines[5])
        XCTAssertEqual(lines[6], "6 read           e3737b3f-a08d-405b-b32d-35a8f6c64c5d: 48656c6c6f20576f726c64 \"Hello World\"")
        XCTAssertTrue(lines[7].hasPrefix("7 wrote          e3737b3f-a08d-405b-b32d-35a8f6c64c5d: 5772697465204461746120303432 \"Write Data 042\" with response"), lines[7])
        XCTAssertEqual(lines[8], "8 notifying      c9da2ce8-d119-40d5-90f7-ef24627e8193: true")
        XCTAssertTrue(lines[9].hasSuffix("\"Notify Data 001\""), lines[9])
        XCTAssertEqual(lines[12], "8 notifying      c9da2ce8-d119-40d5-90f7-ef24627e8193: false")
        XCTAssertEqual(lines[13], "  disconnected")
    }

    /// Notifications come once a second (virtual time) and only while someone is subscribed.
    func testNotificationsComeEverySecondWhileSubscribed() async throws {
        let (times, sentAfter) = try await VirtualWorld.run { world in
            let server = try await world.serve(SampleServeProfile.self, name: "M5Stack")
            let (central, _) = try await world.addCentral()
            let times = Collected<Duration>()
            var options = SampleCentral.Options()
            options.count = 4
            _ = try await SampleCentral.run(using: central, options: options) { event in
                if case .notification = event { times.append(world.clock.now()) }
            }
            let sent = server.events("notified").count
            try await world.clock.sleep(for: .seconds(5))
            let sentAfter = server.events("notified").count - sent
            await central.close()
            await server.stop()
            return (times.all, sentAfter)
        }
        XCTAssertEqual(times.count, 4)
        for (a, b) in zip(times, times.dropFirst()) {
            XCTAssertGreaterThanOrEqual(b - a, .milliseconds(900))
            XCTAssertLessThanOrEqual(b - a, .milliseconds(1100))
        }
        XCTAssertEqual(sentAfter, 0, "nothing is notified once the central has left")
    }

    static func storedReadWriteValue(_ manager: PeripheralManager) async -> [UInt8]? {
        for handle in UInt16(1)...UInt16(0x40) {
            if let value = await manager.value(forHandle: handle), value.starts(with: Array("Write Data".utf8)) { return value }
        }
        return nil
    }
}

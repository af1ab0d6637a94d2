import BLERuntime
import BLEVirtual
import BLEVirtualRadio
import BLE
import BLEHTTP
import BLEHost
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// `ble ui`'s `/heart-rate/ADDRESS` stream on the virtual radio, in virtual time: one monitor
/// flow whatever the number of pages, and the RSSI gate's refusal said with the RSSI.
final class UIHeartRateAppTests: XCTestCase {
    static func stream(_ app: UIHeartRateApp, _ address: String) -> AsyncStream<[UInt8]>? {
        guard case let .events(stream)? = app.handle(HTTPRequest(method: "GET", target: "/api/heart-rate-events/\(address)")) else { return nil }
        return stream
    }

    /// The `type`s of the stream's events, up to the first `until` (or its end).
    static func types(_ stream: AsyncStream<[UInt8]>, until: String, count: Int = 1) async -> [(type: String, data: String)] {
        var out: [(type: String, data: String)] = []
        for await event in stream {
            let text = String(decoding: event, as: UTF8.self)
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { continue }
            let data = String(line.dropFirst("data: ".count))
            let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any]
            let type = object?["type"] as? String ?? "?"
            out.append((type, data))
            if out.filter({ $0.type == until }).count >= count { break }
        }
        return out
    }

    func testTwoPagesShareOneMonitorFlow() async throws {
        let (first, second, links) = try await VirtualWorld.run { world in
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIHeartRateApp(central: central, token: "t")
            let a = try XCTUnwrap(Self.stream(app, address))
            let b = try XCTUnwrap(Self.stream(app, address))
            let first = await Self.types(a, until: "measurement", count: 3)
            let second = await Self.types(b, until: "measurement", count: 3)
            let links = await sensor.manager.connectedCentrals.count
            app.stop()
            await central.close()
            await sensor.stop()
            return (first.map(\.type), second.map(\.type), links)
        }
        XCTAssertEqual(links, 1, "one flow, one link")
        XCTAssertEqual(first, second, "both pages see the same events")
        XCTAssertEqual(Array(first.prefix(2)), ["scanning", "connecting"], "\(first)")
        XCTAssertTrue(first.contains("location"), "\(first)")
        XCTAssertEqual(first.filter { $0 == "measurement" }.count, 3)
    }

    /// A monitor heard weaker than −70 dBm is not connected to: the page is told so with the
    /// RSSI, and its stream ends (an EventSource would otherwise ask again and again).
    func testAWeakMonitorIsRefusedWithItsRSSI() async throws {
        let events = try await VirtualWorld.run { world in
            let sensor = try await world.serve(HeartRateServeProfile(), name: "FarHRM", at: VirtualMedium.Position(x: 50, y: 0))
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIHeartRateApp(central: central, token: "t")
            let events = await Self.types(try XCTUnwrap(Self.stream(app, address)), until: "end-of-stream")
            let links = await sensor.manager.connectedCentrals.count
            XCTAssertEqual(links, 0)
            app.stop()
            await central.close()
            await sensor.stop()
            return events
        }
        XCTAssertEqual(events.map(\.type), ["scanning", "error"], "\(events)")
        XCTAssertTrue(events.last?.data.contains("weaker than -70 dBm") == true, "\(events)")
        XCTAssertTrue(events.last?.data.contains("RSSI -") == true, "\(events)")
    }

    /// A connection another screen makes ends every scan, the monitor flow's too: the flow
    /// scans again and reaches its monitor, where it used to end with "the scan ended".
    func testAConnectionElsewhereDoesNotEndTheFlow() async throws {
        let events = try await VirtualWorld.run { world in
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let battery = try await world.serve(BatteryServeProfile.self, name: "Battery")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIHeartRateApp(central: central, token: "t")
            let stream = try XCTUnwrap(Self.stream(app, address))
            // The flow is scanning (it waits a second of advertisements before it picks).
            try await world.clock.sleep(for: .milliseconds(200))
            let other = await battery.manager.address
            let peripheral = try await central.connect(try XCTUnwrap(other))
            let events = await Self.types(stream, until: "measurement", count: 2)
            try? await peripheral.disconnect()
            app.stop()
            await central.close()
            await sensor.stop()
            await battery.stop()
            return events.map(\.type)
        }
        XCTAssertFalse(events.contains("error"), "\(events)")
        XCTAssertEqual(events.filter { $0 == "measurement" }.count, 2, "\(events)")
    }
}

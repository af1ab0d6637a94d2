import BLE
import BLEHTTP
import BLEVirtual
import BLESystems
import BLEWire
import Foundation
import Synchronization
import XCTest
import BLETestSupport

/// `ble ui`'s `/serve` screen on the virtual radio, in virtual time: a profile started by a POST
/// runs on the UI's own controller, a central that connects and reads shows in the state and
/// the log, and stopping disconnects it and removes the services, so starting again serves
/// one copy of them.
final class UIServeAppTests: XCTestCase {
    static func post(_ app: UIServeApp, _ path: String, _ body: String) async -> (status: Int, json: [String: Any]) {
        guard case let .response(r)? = await app.handle(HTTPRequest(method: "POST", target: path, body: Array(body.utf8))) else { return (0, [:]) }
        return (r.status.code, (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:])
    }

    /// Reads the page's stream in a task of its own, keeping each event's JSON object.
    final class Page: Sendable {
        let data = Collected<String>()
        let task: Task<Void, Never>

        init(_ app: UIServeApp, world: VirtualWorld) async throws {
            guard case let .events(stream)? = await app.handle(HTTPRequest(method: "GET", target: "/api/serve-events")) else {
                throw XCTSkip("no stream")
            }
            let data = self.data
            task = Task(executorPreference: world.clock.taskExecutor) {
                for await event in stream {
                    let text = String(decoding: event, as: UTF8.self)
                    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { continue }
                    data.append(String(line.dropFirst(6)))
                }
            }
        }

        var events: [[String: Any]] { Self.events(data.all) }
        var logged: [String] { Self.logged(data.all) }

        /// Waits until `condition` holds of the log's events so far: checked at each event the
        /// page gets (no polling), bounded in real time.
        @discardableResult
        func waitForLog(_ what: String, within bound: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                        until condition: @escaping @Sendable ([String]) -> Bool) async -> Bool {
            await data.wait(what, within: bound, file: file, line: line) { condition(Self.logged($0)) }
        }

        static func events(_ lines: [String]) -> [[String: Any]] {
            lines.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        }
        static func logged(_ lines: [String]) -> [String] {
            events(lines).compactMap { ($0["entry"] as? [String: Any])?["event"] as? String }
        }
        var lastState: [String: Any]? { events.last { $0["type"] as? String == "state" } }
    }

    func testAProfileStartsACentralsReadIsLoggedAndStoppingRemovesIt() async throws {
        let result = try await VirtualWorld.run { world in
            let (ui, _) = try await world.addCentral()
            let app = UIServeApp(central: ui, token: "t")
            let page = try await Page(app, world: world)
            let started = await Self.post(app, "/api/serve/start", #"{"profile": "battery", "name": "UIBattery"}"#)
            let running = try XCTUnwrap(started.json["running"] as? [String: Any], "\(started.json)")
            let address = try XCTUnwrap(DeviceAddress(string: "\(running["address"] as? String ?? "")/\(running["addressType"] as? String ?? "")"))
            let again = await Self.post(app, "/api/serve/start", #"{"profile": "test"}"#)

            // A central of its own connects and reads the battery level.
            let (other, _) = try await world.addCentral()
            let peripheral = try await other.connect(address, timeout: .seconds(10))
            let services = try await peripheral.discoverServices([BatteryServeProfile.service])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics(for: service)
            let level = try XCTUnwrap(characteristics.first { $0.uuid == BatteryServeProfile.level })
            let value = try await peripheral.readValue(for: level)
            try await world.clock.sleep(for: .milliseconds(100))
            let connectedCentrals = (page.lastState?["centrals"] as? [Any])?.count ?? -1
            let loggedWhileConnected = page.logged

            let stopped = await Self.post(app, "/api/serve/stop", "")
            try await world.clock.sleep(for: .milliseconds(100))
            let linkAfterStop = peripheral.state
            let stopAgain = await Self.post(app, "/api/serve/stop", "")

            // Started again: one Battery Service, not two.
            let restarted = await Self.post(app, "/api/serve/start", #"{"profile": "battery"}"#)
            let second = try await other.connect(address, timeout: .seconds(10))
            let batteries = try await second.discoverServices().filter { $0.uuid == BatteryServeProfile.service }.count
            try? await second.disconnect()
            await app.stop()
            page.task.cancel()
            await other.close()
            await ui.close()
            return (again.status, value, connectedCentrals, loggedWhileConnected,
                    stopped.json["running"] is NSNull, linkAfterStop == .connected, stopAgain.status, restarted.status, batteries)
        }
        let (again, value, centrals, logged, stoppedRunningIsNull, stillConnected, stopAgain, restarted, batteries) = result
        XCTAssertEqual(again, 409, "one profile at a time")
        XCTAssertEqual(value.count, 1, "a battery level")
        XCTAssertEqual(centrals, 1, "the central in the state")
        XCTAssertEqual(logged.first, "ready", "\(logged)")
        XCTAssertTrue(logged.contains("connected"), "\(logged)")
        XCTAssertTrue(logged.contains("request"), "the central's requests are logged: \(logged)")
        XCTAssertTrue(logged.contains("read") || logged.contains("request"), "\(logged)")
        XCTAssertTrue(stoppedRunningIsNull)
        XCTAssertFalse(stillConnected, "stopping disconnects the profile's centrals")
        XCTAssertEqual(stopAgain, 409)
        XCTAssertEqual(restarted, 200)
        XCTAssertEqual(batteries, 1, "the first start's service was removed")
    }

    /// The links the UI made as a central are not the profile's: stopping leaves them up.
    func testStoppingLeavesTheUIsOwnLinks() async throws {
        let up = try await VirtualWorld.run { world in
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (ui, _) = try await world.addCentral()
            let app = UIServeApp(central: ui, token: "t")
            let address = await sensor.manager.address
            let own = try XCTUnwrap(address)
            let link = try await ui.connect(own, timeout: .seconds(10))
            _ = await Self.post(app, "/api/serve/start", #"{"profile": "test"}"#)
            _ = await Self.post(app, "/api/serve/stop", "")
            let up = link.state == .connected
            try? await link.disconnect()
            await app.stop()
            await ui.close()
            await sensor.stop()
            return up
        }
        XCTAssertTrue(up)
    }

    func testBadInputIsAnsweredWithWhatIsWrong() async throws {
        try await VirtualWorld.run { world in
            let (ui, _) = try await world.addCentral()
            let app = UIServeApp(central: ui, token: "t")
            for (body, message) in [("", "not a JSON object"), ("{}", "\"profile\" is missing"), (#"{"profile": "nope"}"#, "unknown profile 'nope': choose test, heart-rate"),
                                    (#"{"profile": "test", "name": 5}"#, "\"name\""), (#"{"profile": "test", "name": "a\nb"}"#, "control characters")] {
                let answer = await Self.post(app, "/api/serve/start", body)
                XCTAssertEqual(answer.status, 400, body)
                XCTAssertTrue((answer.json["error"] as? String)?.contains(message) == true, "\(body): \(answer.json)")
            }
            let stop = await Self.post(app, "/api/serve/stop", "")
            XCTAssertEqual(stop.status, 409)
            XCTAssertEqual(stop.json["error"] as? String, "no profile is being served")
            await app.stop()
            await ui.close()
        }
    }

    /// A profile whose install adds one service and then fails, as an install whose second
    /// service does not fit would.
    struct HalfInstalledProfile: ServeProfile {
        static let name = "half"
        static let summary = "adds one service, then fails"
        struct Refused: Error {}
        init() {}
        mutating func install(on manager: PeripheralManager) async throws {
            _ = try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read], permissions: [.read], value: [1]),
            ]))
            throw Refused()
        }
        func advertisement(name: String) -> (data: AdvertisingData, scanResponse: AdvertisingData?) {
            (AdvertisingData.Builder().localName(name).build(), nil)
        }
        func run(on manager: PeripheralManager, log: ServeLog) async throws {}
    }

    /// A start whose install fails part way is answered with an error status, and the services
    /// it did add are removed: the database is as it was, and the next start serves one copy.
    func testAStartThatFailsPartWayLeavesNoServiceBehind() async throws {
        let (failed, before, after) = try await VirtualWorld.run { world in
            let (ui, _) = try await world.addCentral()
            let app = UIServeApp(central: ui, token: "t", profiles: [HalfInstalledProfile.self, BatteryServeProfile.self])
            let database = PeripheralManager(sharingControllerWith: ui)
            let before = await database.services.map(\.range.lowerBound)
            let failed = await Self.post(app, "/api/serve/start", #"{"profile": "half"}"#)
            let after = await database.services.map(\.range.lowerBound)
            await app.stop()
            await ui.close()
            return ((failed.status, failed.json["error"] as? String ?? ""), before, after)
        }
        XCTAssertEqual(failed.0, 500, failed.1)
        XCTAssertTrue(failed.1.contains("could not start half"), failed.1)
        XCTAssertEqual(after, before, "the half-installed service was removed")
    }
}

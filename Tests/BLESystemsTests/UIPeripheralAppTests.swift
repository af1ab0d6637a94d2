import BLERuntime
import BLEVirtual
import BLE
import BLEHTTP
import BLEHost
import BLEWire
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// `ble ui`'s device screen API on the virtual radio, in virtual time: the actor serves other
/// requests while one waits on the radio, so two pages (or a reload) asking at once must not
/// make a second link or a second stream of one value.
final class UIPeripheralAppTests: XCTestCase {
    static func post(_ path: String, _ body: [String: Any]) -> HTTPRequest {
        let data = (try? JSONSerialization.data(withJSONObject: body)) ?? Data()
        return HTTPRequest(method: "POST", target: path, headers: [("Host", "127.0.0.1:1")], body: Array(data))
    }

    static func object(_ reply: UIReply?) -> [String: Any] {
        guard case let .response(response)? = reply else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    /// The value handle of `uuid` in a `/api/connect` answer.
    static func handle(of uuid: String, in database: [String: Any]) -> Int? {
        let services = database["services"] as? [[String: Any]] ?? []
        let characteristics = services.flatMap { $0["characteristics"] as? [[String: Any]] ?? [] }
        return characteristics.first { ($0["uuid"] as? String)?.lowercased() == uuid }?["handle"] as? Int
    }

    /// The demo heart-rate sensor, a central, and the device screen's app over them.
    struct Screen {
        let sensor: ServedProfile<HeartRateServeProfile>
        let central: Central
        let app: UIPeripheralApp
        /// The sensor's address as the API takes it.
        let address: String

        static func start(_ world: VirtualWorld) async throws -> Screen {
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            return Screen(sensor: sensor, central: central, app: UIPeripheralApp(central: central, token: "t"), address: try XCTUnwrap(own).description)
        }

        /// POSTs `body` (with the address) to `path` and returns the JSON answer.
        func post(_ path: String, _ body: [String: Any] = [:]) async -> [String: Any] {
            UIPeripheralAppTests.object(await app.handle(UIPeripheralAppTests.post(path, body.merging(["address": address]) { a, _ in a })))
        }

        /// Connects and returns the value handle of `uuid` in the database.
        func connect(handleOf uuid: String) async throws -> Int {
            let database = await post("/api/connect")
            return try XCTUnwrap(UIPeripheralAppTests.handle(of: uuid, in: database), "\(database)")
        }

        /// The screen's event stream of values.
        func values() async throws -> AsyncStream<[UInt8]> {
            guard case let .events(stream)? = await app.handle(HTTPRequest(method: "GET", target: "/api/peripheral-events/\(address)")) else {
                throw XCTSkip("no event stream")
            }
            return stream
        }

        /// Links the sensor has now.
        var links: Int { get async { await sensor.manager.connectedCentrals.count } }

        func close() async {
            await app.stop()
            await central.close()
            await sensor.stop()
        }
    }

    func testTwoPagesConnectingAtOnceShareOneLink() async throws {
        let (first, second, links): (String, [Int?], Int) = try await VirtualWorld.run { world in
            let screen = try await Screen.start(world)
            async let a = screen.post("/api/connect")
            async let b = screen.post("/api/connect")
            let (first, second) = await (a, b)
            let links = await screen.links
            await screen.close()
            return ("\(first["error"] ?? "")" + "\(second["error"] ?? "")", [Self.handle(of: "2a37", in: first), Self.handle(of: "2a37", in: second)], links)
        }
        XCTAssertEqual(first, "", "no error for either page")
        XCTAssertNotNil(second[0])
        XCTAssertEqual(second[0], second[1], "the same database")
        XCTAssertEqual(links, 1, "one link for both pages")
    }

    /// Two Subscribe clicks at once (two pages, a double click): each measurement reaches the
    /// event stream once, not once per request.
    func testTwoSubscribesAtOnceMakeOneStream() async throws {
        let values = try await VirtualWorld.run { world in
            let screen = try await Screen.start(world)
            let handle = try await screen.connect(handleOf: "2a37")
            let stream = try await screen.values()
            async let a = screen.post("/api/subscribe", ["handle": handle, "enabled": true])
            async let b = screen.post("/api/subscribe", ["handle": handle, "enabled": true])
            let answers = await [a, b]
            XCTAssertEqual(answers.compactMap { $0["subscribed"] as? Bool }, [true, true], "\(answers)")
            var seen: [String] = []
            for await event in stream {
                let text = String(decoding: event, as: UTF8.self)
                guard text.hasPrefix("event: value") else { continue }
                seen.append(text)
                if seen.count == 6 { break }
            }
            await screen.close()
            return seen
        }
        XCTAssertEqual(values.count, 6)
        // The profile's measurements differ from one to the next (the value format alternates),
        // so a value seen twice in a row came from a second stream.
        for (a, b) in zip(values, values.dropFirst()) { XCTAssertNotEqual(a, b, "a measurement published twice:\n\(values.joined())") }
    }

    /// A disconnect while a subscription is being set up: the session stays gone (a read says
    /// not connected) and the next connect makes a new link instead of answering from the old.
    func testADisconnectDuringASubscribeIsNotUndone() async throws {
        let (read, reconnect, links): (String?, String?, Int) = try await VirtualWorld.run { world in
            let screen = try await Screen.start(world)
            let handle = try await screen.connect(handleOf: "2a37")
            let subscribing = Task(executorPreference: world.clock.taskExecutor) {
                _ = await screen.post("/api/subscribe", ["handle": handle, "enabled": true])
            }
            // The subscribe is waiting for the peer's Write Response by the time this runs:
            // the disconnect comes in while it waits.
            try await world.clock.sleep(for: .microseconds(1))
            _ = await screen.post("/api/disconnect")
            _ = await subscribing.value
            let read = await screen.post("/api/read", ["handle": handle])
            let reconnect = await screen.post("/api/connect")
            let links = await screen.links
            await screen.close()
            return (read["error"] as? String, reconnect["error"] as? String, links)
        }
        XCTAssertNotNil(read, "the link was let go")
        XCTAssertNil(reconnect)
        XCTAssertEqual(links, 1, "the connect after the disconnect made a new link")
    }

    /// The peer dropped the link: the next connect makes a new one instead of answering with
    /// the dead session's database (a review finding).
    func testAConnectAfterThePeerDroppedTheLinkMakesANewOne() async throws {
        let (reconnect, read, links): (String?, String?, Int) = try await VirtualWorld.run { world in
            let screen = try await Screen.start(world)
            let handle = try await screen.connect(handleOf: "2a38")
            for c in await screen.sensor.manager.connectedCentrals { try await screen.sensor.manager.disconnect(c) }
            try await world.clock.sleep(for: .seconds(1))
            let reconnect = await screen.post("/api/connect")
            let read = await screen.post("/api/read", ["handle": handle])
            let links = await screen.links
            await screen.close()
            return (reconnect["error"] as? String, read["error"] as? String, links)
        }
        XCTAssertNil(reconnect)
        XCTAssertNil(read, "the read goes over the new link")
        XCTAssertEqual(links, 1)
    }

    /// Subscribe then Unsubscribe at once (a double click): notifications end up off, and a
    /// later Subscribe turns them on again (the first one used to leave a stream the peer had
    /// already stopped, and later Subscribes did nothing).
    func testAnUnsubscribeDuringTheSubscribeWins() async throws {
        let (answers, values): ([Bool], Int) = try await VirtualWorld.run { world in
            let screen = try await Screen.start(world)
            let handle = try await screen.connect(handleOf: "2a37")
            let stream = try await screen.values()
            async let on = screen.post("/api/subscribe", ["handle": handle, "enabled": true])
            async let off = screen.post("/api/subscribe", ["handle": handle, "enabled": false])
            var answers = await [on, off].compactMap { $0["subscribed"] as? Bool }
            try await world.clock.sleep(for: .seconds(3))
            let again = await screen.post("/api/subscribe", ["handle": handle, "enabled": true])
            answers.append(again["subscribed"] as? Bool ?? false)
            let reader = Task(executorPreference: world.clock.taskExecutor) { () -> Int in
                var values = 0
                for await event in stream where String(decoding: event, as: UTF8.self).hasPrefix("event: value") { values += 1 }
                return values
            }
            // The profile notifies once a second: about three values in three seconds.
            try await world.clock.sleep(for: .seconds(3))
            await screen.app.stop()
            let values = await reader.value
            await screen.close()
            return (answers, values)
        }
        XCTAssertEqual(answers, [false, false, true], "the first Subscribe reports what came of it")
        XCTAssertGreaterThanOrEqual(values, 2, "the later Subscribe brings values")
    }
}

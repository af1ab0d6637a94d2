import BLERuntime
import BLEVirtual
import BLE
import BLEHTTP
import BLEHost
import BLEWire
import Foundation
import XCTest
import BLESystems

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

    func testTwoPagesConnectingAtOnceShareOneLink() async throws {
        let (first, second, links): (String, [Int?], Int) = try await VirtualWorld.run { world in
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIPeripheralApp(central: central, token: "t")
            async let a = app.handle(Self.post("/api/connect", ["address": address]))
            async let b = app.handle(Self.post("/api/connect", ["address": address]))
            let (first, second) = await (Self.object(a), Self.object(b))
            let links = await sensor.manager.connectedCentrals.count
            await app.stop()
            await central.close()
            await sensor.stop()
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
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIPeripheralApp(central: central, token: "t")
            let database = Self.object(await app.handle(Self.post("/api/connect", ["address": address])))
            let handle = try XCTUnwrap(Self.handle(of: "2a37", in: database), "\(database)")
            guard case let .events(stream)? = await app.handle(HTTPRequest(method: "GET", target: "/api/peripheral-events/\(address)")) else {
                XCTFail("no event stream")
                return [String]()
            }
            async let a = app.handle(Self.post("/api/subscribe", ["address": address, "handle": handle, "enabled": true]))
            async let b = app.handle(Self.post("/api/subscribe", ["address": address, "handle": handle, "enabled": true]))
            let answers = await [Self.object(a), Self.object(b)]
            XCTAssertEqual(answers.compactMap { $0["subscribed"] as? Bool }, [true, true], "\(answers)")
            var seen: [String] = []
            for await event in stream {
                let text = String(decoding: event, as: UTF8.self)
                guard text.hasPrefix("event: value") else { continue }
                seen.append(text)
                if seen.count == 6 { break }
            }
            await app.stop()
            await central.close()
            await sensor.stop()
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
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIPeripheralApp(central: central, token: "t")
            let database = Self.object(await app.handle(Self.post("/api/connect", ["address": address])))
            let handle = try XCTUnwrap(Self.handle(of: "2a37", in: database), "\(database)")
            let subscribing = Task(executorPreference: world.clock.taskExecutor) {
                await app.handle(Self.post("/api/subscribe", ["address": address, "handle": handle, "enabled": true]))
            }
            // The subscribe is waiting for the peer's Write Response by the time this runs:
            // the disconnect comes in while it waits.
            try await world.clock.sleep(for: .microseconds(1))
            _ = await app.handle(Self.post("/api/disconnect", ["address": address]))
            _ = await subscribing.value
            let read = Self.object(await app.handle(Self.post("/api/read", ["address": address, "handle": handle])))
            let reconnect = Self.object(await app.handle(Self.post("/api/connect", ["address": address])))
            let links = await sensor.manager.connectedCentrals.count
            await app.stop()
            await central.close()
            await sensor.stop()
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
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIPeripheralApp(central: central, token: "t")
            let database = Self.object(await app.handle(Self.post("/api/connect", ["address": address])))
            let handle = try XCTUnwrap(Self.handle(of: "2a38", in: database), "\(database)")
            for c in await sensor.manager.connectedCentrals { try await sensor.manager.disconnect(c) }
            try await world.clock.sleep(for: .seconds(1))
            let reconnect = Self.object(await app.handle(Self.post("/api/connect", ["address": address])))
            let read = Self.object(await app.handle(Self.post("/api/read", ["address": address, "handle": handle])))
            let links = await sensor.manager.connectedCentrals.count
            await app.stop()
            await central.close()
            await sensor.stop()
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
            let sensor = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            let (central, _) = try await world.addCentral()
            let own = await sensor.manager.address
            let address = try XCTUnwrap(own).description
            let app = UIPeripheralApp(central: central, token: "t")
            let database = Self.object(await app.handle(Self.post("/api/connect", ["address": address])))
            let handle = try XCTUnwrap(Self.handle(of: "2a37", in: database), "\(database)")
            guard case let .events(stream)? = await app.handle(HTTPRequest(method: "GET", target: "/api/peripheral-events/\(address)")) else {
                XCTFail("no event stream")
                return ([], 0)
            }
            async let on = app.handle(Self.post("/api/subscribe", ["address": address, "handle": handle, "enabled": true]))
            async let off = app.handle(Self.post("/api/subscribe", ["address": address, "handle": handle, "enabled": false]))
            var answers = await [Self.object(on), Self.object(off)].compactMap { $0["subscribed"] as? Bool }
            try await world.clock.sleep(for: .seconds(3))
            let again = Self.object(await app.handle(Self.post("/api/subscribe", ["address": address, "handle": handle, "enabled": true])))
            answers.append(again["subscribed"] as? Bool ?? false)
            let reader = Task(executorPreference: world.clock.taskExecutor) { () -> Int in
                var values = 0
                for await event in stream where String(decoding: event, as: UTF8.self).hasPrefix("event: value") { values += 1 }
                return values
            }
            // The profile notifies once a second: about three values in three seconds.
            try await world.clock.sleep(for: .seconds(3))
            await app.stop()
            let values = await reader.value
            await central.close()
            await sensor.stop()
            return (answers, values)
        }
        XCTAssertEqual(answers, [false, false, true], "the first Subscribe reports what came of it")
        XCTAssertGreaterThanOrEqual(values, 2, "the later Subscribe brings values")
    }
}

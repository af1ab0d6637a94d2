import BLE
import BLEHTTP
import BLEVirtual
import BLESystems
import Foundation
import XCTest
import BLETestSupport

/// `ble ui`'s `/sample` screen on the virtual radio, in virtual time: a run started by a POST
/// reaches the page's stream step by step in docs/SYSTEMS.md S2's order, a page opened later gets the
/// whole run, one run at a time, and bad input is answered with what is wrong.
final class UISampleAppTests: XCTestCase {
    static func post(_ app: UISampleApp, _ body: String) -> (status: Int, json: [String: Any]) {
        guard case let .response(r)? = app.handle(HTTPRequest(method: "POST", target: "/api/sample/run", body: Array(body.utf8))) else { return (0, [:]) }
        return (r.status.code, parsed(String(decoding: r.body, as: UTF8.self)))
    }

    static func stream(_ app: UISampleApp) -> AsyncStream<[UInt8]>? {
        guard case let .events(s)? = app.handle(HTTPRequest(method: "GET", target: "/api/sample-events")) else { return nil }
        return s
    }

    /// The events' data, up to the first whose type is `done` or `error`.
    static func events(_ stream: AsyncStream<[UInt8]>) async -> [String] {
        var out: [String] = []
        for await event in stream {
            let text = String(decoding: event, as: UTF8.self)
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { continue }
            out.append(String(line.dropFirst(6)))
            if ["done", "error"].contains(parsed(out.last ?? "")["type"] as? String) { break }
        }
        return out
    }

    static func parsed(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    func testARunsStepsReachThePageInOrderAndALatePageGetsThemAll() async throws {
        let (liveData, lateData, second, statusData) = try await VirtualWorld.run { world in
            let server = try await world.serve(SampleServeProfile.self, name: "M5Stack")
            let (central, _) = try await world.addCentral()
            let app = UISampleApp(central: central, token: "t")
            let page = try XCTUnwrap(Self.stream(app))
            let started = Self.post(app, #"{"count": 2, "number": 7}"#)
            XCTAssertEqual(started.status, 200)
            XCTAssertEqual(started.json["run"] as? Int, 1)
            let second = Self.post(app, "{}")
            let live = await Self.events(page)
            let late = await Self.events(try XCTUnwrap(Self.stream(app)))
            guard case let .response(r)? = app.handle(HTTPRequest(method: "GET", target: "/api/sample")) else { throw XCTSkip("no status") }
            let status = String(decoding: r.body, as: UTF8.self)
            app.stop()
            await central.close()
            await server.stop()
            return (live, late, second.status, status)
        }
        let live = liveData.map(Self.parsed), late = lateData.map(Self.parsed), status = Self.parsed(statusData)
        XCTAssertEqual(second, 409, "one run at a time")
        XCTAssertEqual(live.first?["type"] as? String, "started")
        let steps = live.filter { $0["type"] as? String == "step" }.map { ($0["step"] as? Int).map(String.init) ?? "-" }
        XCTAssertEqual(steps, ["1", "2", "3", "4", "5", "5", "6", "7", "8", "9", "9", "8", "-"], "\(live)")
        XCTAssertEqual(live.filter { $0["type"] as? String == "step" }.first?["text"] as? String, "poweredOn")
        XCTAssertTrue((live.first { $0["label"] as? String == "wrote" }?["text"] as? String)?.contains("\"Write Data 007\"") == true, "\(live)")
        XCTAssertEqual(live.last?["type"] as? String, "done")
        XCTAssertEqual(live.last?["written"] as? String, "Write Data 007")
        XCTAssertEqual(late.map { $0["type"] as? String }, live.map { $0["type"] as? String }, "a page opened later sees the whole run")
        XCTAssertEqual(status["running"] as? Bool, false)
        XCTAssertEqual((status["steps"] as? [Any])?.count, 14, "\(status)")
    }

    /// Nothing advertises the service: the run ends with the flow's error, said on the page, and
    /// the next run may start.
    func testARunWithNothingToFindEndsWithTheError() async throws {
        let (data, again) = try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral()
            let app = UISampleApp(central: central, token: "t")
            let page = try XCTUnwrap(Self.stream(app))
            _ = Self.post(app, "")
            let events = await Self.events(page)
            let again = Self.post(app, "{}").status
            app.stop()
            await central.close()
            return (events, again)
        }
        let events = data.map(Self.parsed)
        XCTAssertEqual(events.last?["type"] as? String, "error")
        XCTAssertTrue((events.last?["message"] as? String)?.hasPrefix("not found:") == true, "\(events)")
        XCTAssertEqual(again, 200)
    }

    func testBadInputIsAnsweredWithWhatIsWrong() async throws {
        try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral()
            let app = UISampleApp(central: central, token: "t")
            for (body, message) in [("[1]", "not a JSON object"), (#"{"count": 0}"#, "\"count\""), (#"{"count": "3"}"#, "\"count\""),
                                    (#"{"number": 1000}"#, "\"number\""), (#"{"address": "nope"}"#, "\"address\""), ("{", "not a JSON object")] {
                let answer = Self.post(app, body)
                XCTAssertEqual(answer.status, 400, body)
                XCTAssertTrue((answer.json["error"] as? String)?.contains(message) == true, "\(body): \(answer.json)")
            }
            app.stop()
            await central.close()
        }
    }

    /// A stop is final: a run asked for after it (a page's click racing the server's shutdown)
    /// is refused with 503, and nothing connects to the sample peripheral.
    func testNoRunStartsAfterStop() async throws {
        let (answer, linked) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let server = try await world.serve(SampleServeProfile.self, name: "M5Stack")
            let (central, _) = try await world.addCentral()
            let app = UISampleApp(central: central, token: "t")
            app.stop()
            let answer = Self.post(app, #"{"count": 1}"#)
            // Long enough for a run's scan and connection (about a second on this radio).
            try await world.clock.sleep(for: .seconds(5))
            let linked = await server.manager.connectedCentrals.count
            await central.close()
            await server.stop()
            return ((answer.status, answer.json["error"] as? String), linked)
        }
        XCTAssertEqual(answer.0, 503, "\(answer)")
        XCTAssertEqual(answer.1, "the server is stopping")
        XCTAssertEqual(linked, 0, "no run connected after the stop")
    }
}

import BLERuntime
import BLEVirtual
import BLEVirtualRadio
import BLE
import BLEHTTP
import BLEHost
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest
import BLESystems
import BLETestSupport

/// Reads a screen's event stream with one iterator, so a test can read on where it stopped.
struct EventReader {
    var iterator: AsyncStream<[UInt8]>.Iterator

    init(_ stream: AsyncStream<[UInt8]>) { iterator = stream.makeAsyncIterator() }

    /// The `type`s and data of the events, up to the `count`th of type `until` (or the end).
    mutating func read(until: String, count: Int = 1) async -> [(type: String, data: String)] {
        var out: [(type: String, data: String)] = []
        while let event = await iterator.next() {
            let text = String(decoding: event, as: UTF8.self)
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { continue }
            let data = String(line.dropFirst("data: ".count))
            let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any]
            out.append((object?["type"] as? String ?? "?", data))
            if out.filter({ $0.type == until }).count >= count { break }
        }
        return out
    }
}

/// `ble ui`'s `/accel` screens on the virtual radio, in virtual time: the list of devices named
/// *ble*, one device's live samples, pause, the CSV and SVG downloads, and the errors a page
/// shows (not an accelerometer, a peer that leaves, an address that is none).
final class UIAccelAppTests: XCTestCase {
    /// The pieces of one screen: the demo's accelerometer, a central and the app over it.
    struct Screen<Sensor: ServeProfile> {
        let sensor: ServedProfile<Sensor>
        let central: Central
        let devices: UIDevicesApp
        let app: UIAccelApp
        let address: String

        init(_ world: VirtualWorld, profile: Sensor, name: String = "BLE001") async throws {
            sensor = try await world.serve(profile, name: name)
            let (central, _) = try await world.addCentral()
            self.central = central
            devices = UIDevicesApp(central: central, token: "t")
            app = UIAccelApp(central: central, token: "t", devices: devices)
            let own = await sensor.manager.address
            address = try XCTUnwrap(own).description
        }

        func get(_ path: String) -> UIReply? { app.handle(HTTPRequest(method: "GET", target: path)) }

        func post(_ path: String, _ body: String) -> [String: Any] {
            guard case let .response(r)? = app.handle(HTTPRequest(method: "POST", target: path, body: Array(body.utf8))) else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:]
        }

        func stream() -> EventReader? {
            guard case let .events(s)? = get("/api/accel-events/\(address)") else { return nil }
            return EventReader(s)
        }

        /// The session's CSV lines (header included), or nil when there is none to download.
        func csv() -> [String]? {
            guard case let .response(r)? = get("/api/accel-session/\(address).csv"), r.status == .ok else { return nil }
            return String(decoding: r.body, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        }

        func close() async {
            app.stop()
            devices.stop()
            await central.close()
            await sensor.stop()
        }
    }

    func testSamplesArriveAndPauseStopsRecordingThem() async throws {
        let (events, atPause, afterPause, afterResume, paused) = try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            var stream = try XCTUnwrap(screen.stream())
            let events = await stream.read(until: "sample", count: 3)
            let paused = screen.post("/api/accel/pause", #"{"address":"\#(screen.address)","paused":true}"#)
            let atPause = screen.csv()?.count ?? -1
            try await world.clock.sleep(for: .seconds(2))
            let afterPause = screen.csv()?.count ?? -1
            _ = screen.post("/api/accel/pause", #"{"address":"\#(screen.address)","paused":false}"#)
            try await world.clock.sleep(for: .seconds(1))
            let afterResume = screen.csv()?.count ?? -1
            await screen.close()
            return (events.map(\.type), atPause, afterPause, afterResume, paused["paused"] as? Bool)
        }
        XCTAssertEqual(Array(events.prefix(3)), ["connecting", "connected", "subscribed"], "\(events)")
        XCTAssertEqual(events.filter { $0 == "sample" }.count, 3)
        XCTAssertEqual(paused, true)
        XCTAssertGreaterThanOrEqual(atPause, 4, "the header and three samples at least")
        XCTAssertEqual(afterPause, atPause, "two paused seconds record nothing")
        XCTAssertGreaterThanOrEqual(afterResume, atPause + 3, "5 Hz again after the resume")
    }

    func testTheSessionDownloadsAsCSVAndSVG() async throws {
        let (lines, svg, disposition) = try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            var stream = try XCTUnwrap(screen.stream())
            _ = await stream.read(until: "sample", count: 5)
            let lines = screen.csv() ?? []
            guard case let .response(r)? = screen.get("/api/accel-session/\(screen.address).svg") else { throw XCTSkip("no SVG") }
            await screen.close()
            return (lines, r.body, r.headers.first { $0.name == "Content-Disposition" }?.value)
        }
        XCTAssertEqual(lines.first, "t,x,y,z")
        XCTAssertGreaterThanOrEqual(lines.count, 6)
        for line in lines.dropFirst() {
            let fields = line.split(separator: ",")
            XCTAssertEqual(fields.count, 4, line)
            XCTAssertTrue(fields.allSatisfy { Double($0) != nil }, line)
        }
        XCTAssertEqual(lines.dropFirst().first?.hasPrefix("0.000,"), true, "time from the first sample")
        let parser = XMLParser(data: Data(svg))
        XCTAssertTrue(parser.parse(), "the SVG is well-formed XML: \(String(describing: parser.parserError))")
        XCTAssertEqual(String(decoding: svg, as: UTF8.self).components(separatedBy: "<polyline").count - 1, 3, "x, y and z")
        XCTAssertEqual(disposition?.hasPrefix("attachment; filename=\"accel-"), true, "\(disposition ?? "none")")
    }

    /// HEAD of a device's event stream changes nothing (RFC 9110 §9.3.2): it is answered as an
    /// event stream, but no session starts, so no flow connects and the last session's recording
    /// stays downloadable as it was (a new session replaces it with an empty one).
    func testHeadOfTheEventStreamStartsNoSessionAndKeepsTheRecording() async throws {
        let (before, after, isStream) = try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            do {
                var stream = try XCTUnwrap(screen.stream())
                _ = await stream.read(until: "sample", count: 3)
            }
            // The page went away: its flow stops, its recording stays.
            try await world.clock.sleep(for: .seconds(1))
            let before = screen.csv()?.count ?? -1
            let head = screen.app.handle(HTTPRequest(method: "HEAD", target: "/api/accel-events/\(screen.address)"))
            var isStream = false
            if case .events = head { isStream = true }
            try await world.clock.sleep(for: .seconds(1))
            let after = screen.csv()?.count ?? -1
            await screen.close()
            return (before, after, isStream)
        }
        XCTAssertTrue(isStream, "HEAD gets the head of an event stream")
        XCTAssertGreaterThanOrEqual(before, 4, "the header and three samples at least")
        XCTAssertEqual(after, before, "a HEAD does not replace the recording")
    }

    /// A device without 0011 (the heart-rate sensor) is said to be no accelerometer; the stream
    /// ends, so a page's EventSource does not ask again and again.
    func testADeviceThatIsNotAnAccelerometerIsSaidSo() async throws {
        let events = try await VirtualWorld.run { world in
            let screen = try await Screen(world, profile: HeartRateServeProfile(), name: "HRM")
            var stream = try XCTUnwrap(screen.stream())
            let events = await stream.read(until: "end-of-stream")
            await screen.close()
            return events
        }
        XCTAssertEqual(events.last?.type, "error", "\(events)")
        XCTAssertTrue(events.last?.data.contains("not an accelerometer") == true, "\(events)")
    }

    /// The peripheral drops the link: the page is told, and what was recorded still downloads.
    func testAPeerThatDisconnectsIsReportedAndTheSessionStillDownloads() async throws {
        let (events, rows) = try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            var stream = try XCTUnwrap(screen.stream())
            var events = await stream.read(until: "sample", count: 3)
            let linked = await screen.sensor.manager.connectedCentrals
            for c in linked { try await screen.sensor.manager.disconnect(c) }
            events += await stream.read(until: "end-of-stream")
            let rows = screen.csv()?.count ?? 0
            await screen.close()
            return (events, rows)
        }
        XCTAssertEqual(events.last?.type, "error", "\(events.map(\.type))")
        XCTAssertTrue(events.last?.data.lowercased().contains("disconnect") == true, "\(events.last?.data ?? "")")
        XCTAssertGreaterThanOrEqual(rows, 4, "the header and the samples before the disconnect")
    }

    /// An address nobody answers at: the connection attempt gives up after its 10 s, and the
    /// page is told so.
    func testAnAddressNobodyAnswersAtIsSaidSo() async throws {
        let events = try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            guard case let .events(s)? = screen.get("/api/accel-events/00:5A:B1:00:00:77%2Fpublic") else { throw XCTSkip("no stream") }
            var reader = EventReader(s)
            let events = await reader.read(until: "end-of-stream")
            await screen.close()
            return events
        }
        XCTAssertEqual(events.map(\.type), ["connecting", "error"], "\(events)")
        XCTAssertTrue(events.last?.data.contains("timed out: connecting to 00:5A:B1:00:00:77") == true, "\(events)")
    }

    func testWhatIsNotAnAddressGetsAClearAnswer() async throws {
        try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            guard case let .response(page)? = screen.get("/accel/not-an-address") else { return XCTFail("no page") }
            XCTAssertEqual(page.status, .notFound)
            XCTAssertTrue(String(decoding: page.body, as: UTF8.self).contains("not a device address"))
            guard case let .response(api)? = screen.get("/api/accel-events/zz") else { return XCTFail("no answer") }
            XCTAssertEqual(api.status, .notFound)
            let unfollowed = screen.post("/api/accel/pause", #"{"address":"\#(screen.address)","paused":true}"#)
            XCTAssertTrue((unfollowed["error"] as? String)?.contains("no page follows") == true, "\(unfollowed)")
            XCTAssertNil(screen.csv(), "no session, nothing to download")
            await screen.close()
        }
    }

    /// `/api/accel/devices`: the devices named *ble*, saying which advertise 0011; others not.
    func testTheListHasTheDevicesNamedBLE() async throws {
        let list = try await VirtualWorld.run { world in
            let screen = try await Screen(world)
            let other = try await world.serve(BatteryServeProfile.self, name: "BLE Battery")
            let hidden = try await world.serve(HeartRateServeProfile.self, name: "HRM")
            screen.devices.start()
            var list: [(name: String, accelerometer: Bool)] = []
            // Each advertiser is heard within a second of virtual time; ten at most.
            for _ in 0..<10 where list.count < 2 {
                try await world.clock.sleep(for: .seconds(1))
                if case let .response(r)? = screen.get("/api/accel/devices") {
                    let objects = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [[String: Any]] ?? []
                    list = objects.map { ($0["name"] as? String ?? "", $0["accelerometer"] as? Bool ?? false) }
                }
            }
            await other.stop()
            await hidden.stop()
            await screen.close()
            return list
        }
        XCTAssertEqual(list.map(\.name).sorted(), ["BLE Battery", "BLE001"])
        XCTAssertEqual(list.first { $0.name == "BLE001" }?.accelerometer, true)
        XCTAssertEqual(list.first { $0.name == "BLE Battery" }?.accelerometer, false)
    }

    /// `paused`, when given, must be a boolean: a script's `"false"` (a string) or `null` must
    /// not pause the session as if `paused` were missing; it is a bad request. (Bounded: if
    /// they paused, the samples read after would never come, and virtual time ends at 120 s.)
    func testAPauseWhosePausedIsNotABooleanIsABadRequest() async throws {
        let (answers, before, after) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let screen = try await Screen(world)
            var stream = try XCTUnwrap(screen.stream())
            _ = await stream.read(until: "sample", count: 2)
            var answers: [Int] = []
            for paused in [#""false""#, "null"] {
                let body = #"{"address":"\#(screen.address)","paused":\#(paused)}"#
                guard case let .response(r)? = screen.app.handle(HTTPRequest(method: "POST", target: "/api/accel/pause", body: Array(body.utf8))) else {
                    answers.append(0)
                    continue
                }
                answers.append(r.status.code)
            }
            let before = screen.csv()?.count ?? -1
            _ = await stream.read(until: "sample", count: 3)
            let after = screen.csv()?.count ?? -1
            await screen.close()
            return (answers, before, after)
        }
        XCTAssertEqual(answers, [400, 400])
        XCTAssertGreaterThan(after, before, "still recording: neither paused")
    }

    /// Two pages on one device share one flow; the first leaving changes nothing for the other,
    /// the last leaving ends the flow and its link.
    func testTheLastPageLeavingEndsTheLink() async throws {
        let (second, linkedWhileOne, linkedAfter) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let screen = try await Screen(world)
            let (app, manager, path) = (screen.app, screen.sensor.manager, "/api/accel-events/\(screen.address)")
            let pageA = Task(executorPreference: world.clock.taskExecutor) {
                guard case let .events(a)? = app.handle(HTTPRequest(method: "GET", target: path)) else { return }
                var reader = EventReader(a)
                _ = await reader.read(until: "never")
            }
            let pageB = Task(executorPreference: world.clock.taskExecutor) { () -> (Int, Int) in
                guard case let .events(b)? = app.handle(HTTPRequest(method: "GET", target: path)) else { return (-1, -1) }
                var reader = EventReader(b)
                _ = await reader.read(until: "sample", count: 2)
                pageA.cancel()  // the first page leaves
                await pageA.value
                let samples = await reader.read(until: "sample", count: 5).filter { $0.type == "sample" }.count
                return (samples, await manager.connectedCentrals.count)
            }
            // The task ends, and with it the last page's stream.
            let (second, linkedWhileOne) = await pageB.value
            try await world.clock.sleep(for: .seconds(2))
            let linkedAfter = await manager.connectedCentrals.count
            await screen.close()
            return (second, linkedWhileOne, linkedAfter)
        }
        XCTAssertEqual(second, 5, "the other page goes on")
        XCTAssertEqual(linkedWhileOne, 1, "one link for both pages")
        XCTAssertEqual(linkedAfter, 0, "the last page gone, the link is gone")
    }

    /// After `stop` (the server shutting down) a page that still asks starts no flow: its
    /// stream ends at once, and nothing connects to the device.
    func testAfterStopNoFlowStarts() async throws {
        let (events, linked) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let screen = try await Screen(world)
            screen.app.stop()
            var stream = try XCTUnwrap(screen.stream())
            let events = await stream.read(until: "sample")
            try await world.clock.sleep(for: .seconds(3))
            let linked = await screen.sensor.manager.connectedCentrals.count
            await screen.close()
            return (events.map(\.type), linked)
        }
        XCTAssertEqual(events, [], "no flow, no events")
        XCTAssertEqual(linked, 0)
    }

    /// Stopped while connecting to an address nobody answers at: the stream ends at once, not
    /// after the connect timeout.
    func testStopDuringConnectEndsAtOnce() async throws {
        let (events, elapsed) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let screen = try await Screen(world)
            guard case let .events(s)? = screen.get("/api/accel-events/00:5A:B1:00:00:77%2Fpublic") else { throw XCTSkip("no stream") }
            var reader = EventReader(s)
            var events = await reader.read(until: "connecting")
            let start = world.clock.now()
            screen.app.stop()
            events += await reader.read(until: "end-of-stream")
            let elapsed = world.clock.now() - start
            await screen.close()
            return (events.map(\.type), elapsed)
        }
        XCTAssertEqual(events, ["connecting"])
        XCTAssertLessThan(elapsed, .seconds(1))
    }

    /// Eight devices are followed at most: the ninth session's recording replaces that of a
    /// flow that has ended, not the oldest live one's (still recording), and a page for a
    /// device more than that is told so instead of starting a flow.
    func testAFullSetOfSessionsReplacesOnlyAnEndedRecordingAndRefusesOneMore() async throws {
        let (kept, ended, refusal) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let screen = try await Screen(world)
            // Nobody answers at these: each flow stays connecting (live) for its 10 s.
            func address(_ n: Int) -> String { String(format: "00:5A:B1:00:00:%02X", 0x70 + n) + "%2Fpublic" }
            func follow(_ n: Int) -> AsyncStream<[UInt8]>? {
                guard case let .events(s)? = screen.get("/api/accel-events/\(address(n))") else { return nil }
                return s
            }
            func downloadable(_ n: Int) -> Bool {
                guard case let .response(r)? = screen.get("/api/accel-session/\(address(n)).csv") else { return false }
                return r.status == .ok
            }
            var pages = [try XCTUnwrap(follow(0))]
            // The second device's page leaves: its flow ends, its recording stays.
            let leaving = try XCTUnwrap(follow(1))
            let reader = Task(executorPreference: world.clock.taskExecutor) { for await _ in leaving {} }
            reader.cancel()
            await reader.value
            let ended = downloadable(1)
            for n in 2...8 { pages.append(try XCTUnwrap(follow(n))) }
            let kept = (0...8).filter { $0 != 1 }.allSatisfy(downloadable) && !downloadable(1)
            var refused = EventReader(try XCTUnwrap(follow(9)))
            let refusal = await refused.read(until: "error")
            await screen.close()
            _ = pages
            return (kept, ended, refusal)
        }
        XCTAssertTrue(ended, "an ended flow's recording stays downloadable")
        XCTAssertTrue(kept, "the eight live sessions keep their recordings; the ended one's went")
        XCTAssertEqual(refusal.map(\.type), ["error"], "\(refusal)")
        XCTAssertTrue(refusal.first?.data.contains("8 devices are followed already") == true, "\(refusal)")
    }
}

extension UIAccelAppTests.Screen where Sensor == AccelerometerServeProfile {
    /// The screen over the demo's accelerometer.
    init(_ world: VirtualWorld) async throws {
        try await self.init(world, profile: AccelerometerServeProfile())
    }
}

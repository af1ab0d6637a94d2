import BLERuntime
import BLEVirtual
import BLEVirtualRadio
import BLE
import BLEHTTP
import BLEHost
import BLEProfiles
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// `ble ui`'s `/echo` screen on the virtual radio, in virtual time: a text and its reply, a
/// fetched image with its progress and the image served back, and the errors the page shows.
final class UIEchoAppTests: XCTestCase {
    /// A POST's status and JSON text (parsed by `Answer.json` outside the world: its values are not Sendable).
    static func post(_ app: UIEchoApp, _ path: String, _ body: String) async -> Answer {
        guard case let .response(r)? = await app.handle(HTTPRequest(method: "POST", target: path, body: Array(body.utf8))) else { return Answer(status: 0, text: "") }
        return Answer(status: r.status.code, text: String(decoding: r.body, as: UTF8.self))
    }

    struct Answer: Sendable {
        let status: Int
        let text: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }
    }

    static func stream(_ app: UIEchoApp) async -> EventReader? {
        guard case let .events(s)? = await app.handle(HTTPRequest(method: "GET", target: "/api/echo-events")) else { return nil }
        return EventReader(s)
    }

    func testATextGetsItsReplyAndThePagesSeeEveryState() async throws {
        let (answer, events) = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "t")
            let opened = await Self.stream(app)
            var stream = try XCTUnwrap(opened)
            let answer = await Self.post(app, "/api/echo", #"{"text":"hello from the page"}"#)
            let events = await stream.read(until: "closed")
            app.stop()
            await central.close()
            await server.stop()
            return (answer, events.map(\.type))
        }
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.json["code"] as? String, "T", "\(answer.json)")
        XCTAssertEqual(answer.json["text"] as? String, EchoProfile.reply(to: "hello from the page"))
        XCTAssertEqual(events, ["start", "poweredOn", "scanning", "discovered", "connecting", "connected", "sending", "reply", "closed"])
    }

    /// A URL: the server fetches it (a file it serves), the reply arrives with progress on the
    /// way, and the image is served back in its type, byte for byte.
    func testAFetchedImageComesWithProgressAndIsServedBack() async throws {
        let directory = try temporaryDirectory(for: self)
        let picture = DemoImage.bitmap(width: 96, height: 64)
        try Data(picture).write(to: directory.appendingPathComponent(DemoImage.fileName))
        let url = directory.appendingPathComponent(DemoImage.fileName).absoluteString
        let served = try ServedDirectory(directory.path)
        let (answer, events, image) = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile(files: served), name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "t", suggestedURL: url)
            let opened = await Self.stream(app)
            var stream = try XCTUnwrap(opened)
            let answer = await Self.post(app, "/api/echo/fetch", #"{"url":"\#(url)"}"#)
            let events = await stream.read(until: "closed")
            var image: HTTPResponse?
            if let path = answer.json["image"] as? String, case let .response(r)? = await app.handle(HTTPRequest(method: "GET", target: path)) { image = r }
            app.stop()
            await central.close()
            await server.stop()
            return (answer, events, image)
        }
        XCTAssertEqual(answer.json["code"] as? String, "I", "\(answer.json)")
        XCTAssertEqual(answer.json["contentType"] as? String, "image/bmp")
        XCTAssertEqual(answer.json["size"] as? Int, picture.count)
        let progress = events.filter { $0.type == "receiving" }.compactMap { e -> Int? in
            ((try? JSONSerialization.jsonObject(with: Data(e.data.utf8))) as? [String: Any])?["received"] as? Int
        }
        XCTAssertGreaterThanOrEqual(progress.count, 3, "progress on the way: \(events.map(\.type))")
        XCTAssertEqual(progress, progress.sorted(), "it only grows")
        XCTAssertLessThan(progress.last ?? .max, picture.count)
        XCTAssertEqual(image?.status, .ok)
        XCTAssertEqual(image?.body, picture)
        XCTAssertEqual(image?.headers.first { $0.name == "Content-Type" }?.value, "image/bmp")
        XCTAssertTrue(image?.headers.contains { $0.name == "Content-Security-Policy" && $0.value.hasPrefix("sandbox") } == true)
    }

    /// The page starts with the suggested URL in its box, escaped.
    func testThePageOffersTheSuggestedURL() async throws {
        try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "ab12", suggestedURL: "file:///tmp/a\"b.bmp")
            guard case let .response(page)? = await app.handle(HTTPRequest(method: "GET", target: "/echo")) else { return XCTFail("no page") }
            let html = String(decoding: page.body, as: UTF8.self)
            XCTAssertTrue(html.contains(#"value="file:///tmp/a&quot;b.bmp""#), html)
            XCTAssertTrue(html.contains("/static/echo.js?token=ab12"), html)
            await central.close()
        }
    }

    /// No echo server: the scan gives up after docs/SYSTEMS.md S1's 10 s with "not found", said to the
    /// page and in the answer; a fetch the server refuses comes back as its text; a second
    /// message while one is under way is refused, not queued.
    func testErrorsAreSaidAndOneMessageRunsAtATime() async throws {
        let (lonely, lonelyEvents, refused, busy) = try await VirtualWorld.run { world in
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "t")
            let opened = await Self.stream(app)
            var stream = try XCTUnwrap(opened)
            let lonely = await Self.post(app, "/api/echo", #"{"text":"anyone?"}"#)
            let lonelyEvents = await stream.read(until: "error")
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let refused = await Self.post(app, "/api/echo/fetch", #"{"url":"file:///etc/passwd"}"#)
            _ = await stream.read(until: "closed")
            let first = Task(executorPreference: world.clock.taskExecutor) { await Self.post(app, "/api/echo", #"{"text":"one"}"#) }
            _ = await stream.read(until: "start")
            let busy = await Self.post(app, "/api/echo", #"{"text":"two"}"#)
            _ = await first.value
            app.stop()
            await central.close()
            await server.stop()
            return (lonely, lonelyEvents, refused, busy)
        }
        XCTAssertTrue((lonely.json["error"] as? String)?.contains("not found") == true, "\(lonely.json)")
        XCTAssertEqual(lonelyEvents.last?.type, "error")
        XCTAssertEqual(refused.json["code"] as? String, "T")
        XCTAssertEqual(refused.json["text"] as? String, "error: file:// URLs are not served; start the server with --files DIR")
        XCTAssertEqual(busy.status, 409)
        XCTAssertTrue((busy.json["error"] as? String)?.contains("under way") == true, "\(busy.json)")
    }

    func testImageTypesAreToldByTheirFirstBytes() {
        XCTAssertEqual(UIEchoApp.imageType([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]), "image/png")
        XCTAssertEqual(UIEchoApp.imageType([0xFF, 0xD8, 0xFF, 0xE0]), "image/jpeg")
        XCTAssertEqual(UIEchoApp.imageType(Array("GIF89a...".utf8)), "image/gif")
        XCTAssertEqual(UIEchoApp.imageType(Array("RIFF\0\0\0\0WEBPVP8 ".utf8)), "image/webp")
        XCTAssertEqual(UIEchoApp.imageType(DemoImage.bitmap(width: 2, height: 2)), "image/bmp")
        XCTAssertEqual(UIEchoApp.imageType(Array("\n<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)), "image/svg+xml")
        XCTAssertNil(UIEchoApp.imageType(SeedSystemsDemo.gradientImage(width: 2, height: 2)), "PPM: no browser shows it")
        XCTAssertNil(UIEchoApp.imageType([]))
        XCTAssertNil(UIEchoApp.imageType(Array("BM".utf8)), "too short to be a bitmap")
    }

    /// After `stop` (the server shutting down) a message starts no exchange: it is refused with
    /// 503, and nothing connects to the echo server.
    func testAfterStopAMessageIsRefused() async throws {
        let (answer, events, linked) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "t")
            app.stop()
            let opened = await Self.stream(app)
            var stream = try XCTUnwrap(opened)
            let answer = await Self.post(app, "/api/echo", #"{"text":"too late"}"#)
            let events = await stream.read(until: "closed")
            let linked = await server.manager.connectedCentrals.count
            await central.close()
            await server.stop()
            return (answer, events.map(\.type), linked)
        }
        XCTAssertEqual(answer.status, 503, answer.text)
        XCTAssertEqual(events, [], "a stream opened after stop ends at once")
        XCTAssertEqual(linked, 0)
    }

    /// Stopped while the exchange is connecting: the POST is answered at once with the
    /// cancellation, and the link to the echo server goes down.
    func testStopDuringAnExchangeEndsItAndItsLink() async throws {
        let (answer, elapsed, linked) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "t")
            let opened = await Self.stream(app)
            var stream = try XCTUnwrap(opened)
            let post = Task(executorPreference: world.clock.taskExecutor) { await Self.post(app, "/api/echo", #"{"text":"stop me"}"#) }
            _ = await stream.read(until: "connected")
            let start = world.clock.now()
            app.stop()
            let answer = await post.value
            let elapsed = world.clock.now() - start
            try await world.clock.sleep(for: .seconds(1))
            let linked = await server.manager.connectedCentrals.count
            await central.close()
            await server.stop()
            return (answer, elapsed, linked)
        }
        XCTAssertNotNil(answer.json["error"], answer.text)
        XCTAssertLessThan(elapsed, .seconds(1))
        XCTAssertEqual(linked, 0)
    }

    /// A reply that is no image a browser draws (here an HTML page with a script) is served only
    /// as a download: never as HTML on this origin.
    func testANonImageReplyIsOnlyADownload() async throws {
        let directory = try temporaryDirectory(for: self)
        try Data("<html><script>alert(1)</script></html>".utf8).write(to: directory.appendingPathComponent("page.html"))
        let url = directory.appendingPathComponent("page.html").absoluteString
        let served = try ServedDirectory(directory.path)
        let (answer, image) = try await VirtualWorld.run(limit: .seconds(120)) { world in
            let server = try await world.serve(EchoServeProfile(files: served), name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let app = UIEchoApp(central: central, token: "t")
            let answer = await Self.post(app, "/api/echo/fetch", #"{"url":"\#(url)"}"#)
            var image: HTTPResponse?
            if let path = answer.json["image"] as? String, case let .response(r)? = await app.handle(HTTPRequest(method: "GET", target: path)) { image = r }
            await central.close()
            await server.stop()
            return (answer, image)
        }
        XCTAssertEqual(answer.json["code"] as? String, "I", answer.text)
        XCTAssertTrue(answer.json["contentType"] is NSNull, answer.text)
        XCTAssertEqual(image?.headers.first { $0.name == "Content-Type" }?.value, "application/octet-stream")
        XCTAssertEqual(image?.headers.first { $0.name == "Content-Disposition" }?.value.hasPrefix("attachment"), true)
    }
}

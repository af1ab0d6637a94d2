import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEWire
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// docs/SYSTEMS.md S1 end to end on the virtual radio, in virtual time: `ble serve echo`'s profile
/// against `ble echo`/`ble fetch`'s central flow (the very functions the commands run).
final class EchoSystemTests: XCTestCase {
    /// The kinds of state the flow reported, in order (progress left out).
    static func states(_ events: [EchoCentralEvent]) -> [String] {
        events.compactMap { event in
            switch event {
            case .poweredOn: return "poweredOn"
            case .scanning: return "scanning"
            case .discovered: return "discovered"
            case .connecting: return "connecting"
            case .connected: return "connected"
            case .sending: return "sending"
            case .receiving: return nil
            case .reply: return "reply"
            case .closed: return "closed"
            }
        }
    }

    static let everyState = ["poweredOn", "scanning", "discovered", "connecting", "connected", "sending", "reply", "closed"]

    func testShortTextIsEchoedThroughEveryState() async throws {
        let (reply, events, frames, replies) = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let events = Collected<EchoCentralEvent>()
            let reply = try await EchoCentral.exchange(.text("hello"), using: central) { events.append($0) }
            await central.close()
            await server.stop()
            return (reply, events.all, server.events("frame").count, server.events("reply").compactMap { $0["text"] as? String })
        }
        XCTAssertEqual(reply, .text("You said: hello"))
        XCTAssertEqual(Self.states(events), Self.everyState)
        guard case let .discovered(name, _, _)? = events.first(where: { if case .discovered = $0 { return true } else { return false } }) else {
            return XCTFail("no discovered state")
        }
        XCTAssertEqual(name, "EchoServer", "the complete name, from the scan response")
        XCTAssertEqual(frames, 1)
        XCTAssertEqual(replies, ["You said: hello"])
    }

    /// At ATT_MTU 23 a 300-byte text takes 16 writes of at most 20 bytes, and its echo 16
    /// notifications: frames span writes and notifications both ways.
    func testTextLongerThanOneMTUSpansWritesAndNotifications() async throws {
        let text = String((0..<300).map { Character(UnicodeScalar(UInt8(0x41 + $0 % 26))) })
        let (reply, events, logged) = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let events = Collected<EchoCentralEvent>()
            var options = EchoCentral.Options()
            options.mtu = 23
            let reply = try await EchoCentral.exchange(.text(text), using: central, options: options) { events.append($0) }
            await central.close()
            await server.stop()
            let logged = server.events("reply").first
            return (reply, events.all, [logged?["notifications"] as? Int, logged?["maxNotification"] as? Int])
        }
        XCTAssertEqual(reply, .text("You said: " + text))
        var sawSending = false, sawReply = false
        for event in events {
            if case let .connected(mtu, length) = event {
                XCTAssertEqual(mtu, 23)
                XCTAssertEqual(length, 20)
            }
            if case let .sending(code, bytes, writes) = event {
                XCTAssertEqual(code, .text)
                XCTAssertEqual(bytes, 308)
                XCTAssertEqual(writes, 16)
                sawSending = true
            }
            if case let .reply(_, notifications, _) = event {
                XCTAssertEqual(notifications, 16, "318 bytes in notifications of 20")
                sawReply = true
            }
        }
        XCTAssertTrue(sawSending && sawReply)
        XCTAssertEqual(logged, [16, 20], "the server's log: notifications, and the most bytes in one")
    }

    /// A 100 kB file:// resource comes back byte for byte, over hundreds of notifications with
    /// the server waiting for room whenever the link's queue is full.
    func testFetchOfAFileURLIsByteExact() async throws {
        let bytes = imageBytes(count: 100 * 1024, seed: 7)
        let directory = try temporaryDirectory(for: self)
        let file = directory.appendingPathComponent("echo-fetch.bin")
        try Data(bytes).write(to: file)
        let profile = try echoServer(serving: directory)
        let (reply, events, fetched, readySignals) = try await VirtualWorld.run { world in
            let server = try await world.serve(profile, name: "EchoServer")
            let managerEvents = await server.manager.events
            let (central, _) = try await world.addCentral()
            let events = Collected<EchoCentralEvent>()
            let reply = try await EchoCentral.exchange(.url(file.absoluteString), using: central) { events.append($0) }
            await central.close()
            await server.stop()
            var readySignals = 0
            for await event in managerEvents {
                if case .readyToUpdateSubscribers = event { readySignals += 1 }
                if case .disconnected = event { break }
            }
            return (reply, events.all, server.events("fetched").first?["size"] as? Int, readySignals)
        }
        XCTAssertGreaterThan(readySignals, 0, "the queue filled up and the server waited for room")
        XCTAssertEqual(reply.code, .image)
        XCTAssertEqual(reply.body.count, bytes.count)
        XCTAssertTrue(reply.body == bytes, "byte-exact")
        XCTAssertEqual(fetched, bytes.count)
        let progress = events.compactMap { event -> Int? in
            if case let .receiving(received, total, _) = event {
                XCTAssertEqual(total, bytes.count)
                return received
            }
            return nil
        }
        XCTAssertGreaterThan(progress.count, 100, "progress per notification")
        XCTAssertEqual(progress, progress.sorted(), "progress only grows")
        XCTAssertEqual(Self.states(events), Self.everyState)
    }

    /// A URL the server cannot fetch is answered with a `T` frame carrying the error, and the
    /// fetch command's error says what the server said.
    func testAFailingURLIsAnsweredWithATextError() async throws {
        let directory = try temporaryDirectory(for: self)
        let profile = try echoServer(serving: directory)
        let missingPath = directory.appendingPathComponent("echo-test.png").path
        let (missing, scheme) = try await VirtualWorld.run { world in
            let server = try await world.serve(profile, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let missing = try await EchoCentral.exchange(.url("file://" + missingPath), using: central) { _ in }
            let scheme = try await EchoCentral.exchange(.url("gopher://example.org/x"), using: central) { _ in }
            await central.close()
            await server.stop()
            return (missing, scheme)
        }
        XCTAssertEqual(missing.code, .text)
        XCTAssertEqual(missing.text, "error: cannot read \(missingPath): No such file or directory")
        XCTAssertEqual(scheme.text, "error: cannot fetch a gopher: URL (only http, https and file)")
    }

    /// A malformed header is answered with a `T` error and the decoder starts afresh, so the
    /// same central's next write is a new frame. Raw bytes need the `Central` API directly.
    func testAMalformedHeaderIsAnsweredWithAnErrorAndTheStreamRecovers() async throws {
        let (replies, logged) = try await VirtualWorld.run { world in
            let server = try await world.serve(EchoServeProfile.self, name: "EchoServer")
            let (central, _) = try await world.addCentral()
            let device = try await findAdvertiser(of: EchoProfile.service, target: nil, using: central, timeout: .seconds(10))
            let peripheral = try await central.connect(device.address)
            let stream = try await discover(EchoProfile.service, on: peripheral).characteristic(EchoProfile.stream)
            let notifications = await peripheral.notifications(for: stream)
            try await peripheral.setNotifyValue(true, for: stream)
            try await peripheral.writeValue(Array("T00x0005hello".utf8), for: stream)
            try await peripheral.writeValue(Array("X".utf8), for: stream)
            try await peripheral.writeValue(Array("T0000002ok".utf8), for: stream)
            var decoder = FrameDecoder()
            var replies: [Frame] = []
            for await value in notifications {
                replies += try decoder.push(value)
                if replies.count == 3 { break }
            }
            try await peripheral.disconnect()
            await central.close()
            await server.stop()
            return (replies, server.events("frameError").count)
        }
        XCTAssertEqual(replies.count, 3)
        XCTAssertEqual(replies[0].text, "error: framed stream: size field \"00x0005\" (30307830303035) is not 7 ASCII decimal digits")
        XCTAssertEqual(replies[1].text, "error: framed stream: unknown frame code 0x58 'X' (expected N, T, U or I); the stream is out of sync")
        XCTAssertEqual(replies[2], .text("You said: ok"))
        XCTAssertEqual(logged, 2)
    }

    /// Two centrals at once on one server: each gets its own answer, and only its own.
    func testTwoCentralsAtOnceEachGetTheirOwnReply() async throws {
        let bytes = imageBytes(count: 20_000, seed: 3)
        let directory = try temporaryDirectory(for: self)
        let file = directory.appendingPathComponent("echo-two.bin")
        try Data(bytes).write(to: file)
        let profile = try echoServer(serving: directory)
        let text = String(repeating: "two at once ", count: 40)
        let (first, second, connections) = try await VirtualWorld.run { world in
            let server = try await world.serve(profile, name: "EchoServer")
            let (a, _) = try await world.addCentral()
            let (b, _) = try await world.addCentral()
            var small = EchoCentral.Options()
            small.mtu = 23
            async let first = EchoCentral.exchange(.text(text), using: a, options: small) { _ in }
            async let second = EchoCentral.exchange(.url(file.absoluteString), using: b) { _ in }
            let replies = try await (first, second)
            await a.close()
            await b.close()
            await server.stop()
            let connections = Set(server.events("reply").compactMap { $0["connection"] as? Int })
            return (replies.0, replies.1, connections.count)
        }
        XCTAssertEqual(first, .text("You said: " + text))
        XCTAssertEqual(second.code, .image)
        XCTAssertTrue(second.body == bytes)
        XCTAssertEqual(connections, 2)
    }

    func testNoServerIsNotFoundAfterTenSeconds() async throws {
        let (error, elapsed) = try await VirtualWorld.run { world -> ((any Error)?, Duration) in
            let (central, _) = try await world.addCentral()
            let start = world.clock.now()
            do {
                _ = try await EchoCentral.exchange(.text("anyone?"), using: central) { _ in }
                return (nil, .zero)
            } catch {
                return (error, world.clock.now() - start)
            }
        }
        XCTAssertEqual(error as? CentralFlowError, .notFound(service: EchoProfile.service, target: nil, timeout: .seconds(10)))
        XCTAssertEqual((error as? CentralFlowError)?.description, "not found: no device advertising \(EchoProfile.service) within 10 s")
        XCTAssertGreaterThanOrEqual(elapsed, .seconds(10))
        XCTAssertLessThan(elapsed, .seconds(11))
    }
}

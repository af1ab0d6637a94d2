import BLEHTTP
import BLERuntime
import BLESystems
import BLETestSupport
import Synchronization
import XCTest

/// `ble ui`'s server loop over in-memory connections: admission by the policy, answers, the
/// bounds a slow or greedy client meets (request timeout, connection limit).
final class UIServerTests: XCTestCase {
    /// One side of a connection the test writes requests into and reads answers from. Each
    /// write and the close are events a test can wait for (`wait`, `closing`).
    final class MemoryStream: UIByteStream, @unchecked Sendable {
        struct State: Sendable {
            var written: [UInt8] = []
            var closed = false
            var output: String { String(decoding: written, as: UTF8.self) }
        }

        let incoming: AsyncThrowingStream<[UInt8], any Error>
        private let input: AsyncThrowingStream<[UInt8], any Error>.Continuation
        private let state = SharedValue(State())

        init() {
            (incoming, input) = AsyncThrowingStream.makeStream()
        }
        func client(_ text: String) { input.yield(Array(text.utf8)) }
        func send(_ bytes: [UInt8]) async throws {
            try state.withLock { s in
                if s.closed { throw CancellationError() }
                s.written += bytes
            }
        }
        func close() async {
            state.withLock { $0.closed = true }
            input.finish()
        }
        var output: String { state.get().output }
        var isClosed: Bool { state.get().closed }

        /// Waits until `condition` holds of what the server wrote and whether it closed.
        @discardableResult
        func wait(_ what: String, within bound: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                  until condition: @escaping @Sendable (State) -> Bool) async -> Bool {
            await state.wait(what, within: bound, file: file, line: line, until: condition)
        }

        /// True once the connection is closed (false if cancelled first): an event for `firstOf`.
        @Sendable func closing() async -> Bool { await state.becomes { $0.closed } }
    }

    let policy = HTTPAccessPolicy(token: "tok", allowedHosts: ["127.0.0.1:1"])

    func server(clock: any BLEClock = SystemClock()) -> UIServer {
        UIServer(policy: policy, clock: clock) { request in
            request.path == "/hello" ? .response(.text(.ok, "hi")) : .response(.text(.notFound, "no"))
        }
    }

    func testAnAdmittedRequestIsAnsweredWithSecurityHeadersAndNoCookieAndTheConnectionStaysOpen() async {
        let s = MemoryStream()
        let server = server()
        let serving = Task { await server.serve(s) }
        s.client("GET /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        await s.wait("the answer") { $0.output.contains("\r\n\r\nhi") }
        XCTAssertTrue(s.output.hasPrefix("HTTP/1.1 200 OK\r\n"))
        XCTAssertFalse(s.output.contains("Set-Cookie"), "a cookie would reach every other server on 127.0.0.1")
        XCTAssertTrue(s.output.contains("Content-Security-Policy: default-src 'self'"))
        XCTAssertFalse(s.isClosed, "HTTP/1.1 keeps the connection")
        s.client("GET /hello HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-BLE-Token: tok\r\nConnection: close\r\n\r\n")
        await serving.value
        XCTAssertTrue(s.isClosed)
        XCTAssertEqual(s.output.components(separatedBy: "HTTP/1.1 200 OK").count, 3, "two answers")
    }

    func testARefusedRequestClosesTheConnection() async {
        let s = MemoryStream()
        let server = server()
        let serving = Task { await server.serve(s) }
        s.client("GET /hello HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        await serving.value
        XCTAssertTrue(s.output.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        XCTAssertTrue(s.isClosed)
    }

    /// A client that sends a header byte now and then cannot hold its slot: after the request
    /// timeout (on the server's clock) it gets 408 and is closed.
    func testASlowRequestTimesOut() async {
        let clock = ManualClock()
        let s = MemoryStream()
        let server = server(clock: clock)
        let serving = Task { await server.serve(s) }
        s.client("GET /hello HTTP/1.1\r\nHo")
        _ = await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty }
        for _ in 0..<25 {
            s.client("s")
            clock.advance(by: .milliseconds(500))
            await firstOf("the watchdog re-armed, or the connection closed", within: .seconds(10),
                          { await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty } }, s.closing)
        }
        await serving.value
        XCTAssertTrue(s.output.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), s.output)
        XCTAssertTrue(s.isClosed)
    }

    func testConnectionsBeyondTheLimitAreAnswered503() async {
        // On a clock that does not move: each held connection's request watchdog asleep on it
        // says that connection has its slot (and no request timeout closes one in a slow run).
        let clock = ManualClock()
        let server = server(clock: clock)
        var held: [MemoryStream] = []
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<UIServer.maximumConnections {
            let s = MemoryStream()
            held.append(s)
            tasks.append(Task { await server.serve(s) })
        }
        await clock.waitForSleepers(within: .seconds(10)) { $0.count == UIServer.maximumConnections }
        XCTAssertEqual(server.connectionCount, UIServer.maximumConnections, "every slot taken")
        let extra = MemoryStream()
        await server.serve(extra)
        XCTAssertTrue(extra.output.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"))
        XCTAssertTrue(extra.isClosed)
        for s in held { await s.close() }
        for t in tasks { await t.value }
        XCTAssertEqual(server.connectionCount, 0)
    }

    /// Security review: an event stream whose browser went away ends, and frees its slot, at the
    /// next keep-alive even when no event ever comes.
    func testAnIdleEventStreamEndsWhenTheBrowserHasGone() async {
        let clock = ManualClock()
        let s = MemoryStream()
        let (events, continuation) = AsyncStream<[UInt8]>.makeStream()
        let server = UIServer(policy: policy, clock: clock) { _ in .events(events) }
        let serving = Task { await server.serve(s) }
        s.client("GET /api/events?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        await s.wait("the stream open") { $0.output.contains("text/event-stream") }
        await s.close()
        for _ in 0..<40 where server.connectionCount > 0 {
            await firstOf("a sleeper, or the connection's end", within: .seconds(5),
                          { await clock.waitForSleepers(within: .seconds(5)) { !$0.isEmpty } },
                          { await serving.value; return true })
            clock.advance(by: .seconds(1))
        }
        await serving.value
        XCTAssertEqual(server.connectionCount, 0)
        continuation.finish()
    }
}

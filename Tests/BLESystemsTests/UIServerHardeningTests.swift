import BLEHTTP
import BLERuntime
import BLESystems
import BLETestSupport
import Synchronization
import XCTest

/// The bounds asked of `ble ui`'s server beyond the request limits: a client that stops
/// reading loses its connection, one peer address cannot take every slot, and HEAD gets a head
/// and no body, event streams included.
final class UIServerHardeningTests: XCTestCase {
    typealias MemoryStream = UIServerTests.MemoryStream

    /// A memory (or stalled) stream from a given peer address.
    struct AddressedStream<Base: UIByteStream>: UIByteStream {
        let base: Base
        let peerAddress: String?
        var incoming: AsyncThrowingStream<[UInt8], any Error> { base.incoming }
        func send(_ bytes: [UInt8]) async throws { try await base.send(bytes) }
        func close() async { await base.close() }
    }

    /// A client that never reads: every write waits until the connection is closed, as a
    /// socket's does once its buffer is full. A write parking and the close are events a test
    /// can wait for (`wait`, `closing`, `parking`).
    final class StalledStream: UIByteStream, @unchecked Sendable {
        struct State: Sendable {
            var parked: [CheckedContinuation<Void, any Error>] = []
            var closed = false
        }

        let incoming: AsyncThrowingStream<[UInt8], any Error>
        private let input: AsyncThrowingStream<[UInt8], any Error>.Continuation
        private let state = SharedValue(State())

        init() { (incoming, input) = AsyncThrowingStream.makeStream() }
        func client(_ text: String) { input.yield(Array(text.utf8)) }
        func send(_ bytes: [UInt8]) async throws {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let closed = state.withLock { s in
                    if !s.closed { s.parked.append(c) }
                    return s.closed
                }
                if closed { c.resume(throwing: CancellationError()) }
            }
        }
        func close() async {
            let waiting = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
                s.closed = true
                defer { s.parked = [] }
                return s.parked
            }
            waiting.forEach { $0.resume(throwing: CancellationError()) }
            input.finish()
        }
        var isClosed: Bool { state.get().closed }
        var parkedWrites: Int { state.get().parked.count }

        /// Waits until `condition` holds of the parked writes and whether the stream closed.
        @discardableResult
        func wait(_ what: String, within bound: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                  until condition: @escaping @Sendable (State) -> Bool) async -> Bool {
            await state.wait(what, within: bound, file: file, line: line, until: condition)
        }

        /// True once the stream is closed (false if cancelled first): an event for `firstOf`.
        @Sendable func closing() async -> Bool { await state.becomes { $0.closed } }
        /// True once a write is parked (false if cancelled first): an event for `firstOf`.
        @Sendable func parking() async -> Bool { await state.becomes { !$0.parked.isEmpty } }
    }

    /// A client that reads the first `passing` writes and then stops reading: later writes
    /// wait until the connection is closed.
    final class StallingStream: UIByteStream, @unchecked Sendable {
        let stalled = StalledStream()
        private let passed = Mutex(0)
        let passing: Int
        init(passing: Int) { self.passing = passing }
        var incoming: AsyncThrowingStream<[UInt8], any Error> { stalled.incoming }
        func client(_ text: String) { stalled.client(text) }
        func send(_ bytes: [UInt8]) async throws {
            let passes = passed.withLock { n -> Bool in
                n += 1
                return n <= passing
            }
            if passes { return }
            try await stalled.send(bytes)
        }
        func close() async { await stalled.close() }
        var isClosed: Bool { stalled.isClosed }
        var parkedWrites: Int { stalled.parkedWrites }
        @discardableResult
        func wait(_ what: String, within bound: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                  until condition: @escaping @Sendable (StalledStream.State) -> Bool) async -> Bool {
            await stalled.wait(what, within: bound, file: file, line: line, until: condition)
        }
        @Sendable func parking() async -> Bool { await stalled.parking() }
    }

    let policy = HTTPAccessPolicy(token: "tok", allowedHosts: ["127.0.0.1:1"])

    /// `maximumConnectionsPerAddress` connections from `address` that send nothing, served by
    /// `server` (on a `clock` nobody moves) until each has its slot: its request watchdog asleep
    /// on the clock is the event. The streams, and the tasks serving them.
    func holdEverySlot(of address: String, on server: UIServer, clock: ManualClock,
                       file: StaticString = #filePath, line: UInt = #line) async -> ([MemoryStream], [Task<Void, Never>]) {
        var held: [MemoryStream] = []
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<UIServer.maximumConnectionsPerAddress {
            let s = MemoryStream()
            held.append(s)
            tasks.append(Task { await server.serve(AddressedStream(base: s, peerAddress: address)) })
        }
        let count = UIServer.maximumConnectionsPerAddress
        let asleep = await clock.waitForSleepers(within: .seconds(10)) { $0.count == count }
        XCTAssertTrue(asleep, "every held connection's watchdog asleep", file: file, line: line)
        XCTAssertEqual(server.connectionCount, count, "the address's slots taken", file: file, line: line)
        return (held, tasks)
    }

    /// An event stream whose keep-alive write is parked (the browser stopped reading) when its
    /// events end: the write is still bounded, so the connection closes and its slot is freed,
    /// instead of the cancelled keep-alive waiting on the write for ever.
    func testAParkedKeepAliveIsBoundedWhenTheEventsEnd() async {
        let clock = ManualClock()
        let (events, continuation) = AsyncStream<[UInt8]>.makeStream()
        let server = UIServer(policy: policy, clock: clock) { _ in .events(events) }
        let client = StallingStream(passing: 1)
        let serving = Task { await server.serve(client) }
        client.client("GET /api/events?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        // The keep-alive's timer armed (the clock has not moved: it sleeps until one interval
        // from zero), so the steps below cannot pass before it counts them.
        await clock.waitForSleepers(within: .seconds(10)) { $0.contains(UIServer.keepAliveInterval) }
        // Past the keep-alive interval on the server's clock: the comment's write parks.
        for _ in 0..<(Int(UIServer.keepAliveInterval / .milliseconds(500)) + 4) where client.parkedWrites == 0 {
            await firstOf("a sleeper, or a parked write", within: .seconds(10),
                          { await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty } }, client.parking)
            clock.advance(by: .milliseconds(500))
        }
        let parked = await client.wait("the keep-alive parked") { !$0.parked.isEmpty }
        XCTAssertTrue(parked)
        // The events end (the screen stopped) while that write waits: the server gives up on
        // the connection and closes it then, with no time passing on its clock (advancing it
        // here would let the write's own timer close it first and hide a timer cancelled
        // with the keep-alive).
        continuation.finish()
        let closed = await client.wait("the connection closed") { $0.closed }
        XCTAssertTrue(closed)
        // The connection's end (`serve` returning) is where its slot is given back.
        let ended = await end(of: serving, "the connection's end", within: .seconds(10)) != nil
        XCTAssertEqual(server.connectionCount, 0, "the slot freed")
        await client.close()
        if !ended { serving.cancel() }
    }

    /// An event stream whose browser stopped reading: its write is parked, and after the write
    /// timeout (on the server's clock) the connection is closed and its slot freed, while
    /// another client is served all along.
    func testAClientThatStopsReadingLosesItsConnection() async {
        let clock = ManualClock()
        let (events, continuation) = AsyncStream<[UInt8]>.makeStream()
        let server = UIServer(policy: policy, clock: clock) { request in
            request.path == "/api/events" ? .events(events) : .response(.text(.ok, "hi"))
        }
        let stalled = StalledStream()
        let serving = Task { await server.serve(stalled) }
        stalled.client("GET /api/events?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        continuation.yield(Array("data: x\n\n".utf8))
        await stalled.wait("the write parked") { !$0.parked.isEmpty }
        // Its timer armed (the clock has not moved), so the steps below count towards it.
        let parkedAt = clock.now()
        await clock.waitForSleepers(within: .seconds(10)) { $0.contains(parkedAt + UIServer.writeTimeout) }
        // Another client meanwhile: answered at once.
        let other = MemoryStream()
        let otherServing = Task { await server.serve(other) }
        other.client("GET /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n")
        await otherServing.value
        XCTAssertTrue(other.output.hasPrefix("HTTP/1.1 200 OK\r\n"), other.output)
        // Time passes on the server's clock, past the write timeout.
        let steps = Int(UIServer.writeTimeout / .milliseconds(500)) + 4
        for _ in 0..<steps where !stalled.isClosed {
            await firstOf("a sleeper, or the connection closed", within: .seconds(10),
                          { await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty } }, stalled.closing)
            clock.advance(by: .milliseconds(500))
        }
        // The connection's end (`serve` returning) is where its slot is given back.
        await end(of: serving, "the connection's end", within: .seconds(10))
        XCTAssertEqual(server.connectionCount, 0, "the slot freed")
        XCTAssertTrue(stalled.isClosed, "closed after the write timeout")
        await stalled.close()
        continuation.finish()
    }

    /// A response (not a stream) to a client that does not read is bounded the same way.
    func testAResponseToAClientThatDoesNotReadIsBounded() async {
        let clock = ManualClock()
        let server = UIServer(policy: policy, clock: clock) { _ in .response(.text(.ok, String(repeating: "x", count: 100_000))) }
        let stalled = StalledStream()
        let serving = Task { await server.serve(stalled) }
        stalled.client("GET /big?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        await stalled.wait("the write parked") { !$0.parked.isEmpty }
        // Its timer armed (the clock has not moved), so the steps below count towards it.
        let parkedAt = clock.now()
        await clock.waitForSleepers(within: .seconds(10)) { $0.contains(parkedAt + UIServer.writeTimeout) }
        for _ in 0..<(Int(UIServer.writeTimeout / .milliseconds(500)) + 4) where !stalled.isClosed {
            await firstOf("a sleeper, or the connection closed", within: .seconds(10),
                          { await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty } }, stalled.closing)
            clock.advance(by: .milliseconds(500))
        }
        // The connection's end (`serve` returning) is where its slot is given back.
        await end(of: serving, "the connection's end", within: .seconds(10))
        XCTAssertEqual(server.connectionCount, 0, "the slot freed")
        await stalled.close()
    }

    /// One peer address gets `maximumConnectionsPerAddress` slots; its next connection is
    /// answered 503 saying so, and another address is still served.
    func testOneAddressCannotTakeEverySlot() async {
        // On a clock that does not move: the held connections send no request, and on the
        // system clock the request timeout would close them after 10 s of a slow run.
        let clock = ManualClock()
        let server = UIServer(policy: policy, clock: clock) { _ in .response(.text(.ok, "hi")) }
        let (held, tasks) = await holdEverySlot(of: "192.0.2.1", on: server, clock: clock)
        let extra = MemoryStream()
        await server.serve(AddressedStream(base: extra, peerAddress: "192.0.2.1"))
        XCTAssertTrue(extra.output.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), extra.output)
        XCTAssertTrue(extra.output.contains("too many connections from 192.0.2.1"), extra.output)
        XCTAssertTrue(extra.isClosed)
        let other = MemoryStream()
        let otherServing = Task { await server.serve(AddressedStream(base: other, peerAddress: "192.0.2.2")) }
        other.client("GET /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n")
        await otherServing.value
        XCTAssertTrue(other.output.hasPrefix("HTTP/1.1 200 OK\r\n"), other.output)
        for s in held { await s.close() }
        for t in tasks { await t.value }
        XCTAssertEqual(server.connectionCount, 0)
        // The address's count went back down with its connections.
        let again = MemoryStream()
        let againServing = Task { await server.serve(AddressedStream(base: again, peerAddress: "192.0.2.1")) }
        again.client("GET /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n")
        await againServing.value
        XCTAssertTrue(again.output.hasPrefix("HTTP/1.1 200 OK\r\n"), again.output)
    }

    /// A connection over the per-address limit whose client does not read: its 503 is given up
    /// on and the connection closed after a fraction of a second on the server's clock, not
    /// held for the write timeout (a flood of such connections would keep a task each).
    func testARefusalToAClientThatDoesNotReadEndsPromptly() async {
        let clock = ManualClock()
        let server = UIServer(policy: policy, clock: clock) { _ in .response(.text(.ok, "hi")) }
        let (held, tasks) = await holdEverySlot(of: "192.0.2.1", on: server, clock: clock)
        let count = UIServer.maximumConnectionsPerAddress
        let stalled = StalledStream()
        let refusing = Task { await server.serve(AddressedStream(base: stalled, peerAddress: "192.0.2.1")) }
        // The 503's write is parked and its timer asleep (both stay so until the clock moves).
        let parked = await stalled.wait("the refusal parked") { !$0.parked.isEmpty }
        let armed = await clock.waitForSleepers(within: .seconds(10)) { $0.count == count + 1 }
        XCTAssertTrue(parked && armed, "the refusal parked, its timer armed")
        // Less than the held connections' watchdog period, far less than the write timeout.
        clock.advance(by: .milliseconds(300))
        let closed = await stalled.wait("the refused connection closed") { $0.closed }
        XCTAssertTrue(closed, "refused and closed within 300 ms of the server's clock")
        if closed { await refusing.value } else { await stalled.close(); await refusing.value }
        XCTAssertEqual(server.connectionCount, count, "a refusal takes no slot")
        for s in held { await s.close() }
        for t in tasks { await t.value }
    }

    /// HEAD of an event stream: the head a GET gets, no event, the connection closed, and the
    /// stream let go (its subscription ends); HEAD of a page: the head with the GET's
    /// Content-Length and no body, the connection kept.
    func testHeadGetsTheHeadAndNoBody() async {
        let ended = SharedValue(false)
        // On a clock that does not move: no request timeout closes the kept-alive page
        // connection under a slow run.
        let server = UIServer(policy: policy, clock: ManualClock()) { request in
            guard request.path == "/api/events" else { return .response(.text(.ok, "hi")) }
            let (events, continuation) = AsyncStream<[UInt8]>.makeStream()
            continuation.onTermination = { _ in ended.withLock { $0 = true } }
            continuation.yield(Array("event: devices\ndata: []\n\n".utf8))
            return .events(events)
        }
        let s = MemoryStream()
        let serving = Task { await server.serve(s) }
        s.client("HEAD /api/events?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        let done = await s.wait("the HEAD answered and closed") { $0.closed }
        XCTAssertTrue(s.output.hasPrefix("HTTP/1.1 200 OK\r\n"), s.output)
        XCTAssertTrue(s.output.contains("Content-Type: text/event-stream"), s.output)
        XCTAssertFalse(s.output.contains("data:"), "no event in a HEAD answer: \(s.output)")
        let letGo = await ended.wait("the stream let go", within: .seconds(10)) { $0 }
        XCTAssertTrue(letGo)
        if done { await serving.value }

        let page = MemoryStream()
        let pageServing = Task { await server.serve(page) }
        page.client("HEAD /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        await page.wait("the HEAD answered") { $0.output.contains("\r\n\r\n") }
        XCTAssertTrue(page.output.contains("Content-Length: 2\r\n"), page.output)
        XCTAssertTrue(page.output.hasSuffix("\r\n\r\n"), "no body: \(page.output)")
        XCTAssertFalse(page.isClosed)
        await page.close()
        await pageServing.value
    }
}

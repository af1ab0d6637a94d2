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
    /// socket's does once its buffer is full.
    final class StalledStream: UIByteStream, @unchecked Sendable {
        let incoming: AsyncThrowingStream<[UInt8], any Error>
        private let input: AsyncThrowingStream<[UInt8], any Error>.Continuation
        private let parked = Mutex<[CheckedContinuation<Void, any Error>]>([])
        private let closedFlag = Mutex(false)

        init() { (incoming, input) = AsyncThrowingStream.makeStream() }
        func client(_ text: String) { input.yield(Array(text.utf8)) }
        func send(_ bytes: [UInt8]) async throws {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let closed = closedFlag.withLock { closed in
                    if !closed { parked.withLock { $0.append(c) } }
                    return closed
                }
                if closed { c.resume(throwing: CancellationError()) }
            }
        }
        func close() async {
            closedFlag.withLock { $0 = true }
            let waiting = parked.withLock { p -> [CheckedContinuation<Void, any Error>] in
                defer { p = [] }
                return p
            }
            waiting.forEach { $0.resume(throwing: CancellationError()) }
            input.finish()
        }
        var isClosed: Bool { closedFlag.withLock { $0 } }
        var parkedWrites: Int { parked.withLock { $0.count } }
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
    }

    let policy = HTTPAccessPolicy(token: "tok", allowedHosts: ["127.0.0.1:1"])

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
        // Past the keep-alive interval on the server's clock: the comment's write parks.
        for _ in 0..<(Int(UIServer.keepAliveInterval / .milliseconds(500)) + 4) where client.parkedWrites == 0 {
            _ = await waitUntil("a sleeper", within: .seconds(10)) { clock.sleeperCount > 0 || client.parkedWrites > 0 }
            clock.advance(by: .milliseconds(500))
        }
        let parked = await waitUntil("the keep-alive parked", within: .seconds(10)) { client.parkedWrites > 0 }
        XCTAssertTrue(parked)
        // The events end (the screen stopped) while that write waits: the server gives up on
        // the connection and closes it then, with no time passing on its clock (advancing it
        // here would let the write's own timer close it first and hide a timer cancelled
        // with the keep-alive).
        continuation.finish()
        let closed = await waitUntil("the connection closed", within: .seconds(10)) { client.isClosed }
        XCTAssertTrue(closed)
        let freed = await waitUntil("the slot freed", within: .seconds(10)) { server.connectionCount == 0 }
        XCTAssertTrue(freed, "the slot freed")
        await client.close()
        if freed { await serving.value } else { serving.cancel() }
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
        _ = await waitUntil("the write parked", within: .seconds(10)) { stalled.parkedWrites > 0 }
        // Another client meanwhile: answered at once.
        let other = MemoryStream()
        let otherServing = Task { await server.serve(other) }
        other.client("GET /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n")
        await otherServing.value
        XCTAssertTrue(other.output.hasPrefix("HTTP/1.1 200 OK\r\n"), other.output)
        // Time passes on the server's clock, past the write timeout.
        let steps = Int(UIServer.writeTimeout / .milliseconds(500)) + 4
        for _ in 0..<steps where !stalled.isClosed {
            _ = await waitUntil("a sleeper", within: .seconds(10)) { clock.sleeperCount > 0 || stalled.isClosed }
            clock.advance(by: .milliseconds(500))
        }
        let freed = await waitUntil("the slot freed", within: .seconds(10)) { server.connectionCount == 0 }
        XCTAssertTrue(stalled.isClosed, "closed after the write timeout")
        if freed { await serving.value }
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
        _ = await waitUntil("the write parked", within: .seconds(10)) { stalled.parkedWrites > 0 }
        for _ in 0..<(Int(UIServer.writeTimeout / .milliseconds(500)) + 4) where !stalled.isClosed {
            _ = await waitUntil("a sleeper", within: .seconds(10)) { clock.sleeperCount > 0 || stalled.isClosed }
            clock.advance(by: .milliseconds(500))
        }
        let freed = await waitUntil("the slot freed", within: .seconds(10)) { server.connectionCount == 0 }
        if freed { await serving.value }
        await stalled.close()
    }

    /// One peer address gets `maximumConnectionsPerAddress` slots; its next connection is
    /// answered 503 saying so, and another address is still served.
    func testOneAddressCannotTakeEverySlot() async {
        // On a clock that does not move: the held connections send no request, and on the
        // system clock the request timeout would close them after 10 s of a slow run.
        let server = UIServer(policy: policy, clock: ManualClock()) { _ in .response(.text(.ok, "hi")) }
        var held: [MemoryStream] = []
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<UIServer.maximumConnectionsPerAddress {
            let s = MemoryStream()
            held.append(s)
            tasks.append(Task { await server.serve(AddressedStream(base: s, peerAddress: "192.0.2.1")) })
        }
        _ = await waitUntil("the address's slots taken", within: .seconds(10)) { server.connectionCount == UIServer.maximumConnectionsPerAddress }
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
        var held: [MemoryStream] = []
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<UIServer.maximumConnectionsPerAddress {
            let s = MemoryStream()
            held.append(s)
            tasks.append(Task { await server.serve(AddressedStream(base: s, peerAddress: "192.0.2.1")) })
        }
        // Each held connection's request watchdog is asleep on the clock.
        let count = UIServer.maximumConnectionsPerAddress
        _ = await waitUntil("the address's slots taken", within: .seconds(10)) { server.connectionCount == count && clock.sleeperCount == count }
        let stalled = StalledStream()
        let refusing = Task { await server.serve(AddressedStream(base: stalled, peerAddress: "192.0.2.1")) }
        // The 503's write is parked and its timer asleep.
        let parked = await waitUntil("the refusal parked", within: .seconds(10)) { stalled.parkedWrites > 0 && clock.sleeperCount == count + 1 }
        XCTAssertTrue(parked)
        // Less than the held connections' watchdog period, far less than the write timeout.
        clock.advance(by: .milliseconds(300))
        let closed = await waitUntil("the refused connection closed", within: .seconds(10)) { stalled.isClosed }
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
        let ended = Mutex(false)
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
        let done = await waitUntil("the HEAD answered and closed", within: .seconds(10)) { s.isClosed }
        XCTAssertTrue(s.output.hasPrefix("HTTP/1.1 200 OK\r\n"), s.output)
        XCTAssertTrue(s.output.contains("Content-Type: text/event-stream"), s.output)
        XCTAssertFalse(s.output.contains("data:"), "no event in a HEAD answer: \(s.output)")
        let letGo = await waitUntil("the stream let go", within: .seconds(10)) { ended.withLock { $0 } }
        XCTAssertTrue(letGo)
        if done { await serving.value }

        let page = MemoryStream()
        let pageServing = Task { await server.serve(page) }
        page.client("HEAD /hello?token=tok HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        _ = await waitUntil("the HEAD answered", within: .seconds(10)) { page.output.contains("\r\n\r\n") }
        XCTAssertTrue(page.output.contains("Content-Length: 2\r\n"), page.output)
        XCTAssertTrue(page.output.hasSuffix("\r\n\r\n"), "no body: \(page.output)")
        XCTAssertFalse(page.isClosed)
        await page.close()
        await pageServing.value
    }
}

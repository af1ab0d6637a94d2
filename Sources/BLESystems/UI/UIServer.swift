import BLEHTTP
import BLERuntime
import Synchronization

/// A connection the UI server reads requests from and writes responses to (a TCP socket in
/// `ble ui`, an in-memory pair in tests).
public protocol UIByteStream: Sendable {
    /// The bytes the browser sends, chunk by chunk; ends when it closes.
    var incoming: AsyncThrowingStream<[UInt8], any Error> { get }
    /// Writes `bytes`, waiting while the peer does not read (backpressure).
    func send(_ bytes: [UInt8]) async throws
    /// Closes the connection.
    func close() async
    /// The peer's address without its port ("192.0.2.7", "::1"), which the per-address
    /// connection limit counts by; nil when unknown (not counted).
    var peerAddress: String? { get }
}

extension UIByteStream {
    /// Unknown unless the stream says (in-memory streams in tests).
    public var peerAddress: String? { nil }
}

/// What the application answers a request with.
public enum UIReply: Sendable {
    /// One response; the connection may serve more requests after it.
    case response(HTTPResponse)
    /// A Server-Sent Events stream: each element is one encoded event. The connection serves
    /// nothing else and closes when the stream ends or the browser goes away.
    case events(AsyncStream<[UInt8]>)
}

/// The HTTP side of `ble ui`: one task per connection, each parsing requests with
/// `HTTPRequestParser`, admitting them by `HTTPAccessPolicy`, and writing what `handler` replies.
/// Bounded so a slow or hostile client cannot stall the radio or other clients: at most
/// `maximumConnections` at once and `maximumConnectionsPerAddress` from one peer address (more
/// are answered 503 and closed at once, a refusal's write bounded by `refusalWriteTimeout`), a connection that does not complete a request within
/// `requestTimeout` is closed (408), request sizes are the parser's limits, and every write
/// waits only on its own connection and at most `writeTimeout`: a client that stops reading
/// loses its connection (and its slot) instead of holding a write, and with it an event
/// stream, for ever.
public final class UIServer: Sendable {
    /// Connections served at once.
    public static let maximumConnections = 32
    /// How long a connection may take to send a whole request (headers and body).
    public static let requestTimeout: Duration = .seconds(10)
    /// How often an idle event stream gets a keep-alive comment.
    public static let keepAliveInterval: Duration = .seconds(15)
    /// Connections served at once from one peer address: one machine on the LAN (or a page
    /// opening streams in a loop) cannot take every slot.
    public static let maximumConnectionsPerAddress = 16
    /// How long one write may wait for the client to read (a full socket buffer): past it the
    /// connection is closed.
    public static let writeTimeout: Duration = .seconds(10)
    /// How long the 503 to a connection over a limit may wait to be written: it is a hundred
    /// bytes into a new socket's empty buffer, so only a client that does not read waits, and
    /// a flood of those must not keep a task each for `writeTimeout`.
    public static let refusalWriteTimeout: Duration = .milliseconds(250)

    private let policy: HTTPAccessPolicy
    private let clock: any BLEClock
    private let handler: @Sendable (HTTPRequest) async -> UIReply
    private let open = Mutex(Slots())

    /// The connections being served, in all and by peer address.
    private struct Slots {
        var count = 0
        var byAddress: [String: Int] = [:]
    }

    /// A server admitting requests by `policy` and answering them with `handler`; timeouts are
    /// on `clock`.
    public init(policy: HTTPAccessPolicy, clock: any BLEClock = SystemClock(), handler: @escaping @Sendable (HTTPRequest) async -> UIReply) {
        self.policy = policy
        self.clock = clock
        self.handler = handler
    }

    /// How many connections are being served now.
    public var connectionCount: Int { open.withLock { $0.count } }

    /// Serves one connection until it closes. Returns when it is done.
    public func serve(_ raw: some UIByteStream) async {
        let peer = raw.peerAddress
        let refusal = open.withLock { slots -> String? in
            guard slots.count < Self.maximumConnections else { return "too many connections\n" }
            if let peer {
                guard slots.byAddress[peer, default: 0] < Self.maximumConnectionsPerAddress else { return "too many connections from \(peer)\n" }
                slots.byAddress[peer, default: 0] += 1
            }
            slots.count += 1
            return nil
        }
        if let refusal {
            // Answered and closed at once: the write waits `refusalWriteTimeout` at most.
            let refused = TimedStream(raw, clock: clock, limit: Self.refusalWriteTimeout)
            try? await refused.send(HTTPResponse.text(.serviceUnavailable, refusal).encode(keepAlive: false))
            await refused.close()
            return
        }
        let connection = TimedStream(raw, clock: clock, limit: Self.writeTimeout)
        defer {
            open.withLock { slots in
                slots.count -= 1
                if let peer {
                    slots.byAddress[peer, default: 1] -= 1
                    if slots.byAddress[peer] == 0 { slots.byAddress[peer] = nil }
                }
            }
        }
        // The request deadline: armed while a request is incomplete, closing the connection
        // when it passes (a client that sends a header byte a minute cannot hold a slot).
        let deadline = Mutex<Duration?>(clock.now() + Self.requestTimeout)
        let clock = self.clock
        let watchdog = Task(executorPreference: clock.taskExecutor) {
            while !Task.isCancelled {
                do { try await clock.sleep(for: .milliseconds(500)) } catch { return }
                if let d = deadline.withLock({ $0 }), clock.now() >= d {
                    try? await connection.send(HTTPResponse.text(.requestTimeout, "request took too long\n").encode(keepAlive: false))
                    await connection.close()
                    return
                }
            }
        }
        defer { watchdog.cancel() }
        var parser = HTTPRequestParser()
        do {
            for try await chunk in connection.incoming {
                let requests: [HTTPRequest]
                do {
                    requests = try parser.push(chunk)
                } catch {
                    try? await connection.send(HTTPResponse.refusal(error).encode(keepAlive: false))
                    break
                }
                for request in requests {
                    deadline.withLock { $0 = nil }
                    guard try await answer(request, on: connection) else {
                        await connection.close()
                        return
                    }
                }
                // A finished request starts a new wait (also for an idle keep-alive connection);
                // bytes of an unfinished one do not extend it.
                let now = clock.now()
                deadline.withLock { if !requests.isEmpty || $0 == nil { $0 = now + Self.requestTimeout } }
            }
        } catch {
            // The browser went away or the connection was closed: nothing to answer.
        }
        await connection.close()
    }

    /// Answers one request; false when the connection is to close after it.
    private func answer(_ request: HTTPRequest, on connection: TimedStream<some UIByteStream>) async throws -> Bool {
        if case let .refuse(response) = policy.check(request) {
            try await connection.send(response.encode(keepAlive: false))
            return false
        }
        switch await handler(request) {
        case var .response(response):
            response.headers += Self.securityHeaders
            try await connection.send(response.encode(keepAlive: request.keepsAlive, head: request.method == "HEAD"))
            return request.keepsAlive
        case let .events(stream):
            try await connection.send(ServerSentEvents.head())
            // HEAD: the head a GET would get, and no body (RFC 9110 §9.3.2); the stream is let go
            // unread, which ends it (a subscription ends with its stream).
            if request.method == "HEAD" { return false }
            // A comment every `keepAliveInterval`: a browser that went away is noticed by the
            // failed write even when no event comes, and the stream and its slot end.
            let clock = self.clock
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in stream {
                        do { try await connection.send(event) } catch { return }
                    }
                }
                group.addTask {
                    while true {
                        do {
                            try await clock.sleep(for: Self.keepAliveInterval)
                            try await connection.send(ServerSentEvents.keepAlive)
                        } catch { return }
                    }
                }
                await group.next()
                group.cancelAll()
            }
            return false
        }
    }

    /// Sent with every response: nothing from elsewhere, no framing by other sites, no sniffing.
    static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]
}

import BLEHTTP
import XCTest

/// The request parser on fixed input (RFC 9112): whole, split at every byte, pipelined, and
/// every refusal with the status it owes.
final class HTTPRequestParserTests: XCTestCase {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func parse(_ s: String, limits: HTTPRequestParser.Limits = .init()) throws(HTTPParseError) -> [HTTPRequest] {
        var p = HTTPRequestParser(limits: limits)
        return try p.push(bytes(s))
    }

    func refusal(_ s: String, limits: HTTPRequestParser.Limits = .init(), file: StaticString = #filePath, line: UInt = #line) -> HTTPStatus? {
        do {
            _ = try parse(s, limits: limits)
            XCTFail("accepted: \(s.debugDescription)", file: file, line: line)
            return nil
        } catch {
            return error.status
        }
    }

    func testAGetWithQueryAndHeaders() throws {
        let r = try XCTUnwrap(try parse("GET /devices/C0%3A11?token=a%2Bb+c&x HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nCookie: a=1; ble_ui_token=t0k\r\n\r\n").first)
        XCTAssertEqual(r.method, "GET")
        XCTAssertEqual(r.path, "/devices/C0:11")
        XCTAssertEqual(r.queryValue("token"), "a+b c")
        XCTAssertEqual(r.queryValue("x"), "")
        XCTAssertEqual(r.header("host"), "127.0.0.1:8765")
        XCTAssertEqual(r.minorVersion, 1)
        XCTAssertTrue(r.keepsAlive)
    }

    func testSplitAtEveryByteAndPipelinedRequestsComeOutWholeAndInOrder() throws {
        let text = "POST /api/read HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.0\n\n\r\nGET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        var p = HTTPRequestParser()
        var got: [HTTPRequest] = []
        for b in bytes(text) { got += try p.push([b]) }
        XCTAssertEqual(got.map(\.path), ["/api/read", "/b", "/c"])
        XCTAssertEqual(got[0].body, bytes("hello"))
        XCTAssertFalse(got[1].keepsAlive, "HTTP/1.0 without keep-alive closes")
        XCTAssertFalse(got[2].keepsAlive)
        XCTAssertEqual(p.bufferedCount, 0)
    }

    func testEveryRefusalHasItsStatus() {
        XCTAssertEqual(refusal("GET /x HTTP/1.1\r\n\r\n"), .badRequest, "HTTP/1.1 needs Host")
        XCTAssertEqual(refusal("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("GET http://evil/ HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequest, "only origin form")
        XCTAssertEqual(refusal("GET  /x HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("G(T /x HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("GET /x HTTP/2.0\r\nHost: a\r\n\r\n"), .httpVersionNotSupported)
        XCTAssertEqual(refusal("GET /x HTTX/1.1\r\nHost: a\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("GET /x HTTP/1.1\r\nHost : a\r\n\r\n"), .badRequest, "no space before the colon")
        XCTAssertEqual(refusal("GET /x HTTP/1.1\r\nHost a\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 2\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), .badRequest)
        XCTAssertEqual(refusal("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), .notImplemented)
        var small = HTTPRequestParser.Limits()
        small.body = 4
        XCTAssertEqual(refusal("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", limits: small), .contentTooLarge)
        small = HTTPRequestParser.Limits()
        small.requestLine = 16
        XCTAssertEqual(refusal("GET /" + String(repeating: "a", count: 40), limits: small), .uriTooLong, "refused before the line ends")
        small = HTTPRequestParser.Limits()
        small.headerCount = 2
        XCTAssertEqual(refusal("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n", limits: small), .headerFieldsTooLarge)
        small = HTTPRequestParser.Limits()
        small.headerBlock = 64
        XCTAssertEqual(refusal("GET / HTTP/1.1\r\nHost: a\r\nA: " + String(repeating: "b", count: 100), limits: small), .headerFieldsTooLarge,
                       "refused before the header ends")
    }

    /// Security review: a flood of empty lines (no token needed) is refused, in linear time,
    /// instead of being skipped for ever.
    func testAFloodOfEmptyLinesIsRefused() {
        var p = HTTPRequestParser()
        XCTAssertThrowsError(try p.push([UInt8](repeating: 0x0A, count: 65_536))) { error in
            XCTAssertEqual((error as? HTTPParseError)?.status, .badRequest)
        }
        var q = HTTPRequestParser()
        XCTAssertNoThrow(try q.push(bytes("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")), "a few are fine")
    }

    func testAfterARefusalEveryPushFails() {
        var p = HTTPRequestParser()
        XCTAssertThrowsError(try p.push(bytes("GET /x HTTP/2.0\r\nHost: a\r\n\r\n")))
        XCTAssertThrowsError(try p.push(bytes("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")))
    }

    func testResponsesAndEventsCannotBeSplitByTheirContent() {
        let r = HTTPResponse(.ok, headers: [("Content-Type", "text/html"), ("X-Evil", "a\r\nSet-Cookie: x=1"), ("Content-Length", "99")],
                             body: bytes("hi"))
        XCTAssertEqual(String(decoding: r.encode(keepAlive: false), as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
        XCTAssertEqual(String(decoding: r.encode(keepAlive: true, head: true), as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\n")
        XCTAssertEqual(String(decoding: ServerSentEvents.event("a\nb\r\ndata: x", name: "scan", id: "7"), as: UTF8.self),
                       "event: scan\nid: 7\ndata: a\ndata: b\ndata: data: x\n\n")
        XCTAssertEqual(String(decoding: ServerSentEvents.event("x", name: "a\nb"), as: UTF8.self), "data: x\n\n", "a newline in the name drops it")
    }
}

/// The UI's access rules: the Host, the token in the query or the header (never a cookie),
/// Fetch Metadata, POSTs with the header.
final class HTTPAccessPolicyTests: XCTestCase {
    let policy = HTTPAccessPolicy(token: "s3cret", allowedHosts: HTTPAccessPolicy.hosts(boundTo: "127.0.0.1", port: 8765))

    func request(_ method: String = "GET", target: String = "/devices", host: String? = "127.0.0.1:8765", headers: [(name: String, value: String)] = []) -> HTTPRequest {
        HTTPRequest(method: method, target: target, headers: (host.map { [("Host", $0)] } ?? []) + headers)
    }

    func status(_ d: HTTPAccessPolicy.Decision) -> Int? {
        if case let .refuse(r) = d { return r.status.code }
        return nil
    }

    func testTheTokenInTheQueryOrTheHeaderAdmitsAGet() {
        XCTAssertEqual(policy.check(request(target: "/?token=s3cret")), .allow)
        XCTAssertEqual(policy.check(request(host: "localhost:8765", headers: [("X-BLE-Token", "s3cret")])), .allow)
        XCTAssertEqual(policy.check(request(target: "/api/events?token=s3cret", headers: [("Sec-Fetch-Site", "same-origin")])), .allow)
        XCTAssertEqual(policy.check(request(target: "/?token=s3cret", headers: [("Sec-Fetch-Site", "none")])), .allow, "an address typed or opened")
    }

    /// Cookies are shared by every port of 127.0.0.1, so one would reach other users' servers
    /// there: a cookie, even with the right token, admits nothing.
    func testACookieIsNotATokenAndOtherSitesAreRefused() {
        XCTAssertEqual(status(policy.check(request(headers: [("Cookie", "ble_ui_token=s3cret")]))), 403)
        XCTAssertEqual(status(policy.check(request(target: "/?token=s3cret", headers: [("Sec-Fetch-Site", "same-site")]))), 403,
                       "a page on another port of this host is the same site, not the same origin")
        XCTAssertEqual(status(policy.check(request("POST", target: "/api/connect", headers: [("X-BLE-Token", "s3cret"), ("Sec-Fetch-Site", "cross-site")]))), 403)
        XCTAssertEqual(status(policy.check(request(target: "/api/devices?token=s3cret", headers: [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate")]))), 403,
                       "the API is not a page to open")
        XCTAssertEqual(policy.check(request(target: "/?token=s3cret", headers: [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate")])), .allow,
                       "opening a page from elsewhere (a link, the --open file) with the token")
        XCTAssertEqual(status(policy.check(request(target: "/?token=wrong", headers: [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate")]))), 403)
    }

    func testWithoutTheTokenOrWithAWrongOneItIsRefused() {
        XCTAssertEqual(status(policy.check(request())), 403)
        XCTAssertEqual(status(policy.check(request(target: "/?token=s3cre"))), 403)
        XCTAssertEqual(status(policy.check(request(target: "/?token=s3cret0"))), 403)
        XCTAssertEqual(status(policy.check(request(headers: [("X-BLE-Token", "wrong")]))), 403)
    }

    func testAForeignHostIsRefusedEvenWithTheToken() {
        XCTAssertEqual(status(policy.check(request(target: "/?token=s3cret", host: "evil.example:8765"))), 421, "DNS rebinding")
        XCTAssertEqual(status(policy.check(request(target: "/?token=s3cret", host: "127.0.0.1:9999"))), 421)
        XCTAssertEqual(status(policy.check(request(target: "/?token=s3cret", host: nil))), 421)
    }

    func testAPostNeedsTheHeaderNotTheQuery() {
        XCTAssertEqual(status(policy.check(request("POST", target: "/api/connect?token=s3cret"))), 403)
        XCTAssertEqual(policy.check(request("POST", target: "/api/connect", headers: [("X-BLE-Token", "s3cret")])), .allow)
        XCTAssertEqual(status(policy.check(request("DELETE", target: "/api/x", headers: [("X-BLE-Token", "s3cret")]))), 405)
    }
}

/// An HTTP status code with its reason phrase (RFC 9110 §15).
public struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    /// The three-digit code.
    public var code: Int
    /// The reason phrase sent after it.
    public var reason: String

    /// A status given by code and phrase.
    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// 200 OK.
    public static let ok = HTTPStatus(200, "OK")
    /// 204 No Content.
    public static let noContent = HTTPStatus(204, "No Content")
    /// 303 See Other.
    public static let seeOther = HTTPStatus(303, "See Other")
    /// 400 Bad Request.
    public static let badRequest = HTTPStatus(400, "Bad Request")
    /// 403 Forbidden.
    public static let forbidden = HTTPStatus(403, "Forbidden")
    /// 404 Not Found.
    public static let notFound = HTTPStatus(404, "Not Found")
    /// 405 Method Not Allowed.
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    /// 408 Request Timeout.
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    /// 413 Content Too Large.
    public static let contentTooLarge = HTTPStatus(413, "Content Too Large")
    /// 414 URI Too Long.
    public static let uriTooLong = HTTPStatus(414, "URI Too Long")
    /// 421 Misdirected Request: the Host is not this server's.
    public static let misdirectedRequest = HTTPStatus(421, "Misdirected Request")
    /// 431 Request Header Fields Too Large.
    public static let headerFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    /// 500 Internal Server Error.
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    /// 501 Not Implemented.
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    /// 503 Service Unavailable.
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    /// 505 HTTP Version Not Supported.
    public static let httpVersionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")

    /// "404 Not Found".
    public var description: String { "\(code) \(reason)" }
}

/// A response to encode: status, header fields and a body sent with Content-Length.
public struct HTTPResponse: Sendable, Equatable {
    /// The status line's code and phrase.
    public var status: HTTPStatus
    /// Header fields; Content-Length and Connection are added by `encode`.
    public var headers: [(name: String, value: String)]
    /// The body (not sent for HEAD requests).
    public var body: [UInt8]

    /// A response with `status`, `headers` and `body`.
    public init(_ status: HTTPStatus, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A text/plain response.
    public static func text(_ status: HTTPStatus, _ text: String) -> HTTPResponse {
        HTTPResponse(status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    /// The response for a request that could not be parsed.
    public static func refusal(_ error: HTTPParseError) -> HTTPResponse {
        .text(error.status, error.status.description + "\n")
    }

    /// The bytes on the wire (RFC 9112 §4, §6): status line, the fields, Content-Length, and
    /// `Connection: close` when `keepAlive` is false; the body unless `head`. Header names and
    /// values with CR or LF are dropped, so no caller can split the response.
    public func encode(keepAlive: Bool, head: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        for (name, value) in headers where Self.safe(name) && Self.safe(value) {
            let lower = name.lowercased()
            if lower == "content-length" || lower == "connection" { continue }
            text += "\(name): \(value)\r\n"
        }
        text += "Content-Length: \(body.count)\r\n"
        if !keepAlive { text += "Connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8) + (head ? [] : body)
    }

    private static func safe(_ s: String) -> Bool { !s.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 } }

    /// Responses compare by every field.
    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// Server-Sent Events (the WHATWG HTML standard, §9.2 "Server-sent events"): the response head
/// that opens a stream, and the framing of each event.
public enum ServerSentEvents {
    /// The head of an event stream: status 200, `text/event-stream`, no caching, and no
    /// Content-Length (the stream lasts until either side closes).
    public static func head() -> [UInt8] {
        Array(("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
               + "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n").utf8)
    }

    /// One event: `event:` when named, `id:` when given, a `data:` line per line of `data` (so a
    /// newline in it cannot end the event early or inject a field), then a blank line.
    public static func event(_ data: String, name: String? = nil, id: String? = nil) -> [UInt8] {
        var text = ""
        if let name, !name.contains(where: \.isNewline) { text += "event: \(name)\n" }
        if let id, !id.contains(where: \.isNewline), !id.contains("\u{0}") { text += "id: \(id)\n" }
        for line in data.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            text += "data: \(line)\n"
        }
        text += "\n"
        return Array(text.utf8)
    }

    /// A comment line, sent now and then so proxies and browsers keep an idle stream open.
    public static let keepAlive: [UInt8] = Array(": keep-alive\n\n".utf8)
}

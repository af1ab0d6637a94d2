/// The status a malformed or refused request is answered with, and why.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The response status (400, 413, 414, 431, 501 or 505).
    public var status: HTTPStatus
    /// What was wrong, for logs.
    public var reason: String

    /// A refusal with `status` because of `reason`.
    public init(_ status: HTTPStatus, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    /// "400 Bad Request: reason".
    public var description: String { "\(status): \(reason)" }
}

/// HTTP/1.1 request parsing (RFC 9112), sans-IO: bytes in, whole requests out, pipelined ones in
/// order. Everything is bounded (request line, header block, number of fields, body), so a
/// client cannot make the server hold more than `Limits` allow for it; what exceeds them, or
/// breaks the grammar, is an `HTTPParseError` with the status to answer before closing. Request
/// bodies come only with Content-Length: `Transfer-Encoding` is refused (501), which also rules
/// out request smuggling by conflicting framing (RFC 9112 §6.3).
public struct HTTPRequestParser: Sendable {
    /// Bounds on one request.
    public struct Limits: Sendable, Equatable {
        /// Octets of the request line (414 beyond).
        public var requestLine = 8192
        /// Octets of the whole header block, request line included (431 beyond).
        public var headerBlock = 16_384
        /// Header fields (431 beyond).
        public var headerCount = 64
        /// Octets of body (413 beyond).
        public var body = 65_536

        /// The defaults: 8 KiB line, 16 KiB of header, 64 fields, 64 KiB of body.
        public init() {}
    }

    /// The bounds this parser enforces.
    public let limits: Limits
    private var buffer: [UInt8] = []
    private var failure: HTTPParseError?
    /// Octets of empty lines skipped on this connection.
    private var skippedEmptyLines = 0
    /// The most octets of empty lines a connection may send between requests, in all.
    static let maximumEmptyLineOctets = 1024
    /// A request whose header is in, waiting for `bodyLength` octets of body.
    private var pending: (request: HTTPRequest, bodyLength: Int)?

    /// A parser with `limits`.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Octets taken but not yet part of a whole request.
    public var bufferedCount: Int { buffer.count }

    /// Takes the next bytes from the connection and returns the requests they complete. After a
    /// failure every call fails the same way: the connection is to be answered and closed.
    public mutating func push(_ bytes: [UInt8]) throws(HTTPParseError) -> [HTTPRequest] {
        if let failure { throw failure }
        buffer += bytes
        var requests: [HTTPRequest] = []
        do {
            while let request = try nextRequest() { requests.append(request) }
        } catch {
            failure = error
            buffer = []
            throw error
        }
        return requests
    }

    private mutating func nextRequest() throws(HTTPParseError) -> HTTPRequest? {
        if pending == nil {
            // Empty lines before a request are ignored (RFC 9112 §2.2), a few of them: a flood of
            // them is refused rather than skipped for ever. Skipped by index, in linear time.
            var skip = 0
            while skip < buffer.count, buffer[skip] == 0x0A || (buffer[skip] == 0x0D && skip + 1 < buffer.count && buffer[skip + 1] == 0x0A) {
                skip += buffer[skip] == 0x0D ? 2 : 1
            }
            skippedEmptyLines += skip
            guard skippedEmptyLines <= Self.maximumEmptyLineOctets else {
                throw HTTPParseError(.badRequest, "over \(Self.maximumEmptyLineOctets) octets of empty lines")
            }
            if skip > 0 { buffer.removeFirst(skip) }
            guard let end = Self.headerEnd(buffer) else {
                if !buffer.contains(0x0A) && buffer.count > limits.requestLine {
                    throw HTTPParseError(.uriTooLong, "request line over \(limits.requestLine) octets")
                }
                if buffer.count > limits.headerBlock { throw HTTPParseError(.headerFieldsTooLarge, "header over \(limits.headerBlock) octets") }
                return nil
            }
            guard end.headerLength <= limits.headerBlock else {
                throw HTTPParseError(.headerFieldsTooLarge, "header over \(limits.headerBlock) octets")
            }
            let head = Array(buffer[..<end.headerLength])
            buffer.removeFirst(end.bodyStart)
            pending = try parseHead(head)
        }
        guard let (request, length) = pending, buffer.count >= length else { return nil }
        var whole = request
        whole.body = Array(buffer[..<length])
        buffer.removeFirst(length)
        pending = nil
        return whole
    }

    /// Where the header block ends (its length without the blank line) and the body starts.
    private static func headerEnd(_ b: [UInt8]) -> (headerLength: Int, bodyStart: Int)? {
        var i = 0
        while i < b.count {
            if b[i] == 0x0A {
                if i + 1 < b.count, b[i + 1] == 0x0A { return (i, i + 2) }
                if i + 2 < b.count, b[i + 1] == 0x0D, b[i + 2] == 0x0A { return (i, i + 3) }
            }
            i += 1
        }
        return nil
    }

    private func parseHead(_ head: [UInt8]) throws(HTTPParseError) -> (HTTPRequest, Int) {
        // Lines end in CRLF or a bare LF (RFC 9112 §2.2); a bare CR elsewhere is refused.
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> ArraySlice<UInt8> in
            line.last == 0x0D ? line.dropLast() : line
        }
        guard !lines.isEmpty else { throw HTTPParseError(.badRequest, "no request line") }
        let first = lines.removeFirst()
        guard first.count <= limits.requestLine else { throw HTTPParseError(.uriTooLong, "request line over \(limits.requestLine) octets") }
        let parts = first.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, let method = String(validating: parts[0], as: UTF8.self), Self.isToken(parts[0]),
              let target = String(validating: parts[1], as: UTF8.self), let version = String(validating: parts[2], as: UTF8.self) else {
            throw HTTPParseError(.badRequest, "malformed request line")
        }
        guard target.first == "/" || (target == "*" && method == "OPTIONS"),
              !parts[1].contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw HTTPParseError(.badRequest, "request target must be in origin form")
        }
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            guard version.hasPrefix("HTTP/"), version.count == 8 else { throw HTTPParseError(.badRequest, "malformed version '\(version)'") }
            throw HTTPParseError(.httpVersionNotSupported, "\(version) is not HTTP/1.x")
        }
        guard lines.count <= limits.headerCount else { throw HTTPParseError(.headerFieldsTooLarge, "over \(limits.headerCount) header fields") }
        var headers: [(name: String, value: String)] = []
        var contentLength: Int?
        for line in lines {
            // Obsolete line folding is refused (RFC 9112 §5.2).
            guard let c = line.first, c != 0x20, c != 0x09 else { throw HTTPParseError(.badRequest, "folded or empty header line") }
            guard let colon = line.firstIndex(of: 0x3A) else { throw HTTPParseError(.badRequest, "header line without a colon") }
            let nameBytes = line[line.startIndex..<colon]
            // No whitespace between the name and the colon (RFC 9112 §5.1).
            guard Self.isToken(nameBytes), let name = String(validating: nameBytes, as: UTF8.self) else {
                throw HTTPParseError(.badRequest, "malformed header name")
            }
            let valueBytes = line[(colon + 1)...]
            guard !valueBytes.contains(where: { $0 == 0x00 || $0 == 0x0D || $0 == 0x0A }),
                  let raw = String(validating: valueBytes, as: UTF8.self) else {
                throw HTTPParseError(.badRequest, "malformed value of \(name)")
            }
            let value = raw[...].trimmingSpaces
            switch name.lowercased() {
            case "content-length":
                // Digits only; several must agree (RFC 9110 §8.6).
                for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let text = item.trimmingSpaces
                    guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), text.utf8.count <= 9, let n = Int(text) else {
                        throw HTTPParseError(.badRequest, "malformed Content-Length")
                    }
                    if let c = contentLength, c != n { throw HTTPParseError(.badRequest, "conflicting Content-Length values") }
                    contentLength = n
                }
            case "transfer-encoding":
                throw HTTPParseError(.notImplemented, "Transfer-Encoding in a request is not accepted")
            default:
                break
            }
            headers.append((name, value))
        }
        if minor == 1, !headers.contains(where: { $0.name.lowercased() == "host" }) {
            throw HTTPParseError(.badRequest, "HTTP/1.1 request without Host")
        }
        if headers.filter({ $0.name.lowercased() == "host" }).count > 1 {
            throw HTTPParseError(.badRequest, "more than one Host field")
        }
        let length = contentLength ?? 0
        guard length <= limits.body else { throw HTTPParseError(.contentTooLarge, "body of \(length) octets over \(limits.body)") }
        return (HTTPRequest(method: method, target: target, minorVersion: minor, headers: headers), length)
    }

    /// RFC 9110 §5.6.2 token: one or more tchar.
    static func isToken(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { b in
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"): return true
            default: return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
            }
        }
    }
}

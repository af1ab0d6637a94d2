/// One HTTP/1.1 request as the parser read it (RFC 9112 §2–§6; semantics RFC 9110): method,
/// target split into path and query, version, header fields in order, and the body.
public struct HTTPRequest: Sendable, Equatable {
    /// The method token, as sent (`GET`, `POST`, …; RFC 9110 §9 says methods are case-sensitive).
    public var method: String
    /// The request target as sent (origin form: `/path?query`).
    public var target: String
    /// The path part of the target, percent-decoded.
    public var path: String
    /// The query's `name=value` pairs, percent-decoded (`+` as space), in order.
    public var query: [(name: String, value: String)]
    /// The minor version of HTTP/1.x: 1 for HTTP/1.1, 0 for HTTP/1.0.
    public var minorVersion: Int
    /// The header fields in order; names as sent (compare them case-insensitively).
    public var headers: [(name: String, value: String)]
    /// The body (Content-Length octets; empty without one).
    public var body: [UInt8]

    /// A request given in code (tests, the server's own use).
    public init(method: String, target: String, minorVersion: Int = 1, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        let (path, query) = HTTPTarget.split(target)
        self.path = path
        self.query = query
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive), if present.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// The value of query parameter `name`, if present.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// Whether the connection stays open after the response: HTTP/1.1 unless `Connection:
    /// close`; HTTP/1.0 only with `Connection: keep-alive` (RFC 9112 §9.3).
    public var keepsAlive: Bool {
        let tokens = (header("Connection") ?? "").lowercased().split(separator: ",").map { $0.trimmingSpaces }
        if minorVersion >= 1 { return !tokens.contains("close") }
        return tokens.contains("keep-alive")
    }

    /// Requests compare by every field.
    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.minorVersion == b.minorVersion && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (OWS, RFC 9110 §5.6.3).
    var trimmingSpaces: String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

/// Splitting and decoding a request target (RFC 3986 §3.3–§3.4, form encoding of the query).
public enum HTTPTarget {
    /// The percent-decoded path and the decoded query pairs of an origin-form target.
    public static func split(_ target: String) -> (path: String, query: [(name: String, value: String)]) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = percentDecoded(String(parts.first ?? ""), plusIsSpace: false) ?? String(parts.first ?? "")
        guard parts.count == 2 else { return (path, []) }
        var query: [(name: String, value: String)] = []
        for item in parts[1].split(separator: "&") where !item.isEmpty {
            let kv = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecoded(String(kv[0]), plusIsSpace: true) ?? String(kv[0])
            let value = kv.count == 2 ? (percentDecoded(String(kv[1]), plusIsSpace: true) ?? String(kv[1])) : ""
            query.append((name, value))
        }
        return (path, query)
    }

    /// `text` with `%XX` escapes decoded (and `+` as a space in a query); nil when an escape is
    /// malformed or the result is not UTF-8.
    public static func percentDecoded(_ text: String, plusIsSpace: Bool) -> String? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.first {
            bytes = bytes.dropFirst()
            if b == UInt8(ascii: "%") {
                guard bytes.count >= 2, let hi = hexValue(bytes[bytes.startIndex]), let lo = hexValue(bytes[bytes.startIndex + 1]) else { return nil }
                out.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
            } else if plusIsSpace && b == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else {
                out.append(b)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

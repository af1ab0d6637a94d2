/// Who may use a local web UI ("safe by default"), decided per request, sans-IO:
///
/// - the `Host` field must name this server (`allowedHosts`), or a page on another origin
///   could reach it through a DNS name rebound to 127.0.0.1 (RFC 9110 §7.2 says a server may
///   refuse a Host it does not serve: 421);
/// - every request carries the per-run token, in the query (`?token=`, how pages, their assets
///   and event streams are addressed) or in `X-BLE-Token` (the page script's API calls), so
///   another user of the machine, or a page in the same browser, cannot drive the radio (403).
///   There is no cookie: cookies are not kept apart by port (RFC 6265 §8.5), so any other
///   server on 127.0.0.1, another user's included, would be sent one;
/// - a browser's request from another site, or from another port of this host (which is the
///   same site), is refused whatever it carries (`Sec-Fetch-Site`, Fetch Metadata), except the
///   navigation that opens a page (it still needs the token, and changes nothing);
/// - requests that change anything are POSTs carrying the token in `X-BLE-Token` (a cross-site
///   form cannot send a header); GET and HEAD change nothing; other methods get 405.
public struct HTTPAccessPolicy: Sendable {
    /// The header that carries the token in a script's requests (a POST's only place for it).
    public static let tokenHeader = "X-BLE-Token"

    /// The per-run secret.
    public let token: String
    /// `host:port` forms this server answers to, lower case (e.g. `127.0.0.1:8765`,
    /// `localhost:8765`, `[::1]:8765`).
    public let allowedHosts: Set<String>

    /// A policy for `token` on a server reached as `allowedHosts` (`host:port` forms, each
    /// taken in `HTTPHostName`'s canonical form, as every request's `Host` is).
    public init(token: String, allowedHosts: Set<String>) {
        self.token = token
        self.allowedHosts = Set(allowedHosts.map { HTTPHostName.authority($0) ?? $0.lowercased() })
    }

    /// The `host:port` names a server bound to `host` answers to: that address, and for the
    /// loopback addresses also `localhost`. `host` may be an IPv6 address in any spelling, in
    /// brackets or not.
    public static func hosts(boundTo host: String, port: UInt16) -> Set<String> {
        var names: Set<String> = [HTTPHostName.join(host, port: port)]
        if ["127.0.0.1", "::1", "localhost"].contains(HTTPHostName.canonical(host)) {
            names.formUnion(["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"])
        }
        return names
    }

    /// Whether `host` binds every interface (`0.0.0.0`, `::` in any spelling): the server is
    /// then reachable from the network, not only from this machine.
    public static func isWildcard(_ host: String) -> Bool {
        ["0.0.0.0", "::"].contains(HTTPHostName.canonical(host))
    }

    /// Whether `host` is a loopback address or name (`::1` in any spelling, 127.0.0.0/8, also
    /// IPv4-mapped): only this machine reaches it.
    public static func isLoopback(_ host: String) -> Bool {
        let name = HTTPHostName.canonical(host)
        if name == "localhost" || name == "::1" { return true }
        let v4 = name.hasPrefix("::ffff:") ? String(name.dropFirst(7)) : name
        return HTTPHostName.ipv4Octets(v4)?.first == 127
    }

    /// The `host:port` names a server bound to `host` answers to, for a bind that the
    /// loopback names alone do not cover: bound to every interface (`isWildcard`), each of the
    /// machine's `interfaceAddresses` and the loopback names (never `0.0.0.0` itself, which
    /// names no machine); bound to one address, what `hosts(boundTo:port:)` says. `names` are
    /// added in either case: the names (a DNS or mDNS name, `pi.local`) by which others reach
    /// this machine, which no interface says (`ble ui --allow-host`).
    public static func hosts(boundTo host: String, port: UInt16, interfaceAddresses: [String], names: [String]) -> Set<String> {
        var out: Set<String>
        if isWildcard(host) {
            out = hosts(boundTo: "127.0.0.1", port: port)
            for address in interfaceAddresses where !address.isEmpty { out.insert(authority(address, port: port)) }
        } else {
            out = hosts(boundTo: host, port: port)
        }
        for name in names where !name.isEmpty { out.insert(authority(name, port: port)) }
        return out
    }

    /// `name:port`, with an IPv6 address in brackets (RFC 3986 §3.2.2), as a `Host` field has
    /// it, the name in `HTTPHostName`'s canonical form.
    public static func authority(_ name: String, port: UInt16) -> String {
        HTTPHostName.join(name, port: port)
    }

    /// What to do with a request.
    public enum Decision: Sendable, Equatable {
        /// Serve it.
        case allow
        /// Answer with this and serve nothing.
        case refuse(HTTPResponse)
    }

    /// The `Sec-Fetch-Site` values of a request this server's own pages make, or a person
    /// makes by opening an address (Fetch Metadata Request Headers, `none`).
    static let ownSites: Set<String> = ["same-origin", "none"]

    /// The decision for `request`.
    public func check(_ request: HTTPRequest) -> Decision {
        // A browser leaves out HTTP's default port, 80 (RFC 3986 §6.2.3): `192.168.1.7` is
        // `192.168.1.7:80` and `[::1]` is `[::1]:80`.
        guard let host = request.header("Host").flatMap({ HTTPHostName.authority($0) }), allowedHosts.contains(host) else {
            return .refuse(.text(.misdirectedRequest, "this server does not answer to that Host\n"))
        }
        // A browser's request from elsewhere is refused, except for opening a page (a link
        // with the token followed from another page, or the file `ble ui --open` starts the
        // browser on): a top-level GET navigation that changes nothing (the resource isolation
        // policy of Fetch Metadata).
        if let site = request.header("Sec-Fetch-Site")?.lowercased(), !Self.ownSites.contains(site) {
            let navigation = request.header("Sec-Fetch-Mode")?.lowercased() == "navigate" && request.method == "GET"
                && !request.path.hasPrefix("/api/") && !request.path.hasPrefix("/static/")
            guard navigation else { return .refuse(.text(.forbidden, "requests from other sites are refused\n")) }
        }
        let header = request.header(Self.tokenHeader).map { Self.same($0, token) } ?? false
        switch request.method {
        case "GET", "HEAD":
            if header { return .allow }
            if let query = request.queryValue("token"), Self.same(query, token) { return .allow }
            return .refuse(.text(.forbidden, "open the address ble ui printed (it carries the token)\n"))
        case "POST":
            guard header else { return .refuse(.text(.forbidden, "a POST needs the token in \(Self.tokenHeader)\n")) }
            return .allow
        default:
            return .refuse(HTTPResponse(.methodNotAllowed, headers: [("Allow", "GET, HEAD, POST"), ("Content-Type", "text/plain; charset=utf-8")],
                                        body: Array("method not allowed\n".utf8)))
        }
    }

    /// Compares in time independent of where the strings differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return diff == 0
    }
}

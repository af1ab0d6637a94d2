/// Host names and addresses in one text form, so that the names a server answers to and the
/// `Host` field of a request compare equal when they name the same thing: DNS names in lower
/// case (RFC 4343: DNS names compare case-insensitively), IPv6 addresses in the canonical text
/// of RFC 5952 §4 (`0:0:0:0:0:0:0:1`, `::0001` and `::1` are one address), and a port as its
/// number (`:08765` is `:8765`). Sans-IO: text in, text out.
public enum HTTPHostName {
    /// `host` (a name, an IPv4 address, or an IPv6 address with or without brackets) in its
    /// canonical form: lower case, an IPv6 address as RFC 5952 writes it and without brackets.
    /// A scoped address (`fe80::1%eth0`, RFC 4007 §11) keeps its zone as written: the zone
    /// names an interface, and interface names are case-sensitive. Text that is not an IPv6
    /// address is only lowercased.
    public static func canonical(_ host: String) -> String {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        let percent = text.firstIndex(of: "%")
        let address = text[..<(percent ?? text.endIndex)].lowercased()
        guard address.contains(":"), let groups = ipv6Groups(address[...]) else { return host.lowercased() }
        guard let percent else { return ipv6Text(groups) }
        let zone = text[text.index(after: percent)...]
        return zone.isEmpty ? host.lowercased() : ipv6Text(groups) + "%" + zone
    }

    /// Whether `host` (bracketed or not) is an IPv6 address in a text form of RFC 4291 §2.2.
    public static func isIPv6(_ host: String) -> Bool {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        return ipv6Groups(text[...]) != nil
    }

    /// A `Host` field's value (`name`, `name:port`, `[v6]`, `[v6]:port`; RFC 9110 §7.2,
    /// RFC 3986 §3.2.2) as `host:port` with the host canonical and the port a number; a value
    /// without a port gets `defaultPort` (HTTP's is 80, RFC 9110 §4.2.1). Nil for what is not
    /// such a value (an IPv6 address without brackets, a port that is not a number), which
    /// then names no server.
    public static func authority(_ field: String, defaultPort: UInt16 = 80) -> String? {
        let text = field.lowercased()
        guard !text.isEmpty else { return nil }
        let host: Substring
        let rest: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            rest = text[text.index(after: close)...]
            guard ipv6Groups(host) != nil else { return nil }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            rest = text[colon...]
        } else {
            host = text[...]
            rest = ""
        }
        guard !host.isEmpty else { return nil }
        let port: UInt16
        if rest.isEmpty {
            port = defaultPort
        } else {
            let digits = rest.dropFirst()
            guard rest.first == ":", !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let p = UInt16(digits) else { return nil }
            port = p
        }
        return join(canonical(String(host)), port: port)
    }

    /// A host as a person gives it (`ble ui --allow-host`): a DNS name (letters, digits, `-`,
    /// `.`, `_`), an IPv4 address, or an IPv6 address with or without brackets, never a port.
    /// Its canonical form, or nil when it is none of these.
    public static func hostWithoutPort(_ text: String) -> String? {
        var name = text.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") {
            name = String(name.dropFirst().dropLast())
            return ipv6Groups(name[...]).map(ipv6Text)
        }
        if name.contains(":") { return ipv6Groups(name[...]).map(ipv6Text) }
        let allowed = name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0) }
        return !name.isEmpty && allowed ? name : nil
    }

    /// `host:port` with an IPv6 address in brackets (RFC 3986 §3.2.2), the host canonical.
    public static func join(_ host: String, port: UInt16) -> String {
        let name = canonical(host)
        return name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)"
    }

    // MARK: IPv6 text

    /// The eight 16-bit groups of an IPv6 address written as RFC 4291 §2.2 allows:
    /// `x:x:x:x:x:x:x:x` of one to four hex digits each, one `::` for a run of zero groups,
    /// and the last 32 bits optionally as a dotted IPv4 address. Nil for anything else (a zone
    /// index included: it names an interface, not an address).
    static func ipv6Groups(_ text: Substring) -> [UInt16]? {
        guard text.utf8.count <= 45, text.contains(":") else { return nil }
        let compressions = text.ranges(of: "::")
        guard compressions.count <= 1 else { return nil }
        let halves = compressions.first.map { [text[..<$0.lowerBound], text[$0.upperBound...]] } ?? [text]
        func groups(_ part: Substring, last: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, field) in fields.enumerated() {
                if last, i == fields.count - 1, field.contains(".") {
                    guard let v4 = ipv4Octets(field) else { return nil }
                    out.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    out.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard (1...4).contains(field.count), field.allSatisfy(\.isHexDigit), let value = UInt16(field, radix: 16) else { return nil }
                out.append(value)
            }
            return out
        }
        if halves.count == 1 {
            guard let all = groups(halves[0], last: true), all.count == 8 else { return nil }
            return all
        }
        guard let head = groups(halves[0], last: false), let tail = groups(halves[1], last: true), head.count + tail.count <= 7 else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }

    /// The four octets of a dotted-decimal IPv4 address (`127.0.0.1`; RFC 3986 §3.2.2's
    /// IPv4address: four decimal numbers 0–255, no leading zeros), or nil for anything else,
    /// such as a DNS name that begins with digits (`127.example.net`).
    public static func ipv4Octets<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  part.count == 1 || part.first != "0", let value = UInt8(part) else { return nil }
            out.append(value)
        }
        return out
    }

    /// RFC 5952 §4: lower-case hex without leading zeros, the longest run of two or more zero
    /// groups (the first of equal runs) as `::`, and an IPv4-mapped address (§5) with its last
    /// 32 bits dotted.
    static func ipv6Text(_ groups: [UInt16]) -> String {
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {
            return "::ffff:\(groups[6] >> 8).\(groups[6] & 0xFF).\(groups[7] >> 8).\(groups[7] & 0xFF)"
        }
        var best = (start: -1, count: 0)
        var i = 0
        while i < 8 {
            guard groups[i] == 0 else { i += 1; continue }
            var j = i
            while j < 8, groups[j] == 0 { j += 1 }
            if j - i > best.count { best = (i, j - i) }
            i = j
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.count >= 2 else { return hex.joined(separator: ":") }
        let head = hex[0..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.count)...].joined(separator: ":")
        return head + "::" + tail
    }
}

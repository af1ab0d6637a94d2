/// Where a broker is: `mqtt://HOST[:PORT]` (plain TCP, port 1883) or `mqtts://HOST[:PORT]`
/// (TLS, port 8883), the URL forms of the MQTT specification's well-known ports (MQTT 5.0 §4.2,
/// IANA's registry). An IPv6 address goes in brackets (`mqtt://[::1]:1883`).
///
/// A user name or password in the URL (`mqtt://user:secret@host`) is refused rather than used:
/// a command line is readable by every user of the machine (`/proc/PID/cmdline`) and ends up in
/// shell histories and logs, so credentials come from `--username` and `--password-file`.
public struct MQTTBrokerURL: Sendable, Equatable, CustomStringConvertible {
    /// The host name or address, without brackets.
    public var host: String
    public var port: UInt16
    /// True for `mqtts://`: TLS, with the broker's certificate verified against a CA.
    public var usesTLS: Bool

    public init(host: String, port: UInt16, usesTLS: Bool) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    /// Parses `text`, or throws `MQTTError.invalidURL` naming what is wrong with it.
    public init(parsing text: String) throws(MQTTError) {
        let usesTLS: Bool
        let rest: Substring
        if text.hasPrefix("mqtt://") {
            usesTLS = false
            rest = text.dropFirst("mqtt://".count)
        } else if text.hasPrefix("mqtts://") {
            usesTLS = true
            rest = text.dropFirst("mqtts://".count)
        } else {
            throw .invalidURL("'\(Self.redacted(text))' is not an MQTT URL: use mqtt://HOST:PORT or mqtts://HOST:PORT")
        }
        var authority = rest
        if let slash = authority.firstIndex(of: "/") {
            guard authority[slash...].allSatisfy({ $0 == "/" }) else {
                throw .invalidURL("'\(Self.redacted(text))' has a path; a broker URL is mqtt://HOST:PORT")
            }
            authority = authority[..<slash]
        }
        guard !authority.contains("@"), !text.contains("@") else {
            throw .invalidURL("a broker URL may not carry a user name or password (they would be visible to every user of this machine); use --username and --password-file")
        }
        let host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidURL("'\(text)': an IPv6 address needs its closing ']'") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidURL("'\(text)': expected ':PORT' after ']'") }
                portText = after.dropFirst()
            }
        } else if authority.filter({ $0 == ":" }).count > 1 {
            throw .invalidURL("'\(text)': an IPv6 address goes in brackets, e.g. mqtt://[::1]:1883")
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && !$0.isWhitespace && !"[]?#".contains($0) }) else {
            throw .invalidURL("'\(text)' names no host")
        }
        var port: UInt16 = usesTLS ? 8883 : 1883
        if let portText {
            guard portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber), let p = UInt16(portText), p > 0 else { throw .invalidURL("'\(text)': the port must be 1 to 65535") }
            port = p
        }
        self.init(host: String(host), port: port, usesTLS: usesTLS)
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(usesTLS ? "mqtts" : "mqtt")://\(shownHost):\(port)"
    }

    /// `text` for an error message: with an `@` anywhere it may carry a password (with or
    /// without a scheme), so only what follows the last `@` is repeated.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        return "***" + String(text[at...])
    }
}

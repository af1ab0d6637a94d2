import BLERuntime
import Foundation

/// Which controller to talk to, written as one string (the `BLE_HCI` environment variable, the
/// `ble --hci` option):
///
/// - `tcp:HOST:PORT` or `tcp:[IPV6]:PORT`: H4 over TCP (rootcanal, Bumble, Zephyr native_sim).
/// - `serial:PATH`, `serial:PATH@BAUD`, `serial:PATH@BAUD,rtscts`: H4 over a UART. Default
///   1000000 baud; hardware flow control is off unless `rtscts` is given, because many USB
///   dongles and every pty/socat bridge do not wire RTS/CTS and would stall with it on.
/// - `hci0`, `hciN`, `hci:N`: the Linux HCI user channel on adapter N (exclusive raw access).
/// - `virtual`: the in-process virtual radio (opened by the API layer, not here);
///   `virtual:PROFILE` a controller of that profile on it (`4.0`, `4.2`, `5.0`, `default`).
public enum TransportSpec: Sendable, Hashable, CustomStringConvertible {
    /// H4 over TCP to `host` (a name, IPv4 or IPv6 address, without brackets) at `port`.
    case tcp(host: String, port: UInt16)
    /// H4 over the UART at `path`, at `baud`, with RTS/CTS hardware flow control when `rtscts`.
    case serial(path: String, baud: Int, rtscts: Bool)
    /// The Linux HCI user channel of adapter `index` (`hci0` is 0).
    case hciUserChannel(index: UInt16)
    /// The in-process virtual radio (opened by `Controllers.open` in BLEVirtual, not by this module).
    case virtual
    /// A controller of the named capability profile on the in-process virtual radio
    /// (`virtual:4.0`); the API layer checks the name.
    case virtualProfile(String)

    /// The baud rate of a `serial:` spec that names none.
    public static let defaultBaud = 1_000_000
    /// Baud rates termios can set on Linux, up to 4 Mbaud (the fastest H4 dongles use 3M/4M).
    public static let supportedBauds: [Int] = [
        1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 500_000, 576_000,
        921_600, 1_000_000, 1_152_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
    ]
    /// The environment variable `fromEnvironment()` reads: `BLE_HCI`.
    public static let environmentVariable = "BLE_HCI"

    static let expectedForms =
        "expected one of: tcp:HOST:PORT, tcp:[IPV6]:PORT, serial:PATH, serial:PATH@BAUD, serial:PATH@BAUD,rtscts, hci0 (or hciN, hci:N), virtual, virtual:PROFILE"

    /// The spec as a string `parse` reads back (`tcp:[::1]:6402`, `serial:/dev/ttyUSB0@1000000`, `hci0`).
    public var description: String {
        switch self {
        case let .tcp(host, port):
            return host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case let .serial(path, baud, rtscts):
            return "serial:\(path)@\(baud)\(rtscts ? ",rtscts" : "")"
        case let .hciUserChannel(index):
            return "hci\(index)"
        case .virtual:
            return "virtual"
        case let .virtualProfile(name):
            return "virtual:\(name)"
        }
    }

    /// Parses a transport string; errors (`TransportError.Kind.invalidSpec`) quote the input and
    /// say which form was expected.
    public static func parse(_ input: String) throws -> TransportSpec {
        let s = input.trimmingCharacters(in: .whitespaces)
        func fail(_ why: String) -> TransportError {
            TransportError(.invalidSpec, "invalid transport '\(input)': \(why)")
        }
        if s.isEmpty { throw fail("empty; \(expectedForms)") }
        if s == "virtual" { return .virtual }
        if s.hasPrefix("virtual:") {
            let name = s.dropFirst("virtual:".count)
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") }) else {
                throw fail("expected virtual:PROFILE with a profile name such as 4.0, 4.2, 5.0 or default")
            }
            return .virtualProfile(String(name))
        }
        if s.hasPrefix("tcp:") { return try parseTCP(String(s.dropFirst(4)), fail) }
        if s.hasPrefix("serial:") { return try parseSerial(String(s.dropFirst(7)), fail) }
        if s.hasPrefix("hci") {
            var rest = Substring(s.dropFirst(3))
            if rest.hasPrefix(":") { rest = rest.dropFirst() }
            guard !rest.isEmpty, rest.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt16(rest) else {
                throw fail("expected hciN or hci:N with N an adapter number 0...65535, e.g. hci0")
            }
            return .hciUserChannel(index: n)
        }
        throw fail("unknown transport kind; \(expectedForms)")
    }

    private static func parseTCP(_ rest: String, _ fail: (String) -> TransportError) throws -> TransportSpec {
        let host: String
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw fail("unclosed '[' in IPv6 address; expected tcp:[IPV6]:PORT, e.g. tcp:[::1]:6402")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { throw fail("expected ':PORT' after ']', e.g. tcp:[::1]:6402") }
            portText = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else {
                throw fail("missing port; expected tcp:HOST:PORT, e.g. tcp:127.0.0.1:6402")
            }
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
            if host.contains(":") {
                throw fail("IPv6 addresses need brackets; expected tcp:[IPV6]:PORT, e.g. tcp:[::1]:6402")
            }
        }
        if host.isEmpty { throw fail("missing host; expected tcp:HOST:PORT, e.g. tcp:127.0.0.1:6402") }
        if host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }) {
            throw fail("bad host '\(host)'; expected tcp:HOST:PORT, e.g. tcp:127.0.0.1:6402")
        }
        guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portText), port != 0 else {
            throw fail("port must be a number 1...65535; expected tcp:HOST:PORT, e.g. tcp:127.0.0.1:6402")
        }
        return .tcp(host: host, port: port)
    }

    private static func parseSerial(_ rest: String, _ fail: (String) -> TransportError) throws -> TransportSpec {
        var path = rest
        var baud = defaultBaud
        var rtscts = false
        if let at = rest.lastIndex(of: "@") {
            path = String(rest[..<at])
            let options = rest[rest.index(after: at)...].split(separator: ",", omittingEmptySubsequences: false)
            guard let baudText = options.first, baudText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let b = Int(baudText) else {
                throw fail("expected serial:PATH@BAUD with a number, e.g. serial:/dev/ttyUSB0@1000000")
            }
            guard supportedBauds.contains(b) else {
                throw fail("unsupported baud rate \(b); supported: \(supportedBauds.map(String.init).joined(separator: ", "))")
            }
            baud = b
            for option in options.dropFirst() {
                switch option {
                case "rtscts", "crtscts": rtscts = true
                default: throw fail("unknown serial option '\(option)'; the only option is rtscts, e.g. serial:/dev/ttyUSB0@1000000,rtscts")
                }
            }
        }
        if path.isEmpty { throw fail("missing device path; expected serial:PATH or serial:PATH@BAUD, e.g. serial:/dev/ttyUSB0") }
        return .serial(path: path, baud: baud, rtscts: rtscts)
    }

    /// Reads `BLE_HCI` (from `environment`, the process environment by default). Returns nil when
    /// the variable is unset or empty; throws `invalidSpec` when it is set to something unparsable.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> TransportSpec? {
        guard let value = environment[environmentVariable],
              !value.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        do {
            return try parse(value)
        } catch let error as TransportError {
            throw TransportError(.invalidSpec, "\(environmentVariable): \(error.message)")
        }
    }
}

import BLEWire

/// A gateway's topics (docs/GATEWAY.md#topics), all under `PREFIX/NAME/`:
/// `status`, `status/stats`, `adv/ADDRESS`, `dev/ADDRESS/CHARACTERISTIC`, `cmd` and `reply`.
/// ADDRESS is the 48-bit address in upper-case colon form (its type is in the payload);
/// CHARACTERISTIC is the UUID as `ble` prints it (`2A37`, or 128 bits in full).
public struct GatewayTopics: Sendable, Equatable {
    public let prefix: String
    public let name: String

    /// Checks `prefix` (one or more levels, e.g. `ble` or `home/ble`) and `name` (one level):
    /// neither may be empty, hold MQTT's wildcards `+` and `#` or NUL, or start with `$`
    /// (the broker's own topics, MQTT 5.0 §4.7.2); a name has no `/`.
    public init(prefix: String, name: String) throws(GatewayTopicError) {
        guard Self.isValidPrefix(prefix) else { throw .badPrefix(prefix) }
        guard Self.isValidLevel(name) else { throw .badName(name) }
        self.prefix = prefix
        self.name = name
    }

    /// `PREFIX/NAME`.
    public var base: String { "\(prefix)/\(name)" }
    public var status: String { "\(base)/status" }
    public var statistics: String { "\(base)/status/stats" }
    public var commands: String { "\(base)/cmd" }
    public var replies: String { "\(base)/reply" }

    public func advertisement(_ address: BDAddress) -> String { "\(base)/adv/\(address)" }

    public func value(_ address: BDAddress, _ characteristic: BluetoothUUID) -> String {
        "\(base)/dev/\(address)/\(characteristic)"
    }

    /// What a watcher of every gateway under `prefix` subscribes to: `PREFIX/+/status`, and so on.
    public static func everyGateway(prefix: String) -> [String] {
        ["\(prefix)/+/status", "\(prefix)/+/status/stats", "\(prefix)/+/adv/+", "\(prefix)/+/dev/+/+"]
    }

    /// Where MQTT 5 replies may go: `PREFIX-reply` (`ble-reply` by default), beside the
    /// gateways' own tree, so a broker's access list can let gateways write there and nowhere
    /// else outside `PREFIX/NAME/`.
    public var replyRoot: String { prefix + "-reply" }

    /// Whether a command's MQTT 5 Response Topic may be published to: a topic under
    /// `replyRoot/` of at most 256 octets, without wildcards or NUL. A command thus cannot make
    /// a gateway forge another's status, advertisements or values, nor publish anywhere else.
    public func allowsResponseTopic(_ topic: String) -> Bool {
        guard topic.utf8.count <= 256, topic.hasPrefix(replyRoot + "/"), topic.count > replyRoot.count + 1 else { return false }
        return !topic.unicodeScalars.contains { $0 == "+" || $0 == "#" || $0.value == 0 }
    }

    /// A default name from a host name: characters a topic level may not hold become `-`.
    public static func defaultName(hostName: String) -> String {
        let cleaned = String(hostName.prefix(64).map { c -> Character in
            c == "/" || c == "+" || c == "#" || c == "\0" || c.isWhitespace ? "-" : c
        })
        let name = cleaned.hasPrefix("$") ? "-" + cleaned.dropFirst() : cleaned
        return name.isEmpty ? "gateway" : name
    }

    /// A topic level a gateway's name or prefix may have: not `.` or `..` (the name is also a
    /// directory of the gateway's bonds), no control or format characters.
    static func isValidLevel(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && !s.hasPrefix("$") && s != "." && s != ".."
            && !s.unicodeScalars.contains {
                $0 == "/" || $0 == "+" || $0 == "#" || [.control, .format].contains($0.properties.generalCategory)
            }
    }

    static func isValidPrefix(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 128 && s.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { isValidLevel(String($0)) }
    }
}

/// A prefix or name a topic cannot be built from.
public enum GatewayTopicError: Error, Sendable, Equatable, CustomStringConvertible {
    case badPrefix(String)
    case badName(String)

    public var description: String {
        switch self {
        case let .badPrefix(p): return "'\(p)' cannot prefix topics: levels of 1 to 64 characters, not . or .., no +, #, control characters or leading $"
        case let .badName(n): return "'\(n)' cannot name a gateway: 1 to 64 characters, not . or .., no /, +, #, control characters or leading $"
        }
    }
}

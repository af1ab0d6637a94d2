import Foundation

/// A JSON value as a peer prints it (Sendable, unlike what `JSONSerialization` returns).
enum JSONValue: Sendable, Equatable, Decodable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var doubleValue: Double? { if case .number(let n) = self { return n } else { return nil } }
    var intValue: Int? {
        guard case .number(let n) = self, n.rounded() == n, abs(n) < 9e15 else { return nil }
        return Int(n)
    }

    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return String(b)
        case .number(let n): return n.rounded() == n && abs(n) < 9e15 ? String(Int(n)) : String(n)
        case .string(let s): return "\"\(s)\""
        case .array(let a): return "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o):
            return "{" + o.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }
                .joined(separator: ",") + "}"
        }
    }
}

/// One line a peer printed on stdout after `READY`: `{"event": "write", "handle": 32, …}`.
///
/// A line that is not a JSON object becomes an event named `"_text"` with the line in `text`,
/// so nothing a peer prints is lost from failure messages.
struct PeerEvent: Sendable, CustomStringConvertible {
    /// The line exactly as printed.
    let line: String
    let fields: [String: JSONValue]
    /// When the test process read the line.
    let receivedAt: Date

    init(line: String, receivedAt: Date = Date()) {
        self.line = line
        self.receivedAt = receivedAt
        if let data = line.data(using: .utf8),
            case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: data)
        {
            fields = object
        } else {
            fields = ["event": .string("_text"), "text": .string(line)]
        }
    }

    /// The `"event"` field: `"connected"`, `"write"`, `"read"`, ….
    var name: String { fields["event"]?.stringValue ?? "" }

    subscript(key: String) -> JSONValue? { fields[key] }
    func string(_ key: String) -> String? { fields[key]?.stringValue }
    func int(_ key: String) -> Int? { fields[key]?.intValue }
    func bool(_ key: String) -> Bool? { fields[key]?.boolValue }

    /// A hex string field (`"value": "0a0b"`) as bytes; nil if absent or not hex.
    func bytes(_ key: String) -> [UInt8]? {
        guard let hex = string(key), hex.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            result.append(byte)
            index = next
        }
        return result
    }

    var description: String { line }
}

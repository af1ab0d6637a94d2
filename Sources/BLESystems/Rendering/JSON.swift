import BLEWire

/// A JSON value with keys kept in the order written, so each output line reads predictably.
public enum JSON: Sendable {
    case string(String)
    case number(Double)
    case int(Int)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    /// The value as compact JSON text, keys in the order written.
    public var text: String {
        switch self {
        case let .string(s): return JSON.quote(s)
        case let .number(d): return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)) : "null"
        case let .int(i): return String(i)
        case let .bool(b): return b ? "true" : "false"
        case .null: return "null"
        case let .array(a): return "[" + a.map(\.text).joined(separator: ",") + "]"
        case let .object(o): return "{" + o.map { JSON.quote($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let h = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// A string, or null when there is none.
    public static func optional(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }
}

/// A value as `ble` prints it with `--json`: always `hex`, and `utf8` when the bytes are valid UTF-8.
public func valueJSON(_ bytes: [UInt8]) -> [(String, JSON)] {
    var fields: [(String, JSON)] = [("hex", .string(bytes.hexString))]
    if let text = String(validating: bytes, as: UTF8.self) {
        fields.append(("utf8", .string(text)))
    }
    return fields
}

/// A value for people: UTF-8 text in quotes when it is printable, else hex.
public func valueText(_ bytes: [UInt8]) -> String {
    if !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self),
       text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F || $0 == "\n" || $0 == "\t" }) {
        return "\"\(text)\" (\(bytes.count) bytes)"
    }
    if bytes.count > 32 {
        return Array(bytes.prefix(32)).hexString + "… (\(bytes.count) bytes)"
    }
    return bytes.isEmpty ? "(empty)" : bytes.hexString
}

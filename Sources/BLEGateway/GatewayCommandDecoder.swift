import BLEWire
import Foundation

/// Decodes a command payload (docs/GATEWAY.md#commands): one JSON object with `op`, `address`
/// and the operation's fields. Sans-IO and total: any bytes give a `GatewayRequest` or a
/// `GatewayCommandError`, with the payload's size checked before it is parsed.
public enum GatewayCommandDecoder {
    /// The largest command taken, in octets: a write's 512 octets as hex with room to spare.
    public static let maximumPayload = 16 * 1024
    /// The longest `id` echoed back.
    public static let maximumIDLength = 128
    /// The longest attribute value (Core Vol 3 Part F §3.2.9).
    public static let maximumValueLength = 512

    /// The fields each operation takes besides `id` and `op`.
    static let fields: [String: Set<String>] = [
        "connect": ["address"],
        "disconnect": ["address"],
        "gatt": ["address"],
        "read": ["address", "characteristic", "service"],
        "write": ["address", "characteristic", "service", "hex", "response"],
        "subscribe": ["address", "characteristic", "service"],
        "unsubscribe": ["address", "characteristic", "service"],
    ]

    /// The request in `payload`, or why there is none.
    public static func decode(_ payload: [UInt8]) -> Result<GatewayRequest, GatewayCommandError> {
        guard payload.count <= maximumPayload else { return .failure(.tooLarge(size: payload.count, limit: maximumPayload)) }
        let object: [String: Any]
        switch parse(payload) {
        case let .success(o): object = o
        case let .failure(e): return .failure(e)
        }
        do {
            return .success(try request(object))
        } catch let error as GatewayCommandError {
            return .failure(error)
        } catch {
            return .failure(.malformedJSON)
        }
    }

    /// The `id` of a payload that failed to decode, when one can be found, so even a refused
    /// command is answered under its caller's identifier.
    public static func identifier(in payload: [UInt8]) -> String? {
        guard payload.count <= maximumPayload, case let .success(object) = parse(payload) else { return nil }
        return try? identifier(object["id"])
    }

    /// The payload as one JSON object (RFC 8259), strictly: UTF-8 without NUL (so UTF-16 and
    /// UTF-32, which Foundation's parser would guess, are refused), and no trailing commas (which
    /// it would take).
    private static func parse(_ payload: [UInt8]) -> Result<[String: Any], GatewayCommandError> {
        guard !payload.contains(0), String(validating: payload, as: UTF8.self) != nil, !hasTrailingComma(payload),
              let parsed = try? JSONSerialization.jsonObject(with: Data(payload), options: [.fragmentsAllowed]) else {
            return .failure(.malformedJSON)
        }
        guard let object = parsed as? [String: Any] else { return .failure(.notAnObject) }
        return .success(object)
    }

    /// Whether a `,` outside strings is followed (after white space) by `}` or `]`.
    static func hasTrailingComma(_ payload: [UInt8]) -> Bool {
        var inString = false, escaped = false, afterComma = false
        for b in payload {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                continue
            }
            switch b {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            case 0x7D, 0x5D: if afterComma { return true }
            case 0x22: inString = true
            default: break
            }
            afterComma = b == 0x2C
        }
        return false
    }

    /// Whether a parsed JSON value is `true` or `false` (Foundation gives booleans and numbers
    /// alike as NSNumber; a boolean's type encoding is `c`).
    static func isBoolean(_ value: Any) -> Bool {
        guard let n = value as? NSNumber else { return false }
        return String(cString: n.objCType) == "c"
    }

    private static func request(_ o: [String: Any]) throws -> GatewayRequest {
        let id = try identifier(o["id"])
        guard let opValue = o["op"] else { throw GatewayCommandError.missingField("op") }
        guard let op = opValue as? String else { throw GatewayCommandError.wrongType(field: "op", expected: "a string") }
        guard let allowed = fields[op] else { throw GatewayCommandError.unknownOperation(op) }
        for key in o.keys.sorted() where key != "id" && key != "op" && !allowed.contains(key) {
            throw GatewayCommandError.unknownField(key)
        }
        let device = try address(o)
        let operation: GatewayOperation
        switch op {
        case "connect": operation = .connect(device)
        case "disconnect": operation = .disconnect(device)
        case "gatt": operation = .gatt(device)
        case "read": operation = .read(device, try characteristic(o))
        case "subscribe": operation = .subscribe(device, try characteristic(o))
        case "unsubscribe": operation = .unsubscribe(device, try characteristic(o))
        default:
            let c = try characteristic(o)
            let hex = try string(o, "hex")
            guard let value = [UInt8](hexString: hex) else { throw GatewayCommandError.badHex(hex) }
            guard value.count <= maximumValueLength else { throw GatewayCommandError.valueTooLong(value.count) }
            var withResponse = true
            if let r = o["response"] {
                guard isBoolean(r), let b = r as? Bool else { throw GatewayCommandError.wrongType(field: "response", expected: "true or false") }
                withResponse = b
            }
            operation = .write(device, c, value: value, withResponse: withResponse)
        }
        return GatewayRequest(id: id, operation: operation)
    }

    private static func identifier(_ value: Any?) throws -> String? {
        guard let value, !(value is NSNull) else { return nil }
        let text: String
        if let s = value as? String {
            text = s
        } else if !isBoolean(value), let n = value as? NSNumber {
            text = n.stringValue
        } else {
            throw GatewayCommandError.badID
        }
        guard text.count <= maximumIDLength else { throw GatewayCommandError.badID }
        return text
    }

    private static func string(_ o: [String: Any], _ field: String) throws -> String {
        guard let value = o[field] else { throw GatewayCommandError.missingField(field) }
        guard let s = value as? String else { throw GatewayCommandError.wrongType(field: field, expected: "a string") }
        return s
    }

    private static func address(_ o: [String: Any]) throws -> GatewayDevice {
        let text = try string(o, "address")
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard text.count <= 32, let first = parts.first, first.count == 17,
              first.allSatisfy({ $0 == ":" || $0.isHexDigit }), let a = BDAddress(string: String(first)) else {
            throw GatewayCommandError.badAddress(text)
        }
        guard parts.count == 2 else { return GatewayDevice(a, type: nil) }
        switch parts[1].lowercased() {
        case "public": return GatewayDevice(a, type: .public)
        case "random": return GatewayDevice(a, type: .random)
        default: throw GatewayCommandError.badAddress(text)
        }
    }

    private static func characteristic(_ o: [String: Any]) throws -> GatewayCharacteristic {
        let c = try uuid(o, "characteristic")
        let s = o["service"] == nil ? nil : try uuid(o, "service")
        return GatewayCharacteristic(c, service: s)
    }

    private static func uuid(_ o: [String: Any], _ field: String) throws -> BluetoothUUID {
        let text = try string(o, field)
        guard text.count <= 36, let u = BluetoothUUID(string: text) else { throw GatewayCommandError.badUUID(field: field, value: text) }
        return u
    }

    /// `text` as an error message shows it: at most 40 Unicode scalars, control and format
    /// characters (C0, DEL, C1, bidirectional overrides) as `?`.
    static func shown(_ text: String) -> String {
        let scalars = text.unicodeScalars
        let cut = scalars.prefix(40).map { s -> Unicode.Scalar in
            switch s.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator: return "?"
            default: return s
            }
        }
        return String(String.UnicodeScalarView(cut)) + (scalars.count > 40 ? "…" : "")
    }
}

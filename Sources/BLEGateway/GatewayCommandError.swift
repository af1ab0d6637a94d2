/// Why a command was refused before anything was done: each has a stable `code` for programs
/// and a sentence for people; the reply carries both (`{"ok": false, "code", "error"}`).
public enum GatewayCommandError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload is longer than `GatewayCommandDecoder.maximumPayload` octets (not parsed).
    case tooLarge(size: Int, limit: Int)
    /// Not JSON text (or not UTF-8).
    case malformedJSON
    /// JSON, but not one object.
    case notAnObject
    case missingField(String)
    /// A field of the wrong JSON type: the field and the type it needs.
    case wrongType(field: String, expected: String)
    /// A field no operation takes (a typo must not be silently ignored).
    case unknownField(String)
    case unknownOperation(String)
    case badAddress(String)
    case badUUID(field: String, value: String)
    case badHex(String)
    /// A write longer than an attribute value can be (512 octets, Core Vol 3 Part F §3.2.9).
    case valueTooLong(Int)
    /// An `id` longer than `GatewayCommandDecoder.maximumIDLength`.
    case badID

    public var code: String {
        switch self {
        case .tooLarge: return "too-large"
        case .malformedJSON: return "malformed-json"
        case .notAnObject: return "not-an-object"
        case .missingField: return "missing-field"
        case .wrongType: return "wrong-type"
        case .unknownField: return "unknown-field"
        case .unknownOperation: return "unknown-op"
        case .badAddress: return "bad-address"
        case .badUUID: return "bad-uuid"
        case .badHex: return "bad-hex"
        case .valueTooLong: return "value-too-long"
        case .badID: return "bad-id"
        }
    }

    public var description: String {
        switch self {
        case let .tooLarge(size, limit): return "command of \(size) octets is over the limit of \(limit)"
        case .malformedJSON: return "the command is not valid JSON"
        case .notAnObject: return "the command must be one JSON object"
        case let .missingField(f): return "'\(f)' is missing"
        case let .wrongType(f, t): return "'\(f)' must be \(t)"
        case let .unknownField(f): return "unknown field '\(GatewayCommandDecoder.shown(f))'"
        case let .unknownOperation(o): return "unknown op '\(GatewayCommandDecoder.shown(o))': one of connect, disconnect, gatt, read, write, subscribe, unsubscribe"
        case let .badAddress(a): return "'\(GatewayCommandDecoder.shown(a))' is not an address: AA:BB:CC:DD:EE:FF, /public or /random after it"
        case let .badUUID(f, v): return "'\(f)' is not a UUID: '\(GatewayCommandDecoder.shown(v))' (2A37, or 128 bits as 0000xxxx-…)"
        case let .badHex(h): return "'hex' is not an even number of hex digits: '\(GatewayCommandDecoder.shown(h))'"
        case let .valueTooLong(n): return "a value of \(n) octets is longer than an attribute value may be (512)"
        case .badID: return "'id' must be a string or number of at most \(GatewayCommandDecoder.maximumIDLength) characters"
        }
    }
}

import BLE
import BLESystems
import Foundation

/// A JSON value of the control protocol between `ble pandora` and its gRPC bridge
/// (docs/PANDORA.md): Sendable, unlike JSONSerialization's `Any`.
indirect enum ControlValue: Sendable, Hashable, Decodable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([ControlValue])
    case object([String: ControlValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([ControlValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: ControlValue].self)) }
    }
}

/// The gRPC status a failed request ends with (the bridge passes the name on as the code).
enum ControlStatus: String, Sendable {
    case cancelled = "CANCELLED"
    case invalidArgument = "INVALID_ARGUMENT"
    case deadlineExceeded = "DEADLINE_EXCEEDED"
    case notFound = "NOT_FOUND"
    case alreadyExists = "ALREADY_EXISTS"
    case failedPrecondition = "FAILED_PRECONDITION"
    case aborted = "ABORTED"
    case unimplemented = "UNIMPLEMENTED"
    case `internal` = "INTERNAL"
    case unavailable = "UNAVAILABLE"
}

/// A request that fails with a gRPC status and a message for the client.
struct ControlError: Error, CustomStringConvertible {
    let status: ControlStatus
    let message: String
    init(_ status: ControlStatus, _ message: String) {
        self.status = status
        self.message = message
    }
    var description: String { "\(status.rawValue): \(message)" }
}

/// One request line from the bridge: `{"id": 7, "op": "scan", ...arguments}`.
struct ControlRequest: Sendable {
    /// The longest line read: a bigger one is a broken bridge, not a request.
    static let maximumLineLength = 1 << 20

    let id: Int
    let op: String
    let arguments: [String: ControlValue]

    /// Parses one line; anything but an object with an integer `id` and a string `op` is refused.
    static func parse(_ line: [UInt8]) throws(ControlError) -> ControlRequest {
        let value: ControlValue
        do {
            value = try JSONDecoder().decode(ControlValue.self, from: Data(line))
        } catch {
            throw ControlError(.invalidArgument, "the request is not JSON")
        }
        guard case let .object(fields) = value else { throw ControlError(.invalidArgument, "the request is not a JSON object") }
        guard case let .number(n)? = fields["id"], let id = Int(exactly: n) else { throw ControlError(.invalidArgument, "the request has no integer id") }
        guard case let .string(op)? = fields["op"] else { throw ControlError(.invalidArgument, "request \(id) has no op") }
        return ControlRequest(id: id, op: op, arguments: fields)
    }

    /// The id of a line that starts `{"id": N,` (as the bridge writes every request), when the
    /// rest of it is not JSON (e.g. a NaN among its numbers).
    static func leadingID(_ line: [UInt8]) -> Int? {
        let text = String(decoding: line.prefix(40), as: UTF8.self)
        guard text.hasPrefix("{\"id\": ") || text.hasPrefix("{\"id\":") else { return nil }
        let afterColon = text.drop { $0 != ":" }.dropFirst().drop { $0 == " " }
        let digits = afterColon.prefix { $0.isASCII && $0.isNumber }
        // An integer, then the end of the value: `5.5`, `5e3` and `-3` are not ids.
        guard !digits.isEmpty, digits.count < 10,
              let next = afterColon.dropFirst(digits.count).drop(while: { $0 == " " }).first, next == "," || next == "}" else { return nil }
        return Int(digits)
    }

    // MARK: Typed arguments (each missing or mistyped one is INVALID_ARGUMENT naming it)

    func string(_ key: String) throws(ControlError) -> String {
        guard let s = optionalString(key) else { throw ControlError(.invalidArgument, "\(op): '\(key)' must be a string") }
        return s
    }

    func optionalString(_ key: String) -> String? {
        if case let .string(s)? = arguments[key] { return s }
        return nil
    }

    func bool(_ key: String, default value: Bool = false) throws(ControlError) -> Bool {
        switch arguments[key] {
        case nil, .null?: return value
        case let .bool(b)?: return b
        default: throw ControlError(.invalidArgument, "\(op): '\(key)' must be true or false")
        }
    }

    /// An integer in `range`; `value` when absent.
    func int(_ key: String, in range: ClosedRange<Int>, default value: Int? = nil) throws(ControlError) -> Int {
        switch arguments[key] {
        case nil, .null?:
            if let value { return value }
        case let .number(d)?:
            if let i = Int(exactly: d), range.contains(i) { return i }
        default: break
        }
        throw ControlError(.invalidArgument, "\(op): '\(key)' must be an integer in \(range.lowerBound)...\(range.upperBound)")
    }

    func double(_ key: String, default value: Double) throws(ControlError) -> Double {
        switch arguments[key] {
        case nil, .null?: return value
        case let .number(d)? where d.isFinite: return d
        default: throw ControlError(.invalidArgument, "\(op): '\(key)' must be a number")
        }
    }

    /// Bytes given as hex; nil when absent or null.
    func hex(_ key: String) throws(ControlError) -> [UInt8]? {
        switch arguments[key] {
        case nil, .null?: return nil
        case let .string(s)?:
            if let bytes = [UInt8](hexString: s) { return bytes }
        default: break
        }
        throw ControlError(.invalidArgument, "\(op): '\(key)' must be hex")
    }

    /// The connection a request names (its cookie, an integer).
    func connection() throws(ControlError) -> UInt64 {
        UInt64(try int("connection", in: 0...Int(Int32.max)))
    }
}

extension JSON {
    /// Bytes as lower-case hex, the control protocol's form for binary fields.
    static func hex(_ bytes: [UInt8]) -> JSON { .string(bytes.hexString) }
}

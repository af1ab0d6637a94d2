import BLEGateway
import BLEWire

/// The command decoder `ble gateway` reads its `cmd` topic with (docs/GATEWAY.md#commands):
/// arbitrary bytes as one command payload. It must never trap and must answer the same twice;
/// what it accepts is within the limits, carries the `id` that `identifier(in:)` finds, and,
/// written out again as canonical JSON, decodes to the same request; what it refuses is refused
/// as too large exactly when it is, with a message free of control characters (C0, DEL, C1).
enum GatewayFuzzTargets {
    static func gatewayCommand(_ data: [UInt8]) {
        let result = GatewayCommandDecoder.decode(data)
        FuzzCheck.require(GatewayCommandDecoder.decode(data) == result, "gateway command decodes differently twice: \(fuzzHex(data))")
        switch result {
        case let .failure(error):
            if case .tooLarge = error {
                FuzzCheck.require(data.count > GatewayCommandDecoder.maximumPayload, "\(data.count) octets refused as too large")
            } else {
                FuzzCheck.require(data.count <= GatewayCommandDecoder.maximumPayload, "\(data.count) octets not refused as too large")
            }
            FuzzCheck.require(!error.code.isEmpty, "gateway command error without a code: \(error)")
            FuzzCheck.require(!error.description.unicodeScalars.contains { $0.properties.generalCategory == .control },
                              "control character in '\(error.description.debugDescription)': \(fuzzHex(data))")
        case let .success(request):
            FuzzCheck.require(data.count <= GatewayCommandDecoder.maximumPayload, "\(data.count) octets accepted")
            FuzzCheck.require((request.id?.count ?? 0) <= GatewayCommandDecoder.maximumIDLength,
                              "id of \(request.id?.count ?? 0) characters accepted: \(fuzzHex(data))")
            if case let .write(_, _, value, _) = request.operation {
                FuzzCheck.require(value.count <= GatewayCommandDecoder.maximumValueLength,
                                  "write of \(value.count) octets accepted: \(fuzzHex(data))")
            }
            FuzzCheck.require(GatewayCommandDecoder.identifier(in: data) == request.id,
                              "identifier(in:) disagrees with the decoded id \(request.id.debugDescription): \(fuzzHex(data))")
            let canonical = canonicalJSON(request)
            let again = GatewayCommandDecoder.decode(canonical)
            FuzzCheck.require(again == .success(request),
                              "\(request) written as \(String(decoding: canonical.prefix(200), as: UTF8.self)) decodes to \(again): \(fuzzHex(data))")
        }
    }

    /// `request` as the command a client would send for it: every field it has, in the forms
    /// the gateway itself prints (upper-case address with its type, `ble`'s UUID form, lower-case
    /// hex, `response` only when false).
    static func canonicalJSON(_ request: GatewayRequest) -> [UInt8] {
        var fields: [(String, String)] = []
        if let id = request.id { fields.append(("id", jsonString(id))) }
        let operation = request.operation
        fields.append(("op", jsonString(operation.name)))
        fields.append(("address", jsonString(operation.device.description)))
        switch operation {
        case .connect, .disconnect, .gatt:
            break
        case let .read(_, c), let .subscribe(_, c), let .unsubscribe(_, c):
            fields += characteristicFields(c)
        case let .write(_, c, value, withResponse):
            fields += characteristicFields(c)
            fields.append(("hex", jsonString(value.hexString)))
            if !withResponse { fields.append(("response", "false")) }
        }
        return Array(("{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}").utf8)
    }

    private static func characteristicFields(_ c: GatewayCharacteristic) -> [(String, String)] {
        var fields = [("characteristic", jsonString(c.characteristic.description))]
        if let s = c.service { fields.append(("service", jsonString(s.description))) }
        return fields
    }

    /// A JSON string literal (RFC 8259 §7): quote, backslash and C0 controls escaped.
    static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Every operation with every field, ids as strings and numbers, both address types and
    /// none, 16- and 128-bit UUIDs, hex spelled loosely; and refusals near acceptance: a typo'd
    /// field, an unknown op, an id that is an object, a value one octet too long, not an object.
    static let seeds: [[UInt8]] = [
        #"{"id":"c1","op":"connect","address":"C0:11:22:33:44:55/random"}"#,
        #"{"id":7,"op":"disconnect","address":"c0:11:22:33:44:55"}"#,
        #"{"op":"gatt","address":"C0:11:22:33:44:55/public","id":null}"#,
        #"{"id":"r\n\u0001","op":"read","address":"C0:11:22:33:44:55/public","characteristic":"2A37","service":"180D"}"#,
        #"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"0000fff1-0000-1000-8000-00805f9b34fb","hex":"0x01 02:ff","response":false}"#,
        #"{"id":1.5,"op":"write","address":"C0:11:22:33:44:55/random","characteristic":"FFF1","service":"12345678-1234-5678-1234-56789ABCDEF0","hex":"","response":true}"#,
        #"{"op":"subscribe","address":"C0:11:22:33:44:55/random","characteristic":"0x2A37"}"#,
        #"{"op":"unsubscribe","address":"C0:11:22:33:44:55/random","characteristic":"00002a37","service":"180d"}"#,
        #"{"id":"t","op":"read","address":"C0:11:22:33:44:55","charateristic":"2A37"}"#,
        #"{"id":{"a":[1]},"op":"reboot","address":"C0:11:22:33:44:55/static"}"#,
        #"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":""# + String(repeating: "ab", count: 513) + #""}"#,
        #"[{"op":"connect"}, "\u00e9", 1e3, true, null]"#,
    ].map { Array($0.utf8) }
}

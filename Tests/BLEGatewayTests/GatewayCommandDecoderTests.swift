import BLEGateway
import BLEWire
import XCTest

/// `GatewayCommandDecoder`: every operation with every field it takes, and every refusal of
/// `GatewayCommandError` with a payload that causes it, its exact value and its `code`.
final class GatewayCommandDecoderTests: XCTestCase {
    static let address = BDAddress(rawValue: 0xC0_11_22_33_44_55)
    static let heartRate = BluetoothUUID(0x180D)
    static let measurement = BluetoothUUID(0x2A37)

    private func decode(_ json: String) -> Result<GatewayRequest, GatewayCommandError> {
        GatewayCommandDecoder.decode(Array(json.utf8))
    }

    private func request(_ json: String, file: StaticString = #filePath, line: UInt = #line) throws -> GatewayRequest {
        switch decode(json) {
        case let .success(r): return r
        case let .failure(e):
            XCTFail("\(json) refused: \(e.code) \(e)", file: file, line: line)
            throw e
        }
    }

    /// The payload is refused with exactly `expected`.
    private func assertRefused(_ payload: [UInt8], _ expected: GatewayCommandError, _ message: String = "",
                               file: StaticString = #filePath, line: UInt = #line) {
        switch GatewayCommandDecoder.decode(payload) {
        case let .success(r): XCTFail("accepted as \(r), expected \(expected) \(message)", file: file, line: line)
        case let .failure(e): XCTAssertEqual(e, expected, message, file: file, line: line)
        }
    }

    private func assertRefused(_ json: String, _ expected: GatewayCommandError, file: StaticString = #filePath, line: UInt = #line) {
        assertRefused(Array(json.utf8), expected, json.count > 120 ? String(json.prefix(120)) + "…(\(json.utf8.count) octets)" : json,
                      file: file, line: line)
    }

    // MARK: Operations

    func testConnectDisconnectAndGATTTakeAnAddress() throws {
        let device = GatewayDevice(Self.address, type: .random)
        XCTAssertEqual(try request(#"{"op":"connect","address":"C0:11:22:33:44:55/random"}"#),
                       GatewayRequest(id: nil, operation: .connect(device)))
        XCTAssertEqual(try request(#"{"op":"disconnect","address":"C0:11:22:33:44:55/random"}"#),
                       GatewayRequest(id: nil, operation: .disconnect(device)))
        XCTAssertEqual(try request(#"{"op":"gatt","address":"C0:11:22:33:44:55/random"}"#),
                       GatewayRequest(id: nil, operation: .gatt(device)))
    }

    func testTheIDIsAStringOrANumberAsText() throws {
        XCTAssertEqual(try request(#"{"id":"req-1","op":"gatt","address":"C0:11:22:33:44:55"}"#).id, "req-1")
        XCTAssertEqual(try request(#"{"id":42,"op":"gatt","address":"C0:11:22:33:44:55"}"#).id, "42")
        XCTAssertEqual(try request(#"{"id":null,"op":"gatt","address":"C0:11:22:33:44:55"}"#).id, nil)
        XCTAssertEqual(try request(#"{"op":"gatt","address":"C0:11:22:33:44:55"}"#).id, nil)
        let longest = String(repeating: "i", count: GatewayCommandDecoder.maximumIDLength)
        XCTAssertEqual(try request(#"{"id":"\#(longest)","op":"gatt","address":"C0:11:22:33:44:55"}"#).id, longest)
    }

    func testTheAddressTypeIsPublicRandomOrLeftToTheGateway() throws {
        XCTAssertEqual(try request(#"{"op":"connect","address":"C0:11:22:33:44:55/public"}"#).operation.device,
                       GatewayDevice(Self.address, type: .public))
        XCTAssertEqual(try request(#"{"op":"connect","address":"C0:11:22:33:44:55/random"}"#).operation.device,
                       GatewayDevice(Self.address, type: .random))
        XCTAssertEqual(try request(#"{"op":"connect","address":"C0:11:22:33:44:55"}"#).operation.device,
                       GatewayDevice(Self.address, type: nil))
        XCTAssertEqual(try request(#"{"op":"connect","address":"c0:11:22:33:44:55"}"#).operation.device,
                       GatewayDevice(Self.address, type: nil))
        XCTAssertEqual(try request(#"{"op":"connect","address":"c0:1a:2b:3c:4d:5e/random"}"#).operation.device,
                       GatewayDevice(BDAddress(rawValue: 0xC0_1A_2B_3C_4D_5E), type: .random))
    }

    func testReadSubscribeAndUnsubscribeTakeACharacteristicAndOptionallyItsService() throws {
        let device = GatewayDevice(Self.address, type: .public)
        let bare = GatewayCharacteristic(Self.measurement)
        let inService = GatewayCharacteristic(Self.measurement, service: Self.heartRate)
        XCTAssertEqual(try request(#"{"id":"r","op":"read","address":"C0:11:22:33:44:55/public","characteristic":"2A37"}"#),
                       GatewayRequest(id: "r", operation: .read(device, bare)))
        XCTAssertEqual(try request(#"{"op":"read","address":"C0:11:22:33:44:55/public","characteristic":"2A37","service":"180D"}"#).operation,
                       .read(device, inService))
        XCTAssertEqual(try request(#"{"op":"subscribe","address":"C0:11:22:33:44:55/public","characteristic":"2a37"}"#).operation,
                       .subscribe(device, bare))
        XCTAssertEqual(try request(#"{"op":"subscribe","address":"C0:11:22:33:44:55/public","characteristic":"2A37","service":"180D"}"#).operation,
                       .subscribe(device, inService))
        XCTAssertEqual(try request(#"{"op":"unsubscribe","address":"C0:11:22:33:44:55/public","characteristic":"2A37"}"#).operation,
                       .unsubscribe(device, bare))
        XCTAssertEqual(try request(#"{"op":"unsubscribe","address":"C0:11:22:33:44:55/public","characteristic":"2A37","service":"180D"}"#).operation,
                       .unsubscribe(device, inService))
        let vendor = try XCTUnwrap(BluetoothUUID(string: "12345678-1234-5678-1234-56789abcdef0"))
        XCTAssertEqual(try request(#"{"op":"read","address":"C0:11:22:33:44:55/public","characteristic":"12345678-1234-5678-1234-56789ABCDEF0","service":"0000180d-0000-1000-8000-00805f9b34fb"}"#).operation,
                       .read(device, GatewayCharacteristic(vendor, service: Self.heartRate)))
    }

    func testAWriteTakesHexAndIsWithResponseUnlessResponseIsFalse() throws {
        let device = GatewayDevice(Self.address, type: .random)
        let c = GatewayCharacteristic(BluetoothUUID(0x2A39), service: Self.heartRate)
        XCTAssertEqual(try request(#"{"id":7,"op":"write","address":"C0:11:22:33:44:55/random","characteristic":"2A39","service":"180D","hex":"01ff"}"#),
                       GatewayRequest(id: "7", operation: .write(device, c, value: [0x01, 0xFF], withResponse: true)))
        XCTAssertEqual(try request(#"{"op":"write","address":"C0:11:22:33:44:55/random","characteristic":"2A39","service":"180D","hex":"01FF","response":true}"#).operation,
                       .write(device, c, value: [0x01, 0xFF], withResponse: true))
        XCTAssertEqual(try request(#"{"op":"write","address":"C0:11:22:33:44:55/random","characteristic":"2A39","service":"180D","hex":"01ff","response":false}"#).operation,
                       .write(device, c, value: [0x01, 0xFF], withResponse: false))
        XCTAssertEqual(try request(#"{"op":"write","address":"C0:11:22:33:44:55/random","characteristic":"2A39","hex":"0a0b0c"}"#).operation,
                       .write(device, GatewayCharacteristic(BluetoothUUID(0x2A39)), value: [0x0A, 0x0B, 0x0C], withResponse: true))
    }

    func testAWriteOf512OctetsIsTakenAnd513Refused() throws {
        let hex512 = String(repeating: "a5", count: GatewayCommandDecoder.maximumValueLength)
        guard case let .write(_, _, value, _) = try request(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"\#(hex512)"}"#).operation else {
            return XCTFail("not a write")
        }
        XCTAssertEqual(value, [UInt8](repeating: 0xA5, count: 512))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"\#(hex512)00"}"#, .valueTooLong(513))
    }

    // MARK: Refusals

    /// The size is checked before the JSON is parsed: a valid command padded with spaces past
    /// the limit is refused as too large (parsed, it would be accepted), so a 10 MB payload costs
    /// no parse; at the limit exactly, the same command is taken.
    func testAPayloadOverTheLimitIsRefusedBeforeItIsParsed() throws {
        let command = Array(#"{"id":"big","op":"connect","address":"C0:11:22:33:44:55"}"#.utf8)
        let limit = GatewayCommandDecoder.maximumPayload
        XCTAssertEqual(limit, 16 * 1024)
        let tenMB = command + [UInt8](repeating: 0x20, count: 10 * 1024 * 1024 - command.count)
        assertRefused(tenMB, .tooLarge(size: 10 * 1024 * 1024, limit: limit))
        XCTAssertNil(GatewayCommandDecoder.identifier(in: tenMB))
        let atLimit = command + [UInt8](repeating: 0x20, count: limit - command.count)
        XCTAssertEqual(GatewayCommandDecoder.decode(atLimit),
                       .success(GatewayRequest(id: "big", operation: .connect(GatewayDevice(Self.address, type: nil)))))
        assertRefused(atLimit + [0x20], .tooLarge(size: limit + 1, limit: limit))
    }

    func testTextThatIsNotJSONIsMalformed() {
        for text in ["", " ", "{", "}", "{\"op\":}", "{'op':'connect'}", "{op:\"connect\"}", "op=connect",
                     "{\"op\" \"connect\"}", "{\"op\":\"connect\"}{", "{\"op\":\"conn\nect\"}", "{\"op\":\"x\\qy\"}",
                     "{\"id\":01,\"op\":\"gatt\"}", "{\"id\":NaN,\"op\":\"gatt\"}", "{\"op\":\"gatt\"} // comment"] {
            assertRefused(text, .malformedJSON)
        }
    }

    /// RFC 8259 §4 has no comma after an object's last member; `JSONSerialization` takes one.
    func testATrailingCommaIsMalformed() {
        assertRefused(#"{"op":"connect","address":"C0:11:22:33:44:55",}"#, .malformedJSON)
        assertRefused(#"{"id":[1,],"op":"connect","address":"C0:11:22:33:44:55"}"#, .malformedJSON)
    }

    func testBytesThatAreNotUTF8AreMalformed() {
        let prefix = Array(#"{"op":"connect","address":""#.utf8), suffix = Array(#""}"#.utf8)
        for bad: [UInt8] in [[0xFF], [0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80]] {
            assertRefused(prefix + bad + suffix, .malformedJSON, "\(bad)")
        }
        assertRefused([0xFF, 0xFE, 0xFD], .malformedJSON)
    }

    /// "Not JSON text (or not UTF-8)": a command in UTF-16 or UTF-32 (which `JSONSerialization`
    /// detects and reads) is not UTF-8, and RFC 8259 §8.1 has JSON between systems in UTF-8.
    func testACommandInUTF16OrUTF32IsRefused() {
        let command = #"{"op":"connect","address":"C0:11:22:33:44:55"}"#
        let utf16LE = command.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let utf16BE = command.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let utf32LE = command.unicodeScalars.flatMap { s in (0..<4).map { UInt8((s.value >> (8 * UInt32($0))) & 0xFF) } }
        assertRefused(utf16LE, .malformedJSON, "UTF-16LE")
        assertRefused([0xFF, 0xFE] + utf16LE, .malformedJSON, "UTF-16LE with BOM")
        assertRefused(utf16BE, .malformedJSON, "UTF-16BE")
        assertRefused(utf32LE, .malformedJSON, "UTF-32LE")
    }

    func testJSONThatIsNotOneObjectIsRefused() {
        assertRefused("[]", .notAnObject)
        assertRefused(#"[{"op":"connect","address":"C0:11:22:33:44:55"}]"#, .notAnObject)
        assertRefused(" [1, 2] ", .notAnObject)
    }

    /// A JSON text may be a lone string, number, `true` or `null` (RFC 8259 §2): that is
    /// "JSON, but not one object", not malformed JSON.
    func testAJSONStringNumberOrLiteralIsNotAnObject() {
        for text in [#""connect""#, "42", "true", "null"] {
            assertRefused(text, .notAnObject)
        }
    }

    /// The parser's nesting limit turns a deep payload into a refusal: no stack overflow.
    func testDeeplyNestedJSONIsRefusedWithoutACrash() {
        assertRefused(String(repeating: "[", count: 10_000), .malformedJSON)
        assertRefused(String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000), .malformedJSON)
        let deepObject = String(repeating: #"{"a":"#, count: 2_000) + "1" + String(repeating: "}", count: 2_000)
        XCTAssertLessThanOrEqual(deepObject.utf8.count, GatewayCommandDecoder.maximumPayload)
        assertRefused(deepObject, .malformedJSON)
        let deepField = #"{"op":"connect","address":"C0:11:22:33:44:55","x":"# + String(repeating: "[", count: 5_000)
            + String(repeating: "]", count: 5_000) + "}"
        assertRefused(deepField, .malformedJSON)
    }

    func testMissingFieldsAreNamed() {
        assertRefused("{}", .missingField("op"))
        assertRefused(#"{"id":"x","address":"C0:11:22:33:44:55"}"#, .missingField("op"))
        assertRefused(#"{"op":"connect"}"#, .missingField("address"))
        assertRefused(#"{"op":"read","characteristic":"2A37"}"#, .missingField("address"))
        assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55"}"#, .missingField("characteristic"))
        assertRefused(#"{"op":"subscribe","address":"C0:11:22:33:44:55","service":"180D"}"#, .missingField("characteristic"))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39"}"#, .missingField("hex"))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","hex":"01"}"#, .missingField("characteristic"))
    }

    func testFieldsOfTheWrongTypeAreNamedWithTheTypeTheyNeed() {
        assertRefused(#"{"op":1,"address":"C0:11:22:33:44:55"}"#, .wrongType(field: "op", expected: "a string"))
        assertRefused(#"{"op":null,"address":"C0:11:22:33:44:55"}"#, .wrongType(field: "op", expected: "a string"))
        assertRefused(#"{"op":["connect"],"address":"C0:11:22:33:44:55"}"#, .wrongType(field: "op", expected: "a string"))
        assertRefused(#"{"op":"connect","address":42}"#, .wrongType(field: "address", expected: "a string"))
        assertRefused(#"{"op":"connect","address":{"a":"C0:11:22:33:44:55"}}"#, .wrongType(field: "address", expected: "a string"))
        assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55","characteristic":10807}"#,
                      .wrongType(field: "characteristic", expected: "a string"))
        assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55","characteristic":"2A37","service":true}"#,
                      .wrongType(field: "service", expected: "a string"))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":[1,2]}"#,
                      .wrongType(field: "hex", expected: "a string"))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"01","response":"false"}"#,
                      .wrongType(field: "response", expected: "true or false"))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"01","response":null}"#,
                      .wrongType(field: "response", expected: "true or false"))
    }

    /// `response` is "true or false": the numbers 1 and 0 are not booleans in JSON, though
    /// `JSONSerialization` gives both as `NSNumber` and `as? Bool` takes 0 and 1.
    func testANumberIsNotABooleanResponse() {
        for number in ["1", "0", "1.0"] {
            assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"01","response":\#(number)}"#,
                          .wrongType(field: "response", expected: "true or false"))
        }
    }

    func testAFieldTheOperationDoesNotTakeIsRefused() {
        assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55","charateristic":"2A37"}"#, .unknownField("charateristic"))
        assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55","characteristic":"2A37","hex":"01"}"#, .unknownField("hex"))
        assertRefused(#"{"op":"connect","address":"C0:11:22:33:44:55","characteristic":"2A37"}"#, .unknownField("characteristic"))
        assertRefused(#"{"op":"gatt","address":"C0:11:22:33:44:55","service":"180D"}"#, .unknownField("service"))
        assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","value":"01"}"#, .unknownField("value"))
        assertRefused(#"{"op":"connect","address":"C0:11:22:33:44:55","Address":"C0:11:22:33:44:55"}"#, .unknownField("Address"))
    }

    func testAnOperationNotInTheListIsRefused() {
        assertRefused(#"{"op":"delete","address":"C0:11:22:33:44:55"}"#, .unknownOperation("delete"))
        assertRefused(#"{"op":"Connect","address":"C0:11:22:33:44:55"}"#, .unknownOperation("Connect"))
        assertRefused(#"{"op":"","address":"C0:11:22:33:44:55"}"#, .unknownOperation(""))
    }

    func testAnAddressThatIsNotSixOctetsAndATypeIsRefused() {
        let long = String(repeating: "C0:11:22:33:44:55/", count: 6).prefix(100)
        XCTAssertEqual(long.count, 100)
        for text in ["C0:11:22:33:44", "C0:11:22:33:44:55:66", "C0:11:22:33:44:55/static", "C0:11:22:33:44:55/",
                     "C0:11:22:33:44:55/public/random", "C0:11:22:33:44:5G", "C011:22:33:44:55:", "C0112233 4455", "",
                     String(long), " C0:11:22:33:44:55"] {
            assertRefused(#"{"op":"connect","address":"\#(text)"}"#, .badAddress(text))
        }
    }

    func testAUUIDThatDoesNotParseIsRefusedWithItsField() {
        for text in ["2A3", "2A370", "xyz", "", "0x", "0000180d-0000-1000-8000-00805f9b34fb0",
                     "0000180d00001000800000805f9b34fb-", String(repeating: "2A37", count: 10)] {
            assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55","characteristic":"\#(text)"}"#,
                          .badUUID(field: "characteristic", value: text))
        }
        assertRefused(#"{"op":"read","address":"C0:11:22:33:44:55","characteristic":"2A37","service":"18G0"}"#,
                      .badUUID(field: "service", value: "18G0"))
    }

    func testHexThatIsOddOrNotHexIsRefused() {
        for text in ["1", "abc", "zz", "0g", "01 0", "0x1", "😀😀"] {
            assertRefused(#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"\#(text)"}"#, .badHex(text))
        }
    }

    func testAnIDThatIsTooLongOrNotAStringOrNumberIsRefused() {
        let tooLong = String(repeating: "i", count: GatewayCommandDecoder.maximumIDLength + 1)
        for id in [#""\#(tooLong)""#, #"{"a":1}"#, "[1]", "[]"] {
            assertRefused(#"{"id":\#(id),"op":"gatt","address":"C0:11:22:33:44:55"}"#, .badID)
        }
        // The id is checked first: a command refused for it is refused for nothing else.
        assertRefused(#"{"id":{},"op":"nope"}"#, .badID)
    }

    /// `true` is neither "a string nor number" (`badID`'s text), though it reaches the decoder as
    /// an `NSNumber` whose `stringValue` is "1".
    func testABooleanIsNotAnID() {
        assertRefused(#"{"id":true,"op":"gatt","address":"C0:11:22:33:44:55"}"#, .badID)
        assertRefused(#"{"id":false,"op":"gatt","address":"C0:11:22:33:44:55"}"#, .badID)
    }

    // MARK: The refused command's id, codes and messages

    func testTheIDOfARefusedCommandIsFound() {
        let refused = [
            (#"{"id":"a1","op":"delete","address":"C0:11:22:33:44:55"}"#, "a1"),
            (#"{"id":12,"op":"read","address":"C0:11:22:33:44:55"}"#, "12"),
            (#"{"op":"connect","id":"z","address":"bad"}"#, "z"),
            (#"{"id":"typo","op":"read","address":"C0:11:22:33:44:55","charateristic":"2A37"}"#, "typo"),
        ]
        for (json, id) in refused {
            guard case .failure = decode(json) else { XCTFail("\(json) accepted"); continue }
            XCTAssertEqual(GatewayCommandDecoder.identifier(in: Array(json.utf8)), id, json)
        }
        let tooLong = String(repeating: "i", count: GatewayCommandDecoder.maximumIDLength + 1)
        for json in [#"{"op":"delete"}"#, #"{"id":{},"op":"delete"}"#, #"{"id":"\#(tooLong)"}"#, #"["id","x"]"#, #"{"id":"x""#] {
            XCTAssertNil(GatewayCommandDecoder.identifier(in: Array(json.utf8)), json)
        }
    }

    /// The codes are the reply's stable `code` strings, one per case.
    func testEachRefusalHasItsCode() {
        let codes: [(GatewayCommandError, String)] = [
            (.tooLarge(size: 20_000, limit: 16_384), "too-large"),
            (.malformedJSON, "malformed-json"),
            (.notAnObject, "not-an-object"),
            (.missingField("op"), "missing-field"),
            (.wrongType(field: "op", expected: "a string"), "wrong-type"),
            (.unknownField("x"), "unknown-field"),
            (.unknownOperation("x"), "unknown-op"),
            (.badAddress("x"), "bad-address"),
            (.badUUID(field: "service", value: "x"), "bad-uuid"),
            (.badHex("x"), "bad-hex"),
            (.valueTooLong(513), "value-too-long"),
            (.badID, "bad-id"),
        ]
        for (error, code) in codes { XCTAssertEqual(error.code, code, "\(error)") }
        XCTAssertEqual(Set(codes.map(\.1)).count, codes.count)
    }

    /// What the caller wrote comes back in the message with control characters as `?`, so a
    /// reply printed to a terminal cannot carry escape sequences or line breaks from the input.
    func testMessagesShowNoControlCharactersFromTheInput() throws {
        let refused: [(String, String)] = [
            (#"{"op":"\u001b[2J\u0000x\u007f"}"#, "?[2J?x?"),
            (#"{"op":"read","address":"C0:11:22:33:44:55","x\r\ny":1}"#, "x??y"),
            (#"{"op":"connect","address":"C0:11:22:33:44:55\n"}"#, "C0:11:22:33:44:55?"),
            (#"{"op":"read","address":"C0:11:22:33:44:55","characteristic":"2A\t37"}"#, "2A?37"),
            (#"{"op":"write","address":"C0:11:22:33:44:55","characteristic":"2A39","hex":"zz\u0007"}"#, "zz?"),
        ]
        for (json, shown) in refused {
            guard case let .failure(error) = decode(json) else { XCTFail("\(json) accepted"); continue }
            let text = error.description
            XCTAssertFalse(text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(error.code): \(text.debugDescription)")
            XCTAssertTrue(text.contains(shown), "\(text.debugDescription) does not show \(shown.debugDescription)")
        }
    }

    func testLongInputIsCutInMessages() {
        let long = String(repeating: "x", count: 30) + String(repeating: "y", count: 70)
        guard case let .failure(error) = decode(#"{"op":"\#(long)"}"#) else { return XCTFail("accepted") }
        XCTAssertEqual(error, .unknownOperation(long))
        XCTAssertTrue(error.description.contains(String(repeating: "x", count: 30) + String(repeating: "y", count: 10) + "…"))
        XCTAssertFalse(error.description.contains(String(repeating: "y", count: 11)))
    }

    /// C1 control characters (U+0080–U+009F, Unicode category Cc) are control characters too:
    /// U+009B is CSI, an escape sequence's start on terminals that take 8-bit controls, and
    /// U+0085 a line break.
    func testC1ControlCharactersAreShownAsQuestionMarks() {
        guard case let .failure(error) = decode(#"{"op":"\u009b2J\u0085x"}"#) else { return XCTFail("accepted") }
        XCTAssertEqual(error, .unknownOperation("\u{9B}2J\u{85}x"))
        let controls = error.description.unicodeScalars.filter { $0.properties.generalCategory == .control }
        XCTAssertTrue(controls.isEmpty, "control characters in the message: \(controls.map { String($0.value, radix: 16) })")
    }
}

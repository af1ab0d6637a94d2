import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// ATT PDU layouts, Core spec Vol 3 Part F §3.4: golden bytes for every PDU both ways, and the
/// length checks that keep a malformed PDU from being acted on.
final class ATTCodecTests: XCTestCase {
    private let uuid128 = BluetoothUUID(high: 0x1234_5678_1234_5678, low: 0x1234_5678_9ABC_DEF0)
    private let uuid128Hex = "f0debc9a785634127856341278563412"

    /// Every PDU with its exact wire form.
    private var golden: [(ATTPDU, String)] {
        [
            (.errorResponse(requestOpcode: .readRequest, handle: 0x0003, code: .attributeNotFound), "01 0a 0300 0a"),
            (.exchangeMTURequest(clientMTU: 517), "02 0502"),
            (.exchangeMTUResponse(serverMTU: 23), "03 1700"),
            (.findInformationRequest(startHandle: 1, endHandle: 0xFFFF), "04 0100 ffff"),
            (.findInformationResponse([ATTHandleUUID(handle: 4, uuid: BluetoothUUID(0x2902)),
                                       ATTHandleUUID(handle: 5, uuid: BluetoothUUID(0x2901))]), "05 01 0400 0229 0500 0129"),
            (.findInformationResponse([ATTHandleUUID(handle: 6, uuid: uuid128)]), "05 02 0600 \(uuid128Hex)"),
            (.findByTypeValueRequest(startHandle: 1, endHandle: 0xFFFF, attributeType: 0x2800, value: [0x0D, 0x18]),
             "06 0100 ffff 0028 0d18"),
            (.findByTypeValueResponse([ATTHandleRange(foundHandle: 1, groupEndHandle: 5),
                                       ATTHandleRange(foundHandle: 0x20, groupEndHandle: 0x2F)]), "07 0100 0500 2000 2f00"),
            (.readByTypeRequest(startHandle: 1, endHandle: 0x10, attributeType: BluetoothUUID(0x2803)), "08 0100 1000 0328"),
            (.readByTypeRequest(startHandle: 1, endHandle: 0x10, attributeType: uuid128), "08 0100 1000 \(uuid128Hex)"),
            (.readByTypeResponse([ATTHandleValue(handle: 2, value: [0x1A, 0x03, 0x00, 0x37, 0x2A]),
                                  ATTHandleValue(handle: 4, value: [0x02, 0x05, 0x00, 0x38, 0x2A])]),
             "09 07 0200 1a0300372a 0400 020500382a"),
            (.readRequest(handle: 3), "0a 0300"),
            (.readResponse(value: [1, 2, 3]), "0b 010203"),
            (.readResponse(value: []), "0b"),
            (.readBlobRequest(handle: 3, offset: 22), "0c 0300 1600"),
            (.readBlobResponse(value: [9]), "0d 09"),
            (.readMultipleRequest(handles: [3, 5]), "0e 0300 0500"),
            (.readMultipleResponse(values: [1, 2, 3, 4]), "0f 01020304"),
            (.readByGroupTypeRequest(startHandle: 1, endHandle: 0xFFFF, groupType: BluetoothUUID(0x2800)), "10 0100 ffff 0028"),
            (.readByGroupTypeResponse([ATTGroupData(handle: 1, endGroupHandle: 5, value: [0x00, 0x18]),
                                       ATTGroupData(handle: 6, endGroupHandle: 9, value: [0x01, 0x18])]),
             "11 06 0100 0500 0018 0600 0900 0118"),
            (.writeRequest(handle: 3, value: [1, 2]), "12 0300 0102"),
            (.writeResponse, "13"),
            (.prepareWriteRequest(handle: 3, offset: 18, value: [7, 8]), "16 0300 1200 0708"),
            (.prepareWriteResponse(handle: 3, offset: 18, value: [7, 8]), "17 0300 1200 0708"),
            (.executeWriteRequest(flags: .cancel), "18 00"),
            (.executeWriteRequest(flags: .write), "18 01"),
            (.executeWriteResponse, "19"),
            (.handleValueNotification(handle: 5, value: [0xAA]), "1b 0500 aa"),
            (.handleValueIndication(handle: 5, value: [0xBB]), "1d 0500 bb"),
            (.handleValueConfirmation, "1e"),
            (.readMultipleVariableRequest(handles: [3, 5, 7]), "20 0300 0500 0700"),
            (.readMultipleVariableResponse([ATTLengthValue(value: [1, 2]), ATTLengthValue(value: [])]), "21 0200 0102 0000"),
            (.readMultipleVariableResponse([ATTLengthValue(length: 10, value: [1, 2])]), "21 0a00 0102"),
            (.multipleHandleValueNotification([ATTHandleValue(handle: 5, value: [0xAA]),
                                               ATTHandleValue(handle: 6, value: [0xBB, 0xCC])]), "23 0500 0100 aa 0600 0200 bbcc"),
            (.writeCommand(handle: 3, value: [1]), "52 0300 01"),
            (.signedWriteCommand(handle: 3, value: [1, 2], signature: Array(0..<12)), "d2 0300 0102 000102030405060708090a0b"),
            (.unknown(opcode: ATTOpcode(0x3F), parameters: [1, 2]), "3f 0102"),
        ]
    }

    func testEveryPDURoundTrips() throws {
        for (pdu, hex) in golden {
            let bytes = hexBytes(hex)
            XCTAssertEqual(pdu.encode().hexString, bytes.hexString, "\(pdu)")
            XCTAssertEqual(try ATTPDU.decode(bytes), pdu, hex)
            XCTAssertEqual(pdu.opcode.rawValue, bytes[0])
        }
    }

    func testEveryPrefixOfEveryGoldenPDUDecodesOrThrows() {
        for (_, hex) in golden {
            let bytes = hexBytes(hex)
            for length in 0..<bytes.count {
                // Must not trap; most prefixes throw, some are themselves valid PDUs.
                _ = try? ATTPDU.decode(Array(bytes.prefix(length)))
            }
        }
    }

    func testFindInformationWith128BitAliasReEncodesShort() throws {
        // Format 2 carrying a Bluetooth Base UUID decodes to the same UUID as the 16-bit form.
        let long = try ATTPDU.decode(hexBytes("05 02 0400 fb349b5f800000800010000002290000"))
        XCTAssertEqual(long, .findInformationResponse([ATTHandleUUID(handle: 4, uuid: BluetoothUUID(0x2902))]))
        XCTAssertEqual(long.encode().hexString, "050104000229")
    }

    // MARK: Rejections (never a trap)

    private func assertInvalid(_ hex: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try ATTPDU.decode(hexBytes(hex)), hex, file: file, line: line) { error in
            XCTAssertTrue(error is WireError, file: file, line: line)
        }
    }

    func testLengthPrefixedListsAreValidated() {
        assertInvalid("09 00")                           // zero length
        assertInvalid("09 01 0300")                      // shorter than a handle
        assertInvalid("09 04 0300 5a00 07")              // does not divide the rest
        assertInvalid("09 04")                           // empty list
        assertInvalid("11 03 0100 05")                   // shorter than handle + end
        assertInvalid("11 06 0100 0500 0018 0600")       // ragged
        assertInvalid("11 00")
        assertInvalid("05 03 0400 0229")                 // reserved format
        assertInvalid("05 01 0400 0229 05")              // ragged
        assertInvalid("05 02 0400 0229")                 // format 2 needs 16-octet UUIDs
        assertInvalid("05 01")                           // empty
        assertInvalid("07 0100 05")                      // ragged handle pairs
        assertInvalid("07")                              // empty
        assertInvalid("23 0500 0200 aa")                 // tuple longer than the PDU
        assertInvalid("23")
        assertInvalid("21")
        assertInvalid("21 05")                           // half a length field
    }

    func testFixedLayoutsAreValidated() {
        assertInvalid("")
        assertInvalid("01 0a 0300")                      // short error response
        assertInvalid("01 0a 0300 0a 00")                // trailing octet
        assertInvalid("02 17")
        assertInvalid("03 1700 00")
        assertInvalid("04 0100 ff")
        assertInvalid("08 0100 1000 03")                 // 1-octet UUID
        assertInvalid("08 0100 1000 0d180000")           // ATT has no 32-bit UUIDs
        assertInvalid("10 0100 ffff")                    // missing group type
        assertInvalid("0e 0300")                         // one handle
        assertInvalid("0e 0300 05")                      // odd
        assertInvalid("20 0300")
        assertInvalid("0a 03")
        assertInvalid("0c 0300 16")
        assertInvalid("13 00")
        assertInvalid("16 0300 12")
        assertInvalid("18")
        assertInvalid("19 00")
        assertInvalid("1e 00")
        assertInvalid("d2 0300 0001020304050607080910")  // 11-octet signature
    }

    // MARK: Opcodes and error codes

    func testOpcodeProperties() {
        XCTAssertTrue(ATTOpcode.writeCommand.isCommand)
        XCTAssertFalse(ATTOpcode.writeCommand.isSigned)
        XCTAssertTrue(ATTOpcode.signedWriteCommand.isCommand)
        XCTAssertTrue(ATTOpcode.signedWriteCommand.isSigned)
        XCTAssertEqual(ATTOpcode.signedWriteCommand.method, ATTOpcode.writeRequest.method)
        XCTAssertFalse(ATTOpcode.readRequest.isCommand)
        XCTAssertEqual(ATTOpcode.readRequest.responseOpcode, .readResponse)
        XCTAssertEqual(ATTOpcode.readMultipleVariableRequest.responseOpcode, .readMultipleVariableResponse)
        XCTAssertEqual(ATTOpcode.handleValueIndication.responseOpcode, .handleValueConfirmation)
        XCTAssertNil(ATTOpcode.writeCommand.responseOpcode)
        XCTAssertNil(ATTOpcode.handleValueNotification.responseOpcode)
        XCTAssertEqual(ATTOpcode.multipleHandleValueNotification.kind, .notification)
        XCTAssertEqual(ATTOpcode(0x4C).kind, .unknown)
        XCTAssertEqual(ATTOpcode.readRequest.description, "Read Request (0x0A)")
        XCTAssertEqual(ATTOpcode(0x4C).description, "Opcode 0x4C")
        // Every request has a response opcode and vice versa.
        for raw in 0...255 {
            let op = ATTOpcode(UInt8(raw))
            XCTAssertEqual(op.kind == .request, op.responseOpcode != nil && op != .handleValueIndication, op.description)
            if let response = op.responseOpcode, op.kind == .request { XCTAssertEqual(response.kind, .response) }
        }
    }

    func testErrorCodeNames() {
        XCTAssertEqual(ATTErrorCode.attributeNotFound.description, "Attribute Not Found (0x0A)")
        XCTAssertEqual(ATTErrorCode(0x80).description, "Application Error (0x80)")
        XCTAssertTrue(ATTErrorCode(0x9F).isApplicationError)
        XCTAssertFalse(ATTErrorCode(0xA0).isApplicationError)
        XCTAssertEqual(ATTErrorCode.cccdImproperlyConfigured.rawValue, 0xFD)
        XCTAssertEqual(ATTErrorCode.procedureAlreadyInProgress.description, "Procedure Already in Progress (0xFE)")
        XCTAssertEqual(ATTErrorCode.outOfRange.description, "Out of Range (0xFF)")
        XCTAssertTrue(ATTErrorCode.outOfRange.isCommonProfileError)
        XCTAssertEqual(ATTErrorCode(0x14).description, "Reserved (0x14)")
        for raw in UInt8(0x01)...0x13 { XCTAssertNotNil(ATTErrorCode(raw).name, "\(raw)") }
    }
}

import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// GATT client scripts for the GAW (write) test-suite category. Core spec Vol 3 Part G §4.9,
/// §4.12.3.
final class GATTClientWriteTests: XCTestCase {
    // MARK: Write Characteristic Value (§4.9.3)

    func testGAW_CL_BV_03_C_writeRequest() {
        let outcome = runGATTClientScript(WriteProcedure(handle: 3, value: [1, 2]), ["C: 12 0300 0102", "S: 13"])
        XCTAssertEqual(outcome.result, .success(.none))
    }

    func testGAW_CL_BI_02_C_writeNotPermitted() {
        let outcome = runGATTClientScript(WriteProcedure(handle: 3, value: [1]), ["C: 12 0300 01", "S: 01 12 0300 03"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .writeNotPermitted, handle: 3, request: .writeRequest)))
    }

    func testGAW_writeInvalidLength() {
        let outcome = runGATTClientScript(WriteProcedure(handle: 3, value: [1]), ["C: 12 0300 01", "S: 01 12 0300 0d"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .invalidAttributeValueLength, handle: 3, request: .writeRequest)))
    }

    func testGAW_writeRequestTooLongForMTUIsRejectedLocally() {
        let outcome = runGATTClientScript(WriteProcedure(handle: 3, value: [UInt8](repeating: 0, count: 21)), [])
        guard case .invalidArgument? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }

    func testGAW_CL_BV_08_C_writeDescriptorCCCD() {
        var outcome = runGATTClientScript(WriteProcedure.clientConfiguration(descriptorHandle: 4, .notifications),
                                          ["C: 12 0400 0100", "S: 13"])
        XCTAssertEqual(outcome.result, .success(.none))
        outcome = runGATTClientScript(WriteProcedure.clientConfiguration(descriptorHandle: 4, .indications),
                                      ["C: 12 0400 0200", "S: 13"])
        XCTAssertEqual(outcome.result, .success(.none))
        outcome = runGATTClientScript(WriteProcedure.clientConfiguration(descriptorHandle: 4, .off),
                                      ["C: 12 0400 0000", "S: 13"])
        XCTAssertEqual(outcome.result, .success(.none))
    }

    func testGAW_writeCCCDImproperlyConfigured() {
        let outcome = runGATTClientScript(WriteProcedure.clientConfiguration(descriptorHandle: 4, .indications),
                                          ["C: 12 0400 0200", "S: 01 12 0400 fd"])
        XCTAssertEqual(outcome.result?.gattError?.description,
                       "ATT error Client Characteristic Configuration Descriptor Improperly Configured (0xFD) on handle 0x0004 for Write Request (0x12)")
    }

    // MARK: Write Without Response (§4.9.1), Signed Write (§4.9.2)

    func testGAW_CL_BV_01_C_writeWithoutResponseSendsACommandAtOnce() throws {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [.send(hexBytes("0a 0300"))])
        // A request is outstanding; the command still goes out at once and needs no answer.
        XCTAssertEqual(try bearer.writeWithoutResponse(handle: 5, value: [0xAA, 0xBB]), [.send(hexBytes("52 0500 aabb"))])
        XCTAssertTrue(bearer.hasOutstandingRequest)
        XCTAssertEqual(bearer.receive(hexBytes("0b 01"), now: .seconds(1)), [.complete(id: 1, .success(.value([1])))])
        XCTAssertFalse(bearer.hasOutstandingRequest)
    }

    func testGAW_writeWithoutResponseTooLong() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.maximumWriteValueLength(withoutResponse: true), 20)
        XCTAssertNoThrow(try bearer.writeWithoutResponse(handle: 5, value: [UInt8](repeating: 0, count: 20)))
        XCTAssertThrowsError(try bearer.writeWithoutResponse(handle: 5, value: [UInt8](repeating: 0, count: 21))) { error in
            guard case .invalidArgument? = error as? GATTError else { return XCTFail("\(error)") }
        }
        // The non-throwing form sends nothing for a non-command or an over-long command.
        XCTAssertEqual(bearer.sendCommand(.readRequest(handle: 3)), [])
        XCTAssertEqual(bearer.sendCommand(.writeCommand(handle: 5, value: [UInt8](repeating: 0, count: 21))), [])
        XCTAssertEqual(bearer.sendCommand(.writeCommand(handle: 5, value: [1])), [.send(hexBytes("52 0500 01"))])
    }

    // MARK: Signed Write Without Response (§4.9.2)

    /// GATT/CL/GAW/BV-02-C shape: the Signed Write Command is the one BlueZ's `sign_att_5` signs
    /// (handle 0x0012, value 13 37, SignCounter 1), byte for byte.
    func testGAW_CL_BV_02_C_signedWriteWithoutResponse() throws {
        var bearer = ATTClientBearer()
        let key = hexBytes("505E42DF 9691EC72 D31FCDFB EB641B61")
        let actions = try bearer.signedWriteWithoutResponse(handle: 0x12, value: [0x13, 0x37], key: key, counter: 1)
        XCTAssertEqual(actions, [.send(hexBytes("d2 1200 1337 01000000 f1871e93 3c900ff2"))])
        XCTAssertFalse(bearer.hasOutstandingRequest, "a command takes no request slot")
    }

    func testGAW_signedWriteLimitsAndErrors() throws {
        var bearer = ATTClientBearer()
        let key = [UInt8](repeating: 7, count: 16)
        XCTAssertEqual(SignedWriteWithoutResponse.maximumValueLength(mtu: 23), 8)
        let eight = try bearer.signedWriteWithoutResponse(handle: 5, value: [UInt8](repeating: 1, count: 8), key: key, counter: 0)
        guard case let .send(bytes)? = eight.first else { return XCTFail("\(eight)") }
        XCTAssertEqual(bytes.count, 23, "exactly ATT_MTU")
        XCTAssertThrowsError(try bearer.signedWriteWithoutResponse(handle: 5, value: [UInt8](repeating: 1, count: 9), key: key, counter: 1)) { error in
            guard case .invalidArgument? = error as? GATTError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try bearer.signedWriteWithoutResponse(handle: 5, value: [1], key: [1, 2, 3], counter: 1)) { error in
            guard case .invalidArgument? = error as? GATTError else { return XCTFail("\(error)") }
        }
        _ = bearer.close()
        XCTAssertThrowsError(try bearer.signedWriteWithoutResponse(handle: 5, value: [1], key: key, counter: 2)) { error in
            XCTAssertEqual(error as? GATTError, .bearerClosed)
        }
    }

    // MARK: Write Long Characteristic Values (§4.9.4)

    /// Prepare/echo lines for `value` written to `handle` in ATT_MTU − 5 = 18-octet parts.
    private func prepareLines(handle: Int, _ value: [UInt8], from start: Int = 0) -> [String] {
        stride(from: 0, to: value.count, by: 18).flatMap { offset -> [String] in
            let part = Array(value[offset..<min(offset + 18, value.count)]).hexString
            let header = "\(attLE16(handle)) \(attLE16(start + offset))"
            return ["C: 16 \(header) \(part)", "S: 17 \(header) \(part)"]
        }
    }

    func testGAW_CL_BV_05_C_writeLong300OctetsAtMTU23() {
        let value = (0..<300).map { UInt8($0 & 0xFF) }
        let lines = prepareLines(handle: 3, value) + ["C: 18 01", "S: 19"]
        XCTAssertEqual(lines.count, 2 * 17 + 2)
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: value), lines)
        XCTAssertEqual(outcome.result, .success(.none))
    }

    func testGAW_writeLong_errorCancelsThenFailsWithTheOriginalError() {
        let value = (0..<40).map { UInt8($0) }
        let lines = Array(prepareLines(handle: 3, value).prefix(3)) + [
            "S: 01 16 0300 09",  // Prepare Queue Full on the second part
            "C: 18 00",          // cancel the queue
            "S: 19",
        ]
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: value), lines)
        XCTAssertEqual(outcome.result, .failure(.att(code: .prepareQueueFull, handle: 3, request: .prepareWriteRequest)))
    }

    func testGAW_writeLong_cancelAnsweredWithErrorStillReportsOriginal() {
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: [1, 2, 3]), [
            "C: 16 0300 0000 010203",
            "S: 01 16 0300 03",
            "C: 18 00",
            "S: 01 18 0000 0e",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .writeNotPermitted, handle: 3, request: .prepareWriteRequest)))
    }

    func testGAW_writeLong_echoMismatchCancels() {
        let value = [UInt8](repeating: 0x42, count: 18)
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: value), [
            "C: 16 0300 0000 \(value.hexString)",
            "S: 17 0300 0000 \((Array(value.dropLast()) + [0x43]).hexString)",
            "C: 18 00",
            "S: 19",
        ])
        XCTAssertEqual(outcome.result, .failure(.reliableWriteEchoMismatch(handle: 3)))
    }

    func testGAW_writeLong_echoWithWrongOffsetCancels() {
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: [1]), [
            "C: 16 0300 0000 01", "S: 17 0300 0100 01", "C: 18 00", "S: 19",
        ])
        XCTAssertEqual(outcome.result, .failure(.reliableWriteEchoMismatch(handle: 3)))
    }

    func testGAW_writeLong_malformedEchoCancels() {
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: [1]), [
            "C: 16 0300 0000 01", "S: 17 03", "C: 18 00", "S: 19",
        ])
        guard case .malformedResponse? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }

    func testGAW_writeLong_executeErrorFails() {
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: [1]), [
            "C: 16 0300 0000 01", "S: 17 0300 0000 01", "C: 18 01", "S: 01 18 0300 0d",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .invalidAttributeValueLength, handle: 3, request: .executeWriteRequest)))
    }

    func testGAW_writeLong_atOffset() {
        let value = (0..<20).map { UInt8($0) }
        let lines = prepareLines(handle: 3, value, from: 100) + ["C: 18 01", "S: 19"]
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: value, offset: 100), lines)
        XCTAssertEqual(outcome.result, .success(.none))
    }

    func testGAW_writeLong_over512IsRejectedLocally() {
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 3, value: [UInt8](repeating: 0, count: 513)), [])
        guard case .invalidArgument? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }

    // MARK: Reliable Writes (§4.9.5)

    func testGAW_CL_BV_06_C_reliableWriteOfTwoHandles() {
        let outcome = runGATTClientScript(ReliableWriteProcedure([
            ATTHandleValue(handle: 3, value: [1, 2]),
            ATTHandleValue(handle: 5, value: [3, 4]),
        ]), [
            "C: 16 0300 0000 0102", "S: 17 0300 0000 0102",
            "C: 16 0500 0000 0304", "S: 17 0500 0000 0304",
            "C: 18 01", "S: 19",
        ])
        XCTAssertEqual(outcome.result, .success(.none))
    }

    func testGAW_reliableWrite_echoMismatchCancels() {
        let outcome = runGATTClientScript(ReliableWriteProcedure([
            ATTHandleValue(handle: 3, value: [1, 2]),
            ATTHandleValue(handle: 5, value: [3, 4]),
        ]), [
            "C: 16 0300 0000 0102", "S: 17 0300 0000 0102",
            "C: 16 0500 0000 0304", "S: 17 0500 0000 0305",
            "C: 18 00", "S: 19",
        ])
        XCTAssertEqual(outcome.result, .failure(.reliableWriteEchoMismatch(handle: 5)))
    }

    func testGAW_reliableWrite_nothingToWrite() {
        let outcome = runGATTClientScript(ReliableWriteProcedure([]), [])
        guard case .invalidArgument? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }
}

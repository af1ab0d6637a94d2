import XCTest
import BLEWire
@testable import BLEHost

/// GATT client scripts for the GAR (read) test-suite category. Core spec Vol 3 Part G §4.8.
final class GATTClientReadTests: XCTestCase {
    // MARK: Read Characteristic Value (§4.8.1)

    func testGAR_CL_BV_01_C_read() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 0b 010203"])
        XCTAssertEqual(outcome.result, .success(.value([1, 2, 3])))
    }

    func testGAR_read_emptyValue() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 0b"])
        XCTAssertEqual(outcome.result, .success(.value([])))
    }

    func testGAR_CL_BI_01_C_readInvalidHandle() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 0x0F), ["C: 0a 0f00", "S: 01 0a 0f00 01"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .invalidHandle, handle: 0x0F, request: .readRequest)))
        XCTAssertEqual(outcome.result?.gattError?.description,
                       "ATT error Invalid Handle (0x01) on handle 0x000F for Read Request (0x0A)")
    }

    func testGAR_CL_BI_02_C_readNotPermitted() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 01 0a 0300 02"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .readNotPermitted, handle: 3, request: .readRequest)))
    }

    func testGAR_CL_BI_04_C_readInsufficientAuthentication() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 01 0a 0300 05"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .insufficientAuthentication, handle: 3, request: .readRequest)))
    }

    func testGAR_read_insufficientEncryptionAndApplicationError() {
        var outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 01 0a 0300 0f"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .insufficientEncryption, handle: 3, request: .readRequest)))
        outcome = runGATTClientScript(ReadProcedure(handle: 3), ["C: 0a 0300", "S: 01 0a 0300 80"])
        XCTAssertEqual(outcome.result, .failure(.att(code: ATTErrorCode(0x80), handle: 3, request: .readRequest)))
    }

    // MARK: Read Long Characteristic Values (§4.8.3)

    /// Script lines for a read long of `value` at MTU 23, one part per request.
    private func readLongLines(_ parts: [[UInt8]]) -> [String] {
        var lines: [String] = []
        var offset = 0
        for (i, part) in parts.enumerated() {
            if i == 0 {
                lines += ["C: 0a 0300", "S: 0b \(part.hexString)"]
            } else {
                lines += ["C: 0c 0300 \(attLE16(offset))", "S: 0d \(part.hexString)"]
            }
            offset += part.count
        }
        return lines
    }

    func testGAR_CL_BV_04_C_readLongAcrossThreeBlobs() {
        let value = (0..<76).map { UInt8($0) }
        let parts = [Array(value[0..<22]), Array(value[22..<44]), Array(value[44..<66]), Array(value[66...])]
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), readLongLines(parts))
        XCTAssertEqual(outcome.result, .success(.value(value)))
    }

    func testGAR_readLong_exactMultipleEndsWithInvalidOffset() {
        let value = (0..<44).map { UInt8($0) }
        let lines = readLongLines([Array(value[0..<22]), Array(value[22...])]) + [
            "C: 0c 0300 2c00",
            "S: 01 0c 0300 07",
        ]
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), lines)
        XCTAssertEqual(outcome.result, .success(.value(value)))
    }

    func testGAR_readLong_exactlyOnePartEndsWithAttributeNotLong() {
        let value = [UInt8](repeating: 0x5A, count: 22)
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), [
            "C: 0a 0300",
            "S: 0b \(value.hexString)",
            "C: 0c 0300 1600",
            "S: 01 0c 0300 0b",
        ])
        XCTAssertEqual(outcome.result, .success(.value(value)))
    }

    func testGAR_readLong_exactMultipleEndsWithEmptyBlob() {
        let value = [UInt8](repeating: 0x11, count: 22)
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), [
            "C: 0a 0300", "S: 0b \(value.hexString)",
            "C: 0c 0300 1600", "S: 0d",
        ])
        XCTAssertEqual(outcome.result, .success(.value(value)))
    }

    func testGAR_readLong_errorOnFirstReadFails() {
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), ["C: 0a 0300", "S: 01 0a 0300 02"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .readNotPermitted, handle: 3, request: .readRequest)))
    }

    func testGAR_readLong_otherErrorOnBlobFails() {
        let value = [UInt8](repeating: 0x11, count: 22)
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), [
            "C: 0a 0300", "S: 0b \(value.hexString)",
            "C: 0c 0300 1600", "S: 01 0c 0300 05",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .insufficientAuthentication, handle: 3, request: .readBlobRequest)))
    }

    /// A server that answers every Read Blob with a full part, whatever the offset: the client
    /// stops at the 512-octet attribute maximum (Vol 3 Part F §3.2.9), one Read and 23 Read Blobs
    /// at ATT_MTU 23, with a typed error, instead of reading on towards offset 65535.
    func testGAR_readLong_aServerThatNeverEndsTheValueFailsAtTheAttributeMaximum() throws {
        var bearer = ATTClientBearer(mtu: 23)
        var requests: [[UInt8]] = []
        var result: Result<GATTOutput, GATTError>?
        var actions = bearer.submit(ReadLongProcedure(handle: 3), id: 1, now: .zero)
        let full = [UInt8](repeating: 0xEE, count: 22)
        while result == nil, requests.count < 300 {
            var sent: [UInt8]?
            for action in actions {
                switch action {
                case let .send(bytes): sent = bytes
                case let .complete(_, r): result = r
                default: break
                }
            }
            guard let request = sent else { break }
            requests.append(request)
            actions = bearer.receive([request[0] == 0x0A ? 0x0B : 0x0D] + full, now: .seconds(requests.count))
        }
        XCTAssertEqual(requests.count, 24, "one Read and Read Blobs at 22, 44, … 506")
        XCTAssertEqual(requests.last?.hexString, "0c0300" + attLE16(506))
        guard case .protocolViolation? = result?.gattError else {
            return XCTFail("expected a protocol violation, got \(String(describing: result))")
        }
    }

    /// A value of exactly 512 octets in full parts (ATT_MTU 129: four of 128) ends without a
    /// Read Blob at offset 512: no attribute is longer (§3.2.9).
    func testGAR_readLong_fullPartsReachingTheAttributeMaximumEndTheRead() {
        let value = (0..<512).map { UInt8(truncatingIfNeeded: $0) }
        var lines = ["C: 0a 0300", "S: 0b \(Array(value[0..<128]).hexString)"]
        for offset in stride(from: 128, to: 512, by: 128) {
            lines += ["C: 0c 0300 \(attLE16(offset))", "S: 0d \(Array(value[offset..<(offset + 128)]).hexString)"]
        }
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), mtu: 129, lines)
        XCTAssertEqual(outcome.result, .success(.value(value)))
    }

    /// A Read Response longer than any attribute value (ATT_MTU 517 lets it carry 516 octets).
    func testGAR_readLong_aFirstPartLongerThanTheAttributeMaximumFails() {
        let part = [UInt8](repeating: 0x01, count: 516)
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3), mtu: 517, ["C: 0a 0300", "S: 0b \(part.hexString)"])
        guard case .protocolViolation? = outcome.result?.gattError else {
            return XCTFail("expected a protocol violation, got \(String(describing: outcome.result))")
        }
    }

    func testGAR_readLong_fromOffset() {
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 3, offset: 10), ["C: 0c 0300 0a00", "S: 0d 0102"])
        XCTAssertEqual(outcome.result, .success(.value([1, 2])))
    }

    // MARK: Read Using Characteristic UUID (§4.8.2)

    func testGAR_CL_BV_03_C_readByUUID() {
        let outcome = runGATTClientScript(ReadByUUIDProcedure(uuid: BluetoothUUID(0x2A37)), [
            "C: 08 0100 ffff 372a",
            "S: 09 04 0300 5a00 0700 5b00",
            "C: 08 0800 ffff 372a",
            "S: 01 08 0800 0a",
        ])
        XCTAssertEqual(outcome.result, .success(.handleValues([
            ATTHandleValue(handle: 3, value: [0x5A, 0x00]),
            ATTHandleValue(handle: 7, value: [0x5B, 0x00]),
        ])))
    }

    func testGAR_readByUUID_notFoundIsAnError() {
        let outcome = runGATTClientScript(ReadByUUIDProcedure(uuid: BluetoothUUID(0x2A37), range: 0x0001...0x0010), [
            "C: 08 0100 1000 372a",
            "S: 01 08 0100 0a",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .attributeNotFound, handle: 1, request: .readByTypeRequest)))
    }

    func testGAR_readBy128BitUUID() {
        let outcome = runGATTClientScript(ReadByUUIDProcedure(uuid: gattScriptUUID128, range: 0x0001...0x0010), [
            "C: 08 0100 1000 \(gattScriptUUID128Hex)",
            "S: 09 03 1000 ff",
        ])
        XCTAssertEqual(outcome.result, .success(.handleValues([ATTHandleValue(handle: 0x10, value: [0xFF])])))
    }

    // MARK: Read Multiple (§4.8.4, §4.8.5)

    func testGAR_CL_BV_05_C_readMultiple() {
        let outcome = runGATTClientScript(ReadMultipleProcedure(handles: [3, 5]), ["C: 0e 0300 0500", "S: 0f 0102 0304"])
        XCTAssertEqual(outcome.result, .success(.value([1, 2, 3, 4])))
    }

    func testGAR_readMultiple_needsTwoHandles() {
        let outcome = runGATTClientScript(ReadMultipleProcedure(handles: [3]), [])
        guard case .invalidArgument? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }

    func testGAR_readMultiple_error() {
        let outcome = runGATTClientScript(ReadMultipleProcedure(handles: [3, 5]), ["C: 0e 0300 0500", "S: 01 0e 0500 02"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .readNotPermitted, handle: 5, request: .readMultipleRequest)))
    }

    func testGAR_readMultipleVariable() {
        let outcome = runGATTClientScript(ReadMultipleVariableProcedure(handles: [3, 5, 7]), [
            "C: 20 0300 0500 0700",
            "S: 21 0200 0102 0000 0100 03",
        ])
        XCTAssertEqual(outcome.result, .success(.values([[1, 2], [], [3]])))
    }

    func testGAR_readMultipleVariable_truncatedLastValue() {
        let outcome = runGATTClientScript(ReadMultipleVariableProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 21 0100 aa 0a00 0102",  // second value is 10 long, 2 octets fit
        ])
        XCTAssertEqual(outcome.result, .success(.values([[0xAA], [1, 2]])))
    }

    func testGAR_readMultipleVariable_moreValuesThanHandlesIsAViolation() {
        let outcome = runGATTClientScript(ReadMultipleVariableProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 21 0100 aa 0100 bb 0100 cc",
        ])
        guard case .protocolViolation? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }
}

import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// LE signaling command layouts, golden bytes from Core spec Vol 3 Part A §4.
final class L2CAPSignalingCommandTests: XCTestCase {
    typealias Command = LESignalingCommand

    private func check(_ command: Command, _ hex: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let bytes = hexBytes(hex, file: file, line: line)
        XCTAssertEqual(command.encode(), bytes, "encode", file: file, line: line)
        XCTAssertEqual(try Command(pdu: bytes), command, "decode", file: file, line: line)
    }

    func testCommandReject() throws {
        try check(.commandReject(identifier: 0x05, reason: .notUnderstood), "01 05 0200 0000")
        try check(.commandReject(identifier: 0x06, reason: .signalingMTUExceeded(actualMTU: 23)), "01 06 0400 0100 1700")
        try check(.commandReject(identifier: 0x07, reason: .invalidCID(localCID: 0x0040, remoteCID: 0x0041)),
                  "01 07 0600 0200 4000 4100")
        try check(.commandReject(identifier: 0x08, reason: .other(reason: 0x0009, data: [0xAA])), "01 08 0300 0900 AA")
    }

    func testDisconnection() throws {
        try check(.disconnectionRequest(identifier: 0x02, destinationCID: 0x0040, sourceCID: 0x0041), "06 02 0400 4000 4100")
        try check(.disconnectionResponse(identifier: 0x02, destinationCID: 0x0040, sourceCID: 0x0041), "07 02 0400 4000 4100")
    }

    func testConnectionParameterUpdate() throws {
        let p = Command.ConnectionParameters(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)
        try check(.connectionParameterUpdateRequest(identifier: 0x01, p), "12 01 0800 0600 0C00 0000 C800")
        try check(.connectionParameterUpdateResponse(identifier: 0x01, result: .accepted), "13 01 0200 0000")
        try check(.connectionParameterUpdateResponse(identifier: 0x01, result: .rejected), "13 01 0200 0100")
        XCTAssertEqual(p.description, "interval 7.5-15ms latency 0 timeout 2000ms")
    }

    func testLECreditBased() throws {
        let request = Command.LECreditBasedConnectionRequest(spsm: 0x0080, sourceCID: 0x0040, mtu: 512, mps: 247, initialCredits: 10)
        try check(.leCreditBasedConnectionRequest(identifier: 0x03, request), "14 03 0A00 8000 4000 0002 F700 0A00")
        let response = Command.LECreditBasedConnectionResponse(
            destinationCID: 0x0041, mtu: 256, mps: 100, initialCredits: 5, result: .success)
        try check(.leCreditBasedConnectionResponse(identifier: 0x03, response), "15 03 0A00 4100 0001 6400 0500 0000")
        try check(.flowControlCredit(identifier: 0x04, channelID: 0x0041, credits: 3), "16 04 0400 4100 0300")
    }

    func testEnhancedCreditBased() throws {
        let request = Command.CreditBasedConnectionRequest(spsm: 0x0027, mtu: 64, mps: 64, initialCredits: 2, sourceCIDs: [0x0040, 0x0041])
        try check(.creditBasedConnectionRequest(identifier: 0x09, request), "17 09 0C00 2700 4000 4000 0200 4000 4100")
        let response = Command.CreditBasedConnectionResponse(
            mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported, destinationCIDs: [0, 0])
        try check(.creditBasedConnectionResponse(identifier: 0x09, response), "18 09 0C00 0000 0000 0000 0200 0000 0000")
    }

    /// How many CIDs an enhanced command may list is the receiver's check, answered with a
    /// result (§4.26, §4.28), so lists of none or more than five decode.
    func testEnhancedCIDListsOfAnyLengthDecode() throws {
        guard case let .creditBasedConnectionRequest(_, none) = try Command(pdu: hexBytes("17 01 0800 2700 4000 4000 0200")) else {
            return XCTFail("no request")
        }
        XCTAssertEqual(none.sourceCIDs, [])
        guard case let .creditBasedConnectionRequest(_, seven) = try Command(pdu: hexBytes(
            "17 01 1600 2700 4000 4000 0200 4000 4100 4200 4300 4400 4500 4600")) else { return XCTFail("no request") }
        XCTAssertEqual(seven.sourceCIDs.count, 7)
        // Bumble refuses with no Destination CID at all.
        guard case let .creditBasedConnectionResponse(_, r) = try Command(pdu: hexBytes("18 01 0800 0000 0000 0000 0200")) else {
            return XCTFail("no response")
        }
        XCTAssertEqual(r.destinationCIDs, [])
        XCTAssertEqual(r.result, .spsmNotSupported)
    }

    func testReconfigure() throws {
        let request = Command.CreditBasedReconfigureRequest(mtu: 512, mps: 100, destinationCIDs: [0x0040, 0x0042])
        try check(.creditBasedReconfigureRequest(identifier: 0x05, request), "19 05 0800 0002 6400 4000 4200")
        try check(.creditBasedReconfigureResponse(identifier: 0x05, result: .mpsReductionNotAllowed), "1A 05 0200 0200")
        XCTAssertEqual(Command.CreditBasedReconfigureResult.invalidDestinationCID.description, "one or more destination CIDs invalid (0x0003)")
    }

    func testUnknownKept() throws {
        try check(.unknown(code: 0x0A, identifier: 0x02, data: [0x02, 0x00]), "0A 02 0200 0200")
        let command = try Command(pdu: [0x1B, 0x01, 0x02, 0x00, 0x00, 0x00])
        XCTAssertEqual(command.code, 0x1B)
        XCTAssertEqual(command.identifier, 0x01)
    }

    func testMalformed() {
        let bad: [String] = [
            "", "12", "12 01 08",
            "12 01 0800 0600 0C00 0000 C8",        // length field says 8, 7 bytes follow
            "12 01 0700 0600 0C00 0000 C800",      // 8 bytes follow a length of 7
            "12 01 0600 0600 0C00 0000",           // wrong size for the command
            "13 01 0100 00",
            "01 01 0100 00",                       // reject without a whole reason
            "01 01 0300 0100 17",                  // MTU-exceeded reason with one data byte
            "01 01 0400 0000 0000",                // not-understood reason with data
            "06 01 0200 4000",
            "14 01 0800 8000 4000 0002 F700",
            "16 01 0200 4000",
            "17 01 0900 2700 4000 4000 0200 40",   // half a CID
            "19 01 0300 4000 40",                  // reconfigure without a whole MPS
            "19 01 0700 4000 4000 4000 40",        // half a CID
            "1A 01 0300 0000 00",                  // reconfigure result of three bytes
        ]
        for hex in bad {
            let bytes = hexBytes(hex)
            XCTAssertThrowsError(try Command(pdu: bytes), hex)
        }
    }

    func testParameterValidity() {
        typealias P = Command.ConnectionParameters
        XCTAssertTrue(P(intervalMin: 6, intervalMax: 3200, latency: 0, timeout: 3200).isValid)
        XCTAssertTrue(P(intervalMin: 24, intervalMax: 40, latency: 4, timeout: 51).isValid)   // 510 ms > 5 × 50 ms × 2
        XCTAssertFalse(P(intervalMin: 24, intervalMax: 40, latency: 4, timeout: 50).isValid)  // 500 ms is not more
        XCTAssertFalse(P(intervalMin: 5, intervalMax: 12, latency: 0, timeout: 200).isValid)
        XCTAssertFalse(P(intervalMin: 6, intervalMax: 3201, latency: 0, timeout: 3200).isValid)
        XCTAssertFalse(P(intervalMin: 12, intervalMax: 6, latency: 0, timeout: 200).isValid)
        XCTAssertFalse(P(intervalMin: 6, intervalMax: 6, latency: 500, timeout: 3200).isValid)
        XCTAssertTrue(P(intervalMin: 6, intervalMax: 6, latency: 499, timeout: 3200).isValid)
        XCTAssertFalse(P(intervalMin: 6, intervalMax: 6, latency: 0, timeout: 9).isValid)
        XCTAssertFalse(P(intervalMin: 6, intervalMax: 6, latency: 0, timeout: 3201).isValid)
        XCTAssertFalse(P(intervalMin: 3200, intervalMax: 3200, latency: 0, timeout: 800).isValid) // 8 s = 2 × 4 s
        XCTAssertTrue(P(intervalMin: 3200, intervalMax: 3200, latency: 0, timeout: 801).isValid)
    }
}

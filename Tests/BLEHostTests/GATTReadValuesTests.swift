import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// `ReadValuesProcedure`: whole values of several characteristics through Read Multiple Variable
/// Length (Core spec Vol 3 Part G §4.8.5, Part F §3.4.4.11–12), completed by Read Blob / Read, and
/// its fallback to single reads for a server that answers Request Not Supported.
final class GATTReadValuesTests: XCTestCase {
    func testValuesThatFitComeFromOneRequest() {
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 21 0200 aabb 0100 cc",
        ])
        XCTAssertEqual(outcome.result, .success(.values([[0xAA, 0xBB], [0xCC]])))
    }

    func testAValueCutShortAtTheMTUIsCompletedWithReadBlob() {
        let first = [UInt8](repeating: 0x11, count: 16)
        let rest = [UInt8](repeating: 0x22, count: 14)
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            // 1 + (2 + 2) + (2 + 16) = 23 = ATT_MTU: the second value is 30 long, 16 fit.
            "S: 21 0200 aabb 1e00 " + first.hexString,
            "C: 0c 0500 1000",
            "S: 0d " + rest.hexString,
        ])
        XCTAssertEqual(outcome.result, .success(.values([[0xAA, 0xBB], first + rest])))
    }

    /// Review finding 7: a tuple list cut at ATT_MTU − 1 octets (§3.4.4.12) may end inside the
    /// next value's Length field. The whole tuples are kept, the rest is read.
    func testAListCutInsideALengthFieldKeepsTheWholeTuplesAndReadsTheRest() {
        let first = [UInt8](repeating: 0x5A, count: 19)
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            // 1 + (2 + 19) + 1 = 23 = ATT_MTU: one octet of the second tuple's Length.
            "S: 21 1300 " + first.hexString + " 05",
            "C: 0a 0500",
            "S: 0b 0708",
        ])
        XCTAssertEqual(outcome.result, .success(.values([first, [0x07, 0x08]])))
    }

    func testAValueTheResponseLeftOutIsRead() {
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5, 7]), [
            "C: 20 0300 0500 0700",
            "S: 21 0100 01 0100 02",
            "C: 0a 0700",
            "S: 0b 03",
        ])
        XCTAssertEqual(outcome.result, .success(.values([[1], [2], [3]])))
    }

    func testRequestNotSupportedFallsBackToOneReadLongPerHandle() {
        let long = [UInt8](repeating: 0x33, count: 22)
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 01 20 0300 06",
            "C: 0a 0300",
            "S: 0b " + long.hexString,
            "C: 0c 0300 1600",
            "S: 0d 44",
            "C: 0a 0500",
            "S: 0b 55",
        ])
        XCTAssertEqual(outcome.result, .success(.values([long + [0x44], [0x55]])))
    }

    func testWithoutFallbackRequestNotSupportedIsTheError() {
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5], fallback: false), [
            "C: 20 0300 0500",
            "S: 01 20 0300 06",
        ])
        XCTAssertEqual(outcome.result, .failure(.att(code: .requestNotSupported, handle: 3, request: .readMultipleVariableRequest)))
    }

    func testOtherErrorsFailAndOneHandleIsASingleRead() {
        let refused = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 01 20 0500 05",
        ])
        XCTAssertEqual(refused.result, .failure(.att(code: .insufficientAuthentication, handle: 5, request: .readMultipleVariableRequest)))
        let single = runGATTClientScript(ReadValuesProcedure(handles: [9]), [
            "C: 0a 0900",
            "S: 0b 0102",
        ])
        XCTAssertEqual(single.result, .success(.values([[1, 2]])))
        let none = runGATTClientScript(ReadValuesProcedure(handles: []), [])
        XCTAssertEqual(none.result, .success(.values([])))
    }

    func testAContinuationThatEndsShortOfTheAnnouncedLengthIsAViolation() {
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 21 0100 aa 0a00 0102",
            "C: 0c 0500 0200",
            "S: 0d 03",
        ])
        guard case .protocolViolation? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }

    /// No attribute value is longer than 512 octets (Vol 3 Part F §3.2.9), as for Read Long: a
    /// response that carries one is a violation, not a value.
    func testAValueLongerThan512OctetsIsAViolation() {
        let long = String(repeating: "ab", count: 600)
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [0x12, 0x14]), mtu: 700, [
            "C: 20 1200 1400", "S: 21 5802 \(long) 0100 01",
        ])
        guard case .protocolViolation? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }

    /// A Length field over 512 (§3.4.4.12) is not followed with Read Blob towards it.
    func testALengthOver512IsAViolationWithoutReadBlob() {
        let first = [UInt8](repeating: 0x11, count: 16)
        let outcome = runGATTClientScript(ReadValuesProcedure(handles: [3, 5]), [
            "C: 20 0300 0500",
            "S: 21 0200 aabb 5802 " + first.hexString,
        ])
        guard case .protocolViolation? = outcome.result?.gattError else { return XCTFail("\(String(describing: outcome.result))") }
    }
}

import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// Write with response sized by the bearer it runs on (review finding 2): an Enhanced ATT
/// bearer's ATT_MTU is its own (Core spec Vol 3 Part F §3.2.8, §3.2.11), so the choice between a
/// Write Request (§3.4.5.1) and a long write (Vol 3 Part G §4.9.4) is made when the procedure
/// starts on its bearer, not from the unenhanced bearer's MTU.
final class GATTWriteValueProcedureTests: XCTestCase {
    typealias Set = ATTClientBearerSet
    typealias Action = ATTBearerSetAction

    /// Unenhanced bearer with ATT_MTU 247 (exchanged), one EATT bearer 0x40 with ATT_MTU 64.
    private func set() -> Set {
        var unenhanced = ATTClientBearer(mtu: 23, transactionTimeout: .seconds(30))
        _ = unenhanced.peerExchangedMTU(clientMTU: 247, serverMTU: 247)
        var s = Set(unenhanced: unenhanced)
        XCTAssertEqual(s.add(.enhanced(cid: 0x40), bearer: ATTClientBearer(mtu: 64, transactionTimeout: .seconds(30)), now: .zero), [])
        return s
    }

    func testAValueThatFitsTheUnenhancedMTUBecomesALongWriteOnASmallerEnhancedBearer() {
        var s = set()
        // The unenhanced bearer is busy: the write lands on 0x40 (ATT_MTU 64, 61 octets per Write Request).
        XCTAssertEqual(s.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [Action(bearer: .unenhanced, action: .send([0x0A, 0x03, 0x00]))])
        let value = [UInt8](repeating: 1, count: 100)
        let started = s.submit(WriteValueProcedure(handle: 9, value: value), id: 2, now: .zero)
        XCTAssertEqual(started, [Action(bearer: .enhanced(cid: 0x40), action: .send([0x16, 0x09, 0x00, 0x00, 0x00] + Array(value[0..<59])))],
                       "Prepare Write of ATT_MTU − 5 = 59 octets, not a failure")
        // Echo, second chunk, echo, Execute Write, its response: done.
        XCTAssertEqual(s.receive([0x17, 0x09, 0x00, 0x00, 0x00] + Array(value[0..<59]), on: .enhanced(cid: 0x40), now: .seconds(1)),
                       [Action(bearer: .enhanced(cid: 0x40), action: .send([0x16, 0x09, 0x00, 59, 0x00] + Array(value[59...])))])
        XCTAssertEqual(s.receive([0x17, 0x09, 0x00, 59, 0x00] + Array(value[59...]), on: .enhanced(cid: 0x40), now: .seconds(1)),
                       [Action(bearer: .enhanced(cid: 0x40), action: .send([0x18, 0x01]))])
        XCTAssertEqual(s.receive([0x19], on: .enhanced(cid: 0x40), now: .seconds(1)),
                       [Action(bearer: .enhanced(cid: 0x40), action: .complete(id: 2, .success(.none)))])
    }

    func testTheSameValueIsOneWriteRequestOnTheUnenhancedBearer() {
        var s = set()
        let value = [UInt8](repeating: 2, count: 100)
        XCTAssertEqual(s.submit(WriteValueProcedure(handle: 9, value: value), id: 1, now: .zero),
                       [Action(bearer: .unenhanced, action: .send([0x12, 0x09, 0x00] + value))])
        XCTAssertEqual(s.receive([0x13], on: .unenhanced, now: .seconds(1)), [Action(bearer: .unenhanced, action: .complete(id: 1, .success(.none)))])
    }

    func testAValueOverTheAttributeMaximumFailsWithoutSending() {
        var p = WriteValueProcedure(handle: 9, value: [UInt8](repeating: 0, count: 513), mtu: 247)
        guard case .failed(.invalidArgument) = p.start() else { return XCTFail("513 octets exceed the 512-octet maximum") }
    }
}

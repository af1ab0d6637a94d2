@testable import BLEHCI
import XCTest

/// ACL buffer credits, Core spec Vol 4 Part E §4.1.1, §7.7.19.
final class ACLFlowTests: XCTestCase {
    func pdu(_ n: Int, fill: UInt8 = 0) -> [UInt8] {
        let payload = max(0, n - 4)
        return [UInt8(payload & 0xFF), UInt8(payload >> 8), 0x04, 0x00] + [UInt8](repeating: fill, count: payload)
    }

    func done(_ handle: UInt16, _ count: UInt16) -> CompletedPackets { CompletedPackets(handle: handle, count: count) }

    func testCreditsLimitSending() {
        var flow = ACLFlowController(bufferCount: 3, bufferLength: 27)
        let sent = flow.enqueue(handle: 0x40, pdu: pdu(251))
        XCTAssertEqual(sent.count, 3)
        XCTAssertEqual(sent.first?.boundary, .firstNonFlushable)
        XCTAssertEqual(flow.availableCredits, 0)
        XCTAssertEqual(flow.inFlight(handle: 0x40), 3)
        XCTAssertEqual(flow.queuedPackets(handle: 0x40), 7)
        XCTAssertEqual(flow.queuedPDUs(handle: 0x40), 1)

        var all = sent
        while flow.queuedPackets(handle: 0x40) > 0 {
            let more = flow.completed([done(0x40, 2)])
            XCTAssertLessThanOrEqual(more.count, 2)
            all += more
        }
        XCTAssertEqual(all.count, 10)
        XCTAssertEqual(all.flatMap(\.data), pdu(251))
        XCTAssertEqual(flow.queuedPDUs(handle: 0x40), 0)
    }

    func testQueuedPDUCountForBackpressure() {
        var flow = ACLFlowController(bufferCount: 1, bufferLength: 27)
        _ = flow.enqueue(handle: 1, pdu: pdu(10))
        _ = flow.enqueue(handle: 1, pdu: pdu(40))
        _ = flow.enqueue(handle: 1, pdu: pdu(10))
        XCTAssertEqual(flow.queuedPDUs(handle: 1), 2)
        _ = flow.completed([done(1, 1)])  // first fragment of the 40-byte PDU goes
        XCTAssertEqual(flow.queuedPDUs(handle: 1), 2, "partly sent PDU still counts")
        _ = flow.completed([done(1, 1)])
        XCTAssertEqual(flow.queuedPDUs(handle: 1), 1)
    }

    func testRoundRobinAcrossHandles() {
        var flow = ACLFlowController(bufferCount: 1, bufferLength: 27)
        var order: [UInt16] = []
        order += flow.enqueue(handle: 1, pdu: pdu(27 * 4)).map(\.handle)
        order += flow.enqueue(handle: 2, pdu: pdu(27 * 2)).map(\.handle)
        order += flow.enqueue(handle: 3, pdu: pdu(27)).map(\.handle)
        var last = order.last ?? 0
        while flow.queuedPackets(handle: 1) + flow.queuedPackets(handle: 2) + flow.queuedPackets(handle: 3) > 0 {
            let next = flow.completed([done(last, 1)])
            XCTAssertEqual(next.count, 1)
            last = next[0].handle
            order.append(last)
        }
        XCTAssertEqual(order, [1, 2, 3, 1, 2, 1, 1])
    }

    func testOverReportedAndUnknownCompletionsAreCapped() {
        var flow = ACLFlowController(bufferCount: 4, bufferLength: 27)
        _ = flow.enqueue(handle: 1, pdu: pdu(27 * 2))
        XCTAssertEqual(flow.availableCredits, 2)
        _ = flow.completed([done(1, 10), done(9, 5)])
        XCTAssertEqual(flow.availableCredits, 4)
        XCTAssertEqual(flow.inFlight(handle: 1), 0)
        _ = flow.completed([done(1, 1)])
        XCTAssertEqual(flow.availableCredits, 4)
        // Still works normally afterwards.
        XCTAssertEqual(flow.enqueue(handle: 1, pdu: pdu(27 * 6)).count, 4)
        XCTAssertEqual(flow.availableCredits, 0)
    }

    func testConnectionClosedReclaimsCreditsAndDropsQueue() {
        var flow = ACLFlowController(bufferCount: 2, bufferLength: 27)
        _ = flow.enqueue(handle: 1, pdu: pdu(27 * 5))
        XCTAssertEqual(flow.enqueue(handle: 2, pdu: pdu(27)), [])
        let released = flow.connectionClosed(handle: 1)
        XCTAssertEqual(released.map(\.handle), [2])
        XCTAssertEqual(flow.queuedPDUs(handle: 1), 0)
        XCTAssertEqual(flow.inFlight(handle: 1), 0)
        XCTAssertEqual(flow.availableCredits, 1)
        // Late completions for the closed handle give nothing back twice.
        _ = flow.completed([done(1, 2)])
        XCTAssertEqual(flow.availableCredits, 1)
        _ = flow.completed([done(2, 1)])
        XCTAssertEqual(flow.availableCredits, 2)
    }

    func testInvariantUnderRandomTraffic() {
        var rng = SeededGenerator(seed: 7)
        var flow = ACLFlowController(bufferCount: 5, bufferLength: 27)
        for _ in 0..<3000 {
            let handle = UInt16.random(in: 1...4, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5: _ = flow.enqueue(handle: handle, pdu: pdu(Int.random(in: 4...120, using: &rng)))
            case 5..<9: _ = flow.completed([done(handle, UInt16.random(in: 0...4, using: &rng))])
            default: _ = flow.connectionClosed(handle: handle)
            }
            let inFlight = (1...4).map { flow.inFlight(handle: UInt16($0)) }.reduce(0, +)
            XCTAssertEqual(flow.availableCredits + inFlight, 5)
            XCTAssertGreaterThanOrEqual(flow.availableCredits, 0)
            if flow.availableCredits > 0 {
                XCTAssertEqual((1...4).map { flow.queuedPackets(handle: UInt16($0)) }.reduce(0, +), 0, "credits idle while packets wait")
            }
        }
    }
}

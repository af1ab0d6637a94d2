@testable import BLEHCI
import BLETestSupport
import XCTest

/// What `enqueue(handle:prefix:payload:send:)` returns: the handle's PDUs still waiting for
/// credits (Vol 4 Part E §4.1.1), which the GATT server's pump reads instead of asking
/// `queuedPDUs(handle:)` after each PDU. It must be that very number, whatever the
/// credits, the buffer length and the other handles' backlog.
final class ACLEnqueueBacklogTests: XCTestCase {
    func testTheReturnedBacklogIsQueuedPDUsAfterEveryEnqueue() {
        var rng = SeededGenerator(seed: 0x5E4D)
        for round in 0..<60 {
            let length = [27, 64, 251][round % 3]
            var flow = ACLFlowController(bufferCount: Int.random(in: 1...8, using: &rng), bufferLength: length)
            let handles: [UInt16] = [0x40, 0x41, 0x42]
            var inFlight: [UInt16: Int] = [:]
            for _ in 0..<80 {
                let handle = handles[Int.random(in: 0..<handles.count, using: &rng)]
                if Bool.random(using: &rng) {
                    let payload = [UInt8](repeating: 0xA5, count: Int.random(in: 0...600, using: &rng))
                    let backlog = flow.enqueue(handle: handle, channel: 0x0004, payload: payload) { packet in
                        let h = (UInt16(packet[0]) | UInt16(packet[1]) << 8) & 0x0FFF
                        inFlight[h, default: 0] += 1
                    }
                    XCTAssertEqual(backlog, flow.queuedPDUs(handle: handle), "round \(round), buffer \(length)")
                } else if let h = handles.filter({ inFlight[$0, default: 0] > 0 }).randomElement(using: &rng), let n = inFlight[h] {
                    // In a fixed order from the seeded generator (a Dictionary's order changes
                    // from run to run), so a failure repeats.
                    // The controller completes some of a handle's packets; what waited goes out.
                    let done = Int.random(in: 1...n, using: &rng)
                    flow.credit(handle: h, count: UInt16(done))
                    inFlight[h] = n - done
                    flow.pump { packet in
                        let ph = (UInt16(packet[0]) | UInt16(packet[1]) << 8) & 0x0FFF
                        inFlight[ph, default: 0] += 1
                    }
                }
            }
        }
    }

    func testNothingQueuedIsZeroAndAPartlySentPDUCounts() {
        var flow = ACLFlowController(bufferCount: 3, bufferLength: 27)
        // 4 + 40 bytes in 27-byte packets: two packets, both sent.
        XCTAssertEqual(flow.enqueue(handle: 0x40, channel: 0x0004, payload: [UInt8](repeating: 1, count: 40)) { _ in }, 0)
        // Ten packets with one credit left: one sent, the PDU still waits (partly sent).
        XCTAssertEqual(flow.enqueue(handle: 0x40, channel: 0x0004, payload: [UInt8](repeating: 2, count: 240)) { _ in }, 1)
        XCTAssertEqual(flow.enqueue(handle: 0x40, channel: 0x0004, payload: [UInt8](repeating: 3, count: 10)) { _ in }, 2)
        // Another handle's backlog is not this one's.
        XCTAssertEqual(flow.enqueue(handle: 0x41, channel: 0x0004, payload: [UInt8](repeating: 4, count: 10)) { _ in }, 1)
        XCTAssertEqual(flow.queuedPDUs(handle: 0x40), 2)
    }
}

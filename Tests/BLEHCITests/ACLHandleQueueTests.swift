@testable import BLEHCI
import XCTest

/// `ACLFlowController.HandleQueue`, the ring buffer of one handle's unsent fragments: first in,
/// first out however its head wraps and whenever it grows, with the PDU count backpressure reads.
final class ACLHandleQueueTests: XCTestCase {
    typealias Fragment = ACLFlowController.Fragment

    func fragment(_ n: Int, start: Bool) -> Fragment { Fragment(bytes: [UInt8(truncatingIfNeeded: n)], isStart: start) }

    /// What the queue must behave as: an array, oldest first.
    func pduCount(_ model: [Fragment]) -> Int {
        guard let first = model.first else { return 0 }
        return model.count { $0.isStart } + (first.isStart ? 0 : 1)
    }

    func testFragmentsComeOutInOrderWhileTheHeadWrapsAndTheQueueGrows() {
        var queue = ACLFlowController.HandleQueue()
        var model: [Fragment] = []
        var generator = SeededGenerator(seed: 12)
        var n = 0
        for _ in 0..<5_000 {
            // Appends slightly outnumber pops: the queue wraps many times and grows while wrapped.
            if generator.next() % 100 < 52 {
                let f = fragment(n, start: generator.next() % 3 == 0)
                n += 1
                queue.append(f)
                model.append(f)
            } else {
                let popped = queue.popFirst()
                let expected = model.isEmpty ? nil : model.removeFirst()
                XCTAssertEqual(popped?.bytes, expected?.bytes)
                XCTAssertEqual(popped?.isStart, expected?.isStart)
            }
            XCTAssertEqual(queue.count, model.count)
            XCTAssertEqual(queue.isEmpty, model.isEmpty)
            XCTAssertEqual(queue.pduCount, pduCount(model))
        }
        while let f = queue.popFirst() { XCTAssertEqual(f.bytes, model.removeFirst().bytes) }
        XCTAssertTrue(model.isEmpty)
        XCTAssertEqual(queue.pduCount, 0)
    }

    func testAQueueDrainedThenFilledAgainKeepsItsOrder() {
        var queue = ACLFlowController.HandleQueue()
        for round in 0..<3 {
            for i in 0..<7 { queue.append(fragment(10 * round + i, start: i == 0)) }
            XCTAssertEqual(queue.pduCount, 1)
            _ = queue.popFirst()
            XCTAssertEqual(queue.pduCount, 1, "a partly sent PDU still counts")
            var out: [UInt8] = []
            while let f = queue.popFirst() { out += f.bytes }
            XCTAssertEqual(out, (1..<7).map { UInt8(10 * round + $0) })
            XCTAssertNil(queue.popFirst())
            XCTAssertEqual(queue.pduCount, 0)
        }
    }
}

@testable import BLE
import XCTest

/// The queue behind `Peripheral.notifications`: what `.bufferingOldest(limit)` promised before
/// it replaced `AsyncStream.makeStream` on the notification path (issue 12).
final class NotificationQueueTests: XCTestCase {
    func testValuesComeOutInOrderAndTheStreamEndsAfterFinish() async {
        let queue = NotificationQueue(limit: 10)
        let stream = queue.stream()
        for i in 0..<5 { XCTAssertTrue(queue.yield([UInt8(i)])) }
        queue.finish()
        XCTAssertTrue(queue.yield([99]), "a finished queue drops the value but its consumer is still there")
        var seen: [[UInt8]] = []
        for await v in stream { seen.append(v) }
        XCTAssertEqual(seen, (0..<5).map { [UInt8($0)] })
    }

    func testWhileFullNewerValuesAreDroppedAsBufferingOldestDoes() async {
        let queue = NotificationQueue(limit: 3)
        let stream = queue.stream()
        for i in 0..<6 { queue.yield([UInt8(i)]) }
        queue.finish()
        var seen: [[UInt8]] = []
        for await v in stream { seen.append(v) }
        XCTAssertEqual(seen, [[0], [1], [2]])
    }

    func testAWaitingConsumerGetsTheNextValue() async {
        let queue = NotificationQueue(limit: 4)
        let stream = queue.stream()
        let reader = Task { () -> [UInt8]? in
            var it = stream.makeAsyncIterator()
            return await it.next()
        }
        queue.yield([42])
        let value = await reader.value
        XCTAssertEqual(value, [42])
    }

    func testAConsumerThatLetsTheStreamGoAbandonsTheQueue() {
        let queue = NotificationQueue(limit: 4)
        do {
            let stream = queue.stream()
            _ = stream
        }
        XCTAssertTrue(queue.isAbandoned)
        XCTAssertFalse(queue.yield([1]), "the host learns the consumer is gone")
    }

    func testCancellingTheReadingTaskAbandonsTheQueue() async {
        let queue = NotificationQueue(limit: 4)
        let stream = queue.stream()
        let reader = Task { () -> Int in
            var n = 0
            for await _ in stream { n += 1 }
            return n
        }
        reader.cancel()
        let n = await reader.value
        XCTAssertEqual(n, 0)
        XCTAssertTrue(queue.isAbandoned)
    }
}

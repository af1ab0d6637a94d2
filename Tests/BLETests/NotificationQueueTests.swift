@testable import BLE
import XCTest

/// The queue behind `Peripheral.notifications` and `PeripheralManager.events`, read through the
/// `NotificationStream` the API returns: what `.bufferingOldest(limit)` promised before it
/// replaced `AsyncStream.makeStream` on the notification path, and what `AsyncStream(unfolding:
/// onCancel:)` promised before `NotificationStream` replaced it.
final class NotificationQueueTests: XCTestCase {
    func testValuesComeOutInOrderAndTheStreamEndsAfterFinish() async {
        let queue = NotificationQueue(limit: 10)
        let stream = NotificationStream(queue)
        for i in 0..<5 { XCTAssertTrue(queue.push([UInt8(i)])) }
        queue.close()
        XCTAssertFalse(queue.push([99]), "a closed queue takes nothing more")
        XCTAssertFalse(queue.isAbandoned, "but its consumer is still there")
        var seen: [[UInt8]] = []
        for await v in stream { seen.append(v) }
        XCTAssertEqual(seen, (0..<5).map { [UInt8($0)] })
    }

    func testWhileFullNewerValuesAreDroppedAsBufferingOldestDoes() async {
        let queue = NotificationQueue(limit: 3)
        let stream = NotificationStream(queue)
        for i in 0..<6 { queue.push([UInt8(i)]) }
        queue.close()
        var seen: [[UInt8]] = []
        for await v in stream { seen.append(v) }
        XCTAssertEqual(seen, [[0], [1], [2]])
    }

    func testAWaitingConsumerGetsTheNextValue() async {
        let queue = NotificationQueue(limit: 4)
        let stream = NotificationStream(queue)
        let reader = Task { () -> [UInt8]? in
            var it = stream.makeAsyncIterator()
            return await it.next()
        }
        queue.push([42])
        let value = await reader.value
        XCTAssertEqual(value, [42])
    }

    func testAConsumerThatLetsTheStreamGoAbandonsTheQueue() {
        let queue = NotificationQueue(limit: 4)
        do {
            let stream = NotificationStream(queue)
            _ = stream
        }
        XCTAssertTrue(queue.isAbandoned)
        XCTAssertFalse(queue.push([1]), "the host learns the consumer is gone")
    }

    func testAnIteratorKeepsTheQueueAfterTheStreamIsGone() async {
        let queue = NotificationQueue(limit: 4)
        var it = NotificationStream(queue).makeAsyncIterator()
        XCTAssertFalse(queue.isAbandoned, "the iterator still reads it")
        XCTAssertTrue(queue.push([5]))
        let v = await it.next()
        XCTAssertEqual(v, [5])
    }

    func testCancellingTheReadingTaskAbandonsTheQueue() async {
        let queue = NotificationQueue(limit: 4)
        let stream = NotificationStream(queue)
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

    /// A value already buffered is taken without the wait (and its cancellation handler); a
    /// cancelled task still gets the end then, as `AsyncStream(unfolding:onCancel:)` gave it.
    func testACancelledTaskGetsTheEndEvenWithValuesBuffered() async {
        let queue = NotificationQueue(limit: 4)
        let stream = NotificationStream(queue)
        queue.push([1])
        queue.push([2])
        let reader = Task { () -> [[UInt8]] in
            withUnsafeCurrentTask { $0?.cancel() }
            var seen: [[UInt8]] = []
            for await v in stream { seen.append(v) }
            return seen
        }
        let seen = await reader.value
        XCTAssertEqual(seen, [])
        XCTAssertTrue(queue.isAbandoned)
        XCTAssertFalse(queue.push([3]))
    }

    /// The consumer cancelled while it waits (the slow path): the wait ends with nil at once.
    func testCancellingAWaitingReaderEndsItsWait() async {
        let queue = NotificationQueue(limit: 4)
        let stream = NotificationStream(queue)
        let (started, signal) = AsyncStream<Void>.makeStream()
        let reader = Task { () -> [UInt8]? in
            var it = stream.makeAsyncIterator()
            signal.yield()
            return await it.next()
        }
        for await _ in started { break }
        // Parked, so the cancellation reaches the wait's handler, not `take()`'s check.
        while !queue.hasWaiter { await Task.yield() }
        reader.cancel()
        let v = await reader.value
        XCTAssertNil(v)
        XCTAssertTrue(queue.isAbandoned)
    }

    /// The same for the events stream, whose wait has its own cancellation handler.
    func testCancellingAWaitingEventsReaderEndsItsWait() async {
        let queue = SingleConsumerQueue<PeripheralManagerEvent>(limit: .max, cancellation: .abandonsQueue)
        let stream = PeripheralManagerEventStream(queue)
        let reader = Task { () -> PeripheralManagerEvent? in
            var it = stream.makeAsyncIterator()
            return await it.next()
        }
        while !queue.hasWaiter { await Task.yield() }
        reader.cancel()
        let v = await reader.value
        XCTAssertNil(v)
        XCTAssertTrue(queue.isAbandoned)
    }

    /// Review finding 2: the end an iterator gave is final, even for a second reader that got
    /// it because another one was waiting.
    func testTheEndAnIteratorGaveIsFinal() async {
        let queue = NotificationQueue(limit: 8)
        let stream = NotificationStream(queue)
        let first = Task { () -> [UInt8]? in
            var it = stream.makeAsyncIterator()
            return await it.next()
        }
        while !queue.hasWaiter { await Task.yield() }
        var second = stream.makeAsyncIterator()
        let none = await second.next()
        XCTAssertNil(none, "a second reader while one waits gets the end")
        queue.push([7])
        let got = await first.value
        XCTAssertEqual(got, [7])
        queue.push([8])
        let after = await second.next()
        XCTAssertNil(after, "and it stays ended")
    }

    /// Values read on an actor's isolation (`next(isolation:)`, what `for await` calls there):
    /// the buffered ones without waiting, then one that arrives while the actor's loop waits.
    func testAnActorReadsBufferedAndLaterValuesInOrder() async {
        actor Consumer {
            var seen: [[UInt8]] = []
            func read(_ stream: NotificationStream, count: Int) async -> [[UInt8]] {
                for await v in stream {
                    seen.append(v)
                    if seen.count == count { break }
                }
                return seen
            }
        }
        let queue = NotificationQueue(limit: 8)
        let stream = NotificationStream(queue)
        queue.push([1])
        queue.push([2])
        let consumer = Consumer()
        let reader = Task { await consumer.read(stream, count: 3) }
        // Whether the third value finds the reader waiting or not, it comes third.
        queue.push([3])
        let seen = await reader.value
        XCTAssertEqual(seen, [[1], [2], [3]])
    }

    /// Two readers of one stream: a second that waits while the first already waits gets the
    /// end instead of taking the first one's place (whose continuation would then never resume).
    func testASecondConcurrentWaiterGetsTheEnd() async {
        let queue = NotificationQueue(limit: 4)
        let stream = NotificationStream(queue)
        let (firstWaits, signal) = AsyncStream<Void>.makeStream()
        let first = Task { () -> [UInt8]? in
            var it = stream.makeAsyncIterator()
            signal.yield()
            return await it.next()
        }
        for await _ in firstWaits { break }
        // Give the first reader every chance to park before the second one comes.
        while !queue.hasWaiter { await Task.yield() }
        var second = stream.makeAsyncIterator()
        let v2 = await second.next()
        XCTAssertNil(v2)
        queue.push([7])
        let v1 = await first.value
        XCTAssertEqual(v1, [7])
    }

    func testEventsStreamEndsWhenFinished() async {
        let queue = SingleConsumerQueue<PeripheralManagerEvent>(limit: .max, cancellation: .abandonsQueue)
        let stream = PeripheralManagerEventStream(queue)
        queue.push(.advertisingStarted)
        queue.close()
        var n = 0
        for await event in stream {
            guard case .advertisingStarted = event else { return XCTFail("\(event)") }
            n += 1
        }
        XCTAssertEqual(n, 1)
    }
}

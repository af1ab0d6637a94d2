import BLERuntime
import Synchronization
import BLETestSupport
import XCTest

/// The one queue every stream of the stack is built on: what its overflow policies keep, how its
/// two kinds of reader wait and end, what its termination handlers and abandonment do. The
/// HCI frame queue, notification queue and scan buffer each have their own tests beside their
/// users (`HCIFrameQueueTests`, `NotificationQueueTests`, `ScanResultsTests`).
final class SingleConsumerQueueTests: XCTestCase {
    func testDroppingTheOldestKeepsTheNewestLimitValuesInOrder() async throws {
        let queue = SingleConsumerQueue<Int>(limit: 3, overflow: .dropOldest, cancellation: .abandonsQueue)
        for n in 0..<5 { XCTAssertTrue(queue.push(n)) }
        queue.close()
        let batch = try await queue.next()
        XCTAssertEqual(batch, [2, 3, 4])
        let end = try await queue.next()
        XCTAssertNil(end)
    }

    func testDroppingTheNewestKeepsTheFirstLimitValues() async throws {
        let queue = SingleConsumerQueue<Int>(limit: 3, overflow: .dropNewest, cancellation: .abandonsQueue)
        XCTAssertTrue(queue.push(contentsOf: 0..<5), "an open queue takes a burst, keeping what fits")
        let batch = try await queue.next()
        XCTAssertEqual(batch, [0, 1, 2])
    }

    func testABurstBeyondTheLimitDropsTheOldestAsSinglePushesWould() async throws {
        let queue = SingleConsumerQueue<Int>(limit: 4, overflow: .dropOldest, cancellation: .abandonsQueue)
        queue.push(contentsOf: [0, 1])
        var moving = Array(2..<9)
        XCTAssertTrue(queue.push(moving: &moving))
        XCTAssertTrue(moving.isEmpty, "the values moved into the queue")
        let batch = try await queue.next()
        XCTAssertEqual(batch, [5, 6, 7, 8])
    }

    func testMovedValuesComeOutWholeAndTheCallerGetsAnEmptyArray() async throws {
        let queue = SingleConsumerQueue<Int>(limit: 100, overflow: .dropOldest, cancellation: .abandonsQueue)
        var values = [1, 2, 3]
        queue.push(moving: &values)
        XCTAssertEqual(values, [])
        var more = [4]
        queue.push(moving: &more)
        let batch = try await queue.next()
        XCTAssertEqual(batch, [1, 2, 3, 4])
    }

    func testEveryTerminationHandlerRunsOnceWhenTheQueueEnds() {
        let queue = SingleConsumerQueue<Int>(cancellation: .abandonsQueue)
        let calls = Counter()
        queue.onTermination { calls.add("first") }
        queue.onTermination { calls.add("second") }
        XCTAssertEqual(calls.names, [])
        queue.close()
        XCTAssertEqual(calls.names, ["first", "second"])
        queue.abandon()
        queue.close()
        XCTAssertEqual(calls.names, ["first", "second"], "each handler runs once")
        queue.onTermination { calls.add("late") }
        XCTAssertEqual(calls.names, ["first", "second", "late"], "a handler given after the end runs at once")
    }

    func testAbandoningDropsWhatWaitsRefusesPushesAndEndsTheReader() async throws {
        let queue = SingleConsumerQueue<Int>(cancellation: .abandonsQueue)
        let ended = Counter()
        queue.onTermination { ended.add("end") }
        queue.push(1)
        queue.close(error: CancellationError())
        queue.abandon()
        XCTAssertEqual(ended.names, ["end"], "closed first: the handler ran then, not again")
        XCTAssertFalse(queue.push(2))
        XCTAssertTrue(queue.isEnded)
        XCTAssertTrue(queue.isAbandoned)
        let batch = try await queue.next()
        XCTAssertNil(batch, "what waited, and the close error, went with the consumer")
    }

    func testACancelledBatchReaderAbandonsAQueueThatExistsForIt() async throws {
        let queue = SingleConsumerQueue<Int>(cancellation: .abandonsQueue)
        let reader = Task { try await queue.next() }
        await waitUntil("the reader waits", within: .seconds(10)) { queue.hasWaiter }
        reader.cancel()
        let batch = try await reader.value
        XCTAssertNil(batch)
        XCTAssertTrue(queue.isAbandoned)
        XCTAssertFalse(queue.push(1))
    }

    func testASecondBatchReaderWhileOneWaitsGetsTheEndAndTheFirstKeepsWaiting() async throws {
        let queue = SingleConsumerQueue<Int>(cancellation: .endsRead)
        let first = Task { try await queue.next() }
        await waitUntil("the first reader waits", within: .seconds(10)) { queue.hasWaiter }
        let second = try await queue.next()
        XCTAssertNil(second, "a second reader gets the end instead of taking the first one's place")
        queue.push(7)
        let got = try await first.value
        XCTAssertEqual(got, [7])
    }

    func testASingleValueReaderWokenByABurstGetsTheFirstAndTheRestStayInOrder() async throws {
        let queue = SingleConsumerQueue<Int>(cancellation: .abandonsQueue)
        let reader = Task {
            await withUnsafeContinuation { (c: UnsafeContinuation<Int?, Never>) in queue.park(c) }
        }
        await waitUntil("the reader parks", within: .seconds(10)) { queue.hasWaiter }
        queue.push(contentsOf: [1, 2, 3])
        let first = await reader.value
        XCTAssertEqual(first, 1)
        guard case let .value(second) = queue.take() else { return XCTFail("expected a value") }
        guard case let .value(third) = queue.take() else { return XCTFail("expected a value") }
        XCTAssertEqual([second, third], [2, 3])
        guard case .wait = queue.take() else { return XCTFail("expected nothing left") }
    }

    // MARK: - FIFOBuffer, the storage

    func testBytesTakenInChunksAcrossCompactionsComeOutInOrder() {
        var buffer = FIFOBuffer<UInt8>()
        var expected: [UInt8] = []
        var taken: [UInt8] = []
        var next: UInt8 = 0
        var chunk = [UInt8](repeating: 0, count: 7)
        for round in 0..<200 {
            let bytes = (0..<(round % 13)).map { _ -> UInt8 in defer { next &+= 1 }; return next }
            buffer.append(contentsOf: bytes)
            expected += bytes
            if round % 3 == 0 {
                taken += buffer.removeFirst(upTo: 5)
            } else {
                let n = chunk.withUnsafeMutableBufferPointer { p in
                    buffer.removeFirst(into: p.baseAddress!, capacity: p.count)
                }
                taken += chunk[..<n]
            }
            XCTAssertEqual(buffer.count, expected.count - taken.count)
        }
        taken += buffer.removeFirst(upTo: .max)
        XCTAssertEqual(taken, expected)
        XCTAssertTrue(buffer.isEmpty)
    }

    func testTakingEverythingFromAMovedFrontHandsOverOnlyTheLiveValues() {
        var buffer = FIFOBuffer<Int>()
        buffer.append(contentsOf: 0..<10)
        buffer.dropFirst(4)
        var spare: [Int] = []
        buffer.removeAll(swappingWith: &spare)
        XCTAssertEqual(spare, Array(4..<10))
        XCTAssertTrue(buffer.isEmpty)
        buffer.append(10)
        XCTAssertEqual(buffer.removeFirst(), 10)
        XCTAssertNil(buffer.removeFirst())
    }
}

/// Names recorded from any thread, in order.
private final class Counter: Sendable {
    private let recorded = Mutex<[String]>([])
    func add(_ name: String) { recorded.withLock { $0.append(name) } }
    var names: [String] { recorded.withLock { $0 } }
}

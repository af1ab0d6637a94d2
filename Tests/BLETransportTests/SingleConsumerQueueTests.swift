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

    // MARK: - Found in review (e744b6e)

    /// `push(contentsOf:)` says it hands values over "as `push` would one by one". One by one, the
    /// first value goes straight to a parked single-value reader and the rest fill the queue up to
    /// `limit`; the burst instead counts that first value against `limit` too, so one more value
    /// than one-by-one pushes would keep is dropped.
    func testABurstToAParkedReaderKeepsWhatPushingOneByOneWould() async throws {
        let queue = SingleConsumerQueue<Int>(limit: 2, overflow: .dropNewest, cancellation: .abandonsQueue)
        let reader = Task {
            await withUnsafeContinuation { (c: UnsafeContinuation<Int?, Never>) in queue.park(c) }
        }
        await waitUntil("the reader parks", within: .seconds(10)) { queue.hasWaiter }
        XCTAssertTrue(queue.push(contentsOf: [1, 2, 3]))
        let first = await reader.value
        XCTAssertEqual(first, 1)
        var rest: [Int] = []
        while case let .value(v) = queue.take() { rest.append(v) }
        XCTAssertEqual(rest, [2, 3], "one by one: 1 to the reader, 2 and 3 queued (limit 2); the burst lost 3")
    }

    /// The same with `push(moving:)`, which the scan uses (there with batch readers, where the
    /// counts agree; a single-value reader of the same queue loses a value).
    func testAMovedBurstToAParkedReaderKeepsWhatPushingOneByOneWould() async throws {
        let queue = SingleConsumerQueue<Int>(limit: 2, overflow: .dropOldest, cancellation: .abandonsQueue)
        let reader = Task {
            await withUnsafeContinuation { (c: UnsafeContinuation<Int?, Never>) in queue.park(c) }
        }
        await waitUntil("the reader parks", within: .seconds(10)) { queue.hasWaiter }
        var values = [1, 2, 3]
        XCTAssertTrue(queue.push(moving: &values))
        let first = await reader.value
        XCTAssertEqual(first, 1, "one by one, the parked reader is handed the first value")
        var rest: [Int] = []
        while case let .value(v) = queue.take() { rest.append(v) }
        XCTAssertEqual(rest, [2, 3])
    }

    /// The same beyond the limit, dropping the oldest: the value handed over is never the one
    /// dropped (one by one: 1 to the reader, 2 and 3 queued, 4 drops 2).
    func testABurstBeyondTheLimitToAParkedReaderDropsAsOneByOneWould() async throws {
        for moving in [false, true] {
            let queue = SingleConsumerQueue<Int>(limit: 2, overflow: .dropOldest, cancellation: .abandonsQueue)
            let reader = Task {
                await withUnsafeContinuation { (c: UnsafeContinuation<Int?, Never>) in queue.park(c) }
            }
            await waitUntil("the reader parks", within: .seconds(10)) { queue.hasWaiter }
            var values = [1, 2, 3, 4]
            XCTAssertTrue(moving ? queue.push(moving: &values) : queue.push(contentsOf: values))
            let first = await reader.value
            XCTAssertEqual(first, 1, "moving: \(moving)")
            var rest: [Int] = []
            while case let .value(v) = queue.take() { rest.append(v) }
            XCTAssertEqual(rest, [3, 4], "moving: \(moving)")
        }
    }

    /// `.endsRead`: "Only that read ends, after what is queued; the queue stays open and serves
    /// the next reader." A single-value read whose task is cancelled sets `readCancelled`, which
    /// only a batch take clears: every later `park` gets the end at once, for ever, although the
    /// queue is open.
    func testAfterACancelledSingleValueReadTheNextReaderOfAnEndsReadQueueWaits() async throws {
        let queue = SingleConsumerQueue<Int>(cancellation: .endsRead)
        let cancelledRead = Task { () -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            if case .end = queue.take() { return true }
            return false
        }
        let ended = await cancelledRead.value
        XCTAssertTrue(ended, "the cancelled read ends")
        XCTAssertFalse(queue.isEnded, "the queue stays open")

        let returned = Mutex<Int??>(nil)
        let reader = Task {
            let v = await withUnsafeContinuation { (c: UnsafeContinuation<Int?, Never>) in queue.park(c) }
            returned.withLock { $0 = .some(v) }
            return v
        }
        await waitUntil("the next reader parks or returns", within: .seconds(10)) {
            queue.hasWaiter || returned.withLock { $0 != nil }
        }
        XCTAssertTrue(queue.hasWaiter, "the next reader should wait; it got \(String(describing: returned.withLock { $0 })) at once")
        queue.push(5)
        let got = await reader.value
        XCTAssertEqual(got, 5)
    }

    /// The same cancelled single-value read also ends the next *batch* read of an `.endsRead`
    /// queue (the HCI frame queue's kind) before it has seen anything: `take()` left the flag.
    func testACancelledTakeDoesNotEndTheNextBatchReadOfAnEndsReadQueue() async throws {
        let queue = SingleConsumerQueue<Int>(cancellation: .endsRead)
        let cancelledRead = Task { () -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            if case .end = queue.take() { return true }
            return false
        }
        _ = await cancelledRead.value
        let returned = Mutex<Bool>(false)
        let reader = Task { () throws -> [Int]? in
            defer { returned.withLock { $0 = true } }
            return try await queue.next()
        }
        await waitUntil("the batch reader waits or returns", within: .seconds(10)) {
            queue.hasWaiter || returned.withLock { $0 }
        }
        XCTAssertTrue(queue.hasWaiter, "the next batch reader should wait for values, not end")
        queue.push(9)
        let got = try await reader.value
        XCTAssertEqual(got, [9])
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
                let n = chunk.withUnsafeMutableBufferPointer { p -> Int in
                    guard let base = p.baseAddress else { return 0 }
                    return buffer.removeFirst(into: base, capacity: p.count)
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

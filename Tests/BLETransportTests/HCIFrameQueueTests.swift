import BLEHCI
import BLERuntime
import BLETestSupport
import Synchronization
import XCTest

/// The in-process transport's frame queue: order, batches, how it ends, and the immediate
/// send the host and the virtual radio use.
final class HCIFrameQueueTests: XCTestCase {
    func frame(_ byte: UInt8) -> H4Frame { H4Frame(type: .event, payload: [0x0E, 1, byte]) }

    func testEveryFrameQueuedSinceTheLastReadComesOutInOneBatchInOrder() async throws {
        let queue = HCIFrameQueue()
        for b in 0..<5 { queue.push(frame(UInt8(b))) }
        let batch = try await queue.next()
        XCTAssertEqual(batch, (0..<5).map { frame(UInt8($0)) })
        queue.push(frame(9))
        let second = try await queue.next()
        XCTAssertEqual(second, [frame(9)])
    }

    func testAClosedQueueIsDrainedThenEndsAndTakesNothingMore() async throws {
        let queue = HCIFrameQueue()
        queue.push(frame(1))
        queue.close()
        XCTAssertFalse(queue.push(frame(2)))
        let batch = try await queue.next()
        XCTAssertEqual(batch, [frame(1)])
        let end = try await queue.next()
        XCTAssertNil(end)
    }

    func testAnErrorComesAfterTheFramesQueuedBeforeIt() async throws {
        let queue = HCIFrameQueue()
        queue.push(frame(1))
        queue.close(error: TransportError(.peerClosed, "gone"))
        let batch = try await queue.next()
        XCTAssertEqual(batch, [frame(1)])
        do {
            _ = try await queue.next()
            XCTFail("expected the close error")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .peerClosed)
        }
    }

    func testAReaderWaitingOrNotGetsTheFramePushedAfterItAsked() async throws {
        let queue = HCIFrameQueue()
        let reader = Task { try await queue.next() }
        queue.push(frame(7))
        let batch = try await reader.value
        XCTAssertEqual(batch, [frame(7)])
    }

    func testCancellingTheReaderEndsItsRead() async throws {
        let queue = HCIFrameQueue()
        let reader = Task { try await queue.next() }
        reader.cancel()
        let batch = try await reader.value
        XCTAssertNil(batch)
    }

    func testTheStreamViewHandsOutFramesOneByOneAndEnds() async throws {
        let queue = HCIFrameQueue()
        for b in 0..<3 { queue.push(frame(UInt8(b))) }
        queue.close()
        var seen: [H4Frame] = []
        for try await f in queue.stream() { seen.append(f) }
        XCTAssertEqual(seen, (0..<3).map { frame(UInt8($0)) })
    }

    // MARK: - read(_:), the reader loop with one cancellation handler

    func testReadHandsOverEveryFrameInOrderAndReturnsOnceClosedAndDrained() async throws {
        let queue = HCIFrameQueue()
        for b in 0..<3 { queue.push(frame(UInt8(b))) }
        let reader = Task { () throws -> [[H4Frame]] in
            var batches: [[H4Frame]] = []
            try await queue.read { batches.append($0) }
            return batches
        }
        for b in 3..<6 { queue.push(frame(UInt8(b))) }
        queue.close()
        XCTAssertFalse(queue.push(frame(6)))
        let batches = try await reader.value
        XCTAssertEqual(batches.flatMap { $0 }, (0..<6).map { frame(UInt8($0)) })
        XCTAssertFalse(batches.contains { $0.isEmpty }, "no empty batch is handed over")
        XCTAssertEqual(batches.first?.prefix(3), (0..<3).map { frame(UInt8($0)) }[...], "what was queued before the read is its first batch")
    }

    /// Each batch holds only what arrived since the last one, though its array is recycled:
    /// frames pushed while `body` handles one batch come as the next, alone.
    func testEachRecycledBatchHoldsOnlyTheFramesSinceTheLast() async throws {
        let queue = HCIFrameQueue()
        for b in 0..<3 { queue.push(frame(UInt8(b))) }
        var batches: [[H4Frame]] = []
        try await queue.read { batch in
            batches.append(batch)
            switch batches.count {
            case 1: queue.push(frame(3)); queue.push(frame(4))
            case 2: queue.push(frame(5))
            default: queue.close()
            }
        }
        XCTAssertEqual(batches, [[frame(0), frame(1), frame(2)], [frame(3), frame(4)], [frame(5)]])
    }

    /// A burst's large array is not kept for the queue's whole life: once batches are small
    /// again, the recycled arrays are small too.
    func testARecycledArrayShrinksAfterABurst() async throws {
        let queue = HCIFrameQueue()
        for b in 0..<2_000 { queue.push(frame(UInt8(truncatingIfNeeded: b))) }
        var capacities: [Int] = []
        try await queue.read { batch in
            capacities.append(batch.capacity)
            if capacities.count < 6 { queue.push(frame(7)) } else { queue.close() }
        }
        XCTAssertGreaterThanOrEqual(capacities.first ?? 0, 2_000)
        XCTAssertLessThanOrEqual(capacities.last ?? .max, 64, "capacities batch by batch: \(capacities)")
    }

    /// A reader may take frames out of its batch (the virtual radio does, to own their bytes):
    /// what it took is its own, and the next batches come whole and in order all the same.
    func testAReaderThatTakesFramesOutOfItsBatchGetsTheNextBatchesWhole() async throws {
        let queue = HCIFrameQueue()
        for b in 0..<3 { queue.push(frame(UInt8(b))) }
        let reader = Task { () throws -> [H4Frame] in
            var taken: [H4Frame] = []
            try await queue.read { batch in
                for i in batch.indices {
                    var f = H4Frame(type: .event, payload: [])
                    swap(&f, &batch[i])
                    f.payload.append(0xFF)
                    taken.append(f)
                }
            }
            return taken
        }
        for b in 3..<6 { queue.push(frame(UInt8(b))) }
        queue.close()
        let taken = try await reader.value
        XCTAssertEqual(taken, (0..<6).map { H4Frame(type: .event, payload: [0x0E, 1, UInt8($0), 0xFF]) })
    }

    func testReadThrowsTheCloseErrorAfterTheFramesQueuedBeforeIt() async throws {
        let queue = HCIFrameQueue()
        queue.push(frame(1))
        queue.push(frame(2))
        queue.close(error: TransportError(.desync, "lost sync"))
        var seen: [H4Frame] = []
        do {
            try await queue.read { seen += $0 }
            XCTFail("expected the close error")
        } catch let error as TransportError {
            XCTAssertEqual(error.kind, .desync)
        }
        XCTAssertEqual(seen, [frame(1), frame(2)])
    }

    func testCancellingTheReadingTaskEndsReadAfterWhatIsQueuedAndTheQueueServesTheNextReader() async throws {
        let queue = HCIFrameQueue()
        queue.push(frame(1))
        queue.push(frame(2))
        let reader = Task { () throws -> [H4Frame] in
            var seen: [H4Frame] = []
            try await queue.read { seen += $0 }
            return seen
        }
        reader.cancel()
        let seen = try await reader.value
        XCTAssertEqual(seen, [frame(1), frame(2)])
        XCTAssertFalse(queue.isClosed, "a cancelled reader does not close the queue")
        // The cancellation ended that read only: a new reader gets what comes next, then the end.
        queue.push(frame(3))
        queue.close()
        var next: [H4Frame] = []
        try await queue.read { next += $0 }
        XCTAssertEqual(next, [frame(3)])
    }

    func testCancellingAReaderThatWaitsWakesIt() async throws {
        let queue = HCIFrameQueue()
        let started = expectation(description: "first batch handled")
        let reader = Task { () throws -> Int in
            var batches = 0
            try await queue.read { _ in
                batches += 1
                started.fulfill()
            }
            return batches
        }
        queue.push(frame(1))
        await fulfillment(of: [started], timeout: 10)
        // The reader has handled its batch and now waits (or is about to): cancelling must end it.
        reader.cancel()
        let batches = try await reader.value
        XCTAssertEqual(batches, 1)
    }

    /// Found in review (e744b6e; the old HCIFrameQueue had the same hole). A reader cancelled
    /// while it waits is woken with `readCancelled` set; when frames arrive before it looks
    /// again, it takes them and returns, and the flag stays set. The next reader of the
    /// (still open) queue then gets the end before any frame: for the host that reads as the
    /// controller closing the connection. The reader here runs on an actor that is busy while
    /// the cancellation and the frame come, so the order is fixed, not raced.
    func testAReaderCancelledAsFramesArriveLeavesNoEndForTheNextReader() async throws {
        let queue = HCIFrameQueue()
        let owner = ReadingActor()
        let first = Task { try await owner.readOnce(queue) }
        await waitUntil("the first reader waits", within: .seconds(10)) { queue.hasWaiter }
        await owner.cancel(first, thenPush: frame(1), to: queue)
        let firstBatch = try await first.value
        XCTAssertEqual(firstBatch, [frame(1)], "the frame that came with the cancellation is handed over")
        XCTAssertFalse(queue.isEnded)

        let returned = Mutex(false)
        let second = Task { () throws -> [H4Frame]? in
            defer { returned.withLock { $0 = true } }
            return try await queue.next()
        }
        await waitUntil("the next reader waits or returns", within: .seconds(10)) {
            queue.hasWaiter || returned.withLock { $0 }
        }
        XCTAssertTrue(queue.hasWaiter, "the next reader of an open queue should wait, not get the end")
        queue.push(frame(2))
        let secondBatch = try await second.value
        XCTAssertEqual(secondBatch, [frame(2)])
    }

    /// `read` does not ask its task before each wait: a cancellation is a flag its next take
    /// sees. Cancelled while it waits, with a frame arriving before it looks again, it hands
    /// the frame over and ends (rather than wait again for ever), and it uses up the flag, so
    /// the next reader of the open queue waits.
    func testAReadLoopCancelledAsFramesArriveHandsThemOverEndsAndLeavesNoEnd() async throws {
        let queue = HCIFrameQueue()
        let owner = ReadingActor()
        let first = Task { try await owner.readAll(queue) }
        await waitUntil("the read loop waits", within: .seconds(10)) { queue.hasWaiter }
        await owner.cancel(first, thenPush: frame(1), to: queue)
        let seen = try await first.value
        XCTAssertEqual(seen, [frame(1)], "the frame that came with the cancellation is handed over")
        XCTAssertFalse(queue.isEnded)

        let second = Task { () throws -> [H4Frame] in
            var seen: [H4Frame] = []
            try await queue.read { seen += $0 }
            return seen
        }
        await waitUntil("the next read loop waits", within: .seconds(10)) { queue.hasWaiter }
        queue.push(frame(2))
        queue.close()
        let next = try await second.value
        XCTAssertEqual(next, [frame(2)])
    }

    // MARK: - Found in review of 0772e98

    /// Found in review of 0772e98. `cancelRead` now sets `readCancelled` even when the cancelled
    /// read waits (it used to wake it only, and the read asked its task), and `read` no longer
    /// asks its task before it waits. The flag belongs to whichever reader looks first: when the
    /// next reader of the queue (a new host on the same transport) looks before the cancelled
    /// read loop has resumed (its actor busy), the next reader gets the end (for a host: "the
    /// controller closed the connection") and the cancelled read finds no flag and waits again,
    /// for ever. The order is fixed, not raced: the next reader's first job is queued on the
    /// reading actor before the cancelled read's wake-up.
    func testAReadLoopCancelledWhileItWaitsEndsEvenWhenTheNextReaderLooksFirst() async throws {
        let queue = HCIFrameQueue()
        let owner = HandoffActor()
        let first = Task { try await owner.readAll(queue) }
        await waitUntil("the read loop waits", within: .seconds(10)) { queue.hasWaiter }
        let second = await owner.startNextReader(of: queue, thenCancel: first)

        let firstEnded = Task { () -> Bool in
            _ = try? await first.value
            return true
        }
        let ended = await end(of: firstEnded, "the cancelled read loop's end", within: .seconds(10))
        XCTAssertEqual(ended, true, "the cancelled read loop should end, not wait again for ever")

        // The next reader should still wait, and get what comes next; the close also lets a
        // read loop that hung end.
        queue.push(frame(2))
        queue.close()
        let next = try await second.value
        XCTAssertEqual(next, [frame(2)], "the next reader of the open queue got the end meant for the cancelled read")
        _ = try? await first.value
    }

    /// Found in review of 0772e98: the same flag with two readers at once. While a read loop
    /// handles a batch (not waiting), a second reader comes and waits. The read loop's task is
    /// cancelled: `cancelRead` sets the flag and wakes the *waiting* reader, which takes the
    /// flag and ends; the cancelled read loop then finds nothing, no flag, no other reader
    /// waiting, and waits for ever. Before the change the waiting reader was woken without a
    /// flag (it asked its own task and waited again) and the cancelled loop asked its task and
    /// returned. The body blocks its thread only until the explicit events it waits for.
    func testCancellingAReadLoopWhileAnotherReaderWaitsEndsTheCancelledLoopNotTheWaitingReader() async throws {
        let queue = HCIFrameQueue()
        let secondReturned = SharedBox(false)
        let secondTask = SharedBox<Task<[H4Frame]?, any Error>?>(nil)
        let sawBothEvents = SharedBox(true)
        queue.push(frame(1))
        // Detached, both readers: neither may share an actor with the body that blocks.
        let first = Task.detached { () throws -> [H4Frame] in
            var seen: [H4Frame] = []
            try await queue.read { batch in
                seen += batch
                guard seen.count == 1 else { return }
                // This read runs (does not wait): a second reader comes and waits.
                secondTask.withLock {
                    $0 = Task.detached {
                        defer { secondReturned.withLock { $0 = true } }
                        return try await queue.next()
                    }
                }
                let waits = blockUntil(within: .seconds(10)) { queue.hasWaiter }
                withUnsafeCurrentTask { $0?.cancel() }
                // The waiting reader is woken either way: it waits again, or returns.
                let looked = blockUntil(within: .seconds(10)) { queue.hasWaiter || secondReturned.withLock { $0 } }
                sawBothEvents.withLock { $0 = waits && looked }
            }
            return seen
        }
        let firstEnded = Task { () -> Bool in
            _ = try? await first.value
            return true
        }
        let ended = await end(of: firstEnded, "the cancelled read loop's end", within: .seconds(10))
        XCTAssertTrue(sawBothEvents.withLock { $0 }, "the second reader waited, then looked again after the cancellation")
        XCTAssertEqual(ended, true, "the cancelled read loop should end, not wait again for ever")
        XCTAssertFalse(secondReturned.withLock { $0 }, "the reader that waited was not cancelled: it should still wait")

        queue.push(frame(2))
        queue.close()
        let next = try await secondTask.withLock { $0 }?.value
        XCTAssertEqual(next, [frame(2)])
        _ = try? await first.value
    }

    func testInMemoryEndsSendImmediatelyInOrderAndRefuseAfterClose() async throws {
        let (host, controller) = InMemoryTransport.pair()
        XCTAssertTrue(host.acceptsImmediateSends)
        try host.sendImmediately(frame(1))
        try await host.send(frame(2))
        try host.sendImmediately(frame(3))
        let batch = try await controller.incomingQueue?.next()
        XCTAssertEqual(batch, [frame(1), frame(2), frame(3)])
        await controller.close()
        XCTAssertThrowsError(try host.sendImmediately(frame(4)))
    }
}

/// Reads a frame queue on its own isolation, so a test can hold the reader off while it acts.
private actor ReadingActor {
    func readOnce(_ queue: HCIFrameQueue) async throws -> [H4Frame]? {
        try await queue.next()
    }

    func readAll(_ queue: HCIFrameQueue) async throws -> [H4Frame]? {
        var seen: [H4Frame] = []
        try await queue.read { seen += $0 }
        return seen
    }

    /// In one turn of this actor: cancels `task` (its handler wakes it, but it resumes here only
    /// after this turn) and pushes `frame`.
    func cancel(_ task: Task<[H4Frame]?, any Error>, thenPush frame: H4Frame, to queue: HCIFrameQueue) {
        task.cancel()
        queue.push(frame)
    }
}

/// A second frame reader on one actor, for the handoff from a cancelled read loop to the next.
private actor HandoffActor {
    func readAll(_ queue: HCIFrameQueue) async throws -> [H4Frame] {
        var seen: [H4Frame] = []
        try await queue.read { seen += $0 }
        return seen
    }

    func readOnce(_ queue: HCIFrameQueue) async throws -> [H4Frame]? {
        try await queue.next()
    }

    /// In one turn of this actor: starts the next reader (its first job is queued on this actor
    /// now), then cancels `task`, whose read loop waits here (its wake-up is queued after).
    func startNextReader(of queue: HCIFrameQueue, thenCancel task: Task<[H4Frame], any Error>) -> Task<[H4Frame]?, any Error> {
        let next = Task { try await self.readOnce(queue) }
        task.cancel()
        return next
    }
}

/// A value shared between tasks.
private final class SharedBox<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// Blocks the calling thread until `condition` holds (true) or `bound` of real time has passed
/// (false): for a synchronous `body` that must wait for another task's explicit event.
private func blockUntil(within bound: Duration, _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + bound
    while !condition() {
        if clock.now >= deadline { return false }
        usleep(200)
    }
    return true
}

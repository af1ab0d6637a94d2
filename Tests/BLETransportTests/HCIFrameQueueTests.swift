import BLEHCI
import BLERuntime
import XCTest

/// The in-process transport's frame queue: order, batches, how it ends, and the immediate
/// send the host and the virtual radio use (issue 12).
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

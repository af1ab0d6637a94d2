import BLERuntime
import XCTest
import BLEHCI
@testable import BLETransport

final class InMemoryTransportTests: XCTestCase {
    func testFramesArriveInOrderBothWays() async throws {
        let (host, controller) = InMemoryTransport.pair()
        for f in Sample.all { try await host.send(f) }
        try await controller.send(Sample.resetComplete)
        let atController = try await nextFrames(controller, Sample.all.count)
        XCTAssertEqual(atController, Sample.all)
        let atHost = try await nextFrames(host, 1)
        XCTAssertEqual(atHost, [Sample.resetComplete])
        XCTAssertEqual(host.sentCount, 4)
        XCTAssertEqual(controller.sentCount, 1)
    }

    func testConcurrentSendsAllArriveWhole() async throws {
        let (host, controller) = InMemoryTransport.pair()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for i in 0..<50 {
                        try await host.send(H4Frame(type: .acl, payload: [UInt8(t), UInt8(i), 0, 0]))
                    }
                }
            }
            try await group.waitForAll()
        }
        let frames = try await nextFrames(controller, 400)
        // Per sender, order is kept.
        for t in 0..<8 {
            let mine = frames.filter { $0.payload[0] == UInt8(t) }.map { $0.payload[1] }
            XCTAssertEqual(mine, (0..<50).map { UInt8($0) })
        }
    }

    func testClosingOneEndFinishesBoth() async throws {
        let (host, controller) = InMemoryTransport.pair()
        try await controller.send(Sample.resetComplete)
        await controller.close()
        await controller.close() // idempotent
        // Frames already delivered are still read, then the stream ends normally.
        let first = try await nextFrames(host, 1)
        XCTAssertEqual(first, [Sample.resetComplete])
        let hostEnd = try await streamEnding(host)
        XCTAssertNil(hostEnd)
        let controllerEnd = try await streamEnding(controller)
        XCTAssertNil(controllerEnd)
        do {
            try await host.send(Sample.reset)
            XCTFail("send after close")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .closed)
        }
    }

    func testFailFinishesBothWithError() async throws {
        let (host, controller) = InMemoryTransport.pair()
        controller.fail()
        let end = try await streamEnding(host)
        XCTAssertEqual(end?.kind, .peerClosed)
    }
}

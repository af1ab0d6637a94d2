@testable import BLEHCI
import XCTest
import BLETestSupport

/// Command flow control, Core spec Vol 4 Part E §4.4, §7.7.14, §7.7.15.
final class CommandFlowTests: XCTestCase {
    let timeout = Duration.seconds(2)

    func complete(_ opcode: HCIOpcode, credits: UInt8 = 1, _ params: [UInt8] = [0]) -> HCIEvent {
        .commandComplete(numHCICommandPackets: credits, opcode: opcode, returnParameters: params)
    }

    func testOneCreditAtStartThenCompleteReleasesNext() {
        var flow = CommandFlowController()
        XCTAssertEqual(flow.credits, 1)
        XCTAssertEqual(flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout), [.reset])
        XCTAssertEqual(flow.enqueue(.readBDADDR, token: 2, now: .zero, timeout: timeout), [])
        XCTAssertEqual(flow.queuedCount, 1)
        XCTAssertEqual(flow.outstandingOpcodes, [.reset])

        let (done, send) = flow.receive(complete(.reset), now: .milliseconds(5))
        XCTAssertEqual(done.map(\.token), [1])
        XCTAssertEqual(try done.first?.get(), .complete(returnParameters: [0]))
        XCTAssertEqual(send, [.readBDADDR])
        XCTAssertEqual(flow.credits, 0)
        XCTAssertEqual(flow.nextDeadline, .milliseconds(5) + timeout)
    }

    func testZeroCreditsThenCreditOnlyEvent() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout)
        _ = flow.enqueue(.readLocalVersionInformation, token: 2, now: .zero, timeout: timeout)
        // The controller answers but says it is full.
        let first = flow.receive(complete(.reset, credits: 0), now: .zero)
        XCTAssertEqual(first.completions.map(\.token), [1])
        XCTAssertEqual(first.toSend, [])
        // Credit-only Command Complete (opcode 0x0000) ends nothing but releases the queue.
        let second = flow.receive(.commandComplete(numHCICommandPackets: 1, opcode: .noOperation, returnParameters: []), now: .zero)
        XCTAssertEqual(second.completions.count, 0)
        XCTAssertEqual(second.toSend, [.readLocalVersionInformation])
        // A credit-only Command Status works the same way.
        _ = flow.enqueue(.leRand, token: 3, now: .zero, timeout: timeout)
        let third = flow.receive(.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .noOperation), now: .zero)
        XCTAssertEqual(third.toSend, [.leRand])
    }

    func testSeveralCredits() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout)
        for t in 2...5 { XCTAssertEqual(flow.enqueue(.leRand, token: UInt64(t), now: .zero, timeout: timeout), []) }
        let (done, send) = flow.receive(complete(.reset, credits: 3), now: .zero)
        XCTAssertEqual(done.map(\.token), [1])
        XCTAssertEqual(send.count, 3)
        XCTAssertEqual(flow.outstandingCount, 3)
        // Same opcodes end oldest first.
        let next = flow.receive(complete(.leRand, credits: 1, hexBytes("00 0102030405060708")), now: .zero)
        XCTAssertEqual(next.completions.map(\.token), [2])
        XCTAssertEqual(next.toSend.count, 1)
    }

    func testCommandStatusCompletesOrFails() {
        var flow = CommandFlowController()
        let connect = HCICommand(opcode: .leCreateConnection, parameters: [])
        _ = flow.enqueue(connect, token: 10, now: .zero, timeout: timeout)
        let ok = flow.receive(.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection), now: .zero)
        XCTAssertEqual(try ok.completions.first?.get(), .status)

        _ = flow.enqueue(.disconnect(handle: 1), token: 11, now: .zero, timeout: timeout)
        let bad = flow.receive(.commandStatus(status: .commandDisallowed, numHCICommandPackets: 1, opcode: .disconnect), now: .zero)
        XCTAssertEqual(bad.completions.count, 1)
        guard case let .failure(error)? = bad.completions.first?.result else { return XCTFail() }
        XCTAssertEqual(error, .commandFailed(opcode: .disconnect, status: .commandDisallowed))
    }

    func testCommandCompleteWithErrorStatusIsReturnedRaw() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.leSetDataLength(handle: 1, txOctets: 251, txTime: 2120), token: 1, now: .zero, timeout: timeout)
        let (done, _) = flow.receive(complete(.leSetDataLength, hexBytes("01 0100")), now: .zero)
        guard let completion = done.first, case let .success(result) = completion.result else { return XCTFail() }
        XCTAssertEqual(result, .complete(returnParameters: hexBytes("01 0100")))
        XCTAssertEqual(result.controllerStatus, .unknownCommand)
        XCTAssertThrowsError(try completion.get()) { error in
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .leSetDataLength, status: .unknownCommand))
        }
    }

    func testUnmatchedEventsOnlyUpdateCredits() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout)
        _ = flow.enqueue(.leRand, token: 2, now: .zero, timeout: timeout)
        let stray = flow.receive(complete(.readBDADDR, credits: 1), now: .zero)
        XCTAssertTrue(stray.completions.isEmpty)
        XCTAssertEqual(stray.toSend, [.leRand])
        XCTAssertEqual(flow.outstandingOpcodes, [.reset, .leRand])
        let other = flow.receive(.hardwareError(code: 1), now: .zero)
        XCTAssertTrue(other.completions.isEmpty && other.toSend.isEmpty)
    }

    func testTimeoutFailsAndReleasesSlot() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .seconds(10), timeout: .seconds(1))
        _ = flow.enqueue(.readBDADDR, token: 2, now: .seconds(10), timeout: .seconds(1))
        XCTAssertEqual(flow.nextDeadline, .seconds(11))
        XCTAssertTrue(flow.expire(now: .milliseconds(10_999)).completions.isEmpty)
        let (done, send) = flow.expire(now: .seconds(11))
        XCTAssertEqual(done.map(\.token), [1])
        guard case let .failure(error)? = done.first?.result else { return XCTFail() }
        XCTAssertEqual(error, .commandTimeout(opcode: .reset))
        XCTAssertEqual(send, [.readBDADDR])
        XCTAssertEqual(flow.nextDeadline, .seconds(12))
        // A late answer for the timed-out command is ignored.
        XCTAssertTrue(flow.receive(complete(.reset, credits: 0), now: .seconds(12)).completions.isEmpty)
        XCTAssertEqual(flow.outstandingOpcodes, [.readBDADDR])
    }

    func testTimeoutRunsFromSendNotEnqueue() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: .seconds(1))
        _ = flow.enqueue(.leRand, token: 2, now: .zero, timeout: .seconds(1))
        _ = flow.receive(complete(.reset), now: .milliseconds(900))
        XCTAssertEqual(flow.nextDeadline, .milliseconds(1900))
        XCTAssertTrue(flow.expire(now: .seconds(1)).completions.isEmpty)
    }

    func testFailAllAndCancel() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout)
        _ = flow.enqueue(.leRand, token: 2, now: .zero, timeout: timeout)
        _ = flow.enqueue(.readBDADDR, token: 3, now: .zero, timeout: timeout)
        XCTAssertTrue(flow.cancel(token: 2))
        XCTAssertFalse(flow.cancel(token: 2))
        XCTAssertFalse(flow.cancel(token: 1), "already sent")
        let failed = flow.failAll(.hardwareError(code: 0x10))
        XCTAssertEqual(failed.map(\.token), [1, 3])
        XCTAssertTrue(failed.allSatisfy { if case .failure(.hardwareError(code: 0x10)) = $0.result { true } else { false } })
        XCTAssertNil(flow.nextDeadline)
        XCTAssertEqual(flow.credits, 1)
        XCTAssertEqual(flow.enqueue(.reset, token: 4, now: .zero, timeout: timeout), [.reset])
    }
}

@testable import BLEHCI
import XCTest

/// Command flow control against controllers that answer wrongly (the cases of
/// `VirtualControllerQuirk`): completions for nothing pending, duplicates, credit-only events,
/// and a spontaneous Reset completion that loses the pending command.
final class CommandFlowQuirkTests: XCTestCase {
    let timeout = Duration.seconds(5)

    func complete(_ opcode: HCIOpcode, _ params: [UInt8] = [0]) -> HCIEvent {
        .commandComplete(numHCICommandPackets: 1, opcode: opcode, returnParameters: params)
    }

    /// Linux `hci_req_cmd_complete`: an unsolicited Command Complete for Reset while Read Local
    /// Version is pending sends that command again, with a fresh deadline.
    func testASpontaneousResetCompletionResendsTheOutstandingCommand() throws {
        var flow = CommandFlowController()
        flow.beginBatch()
        XCTAssertEqual(flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout), [.reset])
        flow.beginBatch()
        let reset = flow.receive(complete(.reset), now: .milliseconds(1))
        XCTAssertEqual(reset.completions.map(\.token), [1])
        // Reset's completion gave one credit: the read goes at once.
        XCTAssertEqual(flow.enqueue(.readLocalVersionInformation, token: 2, now: .milliseconds(1), timeout: timeout),
                       [.readLocalVersionInformation])
        flow.beginBatch()
        let spurious = flow.receive(complete(.reset), now: .milliseconds(2))
        XCTAssertEqual(spurious.completions.count, 0)
        XCTAssertEqual(spurious.toSend, [.readLocalVersionInformation], "sent again")
        XCTAssertEqual(flow.nextDeadline, .milliseconds(2) + timeout)
        flow.beginBatch()
        let answer = flow.receive(complete(.readLocalVersionInformation, [0, 1]), now: .milliseconds(3))
        XCTAssertEqual(answer.completions.map(\.token), [2])
        XCTAssertEqual(flow.outstandingCount, 0)
    }

    /// After initialisation an unsolicited Reset completion sends nothing again (Linux resends
    /// only while initialising): the pending command waits for its own answer or its timeout.
    func testAfterInitialisationASpontaneousResetCompletionResendsNothing() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout)
        _ = flow.receive(complete(.reset), now: .milliseconds(1))
        flow.initialisationEnded()
        XCTAssertEqual(flow.enqueue(.leRand, token: 2, now: .milliseconds(1), timeout: timeout), [.leRand])
        let spurious = flow.receive(complete(.reset), now: .milliseconds(2))
        XCTAssertEqual(spurious.completions.count, 0)
        XCTAssertEqual(spurious.toSend, [], "nothing sent again after initialisation")
        XCTAssertEqual(flow.outstandingOpcodes, [.leRand])
    }

    /// A Reset completion with nothing outstanding changes nothing but the credits.
    func testASpontaneousResetCompletionWithNothingPendingIsIgnored() {
        var flow = CommandFlowController()
        let r = flow.receive(complete(.reset), now: .zero)
        XCTAssertEqual(r.completions.count, 0)
        XCTAssertEqual(r.toSend, [])
        XCTAssertEqual(flow.credits, 1)
    }

    /// A Reset that timed out takes the next unmatched Reset completion as its late answer;
    /// only a further one is spontaneous.
    func testALateAnswerToATimedOutResetIsNotSpontaneous() {
        var flow = CommandFlowController()
        _ = flow.enqueue(.reset, token: 1, now: .zero, timeout: timeout)
        let expired = flow.expire(now: timeout)
        XCTAssertEqual(expired.completions.map(\.token), [1])
        XCTAssertEqual(flow.enqueue(.reset, token: 2, now: timeout, timeout: timeout), [.reset])
        flow.beginBatch()
        XCTAssertEqual(flow.receive(complete(.reset), now: timeout).completions.map(\.token), [2])
        XCTAssertEqual(flow.enqueue(.readBDADDR, token: 3, now: timeout, timeout: timeout), [.readBDADDR])
        flow.beginBatch()
        let late = flow.receive(complete(.reset), now: timeout)
        XCTAssertEqual(late.toSend, [], "the lost Reset's late answer")
        flow.beginBatch()
        let spontaneous = flow.receive(complete(.reset), now: timeout)
        XCTAssertEqual(spontaneous.toSend, [.readBDADDR])
    }

    /// Zephyr `hci_cmd_done`: a duplicate Command Complete in the same batch as the real one
    /// must not answer the next command with the same opcode, which went out while that batch
    /// was handled; the real answer in a later batch does.
    func testADuplicateCompletionDoesNotAnswerTheNextCommandWithItsOpcode() throws {
        var flow = CommandFlowController()
        flow.beginBatch()
        XCTAssertEqual(flow.enqueue(.leRand, token: 1, now: .zero, timeout: timeout), [.leRand])
        XCTAssertEqual(flow.enqueue(.leRand, token: 2, now: .zero, timeout: timeout), [])
        flow.beginBatch()
        let first = flow.receive(complete(.leRand, [0, 1, 1, 1, 1, 1, 1, 1, 1]), now: .zero)
        XCTAssertEqual(first.completions.map(\.token), [1])
        XCTAssertEqual(first.toSend, [.leRand])
        let duplicate = flow.receive(complete(.leRand, [0, 1, 1, 1, 1, 1, 1, 1, 1]), now: .zero)
        XCTAssertEqual(duplicate.completions.count, 0, "the stale duplicate answers nothing")
        XCTAssertEqual(flow.outstandingCount, 1)
        flow.beginBatch()
        let real = flow.receive(complete(.leRand, [0, 2, 2, 2, 2, 2, 2, 2, 2]), now: .zero)
        XCTAssertEqual(real.completions.map(\.token), [2])
        XCTAssertEqual(try real.completions.first?.get(), .complete(returnParameters: [0, 2, 2, 2, 2, 2, 2, 2, 2]))
    }

    /// A completion for an opcode nobody sent (and a NOP, §7.7.14) updates the credits only.
    func testCompletionsForNothingPendingOnlyGiveCredits() {
        var flow = CommandFlowController()
        flow.beginBatch()
        _ = flow.enqueue(.readBDADDR, token: 1, now: .zero, timeout: timeout)
        flow.beginBatch()
        XCTAssertEqual(flow.receive(complete(.readBufferSize), now: .zero).completions.count, 0)
        XCTAssertEqual(flow.receive(.commandStatus(status: .unknownCommand, numHCICommandPackets: 1, opcode: .leCreateConnection),
                                    now: .zero).completions.count, 0)
        XCTAssertEqual(flow.receive(.commandComplete(numHCICommandPackets: 1, opcode: .noOperation, returnParameters: []),
                                    now: .zero).completions.count, 0)
        XCTAssertEqual(flow.outstandingOpcodes, [.readBDADDR])
        XCTAssertEqual(flow.receive(complete(.readBDADDR, [0, 1, 2, 3, 4, 5, 6]), now: .zero).completions.map(\.token), [1])
    }
}

import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// The client's scheduler over several ATT bearers (Enhanced ATT, Core spec Vol 3 Part G §5.3,
/// Part F §3.2.11, §3.3.2, §3.3.3), fed exact PDUs in virtual time.
final class ATTClientBearerSetTests: XCTestCase {
    typealias Set = ATTClientBearerSet
    typealias Action = ATTBearerSetAction

    private func set(enhanced: [UInt16] = [0x40, 0x41], timeout: Duration = .seconds(30)) -> Set {
        var s = Set(unenhanced: ATTClientBearer(mtu: 23, transactionTimeout: timeout))
        for cid in enhanced {
            XCTAssertEqual(s.add(.enhanced(cid: cid), bearer: ATTClientBearer(mtu: 64, transactionTimeout: timeout), now: .zero), [])
        }
        return s
    }

    private func read(_ handle: UInt16) -> [UInt8] { [0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8)] }

    func testIndependentProceduresGoOutAtOnceOnDifferentBearersAndAFourthWaits() {
        var s = set()
        XCTAssertEqual(s.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [Action(bearer: .unenhanced, action: .send(read(3)))])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 5), id: 2, now: .zero), [Action(bearer: .enhanced(cid: 0x40), action: .send(read(5)))])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 7), id: 3, now: .zero), [Action(bearer: .enhanced(cid: 0x41), action: .send(read(7)))])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 9), id: 4, now: .zero), [], "every bearer has a request outstanding")
        XCTAssertEqual(s.waitingCount, 1)

        // Answers in any order; the waiting one takes the first bearer that frees.
        XCTAssertEqual(s.receive([0x0B, 0x55], on: .enhanced(cid: 0x41), now: .seconds(1)), [
            Action(bearer: .enhanced(cid: 0x41), action: .complete(id: 3, .success(.value([0x55])))),
            Action(bearer: .enhanced(cid: 0x41), action: .send(read(9))),
        ])
        XCTAssertEqual(s.bearer(running: 4), .enhanced(cid: 0x41))
        XCTAssertEqual(s.receive([0x0B, 0x33], on: .unenhanced, now: .seconds(1)), [Action(bearer: .unenhanced, action: .complete(id: 1, .success(.value([0x33]))))])
        XCTAssertEqual(s.receive([0x0B, 0x44], on: .enhanced(cid: 0x40), now: .seconds(1)), [Action(bearer: .enhanced(cid: 0x40), action: .complete(id: 2, .success(.value([0x44]))))])
        XCTAssertEqual(s.receive([0x0B, 0x99], on: .enhanced(cid: 0x41), now: .seconds(2)), [Action(bearer: .enhanced(cid: 0x41), action: .complete(id: 4, .success(.value([0x99]))))])
        XCTAssertEqual(s.waitingCount, 0)
    }

    func testWithOnlyTheUnenhancedBearerProceduresRunOneAfterAnotherInOrder() {
        var s = set(enhanced: [])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [Action(bearer: .unenhanced, action: .send(read(3)))])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 5), id: 2, now: .zero), [])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 7), id: 3, now: .zero), [])
        XCTAssertEqual(s.receive([0x0B, 1], on: .unenhanced, now: .seconds(1)), [
            Action(bearer: .unenhanced, action: .complete(id: 1, .success(.value([1])))),
            Action(bearer: .unenhanced, action: .send(read(5))),
        ])
        XCTAssertEqual(s.receive([0x0B, 2], on: .unenhanced, now: .seconds(1)), [
            Action(bearer: .unenhanced, action: .complete(id: 2, .success(.value([2])))),
            Action(bearer: .unenhanced, action: .send(read(7))),
        ])
    }

    func testAMultiRequestProcedureStaysOnItsBearer() {
        var s = set(enhanced: [0x40])
        // Read Long at MTU 23: Read, then Read Blob, both on the unenhanced bearer.
        XCTAssertEqual(s.submit(ReadLongProcedure(handle: 3), id: 1, now: .zero), [Action(bearer: .unenhanced, action: .send(read(3)))])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 5), id: 2, now: .zero), [Action(bearer: .enhanced(cid: 0x40), action: .send(read(5)))])
        let full = [UInt8](repeating: 0xAB, count: 22)
        XCTAssertEqual(s.receive([0x0B] + full, on: .unenhanced, now: .seconds(1)),
                       [Action(bearer: .unenhanced, action: .send([0x0C, 0x03, 0x00, 22, 0x00]))], "the Read Blob follows on the same bearer")
        XCTAssertEqual(s.submit(ReadProcedure(handle: 7), id: 3, now: .zero), [], "both bearers busy")
        XCTAssertEqual(s.receive([0x0D, 0x01], on: .unenhanced, now: .seconds(2)), [
            Action(bearer: .unenhanced, action: .complete(id: 1, .success(.value(full + [0x01])))),
            Action(bearer: .unenhanced, action: .send(read(7))),
        ])
    }

    func testExchangeMTUWaitsForTheUnenhancedBearerWhileOthersUseEnhancedOnes() {
        var s = set(enhanced: [0x40])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 3), id: 1, now: .zero), [Action(bearer: .unenhanced, action: .send(read(3)))])
        XCTAssertEqual(s.submit(ExchangeMTUProcedure(clientMTU: 100), id: 2, now: .zero), [], "Exchange MTU only on the unenhanced bearer")
        XCTAssertEqual(s.submit(ReadProcedure(handle: 5), id: 3, now: .zero), [Action(bearer: .enhanced(cid: 0x40), action: .send(read(5)))])
        XCTAssertEqual(s.receive([0x0B, 1], on: .unenhanced, now: .seconds(1)), [
            Action(bearer: .unenhanced, action: .complete(id: 1, .success(.value([1])))),
            Action(bearer: .unenhanced, action: .send([0x02, 100, 0])),
        ])
    }

    func testTimeoutOnAnEnhancedBearerClosesOnlyItAndItsWaitersMove() {
        var s = set(enhanced: [0x40], timeout: .seconds(30))
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 5), id: 2, now: .seconds(5))
        _ = s.submit(ReadProcedure(handle: 7), id: 3, now: .seconds(6))
        XCTAssertEqual(s.bearer(running: 2), .enhanced(cid: 0x40))
        // The unenhanced bearer's request is answered before its deadline.
        _ = s.receive([0x0B, 1], on: .unenhanced, now: .seconds(10))
        _ = s.receive([0x0B, 3], on: .unenhanced, now: .seconds(11))
        XCTAssertEqual(s.nextDeadline, .seconds(35))
        _ = s.submit(ReadProcedure(handle: 9), id: 4, now: .seconds(12))
        XCTAssertEqual(s.bearer(running: 4), .unenhanced)
        _ = s.submit(ReadProcedure(handle: 11), id: 5, now: .seconds(12))
        XCTAssertEqual(s.waitingCount, 1)

        XCTAssertEqual(s.expire(now: .seconds(35)), [
            Action(bearer: .enhanced(cid: 0x40), action: .complete(id: 2, .failure(.timeout))),
            Action(bearer: .enhanced(cid: 0x40), action: .closeBearer(.transactionTimeout)),
        ])
        XCTAssertEqual(s.enhancedCount, 0)
        XCTAssertEqual(s.bearerIDs, [.unenhanced])
        XCTAssertFalse(s.unenhanced.isClosed, "the link's own bearer is untouched (Part F §3.3.3)")
        // The waiter runs on the remaining bearer once it frees.
        XCTAssertEqual(s.receive([0x0B, 9], on: .unenhanced, now: .seconds(36)), [
            Action(bearer: .unenhanced, action: .complete(id: 4, .success(.value([9])))),
            Action(bearer: .unenhanced, action: .send(read(11))),
        ])
        XCTAssertEqual(s.receive([0x0B, 0x01], on: .enhanced(cid: 0x40), now: .seconds(37)), [], "a closed bearer's late answer is dropped")
    }

    func testUnenhancedTimeoutAsksToCloseTheLinkAndFailsWhatCanRunNowhere() {
        var s = set(enhanced: [], timeout: .seconds(30))
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 5), id: 2, now: .zero)
        XCTAssertEqual(s.expire(now: .seconds(29)), [])
        XCTAssertEqual(s.expire(now: .seconds(30)), [
            Action(bearer: .unenhanced, action: .complete(id: 1, .failure(.timeout))),
            Action(bearer: .unenhanced, action: .closeBearer(.transactionTimeout)),
            Action(bearer: .unenhanced, action: .complete(id: 2, .failure(.timeout))),
        ])
        XCTAssertEqual(s.submit(ReadProcedure(handle: 5), id: 3, now: .seconds(31)),
                       [Action(bearer: .unenhanced, action: .complete(id: 3, .failure(.bearerClosed)))])
    }

    func testBearerClosedByThePeerFailsItsProcedureAndItsQueueMoves() {
        var s = set()
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 5), id: 2, now: .zero)
        _ = s.submit(ReadProcedure(handle: 7), id: 3, now: .zero)
        _ = s.submit(ReadProcedure(handle: 9), id: 4, now: .zero)
        _ = s.submit(ReadProcedure(handle: 11), id: 5, now: .zero)
        XCTAssertEqual(s.bearer(running: 2), .enhanced(cid: 0x40))
        XCTAssertEqual(s.remove(.enhanced(cid: 0x40), now: .seconds(1)), [Action(bearer: .enhanced(cid: 0x40), action: .complete(id: 2, .failure(.bearerClosed)))])
        XCTAssertNil(s.bearer(running: 2), "a failed procedure runs nowhere")
        XCTAssertEqual(s.waitingCount, 2)
        XCTAssertEqual(s.receive([0x0B, 7], on: .enhanced(cid: 0x41), now: .seconds(2)), [
            Action(bearer: .enhanced(cid: 0x41), action: .complete(id: 3, .success(.value([7])))),
            Action(bearer: .enhanced(cid: 0x41), action: .send(read(9))),
        ])
        XCTAssertEqual(s.remove(.enhanced(cid: 0x41), now: .seconds(3)), [Action(bearer: .enhanced(cid: 0x41), action: .complete(id: 4, .failure(.bearerClosed)))])
        XCTAssertEqual(s.receive([0x0B, 3], on: .unenhanced, now: .seconds(4)), [
            Action(bearer: .unenhanced, action: .complete(id: 1, .success(.value([3])))),
            Action(bearer: .unenhanced, action: .send(read(11))),
        ])
        XCTAssertEqual(s.remove(.unenhanced, now: .seconds(5)), [], "the unenhanced bearer goes only with the link")
    }

    func testAPinnedProcedureFailsWhenItsBearerCloses() {
        var s = set(enhanced: [0x40])
        _ = s.submit(ReadProcedure(handle: 3), id: 1, pinnedTo: .enhanced(cid: 0x40), now: .zero)
        XCTAssertEqual(s.submit(ReadProcedure(handle: 5), id: 2, pinnedTo: .enhanced(cid: 0x40), now: .zero), [])
        XCTAssertEqual(s.remove(.enhanced(cid: 0x40), now: .seconds(1)), [
            Action(bearer: .enhanced(cid: 0x40), action: .complete(id: 1, .failure(.bearerClosed))),
            Action(bearer: .enhanced(cid: 0x40), action: .complete(id: 2, .failure(.bearerClosed))),
        ])
    }

    func testANewBearerTakesWaitingProceduresAtOnce() {
        var s = set(enhanced: [])
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 5), id: 2, now: .zero)
        XCTAssertEqual(s.add(.enhanced(cid: 0x40), bearer: ATTClientBearer(mtu: 64), now: .seconds(1)), [Action(bearer: .enhanced(cid: 0x40), action: .send(read(5)))])
        XCTAssertEqual(s.enhancedCount, 1)
    }

    func testIndicationIsConfirmedOnTheBearerItCameOnAndNotificationsComeFromAny() {
        var s = set()
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        XCTAssertEqual(s.receive(hexBytes("1d 0900 01"), on: .enhanced(cid: 0x41), now: .seconds(1)), [
            Action(bearer: .enhanced(cid: 0x41), action: .indication(handle: 9, value: [1])),
            Action(bearer: .enhanced(cid: 0x41), action: .send([0x1E])),
        ])
        XCTAssertEqual(s.receive(hexBytes("1b 0500 aa"), on: .enhanced(cid: 0x40), now: .seconds(1)),
                       [Action(bearer: .enhanced(cid: 0x40), action: .notification(handle: 5, value: [0xAA]))])
        XCTAssertEqual(s.receive(hexBytes("23 0500 0100 aa 0600 0200 bbcc"), on: .enhanced(cid: 0x40), now: .seconds(1)), [
            Action(bearer: .enhanced(cid: 0x40), action: .notification(handle: 5, value: [0xAA])),
            Action(bearer: .enhanced(cid: 0x40), action: .notification(handle: 6, value: [0xBB, 0xCC])),
        ])
        XCTAssertEqual(s.receive(hexBytes("1b 0500 bb"), on: .enhanced(cid: 0x99), now: .seconds(1)), [], "no such bearer")
        XCTAssertEqual(s.bearer(running: 1), .unenhanced, "the request on the unenhanced bearer is still outstanding")
    }

    func testCancelWaitingAndRunning() {
        var s = set(enhanced: [])
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 5), id: 2, now: .zero)
        XCTAssertEqual(s.cancel(id: 2, now: .zero), [Action(bearer: .unenhanced, action: .complete(id: 2, .failure(.cancelled)))])
        XCTAssertEqual(s.cancel(id: 1, now: .zero), [Action(bearer: .unenhanced, action: .complete(id: 1, .failure(.cancelled)))])
        _ = s.submit(ReadProcedure(handle: 7), id: 3, now: .zero)
        XCTAssertEqual(s.waitingCount, 1, "the cancelled request still holds the bearer until answered")
        XCTAssertEqual(s.receive([0x0B, 1], on: .unenhanced, now: .seconds(1)), [Action(bearer: .unenhanced, action: .send(read(7)))])
    }

    func testCloseFailsEverything() {
        var s = set(enhanced: [0x40])
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 5), id: 2, now: .zero)
        _ = s.submit(ReadProcedure(handle: 7), id: 3, now: .zero)
        let actions = s.close()
        XCTAssertEqual(Swift.Set(actions.compactMap { a -> UInt64? in
            if case let .complete(id, .failure(.bearerClosed)) = a.action { return id } else { return nil }
        }), [1, 2, 3])
        XCTAssertEqual(actions.count, 3)
        XCTAssertEqual(s.enhancedCount, 0)
        XCTAssertNil(s.bearer(running: 1))
        XCTAssertNil(s.bearer(running: 2))
        XCTAssertEqual(s.submit(ReadProcedure(handle: 9), id: 4, now: .zero), [Action(bearer: .unenhanced, action: .complete(id: 4, .failure(.bearerClosed)))])
    }

    /// Review finding 2 (client review): a set made from a bearer with a request outstanding
    /// reports that request's deadline, so the owner's timer fires the transaction timeout.
    func testASetMadeFromABusyBearerReportsItsDeadline() {
        var bearer = ATTClientBearer(mtu: 23, transactionTimeout: .seconds(30))
        _ = bearer.submit(ReadProcedure(handle: 3), id: 1, now: .seconds(2))
        XCTAssertEqual(bearer.nextDeadline, .seconds(32))
        let s = Set(unenhanced: bearer)
        XCTAssertEqual(s.nextDeadline, .seconds(32))
    }
}

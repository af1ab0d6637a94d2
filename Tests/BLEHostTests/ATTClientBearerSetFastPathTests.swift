import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// The set's update fast path: a Handle Value Notification or Indication (Core spec
/// Vol 3 Part F §3.4.7.1, §3.4.7.2) is taken without scheduling. Checked against the full path
/// (`receiveScheduled`, through the bearer and `settle`) from the same state: the same actions
/// for the PDU, and the same actions and state for a script of calls after it, in states with
/// procedures waiting, pinned ones, Enhanced ATT bearers open, a cancelled procedure still
/// holding its bearer, and a timed-out bearer.
final class ATTClientBearerSetFastPathTests: XCTestCase {
    typealias Set = ATTClientBearerSet
    typealias Action = ATTBearerSetAction

    private static let e40 = ATTBearerID.enhanced(cid: 0x40)
    private static let e41 = ATTBearerID.enhanced(cid: 0x41)
    private static let everyBearer: [ATTBearerID] = [.unenhanced, e40, e41, .enhanced(cid: 0x99)]

    /// PDUs sent to every bearer of every state: update-shaped ones (the fast path takes the
    /// first four) and some that only look close.
    private static let pdus: [[UInt8]] = [
        hexBytes("1b 0500 aabb"),     // notification
        hexBytes("1b 0500"),          // notification of an empty value
        hexBytes("1d 0900 01"),       // indication
        hexBytes("1d 0900"),          // indication of an empty value
        hexBytes("1b 05"),            // too short for its handle: dropped on both paths
        hexBytes("1d"),               // too short for its handle
        hexBytes("23 0500 0100 aa"),  // Multiple Handle Value Notification: never the fast path
    ]

    private func read(_ handle: UInt16) -> [UInt8] { [0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8)] }

    /// The states: name and set.
    private func states() -> [(String, Set)] {
        var out: [(String, Set)] = []

        let idle = Set(unenhanced: ATTClientBearer(mtu: 23))
        out.append(("idle, unenhanced only", idle))

        var waiting = idle
        _ = waiting.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = waiting.submit(ReadProcedure(handle: 5), id: 2, now: .zero)
        _ = waiting.submit(ReadProcedure(handle: 7), id: 3, now: .zero)
        XCTAssertEqual(waiting.waitingCount, 2)
        out.append(("a request outstanding, two waiting", waiting))

        var eatt = idle
        _ = eatt.add(Self.e40, bearer: ATTClientBearer(mtu: 64), now: .zero)
        _ = eatt.add(Self.e41, bearer: ATTClientBearer(mtu: 64), now: .zero)
        out.append(("EATT bearers open, idle", eatt))

        var busy = eatt
        _ = busy.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        _ = busy.submit(ReadLongProcedure(handle: 5), id: 2, now: .zero)
        _ = busy.submit(ReadProcedure(handle: 7), id: 3, now: .seconds(1))
        _ = busy.submit(ReadProcedure(handle: 9), id: 4, pinnedTo: Self.e41, now: .seconds(1))
        _ = busy.submit(ReadProcedure(handle: 11), id: 5, now: .seconds(2))
        _ = busy.submit(ExchangeMTUProcedure(clientMTU: 100), id: 6, now: .seconds(2))
        XCTAssertEqual(busy.waitingCount, 3)
        out.append(("EATT bearers busy, waiting and pinned procedures", busy))

        var cancelled = busy
        _ = cancelled.cancel(id: 1, now: .seconds(3))
        _ = cancelled.cancel(id: 2, now: .seconds(3))
        out.append(("cancelled procedures still holding their bearers", cancelled))

        var timedOut = busy
        _ = timedOut.receive([0x0B, 1], on: Self.e40, now: .seconds(4))
        let fired = timedOut.expire(now: .seconds(30))
        XCTAssertTrue(fired.contains(Action(bearer: .unenhanced, action: .closeBearer(.transactionTimeout))))
        out.append(("unenhanced bearer timed out, EATT bearers open", timedOut))
        return out
    }

    /// What happens after the PDU, the same on both copies: answers on every bearer (including
    /// the cancelled procedures' answers, which free their bearers silently), a new procedure,
    /// another update, a bearer closing, time running out.
    private func script(_ s: inout Set) -> [ATTBearerSetActions] {
        var out: [ATTBearerSetActions] = []
        for b in Self.everyBearer { out.append(s.receive([0x0B, 0x42], on: b, now: .seconds(5))) }
        out.append(s.submit(ReadProcedure(handle: 13), id: 7, now: .seconds(5)))
        out.append(s.receive(hexBytes("1b 0600 07"), on: Self.e41, now: .seconds(5)))
        for b in Self.everyBearer { out.append(s.receive([0x0D, 0x43], on: b, now: .seconds(6))) }
        out.append(s.remove(Self.e40, now: .seconds(7)))
        for b in Self.everyBearer { out.append(s.receive([0x0B, 0x44], on: b, now: .seconds(8))) }
        out.append(s.expire(now: .seconds(60)))
        out.append(s.close())
        return out
    }

    private func assertSameState(_ a: Set, _ b: Set, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.bearerIDs, b.bearerIDs, context, file: file, line: line)
        XCTAssertEqual(a.waitingCount, b.waitingCount, context, file: file, line: line)
        XCTAssertEqual(a.nextDeadline, b.nextDeadline, context, file: file, line: line)
        for id in UInt64(1)...7 {
            XCTAssertEqual(a.bearer(running: id), b.bearer(running: id), "\(context): procedure \(id)", file: file, line: line)
        }
        for bearer in a.bearerIDs {
            XCTAssertEqual(a[bearer: bearer]?.hasOutstandingRequest, b[bearer: bearer]?.hasOutstandingRequest, context, file: file, line: line)
            XCTAssertEqual(a[bearer: bearer]?.queuedCount, b[bearer: bearer]?.queuedCount, context, file: file, line: line)
            XCTAssertEqual(a[bearer: bearer]?.isClosed, b[bearer: bearer]?.isClosed, context, file: file, line: line)
        }
    }

    func testTheFastPathAgreesWithTheFullPathInEveryState() {
        for (name, state) in states() {
            for (n, pdu) in Self.pdus.enumerated() {
                for bearer in Self.everyBearer {
                    let context = "\(name), \(pdu) on \(bearer)"
                    var fast = state, full = state
                    // What an owner reading the set in place gets: the same, for updates only.
                    let query = state.update(pdu[...], on: bearer)
                    XCTAssertEqual(query != nil, n < 4, context)
                    let received = fast.receive(pdu[...], on: bearer, now: .seconds(4))
                    if let query { XCTAssertEqual(query, received, context) }
                    XCTAssertEqual(received, full.receiveScheduled(pdu[...], on: bearer, now: .seconds(4)), context)
                    assertSameState(fast, full, context)
                    XCTAssertEqual(script(&fast), script(&full), context)
                    assertSameState(fast, full, context + ", after the script")
                }
            }
        }
    }

    func testTheFastPathActionsAreTheUpdateAndForAnIndicationItsConfirmation() {
        var s = states()[3].1
        XCTAssertEqual(s.receive(hexBytes("1b 0500 aabb"), on: Self.e40, now: .seconds(4)),
                       [Action(bearer: Self.e40, action: .notification(handle: 5, value: [0xAA, 0xBB]))])
        XCTAssertEqual(s.receive(hexBytes("1d 0900 01"), on: Self.e41, now: .seconds(4)), [
            Action(bearer: Self.e41, action: .indication(handle: 9, value: [1])),
            Action(bearer: Self.e41, action: .send([0x1E])),
        ])
        XCTAssertEqual(s.receive(hexBytes("1b 0500 aa"), on: .enhanced(cid: 0x99), now: .seconds(4)), [], "no such bearer")
        XCTAssertEqual(s.waitingCount, 3, "an update starts nothing")
    }

    func testAPDUReadInPlaceFromASliceThatDoesNotStartAtZero() {
        // The PDU as the router hands it up: the L2CAP payload inside the ACL packet.
        let packet = hexBytes("4020 0900 0500 0400 1b 0500 aabb")
        var s = Set(unenhanced: ATTClientBearer(mtu: 23))
        XCTAssertEqual(s.receive(packet[8...], on: .unenhanced, now: .zero),
                       [Action(bearer: .unenhanced, action: .notification(handle: 5, value: [0xAA, 0xBB]))])
        let indication = hexBytes("4020 0800 0400 0400 1d 0900 01")
        XCTAssertEqual(s.receive(indication[8...], on: .unenhanced, now: .zero), [
            Action(bearer: .unenhanced, action: .indication(handle: 9, value: [1])),
            Action(bearer: .unenhanced, action: .send([0x1E])),
        ])
        _ = s.submit(ReadProcedure(handle: 3), id: 1, now: .zero)
        let response = hexBytes("4020 0700 0300 0400 0b 5566")
        XCTAssertEqual(s.receive(response[8...], on: .unenhanced, now: .seconds(1)),
                       [Action(bearer: .unenhanced, action: .complete(id: 1, .success(.value([0x55, 0x66]))))])
        var bearer = ATTClientBearer(mtu: 23)
        XCTAssertEqual(bearer.receive(packet[8...], now: .zero), [.notification(handle: 5, value: [0xAA, 0xBB])])
        let request = hexBytes("4020 0700 0300 0400 0a 0300")
        XCTAssertEqual(bearer.receive(request[8...], now: .zero), [.peerRequest([0x0A, 0x03, 0x00])], "a copy for the server")
    }

    func testActionListsKeepTwoInlineAndMoreInOrder() {
        let actions = (0..<5).map { Action(bearer: .enhanced(cid: UInt16(0x40 + $0)), action: .mtuChanged(23 + $0)) }
        var list = ATTBearerSetActions()
        XCTAssertTrue(list.isEmpty)
        for (n, a) in actions.enumerated() {
            list.append(a)
            XCTAssertEqual(Array(list), Array(actions[...n]))
            XCTAssertEqual(list.count, n + 1)
        }
        XCTAssertEqual(list, ATTBearerSetActions(arrayLiteral: actions[0], actions[1], actions[2], actions[3], actions[4]))
        XCTAssertEqual(ATTBearerSetActions(actions[0]) + ATTBearerSetActions(arrayLiteral: actions[1], actions[2]),
                       ATTBearerSetActions(arrayLiteral: actions[0], actions[1], actions[2]))
        XCTAssertNotEqual(ATTBearerSetActions(actions[0]), ATTBearerSetActions(arrayLiteral: actions[0], actions[1]))
        XCTAssertEqual(list.reversed().first, actions[4])
    }
}

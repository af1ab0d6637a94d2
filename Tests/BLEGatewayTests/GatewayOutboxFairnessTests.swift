import BLEGateway
import XCTest

/// What keeps one kind of message from starving another (the security review's findings): a
/// flood of replies takes turns with values, a backlog of values leaves every eighth slot to an
/// advertisement, and `online` after a reconnection overtakes a backlog of control messages.
final class GatewayOutboxFairnessTests: XCTestCase {
    private func message(_ kind: GatewayOutbox.Kind, _ n: Int) -> GatewayOutbox.Message {
        GatewayOutbox.Message(topic: "\(kind)/\(n)", payload: [UInt8(n & 0xFF)], kind: kind)
    }

    private func drain(_ outbox: inout GatewayOutbox, _ count: Int) -> [GatewayOutbox.Kind] {
        var kinds: [GatewayOutbox.Kind] = []
        var id: Int32 = 1
        while kinds.count < count, let m = outbox.next() {
            kinds.append(m.kind)
            outbox.handedOver(m, id: id)
            outbox.acknowledged(id)
            id += 1
        }
        return kinds
    }

    func testRepliesAndNotificationsTakeTurns() {
        var outbox = GatewayOutbox()
        for n in 0..<20 { outbox.enqueue(message(.reply, n)) }
        for n in 0..<20 { outbox.enqueue(message(.notification, n)) }
        let kinds = drain(&outbox, 6)
        XCTAssertEqual(kinds, [.reply, .notification, .reply, .notification, .reply, .notification])
    }

    func testAdvertisementsGetEveryEighthSlotUnderABacklogOfValues() {
        var outbox = GatewayOutbox()
        for n in 0..<100 { outbox.enqueue(message(.notification, n)) }
        for n in 0..<5 { outbox.enqueue(message(.advertisement, n)) }
        let kinds = drain(&outbox, 40)
        XCTAssertEqual(kinds.filter { $0 == .advertisement }.count, 5, "\(kinds)")
        XCTAssertEqual(kinds.firstIndex(of: .advertisement), 7)
        XCTAssertEqual(outbox.queuedNotifications, 100 - 35)
    }

    func testOnlineOvertakesABacklogOfControlMessages() {
        var limits = GatewayOutbox.Limits()
        limits.control = 3
        var outbox = GatewayOutbox(limits: limits)
        for n in 0..<3 { outbox.enqueue(message(.control, n)) }
        outbox.enqueueFirst(GatewayOutbox.Message(topic: "status", payload: Array("online".utf8), retain: true, kind: .control))
        XCTAssertEqual(outbox.next()?.topic, "status")
        XCTAssertEqual(outbox.queuedControl, 2, "the bound held: the newest backlog message made room")
        XCTAssertEqual(outbox.counts.controlDropped, 1)
    }

    func testRepliesAreBoundedOldestFirst() {
        var limits = GatewayOutbox.Limits()
        limits.replies = 2
        var outbox = GatewayOutbox(limits: limits)
        for n in 0..<4 { outbox.enqueue(message(.reply, n)) }
        XCTAssertEqual(outbox.counts.repliesDropped, 2)
        XCTAssertEqual(outbox.next()?.topic, "reply/2")
    }
}

import BLEGateway
import XCTest

/// `GatewayOutbox`: the order messages leave in, the bound on messages in flight, and what each
/// queue's bound drops, supersedes and counts.
final class GatewayOutboxTests: XCTestCase {
    typealias Message = GatewayOutbox.Message

    /// A message whose payload is `n` (four octets, little-endian), to check order by.
    private func message(_ kind: GatewayOutbox.Kind, _ n: Int, topic: String? = nil) -> Message {
        Message(topic: topic ?? "t/\(n)", payload: (0..<4).map { UInt8(truncatingIfNeeded: n >> (8 * $0)) }, kind: kind)
    }

    private func number(_ m: Message?) -> Int? {
        m.map { m in m.payload.enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) } }
    }

    /// Takes everything the outbox gives (nothing is in flight, so nothing holds it back).
    private func drain(_ outbox: inout GatewayOutbox) -> [Message] {
        var out: [Message] = []
        while let m = outbox.next() { out.append(m) }
        return out
    }

    private func limits(inFlight: Int = 32, notifications: Int = 1000, advertisements: Int = 500, control: Int = 256) -> GatewayOutbox.Limits {
        var l = GatewayOutbox.Limits()
        l.inFlight = inFlight
        l.notifications = notifications
        l.advertisements = advertisements
        l.control = control
        return l
    }

    func testControlLeavesBeforeNotificationsAndNotificationsBeforeAdvertisements() {
        var outbox = GatewayOutbox()
        XCTAssertTrue(outbox.isEmpty)
        outbox.enqueue(message(.advertisement, 1))
        outbox.enqueue(message(.notification, 2))
        outbox.enqueue(message(.control, 3))
        outbox.enqueue(message(.notification, 4))
        outbox.enqueue(message(.advertisement, 5))
        outbox.enqueue(message(.control, 6))
        XCTAssertFalse(outbox.isEmpty)
        XCTAssertEqual(outbox.queuedControl, 2)
        XCTAssertEqual(outbox.queuedNotifications, 2)
        XCTAssertEqual(outbox.queuedAdvertisements, 2)
        XCTAssertEqual(drain(&outbox).map { number($0) }, [3, 6, 2, 4, 1, 5])
        XCTAssertTrue(outbox.isEmpty)
        XCTAssertNil(outbox.next())
    }

    /// A control message enqueued while notifications wait still goes first.
    func testAControlMessageOvertakesQueuedNotifications() {
        var outbox = GatewayOutbox()
        for n in 1...3 { outbox.enqueue(message(.notification, n)) }
        XCTAssertEqual(number(outbox.next()), 1)
        outbox.enqueue(message(.control, 9))
        XCTAssertEqual(drain(&outbox).map { number($0) }, [9, 2, 3])
    }

    func testNothingIsHandedOutWhileTheInFlightBoundIsReached() throws {
        var outbox = GatewayOutbox(limits: limits(inFlight: 2))
        for n in 1...4 { outbox.enqueue(message(.notification, n)) }
        let first = try XCTUnwrap(outbox.next())
        outbox.handedOver(first, id: 10)
        let second = try XCTUnwrap(outbox.next())
        outbox.handedOver(second, id: 11)
        XCTAssertEqual(outbox.inFlightCount, 2)
        XCTAssertNil(outbox.next())
        XCTAssertEqual(outbox.queuedNotifications, 2, "a refused next() takes nothing out")

        outbox.acknowledged(99)
        XCTAssertEqual(outbox.inFlightCount, 2, "an unknown acknowledgement frees nothing")
        XCTAssertEqual(outbox.counts.acknowledged, 0)
        XCTAssertNil(outbox.next())

        outbox.acknowledged(10)
        XCTAssertEqual(outbox.inFlightCount, 1)
        XCTAssertEqual(outbox.counts.acknowledged, 1)
        let third = try XCTUnwrap(outbox.next())
        XCTAssertEqual(number(third), 3)
        outbox.handedOver(third, id: 12)
        XCTAssertNil(outbox.next())

        outbox.acknowledged(10)
        XCTAssertEqual(outbox.counts.acknowledged, 1, "a second acknowledgement of one id counts once")
        XCTAssertNil(outbox.next())
        outbox.acknowledged(11)
        outbox.acknowledged(12)
        XCTAssertEqual(outbox.inFlightCount, 0)
        XCTAssertEqual(number(outbox.next()), 4)
        XCTAssertEqual(outbox.counts.published, 3)
        XCTAssertEqual(outbox.counts.acknowledged, 3)
    }

    /// The in-flight bound holds back every kind, control messages too.
    func testTheInFlightBoundHoldsBackControlMessages() throws {
        var outbox = GatewayOutbox(limits: limits(inFlight: 1))
        outbox.enqueue(message(.control, 1))
        outbox.enqueue(message(.control, 2))
        outbox.handedOver(try XCTUnwrap(outbox.next()), id: 1)
        XCTAssertNil(outbox.next())
        XCTAssertEqual(outbox.queuedControl, 1)
        outbox.acknowledged(1)
        XCTAssertEqual(number(outbox.next()), 2)
    }

    func testANotificationArrivingAtAFullQueueIsDroppedAndCounted() {
        var outbox = GatewayOutbox(limits: limits(notifications: 3))
        for n in 1...5 { outbox.enqueue(message(.notification, n)) }
        XCTAssertEqual(outbox.queuedNotifications, 3)
        XCTAssertEqual(outbox.counts.notificationsDropped, 2)
        XCTAssertEqual(number(outbox.next()), 1)
        outbox.enqueue(message(.notification, 6))
        outbox.enqueue(message(.notification, 7))
        XCTAssertEqual(outbox.counts.notificationsDropped, 3)
        XCTAssertEqual(drain(&outbox).map { number($0) }, [2, 3, 6])
    }

    func testANewerAdvertisementReplacesTheQueuedOneInItsPlace() {
        var outbox = GatewayOutbox()
        outbox.enqueue(message(.advertisement, 1, topic: "adv/A"))
        outbox.enqueue(message(.advertisement, 2, topic: "adv/B"))
        outbox.enqueue(message(.advertisement, 3, topic: "adv/A"))
        outbox.enqueue(message(.advertisement, 4, topic: "adv/C"))
        outbox.enqueue(message(.advertisement, 5, topic: "adv/A"))
        XCTAssertEqual(outbox.queuedAdvertisements, 3)
        XCTAssertEqual(outbox.counts.advertisementsSuperseded, 2)
        XCTAssertEqual(outbox.counts.advertisementsDropped, 0)
        let out = drain(&outbox)
        XCTAssertEqual(out.map(\.topic), ["adv/A", "adv/B", "adv/C"])
        XCTAssertEqual(out.map { number($0) }, [5, 2, 4])
    }

    /// Once taken, a topic's next advertisement is a new one at the back of the queue.
    func testAnAdvertisementAfterItsTopicWasTakenQueuesAnew() {
        var outbox = GatewayOutbox()
        outbox.enqueue(message(.advertisement, 1, topic: "adv/A"))
        outbox.enqueue(message(.advertisement, 2, topic: "adv/B"))
        XCTAssertEqual(outbox.next()?.topic, "adv/A")
        outbox.enqueue(message(.advertisement, 3, topic: "adv/A"))
        XCTAssertEqual(outbox.counts.advertisementsSuperseded, 0)
        XCTAssertEqual(drain(&outbox).map { number($0) }, [2, 3])
    }

    func testPastTheAdvertisementBoundTheOldestIsDroppedAndCounted() {
        var outbox = GatewayOutbox(limits: limits(advertisements: 2))
        outbox.enqueue(message(.advertisement, 1, topic: "adv/A"))
        outbox.enqueue(message(.advertisement, 2, topic: "adv/B"))
        outbox.enqueue(message(.advertisement, 3, topic: "adv/A"))
        XCTAssertEqual(outbox.counts.advertisementsDropped, 0, "replacing is not growing")
        outbox.enqueue(message(.advertisement, 4, topic: "adv/C"))
        XCTAssertEqual(outbox.queuedAdvertisements, 2)
        XCTAssertEqual(outbox.counts.advertisementsDropped, 1)
        outbox.enqueue(message(.advertisement, 5, topic: "adv/D"))
        XCTAssertEqual(outbox.counts.advertisementsDropped, 2)
        XCTAssertEqual(drain(&outbox).map(\.topic), ["adv/C", "adv/D"])
    }

    func testPastTheControlBoundTheOldestIsDroppedAndCounted() {
        var outbox = GatewayOutbox(limits: limits(control: 2))
        for n in 1...4 { outbox.enqueue(message(.control, n)) }
        XCTAssertEqual(outbox.queuedControl, 2)
        XCTAssertEqual(outbox.counts.controlDropped, 2)
        XCTAssertEqual(drain(&outbox).map { number($0) }, [3, 4])
    }

    /// Messages the client refused, given back newest first, leave again in their old order
    /// ahead of the rest of their queue.
    func testGivenBackMessagesLeaveAgainFirstInTheirOrder() throws {
        for kind in [GatewayOutbox.Kind.control, .notification, .advertisement] {
            var outbox = GatewayOutbox()
            for n in 1...4 { outbox.enqueue(message(kind, n)) }
            let first = try XCTUnwrap(outbox.next()), second = try XCTUnwrap(outbox.next())
            outbox.giveBack(second)
            outbox.giveBack(first)
            XCTAssertEqual(drain(&outbox).map { number($0) }, [1, 2, 3, 4], "\(kind)")
        }
    }

    /// Given back, a message returns to the front of its own queue: a notification still waits
    /// for the control messages.
    func testAGivenBackMessageKeepsItsKindsPlace() throws {
        var outbox = GatewayOutbox()
        outbox.enqueue(message(.notification, 1))
        outbox.enqueue(message(.notification, 2))
        let taken = try XCTUnwrap(outbox.next())
        outbox.enqueue(message(.control, 3))
        outbox.giveBack(taken)
        XCTAssertEqual(drain(&outbox).map { number($0) }, [3, 1, 2])
    }

    /// The notification queue compacts after 257 messages are taken; a message given back right
    /// after is still first.
    func testANotificationGivenBackAfterCompactionIsFirst() throws {
        var outbox = GatewayOutbox()
        for n in 1...300 { outbox.enqueue(message(.notification, n)) }
        var last: Message?
        for _ in 1...257 { last = outbox.next() }
        XCTAssertEqual(number(last), 257)
        XCTAssertEqual(outbox.queuedNotifications, 43)
        outbox.giveBack(try XCTUnwrap(last))
        XCTAssertEqual(outbox.queuedNotifications, 44)
        XCTAssertEqual(drain(&outbox).map { number($0) }, Array(257...300))
    }

    /// A newer advertisement for the topic arrived while the old one was out: the newer is kept.
    func testAnAdvertisementGivenBackDoesNotReplaceANewerOne() throws {
        var outbox = GatewayOutbox()
        outbox.enqueue(message(.advertisement, 1, topic: "adv/A"))
        outbox.enqueue(message(.advertisement, 2, topic: "adv/B"))
        let old = try XCTUnwrap(outbox.next())
        outbox.enqueue(message(.advertisement, 3, topic: "adv/A"))
        outbox.giveBack(old)
        XCTAssertEqual(outbox.queuedAdvertisements, 2)
        XCTAssertEqual(drain(&outbox).map { number($0) }, [2, 3])
    }

    /// 100,000 notifications through a queue that holds 50 to 349 at a time: the count is right
    /// after every step and they leave in the order they came, across many compactions.
    func testALongRunOfNotificationsStaysInOrderAndCounted() {
        var outbox = GatewayOutbox()
        var sent = 0, received = 0
        for _ in 0..<50 {
            outbox.enqueue(message(.notification, sent))
            sent += 1
        }
        var round = 0
        while sent < 100_000 {
            let burst = min(1 + round % 300, 100_000 - sent)
            for _ in 0..<burst {
                outbox.enqueue(message(.notification, sent))
                sent += 1
            }
            XCTAssertEqual(outbox.queuedNotifications, 50 + burst)
            for _ in 0..<burst {
                let n = number(outbox.next())
                if n != received { return XCTFail("notification \(n.map(String.init) ?? "none") where \(received) was due") }
                received += 1
            }
            XCTAssertEqual(outbox.queuedNotifications, 50)
            round += 1
        }
        XCTAssertEqual(drain(&outbox).map { number($0) }, Array(received..<100_000))
        XCTAssertEqual(outbox.counts.notificationsDropped, 0)
        XCTAssertTrue(outbox.isEmpty)
    }

    /// 100,000 advertisements from 100 devices, a few taken after each: never more queued than
    /// devices, the supersede and drop counts add up, and each device leaves with its newest.
    func testALongRunOfAdvertisementsStaysBoundedAndCounted() {
        var outbox = GatewayOutbox(limits: limits(advertisements: 80))
        var newest: [String: Int] = [:]
        var taken = 0
        for n in 0..<100_000 {
            let topic = "adv/\((n * 37) % 100)"
            outbox.enqueue(message(.advertisement, n, topic: topic))
            newest[topic] = n
            XCTAssertLessThanOrEqual(outbox.queuedAdvertisements, 80)
            if n % 3 == 0, let m = outbox.next() {
                taken += 1
                XCTAssertEqual(number(m), newest[m.topic], "a queued advertisement is its topic's newest")
            }
        }
        let rest = drain(&outbox)
        XCTAssertEqual(Set(rest.map(\.topic)).count, rest.count, "one per topic")
        for m in rest { XCTAssertEqual(number(m), newest[m.topic], m.topic) }
        let c = outbox.counts
        XCTAssertEqual(taken + rest.count + c.advertisementsSuperseded + c.advertisementsDropped, 100_000)
        XCTAssertTrue(outbox.isEmpty)
    }
}

import XCTest
import BLEWire
@testable import BLEHost

/// Server side of the GATT test suite's GAN (notifications) and GAI (indications) categories,
/// and per-connection state with several clients.
final class GATTServerUpdateTests: XCTestCase {
    /// GATT/SR/GAN/BV-01-C: a notification is sent only while the client has enabled it, and is
    /// cut to ATT_MTU − 3.
    func testGAN_BV01_NotifyWhileSubscribed() {
        var h = GATTServerHarness()
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [1]), .notSubscribed)
        XCTAssertNil(h.server.nextOutgoing())
        h.run(["C: 12 1700 0100", "S: 13"])
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [1, 2]), .queued)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: GATTServerFixture.longValue), .queued)
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1b16000102")
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1b1600" + GATTServerFixture.longValue[0..<20].map { $0 }.hexString)
        XCTAssertNil(h.server.nextOutgoing())
        // Indications are not enabled; another characteristic is not subscribed.
        XCTAssertEqual(h.indicate(valueHandle: 0x16, value: [1], id: 1, now: .zero), .notSubscribed)
        XCTAssertEqual(h.notify(valueHandle: 0x25, value: [1]), .notSubscribed)
        h.run(["C: 12 1700 0000", "S: 13"])
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [1]), .notSubscribed)
    }

    /// The bounded queue: full → `.queueFull`, then one `.readyToUpdate` once there is room.
    func testGAN_QueueFullThenReady() {
        var h = GATTServerHarness(server: ATTServer(notificationQueueLimit: 2))
        h.run(["C: 12 1700 0100", "S: 13"])
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [1]), .queued)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [2]), .queued)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [3]), .queueFull)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [3]), .queueFull)
        XCTAssertEqual(h.server.takeEvents(), [])
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1b160001")
        XCTAssertEqual(h.server.takeEvents(), [.readyToUpdate])
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1b160002")
        XCTAssertEqual(h.server.takeEvents(), [])
        XCTAssertNil(h.server.nextOutgoing())
        // A ready signal not taken explicitly rides on the next call that returns actions.
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [4]), .queued)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [5]), .queued)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [6]), .queueFull)
        XCTAssertNotNil(h.server.nextOutgoing())
        XCTAssertEqual(h.server.expire(now: .seconds(1)), [.readyToUpdate])
    }

    /// GATT/SR/GAI/BV-01-C: an indication, its confirmation, and the next one waiting for it;
    /// notifications are not held up meanwhile.
    func testGAI_BV01_IndicationConfirmation() {
        var h = GATTServerHarness()
        h.run(["C: 12 1700 0300", "S: 13"])
        XCTAssertEqual(h.indicate(valueHandle: 0x16, value: [7], id: 70, now: .seconds(1)), .queued)
        XCTAssertEqual(h.indicate(valueHandle: 0x16, value: [8], id: 80, now: .seconds(1)), .queued)
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [9]), .queued)
        XCTAssertTrue(h.server.hasOutgoing)
        XCTAssertEqual(h.server.nextOutgoing(now: .seconds(2))?.hexString, "1d160007")
        XCTAssertEqual(h.server.nextDeadline, .seconds(32))
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1b160009")
        XCTAssertNil(h.server.nextOutgoing())
        XCTAssertFalse(h.server.hasOutgoing)
        h.run(["C: 1e"])
        XCTAssertEqual(h.events.last, .indicationConfirmed(id: 70))
        XCTAssertNil(h.server.nextDeadline)
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1d160008")
        h.run(["C: 1e"])
        XCTAssertEqual(h.events.last, .indicationConfirmed(id: 80))
        // A confirmation with nothing outstanding is ignored.
        let before = h.events.count
        h.run(["C: 1e"])
        XCTAssertEqual(h.events.count, before)
    }

    /// GATT/SR/GAI/BI-01-C style: no confirmation within 30 s fails the transaction and the
    /// bearer (§3.3.3); queued indications fail with it and nothing more is sent.
    func testGAI_IndicationTimeoutClosesBearer() {
        var h = GATTServerHarness()
        h.run(["C: 12 1700 0200", "S: 13"])
        XCTAssertEqual(h.indicate(valueHandle: 0x16, value: [1], id: 1, now: .seconds(1)), .queued)
        XCTAssertEqual(h.indicate(valueHandle: 0x16, value: [2], id: 2, now: .seconds(1)), .queued)
        XCTAssertNotNil(h.server.nextOutgoing(now: .seconds(1)))
        XCTAssertEqual(h.server.nextDeadline, .seconds(31))
        XCTAssertEqual(h.server.expire(now: .seconds(30)), [])
        XCTAssertEqual(h.server.expire(now: .seconds(31)), [.indicationTimedOut(id: 1), .indicationTimedOut(id: 2), .closeBearer])
        XCTAssertTrue(h.server.isClosed)
        XCTAssertNil(h.server.nextDeadline)
        XCTAssertNil(h.server.nextOutgoing())
        XCTAssertEqual(h.notify(valueHandle: 0x16, value: [1]), .notSubscribed)
        h.run(["C: 0a 1000", "C: 1e"])
    }

    /// Service Changed is indicated like any other characteristic once its CCCD is set.
    func testGAI_ServiceChangedIndication() throws {
        var h = GATTServerHarness()
        h.run(["C: 12 0900 0200", "S: 13"])
        try h.database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xDDD0), characteristics: []))
        let range = try XCTUnwrap(h.database.serviceChangedRange)
        XCTAssertEqual(range, 0x2F...0x2F)
        var value = ByteWriter()
        value.u16(range.lowerBound)
        value.u16(range.upperBound)
        XCTAssertEqual(h.indicate(valueHandle: h.database.serviceChangedHandle, value: value.bytes, id: 9, now: .zero), .queued)
        XCTAssertEqual(h.server.nextOutgoing()?.hexString, "1d08002f002f00")
    }

    /// Two connections (two `ATTServer`s over one database) keep their own MTU and CCCDs, and
    /// share stored values.
    func testTwoConnectionsKeepTheirOwnState() {
        var db = GATTServerFixture.database()
        var a = ATTServer(), b = ATTServer()
        _ = a.receive([0x02, 0x64, 0x00], database: &db, security: .none, now: .zero)
        XCTAssertEqual(a.receive([0x12, 0x17, 0x00, 0x01, 0x00], database: &db, security: .none, now: .zero),
                       [.subscriptionChanged(valueHandle: 0x16, notifications: true, indications: false), .send([0x13])])
        XCTAssertEqual(a.mtu, 100)
        XCTAssertEqual(b.mtu, 23)
        XCTAssertEqual(a.cccd(valueHandle: 0x16), 1)
        XCTAssertEqual(b.cccd(valueHandle: 0x16), 0)
        XCTAssertEqual(b.receive([0x0A, 0x17, 0x00], database: &db, security: .none, now: .zero), [.send([0x0B, 0x00, 0x00])])
        XCTAssertEqual(a.notify(valueHandle: 0x16, value: [1], database: db, security: .none), .queued)
        XCTAssertEqual(b.notify(valueHandle: 0x16, value: [1], database: db, security: .none), .notSubscribed)
        _ = a.receive([0x12, 0x10, 0x00, 0x41], database: &db, security: .none, now: .zero)
        XCTAssertEqual(b.receive([0x0A, 0x10, 0x00], database: &db, security: .none, now: .zero), [.send([0x0B, 0x41])])
        // A bonded client's CCCDs carry over to a new connection.
        var c = ATTServer()
        c.restoreSubscriptions(a.subscriptions)
        XCTAssertEqual(c.cccd(valueHandle: 0x16), 1)
    }
}

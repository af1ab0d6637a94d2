import XCTest
import BLEWire
@testable import BLEHost

/// The ATT server on Enhanced ATT bearers (Core spec Vol 3 Part F §3.2.11, Vol 3 Part G §5.3):
/// one `ATTServer` per bearer, each with its own ATT_MTU, request flow and outstanding
/// indication, all sharing one client's CCCDs, Client Supported Features and change awareness,
/// which live in the unenhanced bearer's server and are lent for each call.
final class GATTServerEnhancedBearerTests: XCTestCase {
    /// A link's servers: the unenhanced bearer's (holding the client state) and two EATT ones.
    struct Link {
        var database = GATTServerFixture.database()
        var unenhanced = ATTServer()
        var a = ATTServer.enhancedBearer(mtu: 100)
        var b = ATTServer.enhancedBearer(mtu: 80)
        var security = LinkSecurity(encrypted: true, authenticated: false, authorized: false)
        var now: Duration = .zero

        enum Bearer { case unenhanced, a, b }

        mutating func receive(_ hex: String, on bearer: Bearer) -> [ServerAction] {
            now += .milliseconds(10)
            let pdu = Self.bytes(hex)
            let (security, t) = (self.security, now)
            switch bearer {
            case .unenhanced: return unenhanced.receive(pdu, database: &database, security: security, now: t)
            case .a: return unenhanced.sharingClientState(with: &a) { $0.receive(pdu, database: &database, security: security, now: t) }
            case .b: return unenhanced.sharingClientState(with: &b) { $0.receive(pdu, database: &database, security: security, now: t) }
            }
        }

        mutating func on<R>(_ bearer: Bearer, _ body: (inout ATTServer, inout GATTServerDatabase, LinkSecurity) -> R) -> R {
            let security = self.security
            switch bearer {
            case .unenhanced: return body(&unenhanced, &database, security)
            case .a: return unenhanced.sharingClientState(with: &a) { body(&$0, &database, security) }
            case .b: return unenhanced.sharingClientState(with: &b) { body(&$0, &database, security) }
            }
        }

        static func bytes(_ hex: String) -> [UInt8] {
            let digits = Array(hex.filter { !$0.isWhitespace })
            return stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
        }
    }

    static func sent(_ actions: [ServerAction]) -> [String] {
        actions.compactMap { if case let .send(bytes) = $0 { return bytes.hexString } else { return nil } }
    }

    /// The value handle of the fixture's characteristic of `uuid`.
    static func valueHandle(_ uuid: UInt16, in database: GATTServerDatabase) throws -> UInt16 {
        try XCTUnwrap(database.attributes.first { $0.type == BluetoothUUID(uuid) }?.handle)
    }

    func testACCCDWrittenOnOneBearerEnablesNotificationsOnAnother() throws {
        var link = Link()
        // 0x16 is the notify/indicate characteristic, its CCCD at 0x17.
        XCTAssertEqual(Self.sent(link.receive("12 1700 0100", on: .a)), ["13"], "Write Response on the bearer that asked")
        XCTAssertEqual(link.unenhanced.cccd(valueHandle: 0x16), 1, "the client's CCCD is kept with the link's client state")
        XCTAssertEqual(link.a.cccd(valueHandle: 0x16), 0, "the bearer only borrowed it")
        let result = link.on(.b) { s, db, sec in s.notify(valueHandle: 0x16, value: [1, 2], database: db, security: sec) }
        XCTAssertEqual(result, .queued)
        XCTAssertEqual(link.b.nextOutgoing()?.hexString, "1b16000102")
        XCTAssertNil(link.a.nextOutgoing())
        XCTAssertNil(link.unenhanced.nextOutgoing())
        // Read back on the unenhanced bearer: the same configuration.
        XCTAssertEqual(Self.sent(link.receive("0a 1700", on: .unenhanced)), ["0b0100"])
        // Cleared on the unenhanced bearer: no longer subscribed on the enhanced one either.
        XCTAssertEqual(Self.sent(link.receive("12 1700 0000", on: .unenhanced)), ["13"])
        XCTAssertEqual(link.on(.a) { s, db, sec in s.notify(valueHandle: 0x16, value: [1], database: db, security: sec) }, .notSubscribed)
    }

    func testExchangeMTUIsRefusedOnAnEnhancedBearerAndTheBearersMTUIsTheChannels() throws {
        var link = Link()
        let rw = try Self.valueHandle(0xAAA1, in: link.database)
        let read = "0a" + String(format: "%02x%02x", rw & 0xFF, rw >> 8)
        XCTAssertEqual(Self.sent(link.receive("02 0002", on: .a)), ["0102000006"], "Request Not Supported (§3.4.2)")
        XCTAssertEqual(link.a.mtu, 100, "the channel's MTU, unchanged")
        XCTAssertEqual(Self.sent(link.receive("02 0002", on: .unenhanced)), ["030502"])
        XCTAssertEqual(link.unenhanced.mtu, 512)
        XCTAssertEqual(link.a.mtu, 100)
        // A long value is cut to each bearer's own ATT_MTU − 1.
        XCTAssertTrue(link.database.setValue(Array(repeating: 0x5A, count: 300), forHandle: rw))
        XCTAssertEqual(Self.sent(link.receive(read, on: .b)).first?.count, 2 * 80)
        XCTAssertEqual(Self.sent(link.receive(read, on: .a)).first?.count, 2 * 100)
        // Reconfiguration may raise an enhanced bearer's MTU, never lower it.
        link.a.enhancedMTUChanged(to: 90)
        XCTAssertEqual(link.a.mtu, 100)
        link.a.enhancedMTUChanged(to: 200)
        XCTAssertEqual(link.a.mtu, 200)
        link.unenhanced.enhancedMTUChanged(to: 1000)
        XCTAssertEqual(link.unenhanced.mtu, 512, "not for the unenhanced bearer, whose MTU Exchange MTU set")
    }

    func testTwoRequestsOnTwoBearersAreEachAnsweredOnTheirOwnBearer() throws {
        var link = Link()
        let dynamic = try Self.valueHandle(0xAAA9, in: link.database)
        // Bearer A's read waits for the application ...
        let asked = link.receive("0a" + String(format: "%02x%02x", dynamic & 0xFF, dynamic >> 8), on: .a)
        guard case let .read(id, handle, offset)? = asked.first, asked.count == 1 else { return XCTFail("\(asked)") }
        XCTAssertEqual(handle, dynamic)
        XCTAssertEqual(offset, 0)
        // ... while bearer B's request is answered at once (on one bearer it would wait, §3.3.2).
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .b)), ["0b01"])
        // A second request on A meanwhile waits behind A's first.
        XCTAssertEqual(link.receive("0a 1600", on: .a), [])
        let answered = link.on(.a) { s, db, _ in s.completeRead(id: id, result: .success([0xD0, 0xD1]), database: &db, security: .none, now: .seconds(1)) }
        XCTAssertEqual(Self.sent(answered), ["0bd0d1", "0b01"], "A's answers, in order, on A")
        // An id of A's means nothing to B.
        XCTAssertEqual(link.on(.b) { s, db, _ in s.completeRead(id: id, result: .success([1]), database: &db, security: .none, now: .seconds(1)) }, [])
    }

    func testOneIndicationOutstandingPerBearer() {
        var link = Link()
        _ = link.receive("12 1700 0200", on: .unenhanced)
        let t: Duration = .seconds(1)
        XCTAssertEqual(link.on(.a) { s, db, sec in s.indicate(valueHandle: 0x16, value: [1], id: 1, now: t, database: db, security: sec) }, .queued)
        XCTAssertEqual(link.on(.a) { s, db, sec in s.indicate(valueHandle: 0x16, value: [2], id: 2, now: t, database: db, security: sec) }, .queued)
        XCTAssertEqual(link.on(.b) { s, db, sec in s.indicate(valueHandle: 0x16, value: [3], id: 3, now: t, database: db, security: sec) }, .queued)
        XCTAssertEqual(link.a.nextOutgoing(now: t)?.hexString, "1d160001")
        XCTAssertNil(link.a.nextOutgoing(now: t), "A's second waits for A's confirmation")
        XCTAssertTrue(link.a.hasIndicationInFlight)
        XCTAssertEqual(link.b.nextOutgoing(now: t)?.hexString, "1d160003", "B's goes out while A's is outstanding")
        // B's confirmation confirms B's indication, not A's.
        XCTAssertEqual(link.receive("1e", on: .b), [.indicationConfirmed(id: 3)])
        XCTAssertNil(link.a.nextOutgoing(now: t))
        XCTAssertEqual(link.receive("1e", on: .a), [.indicationConfirmed(id: 1)])
        XCTAssertEqual(link.a.nextOutgoing(now: t)?.hexString, "1d160002")
        XCTAssertFalse(link.b.hasIndicationInFlight)
        // A's unconfirmed indication times out A alone (§3.3.3).
        XCTAssertEqual(link.a.expire(now: .seconds(40)), [.indicationTimedOut(id: 2), .closeBearer])
        XCTAssertTrue(link.a.isClosed)
        XCTAssertFalse(link.b.isClosed)
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .b)), ["0b01"])
    }

    func testMultipleHandleValueNotificationOnlyToAClientThatSetBit2() throws {
        var link = Link()
        let second = try Self.valueHandle(0xAAAA, in: link.database)
        let h = { (v: UInt16) in String(format: "%02x%02x", v & 0xFF, v >> 8) }
        _ = link.receive("12 1700 0100", on: .a)
        _ = link.receive("12 " + h(second + 1) + " 0100", on: .a)
        let values: [(handle: UInt16, value: [UInt8])] = [(0x16, [0xA1, 0xA2]), (second, [0xB1])]
        // Client Supported Features not set: one Handle Value Notification per value.
        XCTAssertEqual(link.on(.b) { s, db, sec in s.notifyMultiple(values, database: db, security: sec) }, .queued)
        XCTAssertEqual(link.b.nextOutgoing()?.hexString, "1b1600a1a2")
        XCTAssertEqual(link.b.nextOutgoing()?.hexString, "1b" + h(second) + "b1")
        XCTAssertNil(link.b.nextOutgoing())
        // Bit 2 written on the unenhanced bearer (Vol 3 Part G §7.2): one 0x23 PDU, on B.
        let features = h(link.database.clientSupportedFeaturesHandle)
        XCTAssertEqual(Self.sent(link.receive("12 " + features + " 04", on: .unenhanced)), ["13"])
        XCTAssertTrue(link.b.multipleNotificationsEnabled == false, "B's own copy stays empty between calls")
        XCTAssertEqual(link.on(.b) { s, _, _ in s.multipleNotificationsEnabled }, true)
        XCTAssertEqual(link.on(.b) { s, db, sec in s.notifyMultiple(values, database: db, security: sec) }, .queued)
        XCTAssertEqual(link.b.nextOutgoing()?.hexString, "23" + "1600" + "0200" + "a1a2" + h(second) + "0100" + "b1")
        XCTAssertNil(link.b.nextOutgoing())
        // Values not subscribed are left out; a PDU left with one tuple is a plain notification.
        let unsubscribed: [(handle: UInt16, value: [UInt8])] = [(0x16, [0x01]), (0x03, [0x02])]
        XCTAssertEqual(link.on(.a) { s, db, sec in s.notifyMultiple(unsubscribed, database: db, security: sec) }, .queued)
        XCTAssertEqual(link.a.nextOutgoing()?.hexString, "1b160001")
        XCTAssertEqual(link.on(.a) { s, db, sec in s.notifyMultiple([(0x03, [1])], database: db, security: sec) }, .notSubscribed)
        // More than ATT_MTU − 1 octets: split over several PDUs, each within B's ATT_MTU of 80.
        let long: [(handle: UInt16, value: [UInt8])] = [(0x16, Array(repeating: 1, count: 40)), (second, Array(repeating: 2, count: 40)),
                                                         (0x16, Array(repeating: 3, count: 10))]
        XCTAssertEqual(link.on(.b) { s, db, sec in s.notifyMultiple(long, database: db, security: sec) }, .queued)
        let first = try XCTUnwrap(link.b.nextOutgoing())
        XCTAssertEqual(first.first, 0x1B, "40 + 40 octets and their headers exceed 79: the first goes alone")
        XCTAssertEqual(first.count, 43)
        let rest = try XCTUnwrap(link.b.nextOutgoing())
        XCTAssertEqual(rest.first, 0x23)
        XCTAssertEqual(rest.count, 1 + 4 + 40 + 4 + 10)
        XCTAssertLessThanOrEqual(rest.count, 80)
    }

    func testMultipleNotificationsAreAllOrNothingOnAFullQueue() {
        var link = Link()
        link.b = ATTServer.enhancedBearer(mtu: 80, notificationQueueLimit: 2)
        _ = link.receive("12 1700 0100", on: .a)
        XCTAssertEqual(link.on(.b) { s, db, sec in s.notify(valueHandle: 0x16, value: [0], database: db, security: sec) }, .queued)
        let two: [(handle: UInt16, value: [UInt8])] = [(0x16, [1]), (0x16, [2])]
        XCTAssertEqual(link.on(.b) { s, db, sec in s.notifyMultiple(two, database: db, security: sec) }, .queueFull)
        XCTAssertEqual(link.b.queuedUpdates, 1, "nothing of the two was queued")
        _ = link.b.nextOutgoing()
        XCTAssertEqual(link.b.takeEvents(), [.readyToUpdate])
    }

    func testAClosedBearerEndsOnlyItsOwnWork() throws {
        var link = Link()
        _ = link.receive("12 1700 0200", on: .unenhanced)
        let dynamic = try Self.valueHandle(0xAAA9, in: link.database)
        let asked = link.receive("0a" + String(format: "%02x%02x", dynamic & 0xFF, dynamic >> 8), on: .a)
        guard case let .read(id, _, _)? = asked.first else { return XCTFail("\(asked)") }
        let t: Duration = .seconds(1)
        _ = link.on(.a) { s, db, sec in s.indicate(valueHandle: 0x16, value: [1], id: 7, now: t, database: db, security: sec) }
        _ = link.on(.a) { s, db, sec in s.indicate(valueHandle: 0x16, value: [2], id: 8, now: t, database: db, security: sec) }
        XCTAssertNotNil(link.a.nextOutgoing(now: t))
        XCTAssertEqual(link.a.bearerClosed(), [.indicationTimedOut(id: 7), .indicationTimedOut(id: 8)])
        XCTAssertNil(link.a.nextDeadline)
        XCTAssertEqual(link.on(.a) { s, db, _ in s.completeRead(id: id, result: .success([1]), database: &db, security: .none, now: t) }, [],
                       "the application's late answer finds nobody")
        XCTAssertEqual(link.receive("0a 1600", on: .a), [])
        // The client's state and the other bearers go on.
        XCTAssertEqual(link.unenhanced.cccd(valueHandle: 0x16), 2)
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .b)), ["0b01"])
    }

    func testOutOfSyncThenTheNextRequestMakesTheClientChangeAwareOnlyWhileNoEATTBearerIsOpen() {
        var link = Link()
        link.unenhanced.enhancedBearersOpen = true
        let features = String(format: "%02x%02x", link.database.clientSupportedFeaturesHandle & 0xFF, link.database.clientSupportedFeaturesHandle >> 8)
        XCTAssertEqual(Self.sent(link.receive("12 " + features + " 01", on: .a)), ["13"])
        link.unenhanced.databaseChanged()
        // Requests sent back to back on two bearers before the client learnt of the change: each
        // is Database Out Of Sync (Vol 3 Part G §2.5.2.1); the second must not count as "the next
        // request" after the first's error, nor may a later one on either bearer, since one sent
        // before the client saw the error may still be in flight on another bearer.
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .unenhanced)), ["010a000012"])
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .b)), ["010a000012"])
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .b)), ["010a000012"])
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .unenhanced)), ["010a000012"])
        XCTAssertFalse(link.unenhanced.isChangeAware)
        // With the EATT bearers gone, the next request on the unenhanced bearer after its Out Of
        // Sync was necessarily sent after it: the client is change-aware.
        link.unenhanced.enhancedBearersOpen = false
        XCTAssertEqual(Self.sent(link.receive("0a 1600", on: .unenhanced)), ["0b01"])
        XCTAssertTrue(link.unenhanced.isChangeAware)
    }

    func testABearerClosingWithAFullUpdateQueueSaysReadyToUpdate() {
        var link = Link()
        link.a = ATTServer.enhancedBearer(mtu: 100, notificationQueueLimit: 2)
        XCTAssertEqual(Self.sent(link.receive("12 1700 0100", on: .a)), ["13"])
        for value in [[UInt8(1)], [2]] {
            XCTAssertEqual(link.on(.a) { s, db, sec in s.notify(valueHandle: 0x16, value: value, database: db, security: sec) }, .queued)
        }
        XCTAssertEqual(link.on(.a) { s, db, sec in s.notify(valueHandle: 0x16, value: [3], database: db, security: sec) }, .queueFull)
        // The queue goes with the bearer: the application that waits for room hears it has some
        // (its updates now go on another bearer).
        let closed = link.a.bearerClosed()
        XCTAssertEqual(closed.filter { if case .readyToUpdate = $0 { return true } else { return false } }.count, 1)
        XCTAssertTrue(link.a.bearerClosed().isEmpty, "once")
    }

    func testAValueThatGoesAloneIsCutToATTMTUMinus3NotToATuplesRoom() {
        let long = Array(UInt8(0)..<20), pdu = [UInt8(0x1B), 0x16, 0x00] + long
        // Alone: a Handle Value Notification carries ATT_MTU − 3 octets (Vol 3 Part F §3.4.7.1).
        XCTAssertEqual(ATTServer.multipleNotificationPDUs([(0x16, long)], mtu: 23), [pdu])
        XCTAssertEqual(ATTServer.multipleNotificationPDUs([(0x16, long), (0x16, long)], mtu: 23), [pdu, pdu])
        // A long value that ends up alone before two short ones packed together.
        XCTAssertEqual(ATTServer.multipleNotificationPDUs([(0x16, long), (0x19, [1, 2]), (0x16, [3])], mtu: 23),
                       [pdu, [0x23, 0x19, 0x00, 0x02, 0x00, 1, 2, 0x16, 0x00, 0x01, 0x00, 3]])
        // Short values still share one PDU.
        XCTAssertEqual(ATTServer.multipleNotificationPDUs([(0x19, [1]), (0x16, [2])], mtu: 23),
                       [[0x23, 0x19, 0x00, 0x01, 0x00, 1, 0x16, 0x00, 0x01, 0x00, 2]])
    }

    func testReadMultipleVariableLengthOnAnEnhancedBearerFitsItsMTU() throws {
        var link = Link()
        let rw = try Self.valueHandle(0xAAA1, in: link.database)
        XCTAssertTrue(link.database.setValue(Array(repeating: 0x77, count: 200), forHandle: rw))
        let request = "20" + String(format: "%02x%02x", rw & 0xFF, rw >> 8) + "1600"
        // 200 octets and 1 octet: the first is cut to ATT_MTU − 1 − 2 on B (80), the second left out.
        let answer = Self.sent(link.receive(request, on: .b))
        XCTAssertEqual(answer.count, 1)
        let bytes = Link.bytes(answer[0])
        XCTAssertEqual(bytes.first, 0x21)
        XCTAssertEqual(bytes.count, 80)
        XCTAssertEqual(Array(bytes[1...2]), [200, 0], "the length field keeps the full length")
        // On A (100) the same request carries more of it.
        XCTAssertEqual(Link.bytes(Self.sent(link.receive(request, on: .a)).first ?? "").count, 100)
    }

    func testServerSupportedFeaturesCharacteristicSaysEATT() {
        var server = ATTServer()
        var db = GATTServerDatabase(deviceName: "T", appearance: 0, serverSupportedFeatures: [0x01])
        // Read By Type «Server Supported Features» over the whole database.
        let answer = server.receive([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x3A, 0x2B], database: &db, security: .none, now: .zero)
        XCTAssertEqual(Self.sent(answer), ["0903" + "0f00" + "01"])
        var plain = GATTServerDatabase(deviceName: "T", appearance: 0)
        XCTAssertEqual(Self.sent(server.receive([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x3A, 0x2B], database: &plain, security: .none, now: .zero)),
                       ["010801000a"])
    }

    func testUpdatesGoOnABearerOurClientOpenedOnlyOnceTheClientSaysItSupportsEATT() {
        var link = Link()
        let ours = ATTServer.enhancedBearer(mtu: 100, openedByPeer: false)
        XCTAssertTrue(link.unenhanced.carriesUpdates(clientState: link.unenhanced))
        XCTAssertTrue(link.a.carriesUpdates(clientState: link.unenhanced), "the peer opened it: its client runs EATT")
        XCTAssertFalse(ours.carriesUpdates(clientState: link.unenhanced))
        let features = String(format: "%02x%02x", link.database.clientSupportedFeaturesHandle & 0xFF, link.database.clientSupportedFeaturesHandle >> 8)
        XCTAssertEqual(Self.sent(link.receive("12 " + features + " 02", on: .unenhanced)), ["13"])
        XCTAssertTrue(ours.carriesUpdates(clientState: link.unenhanced), "Client Supported Features bit 1")
    }
}

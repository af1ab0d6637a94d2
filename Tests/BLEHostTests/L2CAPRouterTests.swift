import XCTest
import BLEHCI
import BLEWire
import BLETestSupport
@testable import BLEHost

/// The L2CAP router as a PDU script: ACL fragments in, routed frames and replies out.
final class L2CAPRouterTests: XCTestCase {
    private func router(_ handle: UInt16 = 0x40, role: LESignalingChannel.Role = .central) -> L2CAPRouter {
        var r = L2CAPRouter()
        r.linkOpened(handle: handle, role: role)
        return r
    }

    func testATTFrameSplitOverFragmentsIsDeliveredWhole() {
        var r = router()
        // Basic header: length 5, CID 0x0004; ATT Read Request for handle 0x0003 ... split 3 + 6.
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: hexBytes("0500 04"))), .none)
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .continuing, data: hexBytes("00 0A 0300 AA BB"))), .att(hexBytes("0A 0300 AA BB")[...]))
    }

    func testSignalingRequestIsAnsweredAndTurnedIntoAnUpdate() {
        var r = router(role: .central)
        let request = hexBytes("0C00 0500 12 2A 0800 0600 0C00 0000 C800")
        let routed = r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: request))
        let parameters = LESignalingCommand.ConnectionParameters(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)
        XCTAssertEqual(routed, .control([.send(channel: L2CAPChannel.leSignaling, payload: hexBytes("13 2A 0200 0000")),
                                         .updateConnectionParameters(parameters)]))
    }

    func testSMPFramesGoUpWholeToTheSecurityManager() {
        var r = router()
        let pairingRequest = hexBytes("0700 0600 01 03 00 01 10 07 07")
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: pairingRequest)),
                       .smp(hexBytes("01 03 00 01 10 07 07")))
    }

    func testUnknownHandleUnroutedChannelAndBadFragmentsAreDroppedWithAReason() {
        var r = router()
        guard case .dropped = r.receive(ACLPacket(handle: 0x41, boundary: .firstFlushable, data: hexBytes("0100 0400 0A"))) else {
            return XCTFail("data for an unknown handle must be dropped")
        }
        guard case .dropped = r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: hexBytes("0100 4000 FF"))) else {
            return XCTFail("a dynamic channel nobody opened must be dropped")
        }
        guard case .dropped = r.receive(ACLPacket(handle: 0x40, boundary: .continuing, data: hexBytes("FF"))) else {
            return XCTFail("a continuation without a start must be dropped")
        }
        guard case .dropped = r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: hexBytes("0100 0400 0A 0B"))) else {
            return XCTFail("a fragment longer than its header says must be dropped")
        }
        // The link still works after all of that.
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: hexBytes("0100 0400 1E"))), .att([0x1E]))
    }

    /// `nextDeadline` is kept beside the links: it must follow every change a link's
    /// signaling requests go through — a request sent, its 30 s running out (the identifier
    /// and CID then stay held for another 30 s, Vol 3 Part A §4.6), the link closing.
    func testTheSignalingDeadlineFollowsRequestsTheirExpiryAndTheLinkClosing() throws {
        var r = L2CAPRouter()
        r.linkOpened(handle: 0x40, role: .central)
        r.linkOpened(handle: 0x41, role: .central)
        XCTAssertNil(r.nextDeadline)
        let parameters = CreditBasedChannelParameters(mtu: 100, mps: 100, initialCredits: 4)
        XCTAssertNotNil(r.connect(handle: 0x40, spsm: 0x80, parameters: parameters, token: 1, now: .seconds(5)))
        XCTAssertEqual(r.nextDeadline, .seconds(35))
        XCTAssertNotNil(r.connect(handle: 0x41, spsm: 0x80, parameters: parameters, token: 2, now: .seconds(1)))
        XCTAssertEqual(r.nextDeadline, .seconds(31), "the earliest of both links")
        let expired = r.expire(now: .seconds(31))
        XCTAssertEqual(expired.map(\.handle), [0x41])
        XCTAssertEqual(r.nextDeadline, .seconds(35), "0x40's request is now the earliest; 0x41's is held until 61 s")
        r.linkClosed(handle: 0x40)
        XCTAssertEqual(r.nextDeadline, .seconds(61))
        r.linkClosed(handle: 0x41)
        XCTAssertNil(r.nextDeadline)
        // A handle opened again starts with nothing pending.
        r.linkOpened(handle: 0x40, role: .central)
        XCTAssertNil(r.nextDeadline)
    }

    func testTheClockIsReadOnlyForSignalingAndOnlyOpenLinksAreRouted() {
        var r = L2CAPRouter()
        r.linkOpened(handle: 0x40, role: .central)
        r.linkOpened(handle: 0x41, role: .central)
        r.linkOpened(handle: 0x42, role: .central)
        var clockReads = 0
        func clock() -> Duration {
            clockReads += 1
            return .seconds(1)
        }
        // ATT (whole and in fragments) and SMP need no time (the clock per fragment).
        XCTAssertEqual(r.receive(acl: hexBytes("4120 0700 0300 0400 1B1000"), security: { LinkSecurity() }, now: clock()),
                       .att(hexBytes("1B1000")[...]))
        XCTAssertEqual(r.receive(acl: hexBytes("4220 0300 0300 04"), security: { LinkSecurity() }, now: clock()), .none)
        XCTAssertEqual(r.receive(acl: hexBytes("4210 0400 00 1B1000"), security: { LinkSecurity() }, now: clock()),
                       .att(hexBytes("1B1000")[...]))
        XCTAssertEqual(r.receive(acl: hexBytes("4020 0500 0100 0600 05"), security: { LinkSecurity() }, now: clock()), .smp([0x05]))
        XCTAssertEqual(clockReads, 0)
        // Signaling does (its requests time out).
        let request = hexBytes("4020 1000 0C00 0500 12 2A 0800 0600 0C00 0000 C800")
        guard case .control = r.receive(acl: request, security: { LinkSecurity() }, now: clock()) else {
            return XCTFail("a signaling request is answered")
        }
        XCTAssertEqual(clockReads, 1)
        // A closed link's data is dropped; the others' still routed, whichever closed.
        r.linkClosed(handle: 0x41)
        guard case .dropped = r.receive(acl: hexBytes("4120 0700 0300 0400 1B1000"), security: { LinkSecurity() }, now: clock()) else {
            return XCTFail("0x41 is closed")
        }
        XCTAssertFalse(r.isOpen(0x41))
        XCTAssertTrue(r.isOpen(0x40) && r.isOpen(0x42))
        XCTAssertEqual(r.receive(acl: hexBytes("4220 0700 0300 0400 1B1000"), security: { LinkSecurity() }, now: clock()),
                       .att(hexBytes("1B1000")[...]))
        r.linkOpened(handle: 0x41, role: .peripheral)
        r.linkOpened(handle: 0x41, role: .peripheral)
        r.linkClosed(handle: 0x41)
        XCTAssertFalse(r.isOpen(0x41), "opened twice, closed once: closed")
    }

    func testClosingALinkForgetsItsPartialFrame() {
        var r = router()
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: hexBytes("0500 04"))), .none)
        r.linkClosed(handle: 0x40)
        XCTAssertFalse(r.isOpen(0x40))
        r.linkOpened(handle: 0x40, role: .peripheral)
        // A continuation of the old frame on the reused handle is not glued to anything.
        guard case .dropped = r.receive(ACLPacket(handle: 0x40, boundary: .continuing, data: hexBytes("00 0A 0300 AA BB"))) else {
            return XCTFail("the old partial frame must be gone")
        }
    }
}

/// `receive(acl:)`, the in-place path the host takes, against routing decoded packets.
final class L2CAPRouterInPlaceTests: XCTestCase {
    func testInPlaceRoutingMatchesDecodedPacketsForAnyFragmentation() throws {
        var rng = SplitMix64(seed: 9)
        var inPlace = L2CAPRouter()
        var decoded = L2CAPRouter()
        for h: UInt16 in [0x40, 0x41] {
            inPlace.linkOpened(handle: h, role: .peripheral)
            decoded.linkOpened(handle: h, role: .peripheral)
        }
        for _ in 0..<300 {
            let handle: UInt16 = Bool.random(using: &rng) ? 0x40 : 0x41
            let payload = [0x1B, 0x10, 0x00] + (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let pdu = [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), 0x04, 0x00] + payload
            for f in ACLFragmenter.fragment(handle: handle, pdu: pdu, maxLength: Int.random(in: 1...260, using: &rng)) {
                let expected = decoded.receive(f)
                XCTAssertEqual(inPlace.receive(acl: f.encode(), security: { LinkSecurity() }, now: .zero), expected)
            }
        }
    }

    func testMalformedPacketsAreDroppedAndTheLinkGoesOn() {
        var r = L2CAPRouter()
        r.linkOpened(handle: 0x40, role: .central)
        for bad in [hexBytes("40"), hexBytes("4020 0500 0100"), hexBytes("4020 0100 AABB"), hexBytes("4120 0000")] {
            guard case .dropped = r.receive(acl: bad, security: { LinkSecurity() }, now: .zero) else { return XCTFail("\(bad.hexString) not dropped") }
        }
        // A continuation without a start, then a whole frame: dropped, then delivered.
        guard case .dropped = r.receive(acl: hexBytes("4010 0100 AA"), security: { LinkSecurity() }, now: .zero) else { return XCTFail() }
        XCTAssertEqual(r.receive(acl: hexBytes("4020 0700 0300 0400 1B1000"), security: { LinkSecurity() }, now: .zero), .att(hexBytes("1B1000")[...]))
    }
}

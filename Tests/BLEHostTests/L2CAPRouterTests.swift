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
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .continuing, data: hexBytes("00 0A 0300 AA BB"))), .att(hexBytes("0A 0300 AA BB")))
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

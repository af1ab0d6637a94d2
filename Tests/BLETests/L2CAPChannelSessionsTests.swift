@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `L2CAPChannelSessions` on its own, driven by an `L2CAPDriver` double instead of a host: the
/// listeners it registers with the router, and an open the peer refuses, carried through the
/// router as the driver would carry it.
final class L2CAPChannelSessionsTests: XCTestCase {
    actor Driver: L2CAPDriver, LinkTableDouble, RecordingDriver {
        let l2cap = L2CAPChannelSessions()
        nonisolated let clock: any BLEClock = SystemClock()
        var record = DriverRecord()
        var router = L2CAPRouter()
        var links = LinkTable()
        var tokens: UInt64 = 0
        /// Signaling PDUs sent, as L2CAP payloads on channel 5.
        var signaling: [[UInt8]] = []
        private var sendWaiters: [CheckedContinuation<Void, Never>] = []

        func makeToken() -> UInt64 { tokens += 1; return tokens }
        /// As the host's connection manager does: PDUs out, channel events back to the part.
        func performSignaling(_ actions: [L2CAPControlAction], handle: UInt16) {
            for action in actions {
                switch action {
                case let .send(channel, payload) where channel == 5:
                    signaling.append(payload)
                    let w = sendWaiters
                    sendWaiters = []
                    w.forEach { $0.resume() }
                case let .channel(event): l2cap.handle(event, handle: handle, self)
                default: break
                }
            }
        }
        func makeChannel(id: UInt64, info: CreditBasedChannelInfo, peer: DeviceAddress) -> LECreditBasedChannel {
            preconditionFailure("no channel opens in these tests")
        }
        func enhancedATTBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, openedByPeer: Bool) {}
        func enhancedATTBearerClosed(handle: UInt16, cid: UInt16, error: BLEError) {}
        func enhancedATTBearerSent(handle: UInt16, cid: UInt16) {}
        func enhancedATTBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int) {}
        func receiveATT(_ payload: ArraySlice<UInt8>, handle: UInt16, bearer: ATTBearerID) {}

        func connect(handle: UInt16) {
            let parameters = LinkParameters(interval: 24, latency: 0, supervisionTimeout: 400)
            links[handle] = Link(id: UInt64(handle), handle: handle, peer: DeviceAddress(BDAddress(rawValue: 0xB1), type: .public),
                                 role: .central, parameters: parameters,
                                 clients: ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: .seconds(30))),
                                 server: ATTServer(), observation: LinkObservation(parameters: parameters))
            router.linkOpened(handle: handle, role: .central)
        }
        func listen(psm: UInt16) throws -> AsyncStream<LECreditBasedChannel> {
            try l2cap.listen(psm: psm, listener: CreditBasedListener(parameters: .standard, security: .none), self).1
        }
        func listening(_ psm: UInt16) -> Bool { router.listeners[psm] != nil }
        func open(psm: UInt16, linkID: UInt64) async throws -> LECreditBasedChannel {
            try await l2cap.open(linkID: linkID, psm: psm, parameters: .standard, self)
        }
        func waitForSignaling(_ n: Int) async {
            while signaling.count < n { await withCheckedContinuation { sendWaiters.append($0) } }
        }
        /// The peer's signaling PDU arriving in one ACL packet, through the router.
        func peerSends(_ pdu: [UInt8], handle: UInt16) {
            let l2capFrame: [UInt8] = [UInt8(pdu.count & 0xFF), UInt8(pdu.count >> 8), 0x05, 0x00] + pdu
            let acl: [UInt8] = [UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8(l2capFrame.count & 0xFF), UInt8(l2capFrame.count >> 8)] + l2capFrame
            if case let .control(actions) = router.receive(acl: acl, security: { LinkSecurity() }, now: .zero) {
                performSignaling(actions, handle: handle)
            }
        }
    }

    /// A listener is registered with the router for its PSM, and a second on that PSM refused.
    func testAListenerIsRegisteredOncePerPSM() async throws {
        let d = Driver()
        let stream = try await d.listen(psm: 0x0081)
        let listening = await d.listening(0x0081)
        XCTAssertTrue(listening)
        do {
            _ = try await d.listen(psm: 0x0081)
            XCTFail("two listeners on one PSM")
        } catch BLEError.busy {}
        _ = stream
    }

    /// An open sends an LE Credit Based Connection Request; the peer's refusal, through the
    /// router, ends it with that result.
    func testAnOpenThePeerRefusesEndsWithItsResult() async throws {
        let d = Driver()
        await d.connect(handle: 0x40)
        let opening = Task { try await d.open(psm: 0x0081, linkID: 0x40) }
        await d.waitForSignaling(1)
        let request = try LESignalingCommand(pdu: await d.signaling[0])
        guard case let .leCreditBasedConnectionRequest(id, q) = request else { return XCTFail("\(request)") }
        XCTAssertEqual(q.spsm, 0x0081)
        let refusal = LESignalingCommand.leCreditBasedConnectionResponse(identifier: id, .init(
            destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: .insufficientAuthentication))
        await d.peerSends(refusal.encode(), handle: 0x40)
        do {
            _ = try await opening.value
            XCTFail("opened a channel the peer refused")
        } catch let BLEError.l2cap(.refused(result)) {
            XCTAssertEqual(result, .insufficientAuthentication)
        }
    }
}

import XCTest
import BLEHCI
import BLEWire
import BLETestSupport
@testable import BLEHost

/// LE credit-based channels as PDU scripts (Core spec Vol 3 Part A §3.4.3, §4.6, §4.7,
/// §4.22–§4.24, §10.2; the LE/CFC categories of the L2CAP test suite): C-frames and K-frames
/// in, C-frames, K-frames and channel events out.
final class CreditBasedChannelTests: XCTestCase {
    typealias Cmd = LESignalingCommand
    typealias Result = LESignalingCommand.CreditBasedConnectionResult

    static let psm: UInt16 = 0x0080
    static let ours = CreditBasedChannelParameters(mtu: 100, mps: 23, initialCredits: 2)
    static let listeners = [psm: CreditBasedListener(parameters: ours)]

    static func context(_ security: LinkSecurity = LinkSecurity(), listeners: [UInt16: CreditBasedListener] = listeners,
                        now: Duration = .zero) -> CreditBasedContext {
        CreditBasedContext(listeners: listeners, security: security, now: now)
    }

    static func request(_ id: UInt8 = 1, spsm: UInt16 = psm, cid: UInt16 = 0x0040, mtu: UInt16 = 200, mps: UInt16 = 50, credits: UInt16 = 3) -> [UInt8] {
        Cmd.leCreditBasedConnectionRequest(identifier: id, .init(spsm: spsm, sourceCID: cid, mtu: mtu, mps: mps, initialCredits: credits)).encode()
    }

    static func sent(_ actions: [SignalingAction]) -> [Cmd] {
        actions.compactMap { if case let .send(b) = $0 { return try? Cmd(pdu: b) } else { return nil } }
    }

    static func frames(_ actions: [SignalingAction]) -> [[UInt8]] {
        actions.compactMap { if case let .frame(_, b) = $0 { return b } else { return nil } }
    }

    static func events(_ actions: [SignalingAction]) -> [CreditBasedChannelEvent] {
        actions.compactMap { if case let .channel(e) = $0 { return e } else { return nil } }
    }

    /// A channel the peer opened with `mtu`/`mps`/`credits` on our CID 0x0040 (peer CID 0x0041).
    static func accepted(_ ours: CreditBasedChannelParameters = ours, peerMPS: UInt16 = 50, peerCredits: UInt16 = 3) -> LESignalingChannel {
        var s = LESignalingChannel()
        _ = s.receive(request(cid: 0x0041, mps: peerMPS, credits: peerCredits), role: .peripheral,
                      context: context(listeners: [psm: CreditBasedListener(parameters: ours)]))
        return s
    }

    // MARK: Connect

    func testARequestOnAListenedSPSMIsAcceptedWithOurParameters() {
        var s = LESignalingChannel()
        let actions = s.receive(Self.request(), role: .peripheral, context: Self.context())
        guard case let .send(bytes) = actions.first else { return XCTFail("no response") }
        XCTAssertEqual(bytes, hexBytes("15 01 0A00 4000 6400 1700 0200 0000"), "DCID 0x0040, MTU 100, MPS 23, 2 credits, success")
        let info = CreditBasedChannelInfo(spsm: 0x80, localCID: 0x40, remoteCID: 0x40, local: Self.ours,
                                          remote: .init(mtu: 200, mps: 50, initialCredits: 3))
        XCTAssertEqual(Self.events(actions), [.opened(info)])
        XCTAssertEqual(s.channel(0x40)?.sendCredits, 3)
        XCTAssertEqual(s.channel(0x40)?.peerCredits, 2)
    }

    func testEveryRefusalReason() {
        let authenticatedListener = [Self.psm: CreditBasedListener(parameters: Self.ours, security: .init(level: .authenticated))]
        let strongKeyListener = [Self.psm: CreditBasedListener(parameters: Self.ours, security: .init(level: .encrypted, minimumKeySize: 16))]
        let authorizedListener = [Self.psm: CreditBasedListener(parameters: Self.ours, security: .init(authorization: true))]
        let encrypted = LinkSecurity(encrypted: true, keySize: 16)
        let cases: [(String, [UInt8], CreditBasedContext, Result)] = [
            ("MTU 22", Self.request(mtu: 22), Self.context(), .unacceptableParameters),
            ("MPS 22", Self.request(mps: 22), Self.context(), .unacceptableParameters),
            ("MPS 65534", Self.request(mps: 65534), Self.context(), .unacceptableParameters),
            ("unlistened SPSM", Self.request(spsm: 0x0081), Self.context(), .spsmNotSupported),
            ("SPSM 0x0100", Self.request(spsm: 0x0100), Self.context(listeners: [0x0100: .init(parameters: Self.ours)]), .spsmNotSupported),
            ("unencrypted, no bond", Self.request(), Self.context(listeners: authenticatedListener), .insufficientAuthentication),
            ("unencrypted, bonded", Self.request(), Self.context(LinkSecurity(hasLongTermKey: true), listeners: authenticatedListener), .insufficientEncryption),
            ("unauthenticated key", Self.request(), Self.context(encrypted, listeners: authenticatedListener), .insufficientAuthentication),
            ("7-octet key", Self.request(), Self.context(LinkSecurity(encrypted: true, keySize: 7), listeners: strongKeyListener), .encryptionKeySizeTooShort),
            ("not authorized", Self.request(), Self.context(listeners: authorizedListener), .insufficientAuthorization),
            ("source CID 0x0020", Self.request(cid: 0x0020), Self.context(), .invalidSourceCID),
            ("source CID 0x0080", Self.request(cid: 0x0080), Self.context(), .invalidSourceCID),
        ]
        for (what, request, context, result) in cases {
            var s = LESignalingChannel()
            let actions = s.receive(request, role: .peripheral, context: context)
            XCTAssertEqual(Self.sent(actions), [.leCreditBasedConnectionResponse(identifier: 1, .init(
                destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: result))], what)
            XCTAssertEqual(Self.events(actions), [], what)
            XCTAssertTrue(s.openChannels.isEmpty, what)
        }
        // Met requirements open.
        var s = LESignalingChannel()
        let ok = s.receive(Self.request(), role: .peripheral,
                           context: Self.context(LinkSecurity(encrypted: true, authenticated: true, authorized: true, keySize: 16), listeners: authenticatedListener))
        guard case let .leCreditBasedConnectionResponse(_, r)? = Self.sent(ok).first else { return XCTFail("no response") }
        XCTAssertEqual(r.result, .success)
    }

    func testAnAllocatedSourceCIDAndRunningOutOfCIDsAreRefused() {
        var s = LESignalingChannel()
        for cid in UInt16(0x40)...0x7F {
            _ = s.receive(Self.request(UInt8(cid & 0x3F) + 1, cid: cid), role: .peripheral, context: Self.context())
        }
        XCTAssertEqual(s.openChannels.count, 64)
        let again = s.receive(Self.request(9, cid: 0x0040), role: .peripheral, context: Self.context())
        XCTAssertEqual(Self.sent(again), [.leCreditBasedConnectionResponse(identifier: 9, .init(
            destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: .sourceCIDAlreadyAllocated))])
        // Every local CID is taken, so our own request cannot go out either.
        XCTAssertNil(s.connect(spsm: 0x80, parameters: Self.ours, token: 1, now: .zero))
        var t = LESignalingChannel()
        for cid in UInt16(0x40)...0x7F { _ = t.connect(spsm: 0x80, parameters: Self.ours, token: UInt64(cid), now: .zero) }
        let full = t.receive(Self.request(0x70, cid: 0x0040), role: .peripheral, context: Self.context())
        XCTAssertEqual(Self.sent(full), [.leCreditBasedConnectionResponse(identifier: 0x70, .init(
            destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: .noResourcesAvailable))])
    }

    func testOurRequestIsAnsweredRefusedRejectedOrTimesOut() throws {
        var s = LESignalingChannel()
        let request = try XCTUnwrap(s.connect(spsm: 0x80, parameters: Self.ours, token: 7, now: .seconds(1)))
        XCTAssertEqual(request, [.send(hexBytes("14 01 0A00 8000 4000 6400 1700 0200"))])
        XCTAssertEqual(s.creditBasedDeadline, .seconds(31), "RTX: 30 s")
        let success = Cmd.leCreditBasedConnectionResponse(identifier: 1, .init(destinationCID: 0x45, mtu: 512, mps: 247, initialCredits: 5, result: .success))
        let opened = s.receive(success.encode(), role: .central)
        XCTAssertEqual(Self.events(opened), [.connected(token: 7, CreditBasedChannelInfo(
            spsm: 0x80, localCID: 0x40, remoteCID: 0x45, local: Self.ours, remote: .init(mtu: 512, mps: 247, initialCredits: 5)))])
        XCTAssertNil(s.creditBasedDeadline)
        XCTAssertEqual(s.receive(success.encode(), role: .central), [], "an answer to nothing is dropped")

        _ = s.connect(spsm: 0x81, parameters: Self.ours, token: 8, now: .zero)
        let refused = s.receive(Cmd.leCreditBasedConnectionResponse(identifier: 2, .init(
            destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: .insufficientEncryption)).encode(), role: .central)
        XCTAssertEqual(Self.events(refused), [.connectFailed(token: 8, .refused(.insufficientEncryption))])

        _ = s.connect(spsm: 0x81, parameters: Self.ours, token: 9, now: .zero)
        let rejected = s.receive(Cmd.commandReject(identifier: 3, reason: .notUnderstood).encode(), role: .central)
        XCTAssertEqual(Self.events(rejected), [.connectFailed(token: 9, .rejected)])

        _ = s.connect(spsm: 0x81, parameters: Self.ours, token: 10, now: .zero)
        XCTAssertEqual(s.expireCreditBased(now: .milliseconds(29_999)), [])
        XCTAssertEqual(s.expireCreditBased(now: .seconds(30)), [.channel(.connectFailed(token: 10, .timeout))])

        // A success naming a fixed CID is unusable.
        _ = s.connect(spsm: 0x81, parameters: Self.ours, token: 11, now: .zero)
        let bad = s.receive(Cmd.leCreditBasedConnectionResponse(identifier: 5, .init(
            destinationCID: 0x0004, mtu: 100, mps: 23, initialCredits: 1, result: .success)).encode(), role: .central)
        guard case .connectFailed(11, .invalidResponse)? = Self.events(bad).first else { return XCTFail("\(bad)") }
    }

    /// Every LE Flow Control Credit takes an identifier too; once they have gone round all 255,
    /// a new request must not take the identifier of one still waiting for its answer (§4:
    /// each pending request has its own), or the older one is forgotten and never times out.
    func testARequestNeverReusesTheIdentifierOfOneStillPending() throws {
        var s = Self.accepted(CreditBasedChannelParameters(mtu: 65535, mps: 23, initialCredits: 2))
        let first = try XCTUnwrap(s.connect(spsm: 0x81, parameters: Self.ours, token: 1, now: .zero))
        XCTAssertEqual(Self.sent(first).first?.identifier, 1)
        // A long SDU: every K-frame that continues it gives its credit back at once.
        var grants = 0
        var frame: [UInt8] = [0xFF, 0xFF] + Array(repeating: 0, count: 21)
        while grants < 254 {
            let actions = s.receiveFrame(frame, cid: 0x40, now: .zero)
            XCTAssertEqual(Self.events(actions), [])
            grants += Self.sent(actions).count
            frame = Array(repeating: 0, count: 23)
        }
        let second = try XCTUnwrap(s.connect(spsm: 0x81, parameters: Self.ours, token: 2, now: .zero))
        XCTAssertNotEqual(Self.sent(second).first?.identifier, 1, "identifier 1 still waits for its response")
        XCTAssertEqual(s.pendingConnectTokens, [1, 2])
        XCTAssertEqual(Set(Self.events(s.expireCreditBased(now: .seconds(30)))),
                       [.connectFailed(token: 1, .timeout), .connectFailed(token: 2, .timeout)])
    }

    /// A response after our 30 s (RTX, §6.2.1) must not leave the peer's end open: the request
    /// failed with `.timeout`, but its identifier and CID stay taken for another 30 s, and a late
    /// success is answered with a Disconnection Request (§4.6) instead of being dropped, which
    /// left the peer holding a channel to a CID we then offered again ("source CID already
    /// allocated").
    func testALateSuccessAfterTheTimeoutIsDisconnected() throws {
        var s = LESignalingChannel()
        _ = try XCTUnwrap(s.connect(spsm: 0x80, parameters: Self.ours, token: 1, now: .zero))
        XCTAssertEqual(s.expireCreditBased(now: .seconds(30)), [.channel(.connectFailed(token: 1, .timeout))])
        XCTAssertEqual(s.pendingConnectTokens, [])
        let next = try XCTUnwrap(s.connect(spsm: 0x80, parameters: Self.ours, token: 2, now: .seconds(30)))
        guard case let .leCreditBasedConnectionRequest(nextID, q)? = Self.sent(next).first else { return XCTFail("\(next)") }
        XCTAssertNotEqual(nextID, 1)
        XCTAssertEqual(q.sourceCID, 0x41, "0x0040 is still the peer's, if it answers late")
        let late = Cmd.leCreditBasedConnectionResponse(identifier: 1, .init(destinationCID: 0x45, mtu: 100, mps: 23, initialCredits: 1, result: .success))
        let actions = s.receive(late.encode(), role: .central, context: Self.context(now: .seconds(40)))
        XCTAssertEqual(Self.events(actions), [], "the request was already reported failed")
        guard case let .disconnectionRequest(id, destination, source)? = Self.sent(actions).first else { return XCTFail("\(actions)") }
        XCTAssertEqual([destination, source], [0x45, 0x40])
        _ = s.receive(Cmd.disconnectionResponse(identifier: id, destinationCID: 0x45, sourceCID: 0x40).encode(), role: .central)
        XCTAssertEqual(s.expireCreditBased(now: .seconds(60)), [.channel(.connectFailed(token: 2, .timeout))])
        // Without a late answer the identifier and CID are free again after another 30 s.
        var t = LESignalingChannel()
        _ = t.connect(spsm: 0x80, parameters: Self.ours, token: 1, now: .zero)
        _ = t.expireCreditBased(now: .seconds(30))
        XCTAssertEqual(t.expireCreditBased(now: .seconds(60)), [])
        XCTAssertNil(t.creditBasedDeadline)
    }

    // MARK: Credits and segmentation

    func testCreditsExhaustedAndReplenished() {
        var s = Self.accepted(peerMPS: 23, peerCredits: 2)
        // 60 bytes at MPS 23: 2 + 21, 23, 16.
        let sdu = Array(UInt8(0)..<60)
        let first = s.send(sdu, cid: 0x40, token: 1) ?? []
        XCTAssertEqual(Self.frames(first), [[60, 0] + Array(sdu[0..<21]), Array(sdu[21..<44])])
        XCTAssertEqual(Self.events(first), [], "not sent whole: no credit for the third K-frame")
        XCTAssertEqual(s.channel(0x40)?.sendCredits, 0)
        let more = s.receive(Cmd.flowControlCredit(identifier: 9, channelID: 0x41, credits: 3).encode(), role: .peripheral)
        XCTAssertEqual(Self.frames(more), [Array(sdu[44..<60])])
        XCTAssertEqual(Self.events(more), [.sent(cid: 0x40, tokens: [1])])
        XCTAssertEqual(s.channel(0x40)?.sendCredits, 2)
        XCTAssertEqual(s.receive(Cmd.flowControlCredit(identifier: 9, channelID: 0x55, credits: 3).encode(), role: .peripheral), [],
                       "credits for a channel that is not open are ignored")
        XCTAssertNil(s.send(Array(repeating: 0, count: 201), cid: 0x40, token: 2), "longer than the peer's MTU")
    }

    /// A cancelled send takes its SDU back only while none of its K-frames has gone out.
    func testAnSDUIsWithdrawnOnlyBeforeItsFirstKFrame() {
        var s = Self.accepted(peerMPS: 23, peerCredits: 1)
        _ = s.send(Array(repeating: 1, count: 30), cid: 0x40, token: 1)   // 2 K-frames, 1 out
        _ = s.send([2], cid: 0x40, token: 2)
        _ = s.send([3], cid: 0x40, token: 3)
        XCTAssertFalse(s.withdraw(token: 1, cid: 0x40), "started: the rest must follow")
        XCTAssertTrue(s.withdraw(token: 2, cid: 0x40))
        XCTAssertFalse(s.withdraw(token: 2, cid: 0x40), "already withdrawn")
        let more = s.receive(Cmd.flowControlCredit(identifier: 9, channelID: 0x41, credits: 5).encode(), role: .peripheral)
        XCTAssertEqual(Self.frames(more), [Array(repeating: 1, count: 9), [1, 0, 3]])
        XCTAssertEqual(Self.events(more), [.sent(cid: 0x40, tokens: [1, 3])])
        XCTAssertFalse(s.withdraw(token: 3, cid: 0x40), "sent")
    }

    func testSegmentationAtMPS23And65533() {
        XCTAssertEqual(CreditBasedChannel.segment([7], mps: 23), [[1, 0, 7]])
        XCTAssertEqual(CreditBasedChannel.segment([], mps: 23), [[0, 0]])
        let big = (0..<65535).map { UInt8(truncatingIfNeeded: $0) }
        let at23 = CreditBasedChannel.segment(big, mps: 23)
        XCTAssertEqual(at23.count, (65535 + 2 + 22) / 23)
        XCTAssertTrue(at23.allSatisfy { $0.count <= 23 })
        XCTAssertEqual(Array(at23.joined()), [0xFF, 0xFF] + big)
        let atMax = CreditBasedChannel.segment(big, mps: 65533)
        XCTAssertEqual(atMax.map(\.count), [65533, 4])
        XCTAssertEqual(Array(atMax.joined()), [0xFF, 0xFF] + big)
    }

    /// A peer that keeps to the credits we grant sends a 65535-byte SDU in 2850 K-frames at MPS
    /// 23 with 2 credits at a time; then a 1-byte SDU. Reassembly at MPS 65533 too.
    func testSDUsOf65535And1ByteAreReassembled() {
        for mps: UInt16 in [23, 65533] {
            let params = CreditBasedChannelParameters(mtu: 65535, mps: mps, initialCredits: 2)
            var s = Self.accepted(params)
            var credits = 2
            var delivered: [[UInt8]] = []
            let big = (0..<65535).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            for sdu in [big, [0x5A]] {
                for frame in CreditBasedChannel.segment(sdu, mps: mps) {
                    XCTAssertGreaterThan(credits, 0, "we let the peer run dry (MPS \(mps))")
                    credits -= 1
                    let actions = s.receiveFrame(frame, cid: 0x40, now: .zero)
                    for case let .flowControlCredit(_, cid, n) in Self.sent(actions) {
                        XCTAssertEqual(cid, 0x40)
                        credits += Int(n)
                    }
                    for case let .sdu(_, data) in Self.events(actions) {
                        delivered.append(data)
                        for case let .flowControlCredit(_, _, n) in Self.sent(s.channelConsumed(cid: 0x40)) { credits += Int(n) }
                    }
                    XCTAssertLessThanOrEqual(credits, 2, "never more credits out than we offered")
                }
            }
            XCTAssertEqual(delivered, [big, [0x5A]], "MPS \(mps)")
        }
    }

    func testUnreadSDUsHoldTheirCredits() {
        var s = Self.accepted(CreditBasedChannelParameters(mtu: 100, mps: 23, initialCredits: 2))
        XCTAssertEqual(Self.sent(s.receiveFrame([1, 0, 0xAA], cid: 0x40, now: .zero)), [])
        XCTAssertEqual(Self.sent(s.receiveFrame([1, 0, 0xBB], cid: 0x40, now: .zero)), [])
        XCTAssertEqual(s.channel(0x40)?.peerCredits, 0)
        // K-frame without credit: the channel is disconnected.
        let violation = s.receiveFrame([1, 0, 0xCC], cid: 0x40, now: .zero)
        XCTAssertEqual(Self.sent(violation), [.disconnectionRequest(identifier: 1, destinationCID: 0x41, sourceCID: 0x40)])
        XCTAssertEqual(Self.events(violation), [.closed(cid: 0x40, error: .frameWithoutCredit, unsent: [])])
        XCTAssertNil(s.channel(0x40))

        var t = Self.accepted(CreditBasedChannelParameters(mtu: 100, mps: 23, initialCredits: 2))
        _ = t.receiveFrame([1, 0, 0xAA], cid: 0x40, now: .zero)
        _ = t.receiveFrame([1, 0, 0xBB], cid: 0x40, now: .zero)
        XCTAssertEqual(Self.sent(t.channelConsumed(cid: 0x40)), [.flowControlCredit(identifier: 1, channelID: 0x40, credits: 1)])
    }

    func testInterleavedChannelsReassembleSeparately() {
        var s = LESignalingChannel()
        _ = s.receive(Self.request(1, cid: 0x50, mps: 23), role: .peripheral, context: Self.context())
        _ = s.receive(Self.request(2, cid: 0x51, mps: 23), role: .peripheral, context: Self.context())
        let a = CreditBasedChannel.segment(Array(repeating: 0xA, count: 30), mps: 23)
        let b = CreditBasedChannel.segment(Array(repeating: 0xB, count: 30), mps: 23)
        var events: [CreditBasedChannelEvent] = []
        events += Self.events(s.receiveFrame(a[0], cid: 0x40, now: .zero))
        events += Self.events(s.receiveFrame(b[0], cid: 0x41, now: .zero))
        events += Self.events(s.receiveFrame(b[1], cid: 0x41, now: .zero))
        events += Self.events(s.receiveFrame(a[1], cid: 0x40, now: .zero))
        XCTAssertEqual(events, [.sdu(cid: 0x41, Array(repeating: 0xB, count: 30)), .sdu(cid: 0x40, Array(repeating: 0xA, count: 30))])
    }

    func testDisconnectMidSDU() {
        var s = Self.accepted()
        _ = s.receiveFrame([50, 0, 1, 2, 3], cid: 0x40, now: .zero)
        XCTAssertEqual(s.channel(0x40)?.isReassembling, true)
        let request = Cmd.disconnectionRequest(identifier: 4, destinationCID: 0x40, sourceCID: 0x41).encode()
        let actions = s.receive(request, role: .peripheral)
        XCTAssertEqual(Self.sent(actions), [.disconnectionResponse(identifier: 4, destinationCID: 0x40, sourceCID: 0x41)])
        XCTAssertEqual(Self.events(actions), [.closed(cid: 0x40, error: nil, unsent: [])], "the partial SDU is dropped")
        XCTAssertEqual(s.receiveFrame([1, 2], cid: 0x40, now: .zero), [], "nothing more on a closed channel")
        // A request for a CID that is not open is rejected "invalid CID".
        XCTAssertEqual(Self.sent(s.receive(request, role: .peripheral)),
                       [.commandReject(identifier: 4, reason: .invalidCID(localCID: 0x40, remoteCID: 0x41))])

        // Our own close: the channel closes at once, queued SDUs are returned, the CID waits
        // for the response (or 30 s) before it is reused.
        var t = Self.accepted(peerMPS: 23, peerCredits: 0)
        _ = t.send(Array(repeating: 1, count: 10), cid: 0x40, token: 5)
        let close = t.disconnect(cid: 0x40, now: .zero)
        XCTAssertEqual(Self.sent(close), [.disconnectionRequest(identifier: 1, destinationCID: 0x41, sourceCID: 0x40)])
        XCTAssertEqual(Self.events(close), [.closed(cid: 0x40, error: nil, unsent: [5])])
        XCTAssertEqual(t.connect(spsm: 0x80, parameters: Self.ours, token: 1, now: .zero).flatMap { Self.sent($0).first },
                       .leCreditBasedConnectionRequest(identifier: 2, .init(spsm: 0x80, sourceCID: 0x41, mtu: 100, mps: 23, initialCredits: 2)))
        _ = t.receive(Cmd.disconnectionResponse(identifier: 1, destinationCID: 0x41, sourceCID: 0x40).encode(), role: .peripheral)
        XCTAssertEqual(t.connect(spsm: 0x80, parameters: Self.ours, token: 2, now: .zero).flatMap { Self.sent($0).first },
                       .leCreditBasedConnectionRequest(identifier: 3, .init(spsm: 0x80, sourceCID: 0x40, mtu: 100, mps: 23, initialCredits: 2)))
    }

    /// §4.6: a Disconnection Request whose destination CID is ours but whose source CID is not
    /// the channel's peer is silently discarded; the channel stays open (only an unknown
    /// destination CID gets Command Reject "invalid CID").
    func testADisconnectionRequestWithTheWrongSourceCIDIsDiscarded() {
        var s = Self.accepted()
        let wrong = Cmd.disconnectionRequest(identifier: 4, destinationCID: 0x40, sourceCID: 0x55).encode()
        XCTAssertEqual(s.receive(wrong, role: .peripheral), [])
        XCTAssertNotNil(s.channel(0x40))
        // Also while our own close of it waits for its answer.
        _ = s.disconnect(cid: 0x40, now: .zero)
        XCTAssertEqual(s.receive(wrong, role: .peripheral), [])
    }

    func testCreditOverflowDisconnects() {
        var s = Self.accepted(peerCredits: 3)
        let actions = s.receive(Cmd.flowControlCredit(identifier: 1, channelID: 0x41, credits: 65533).encode(), role: .peripheral)
        XCTAssertEqual(Self.events(actions), [.closed(cid: 0x40, error: .creditOverflow, unsent: [])])
        XCTAssertEqual(Self.sent(actions), [.disconnectionRequest(identifier: 1, destinationCID: 0x41, sourceCID: 0x40)])
        var t = Self.accepted(peerCredits: 3)
        XCTAssertEqual(t.receive(Cmd.flowControlCredit(identifier: 1, channelID: 0x41, credits: 65532).encode(), role: .peripheral), [],
                       "65535 in all is allowed")
    }

    func testOversizedFramesAndSDUsDisconnect() {
        let cases: [([[UInt8]], L2CAPChannelError)] = [
            ([[1, 0] + Array(repeating: 0, count: 22)], .frameTooLong(length: 24, mps: 23)),
            ([[101, 0, 1]], .sduTooLong(length: 101, mtu: 100)),
            ([[3, 0, 1, 2, 3, 4]], .sduOverrun(expected: 3, received: 4)),
            ([[5, 0, 1, 2], [3, 4, 5, 6]], .sduOverrun(expected: 5, received: 6)),
            ([[1]], .malformedFrame),
        ]
        for (frames, error) in cases {
            var s = Self.accepted(CreditBasedChannelParameters(mtu: 100, mps: 23, initialCredits: 5))
            var events: [CreditBasedChannelEvent] = []
            for f in frames { events += Self.events(s.receiveFrame(f, cid: 0x40, now: .zero)) }
            XCTAssertEqual(events, [.closed(cid: 0x40, error: error, unsent: [])], "\(error)")
        }
    }

    // MARK: Routing

    func testTheRouterRoutesDynamicCIDsToTheirChannel() {
        var r = L2CAPRouter()
        r.linkOpened(handle: 0x40, role: .peripheral)
        r.listeners = Self.listeners
        let request = L2CAPFrame(channelID: L2CAPChannel.leSignaling, payload: Self.request(cid: 0x41)).encode()
        guard case let .control(actions) = r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: request)) else { return XCTFail() }
        XCTAssertEqual(actions.count, 2)
        let kFrame = L2CAPFrame(channelID: 0x40, payload: [2, 0, 0xCA, 0xFE]).encode()
        XCTAssertEqual(r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: kFrame)), .control([.channel(.sdu(cid: 0x40, [0xCA, 0xFE]))]))
        guard case .dropped = r.receive(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: L2CAPFrame(channelID: 0x42, payload: [0, 0]).encode())) else {
            return XCTFail("a CID that is not open")
        }
        XCTAssertEqual(r.send([1, 2, 3], handle: 0x40, cid: 0x40, token: 1),
                       [.send(channel: 0x41, payload: [3, 0, 1, 2, 3]), .channel(.sent(cid: 0x40, tokens: [1]))])
    }
}

import XCTest
import BLEHCI
import BLEWire
import BLETestSupport
@testable import BLEHost

/// Enhanced credit-based channels as PDU scripts (Core spec Vol 3 Part A §4.25–§4.28, §10.2;
/// the ECFC category of the L2CAP test suite): a peer's requests for 1...5 channels, accepted
/// whole or in part, each refusal, our own requests, reconfiguration both ways, and the
/// K-frames and credits of the channels opened.
final class EnhancedCreditBasedTests: XCTestCase {
    typealias Cmd = LESignalingCommand
    typealias Result = LESignalingCommand.CreditBasedConnectionResult
    typealias Reconf = LESignalingCommand.CreditBasedReconfigureResult

    static let psm: UInt16 = 0x0080
    static let ours = CreditBasedChannelParameters(mtu: 100, mps: 64, initialCredits: 2)
    static let listeners = [psm: CreditBasedListener(parameters: ours)]

    static func context(_ security: LinkSecurity = LinkSecurity(), listeners: [UInt16: CreditBasedListener] = listeners,
                        now: Duration = .zero) -> CreditBasedContext {
        CreditBasedContext(listeners: listeners, security: security, now: now)
    }

    static func request(_ id: UInt8 = 1, spsm: UInt16 = psm, cids: [UInt16], mtu: UInt16 = 200, mps: UInt16 = 80, credits: UInt16 = 3) -> [UInt8] {
        Cmd.creditBasedConnectionRequest(identifier: id, .init(spsm: spsm, mtu: mtu, mps: mps, initialCredits: credits, sourceCIDs: cids)).encode()
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

    static func response(_ actions: [SignalingAction]) -> Cmd.CreditBasedConnectionResponse? {
        for c in sent(actions) { if case let .creditBasedConnectionResponse(_, r) = c { return r } }
        return nil
    }

    /// The identifier of the first command in `actions` (a request just made).
    static func identifier(_ actions: [SignalingAction]?) -> UInt8 {
        sent(actions ?? []).first?.identifier ?? 0
    }

    static func reconfigureResult(_ actions: [SignalingAction]) -> Reconf? {
        for c in sent(actions) { if case let .creditBasedReconfigureResponse(_, r) = c { return r } }
        return nil
    }

    /// Channels the peer opened on our CIDs 0x0040... from its `cids`.
    static func accepted(_ cids: [UInt16], mtu: UInt16 = 200, mps: UInt16 = 80, credits: UInt16 = 3,
                         ours: CreditBasedChannelParameters = ours) -> LESignalingChannel {
        var s = LESignalingChannel()
        _ = s.receive(request(cids: cids, mtu: mtu, mps: mps, credits: credits), role: .peripheral,
                      context: context(listeners: [psm: CreditBasedListener(parameters: ours)]))
        return s
    }

    // MARK: The peer's requests

    func testOneToFiveChannelsAreAcceptedInOneResponse() {
        for count in 1...5 {
            var s = LESignalingChannel()
            let cids = (0..<count).map { UInt16(0x0050 + $0) }
            let actions = s.receive(Self.request(7, cids: cids), role: .peripheral, context: Self.context())
            let expected = (0..<count).map { UInt16(0x0040 + $0) }
            XCTAssertEqual(Self.sent(actions), [.creditBasedConnectionResponse(identifier: 7, .init(
                mtu: 100, mps: 64, initialCredits: 2, result: .success, destinationCIDs: expected))], "\(count) channels")
            guard case .send = actions.first else { return XCTFail("the response goes first") }
            let opened = Self.events(actions).compactMap { e -> CreditBasedChannelInfo? in
                if case let .opened(info) = e { return info } else { return nil }
            }
            XCTAssertEqual(opened.map(\.localCID), expected)
            XCTAssertEqual(opened.map(\.remoteCID), cids)
            XCTAssertTrue(opened.allSatisfy { $0.mode == .enhancedCreditBased && $0.remote == .init(mtu: 200, mps: 80, initialCredits: 3) })
            XCTAssertEqual(s.channel(0x40)?.sendCredits, 3)
            XCTAssertEqual(s.channel(0x40)?.peerCredits, 2)
        }
        // The bytes of one: 0x18, MTU 100, MPS 64, 2 credits, success, DCID 0x0040.
        var s = LESignalingChannel()
        XCTAssertEqual(s.receive(Self.request(cids: [0x0041]), role: .peripheral, context: Self.context()).first,
                       .send(hexBytes("18 01 0A00 6400 4000 0200 0000 4000")))
    }

    func testEveryReasonToRefuseAllChannels() {
        let authenticated = [Self.psm: CreditBasedListener(parameters: Self.ours, security: .init(level: .authenticated))]
        let strongKey = [Self.psm: CreditBasedListener(parameters: Self.ours, security: .init(level: .encrypted, minimumKeySize: 16))]
        let authorized = [Self.psm: CreditBasedListener(parameters: Self.ours, security: .init(authorization: true))]
        var leOnly = CreditBasedListener(parameters: Self.ours)
        leOnly.modes = [.leCreditBased]
        let two: [UInt16] = [0x40, 0x41]
        let cases: [(String, [UInt8], CreditBasedContext, Result, Int)] = [
            ("no source CID", Self.request(cids: []), Self.context(), .invalidParameters, 0),
            ("MTU 63", Self.request(cids: two, mtu: 63), Self.context(), .unacceptableParameters, 2),
            ("MPS 63", Self.request(cids: two, mps: 63), Self.context(), .unacceptableParameters, 2),
            ("MPS 65534", Self.request(cids: two, mps: 65534), Self.context(), .unacceptableParameters, 2),
            ("unlistened SPSM", Self.request(spsm: 0x81, cids: two), Self.context(), .spsmNotSupported, 2),
            ("SPSM 0x0100", Self.request(spsm: 0x0100, cids: two), Self.context(listeners: [0x0100: .init(parameters: Self.ours)]), .spsmNotSupported, 2),
            ("listener takes LE mode only", Self.request(cids: two), Self.context(listeners: [Self.psm: leOnly]), .spsmNotSupported, 2),
            ("unencrypted, no bond", Self.request(cids: two), Self.context(listeners: authenticated), .insufficientAuthentication, 2),
            ("unencrypted, bonded", Self.request(cids: two), Self.context(LinkSecurity(hasLongTermKey: true), listeners: authenticated), .insufficientEncryption, 2),
            ("unauthenticated key", Self.request(cids: two), Self.context(LinkSecurity(encrypted: true, keySize: 16), listeners: authenticated), .insufficientAuthentication, 2),
            ("7-octet key", Self.request(cids: two), Self.context(LinkSecurity(encrypted: true, keySize: 7), listeners: strongKey), .encryptionKeySizeTooShort, 2),
            ("not authorized", Self.request(cids: two), Self.context(listeners: authorized), .insufficientAuthorization, 2),
        ]
        for (what, request, context, result, dcids) in cases {
            var s = LESignalingChannel()
            let actions = s.receive(request, role: .peripheral, context: context)
            XCTAssertEqual(Self.sent(actions), [.creditBasedConnectionResponse(identifier: 1, .init(
                mtu: 0, mps: 0, initialCredits: 0, result: result, destinationCIDs: Array(repeating: 0, count: dcids)))], what)
            XCTAssertEqual(Self.events(actions), [], what)
            XCTAssertTrue(s.openChannels.isEmpty, what)
        }
        // Six CIDs do not fit the LE minimum MTU_sig of 23: Command Reject "signaling MTU exceeded".
        var s = LESignalingChannel()
        XCTAssertEqual(s.receive(Self.request(cids: [0x40, 0x41, 0x42, 0x43, 0x44, 0x45]), role: .peripheral, context: Self.context()),
                       [.send(Cmd.commandReject(identifier: 1, reason: .signalingMTUExceeded(actualMTU: 23)).encode())])
    }

    func testSomeChannelsRefusedEachForItsReason() {
        // A fixed CID, one already taken by an open channel, one named twice, and good ones.
        var s = Self.accepted([0x0060])
        let actions = s.receive(Self.request(2, cids: [0x0050, 0x0004, 0x0060, 0x0051, 0x0050]), role: .peripheral, context: Self.context())
        XCTAssertEqual(Self.response(actions), .init(mtu: 100, mps: 64, initialCredits: 2, result: .invalidSourceCID,
                                                     destinationCIDs: [0x41, 0, 0, 0x42, 0]), "the result names the first refusal")
        XCTAssertEqual(Self.events(actions).count, 2)
        XCTAssertEqual(s.openChannels.map(\.remoteCID), [0x60, 0x50, 0x51])

        var t = Self.accepted([0x0060])
        let taken = t.receive(Self.request(3, cids: [0x0060, 0x0061]), role: .peripheral, context: Self.context())
        XCTAssertEqual(Self.response(taken)?.result, .sourceCIDAlreadyAllocated)
        XCTAssertEqual(Self.response(taken)?.destinationCIDs, [0, 0x41])

        // The peer holds channels on its CIDs 0x40...0x7D: 0x7E and 0x7F are accepted, 0x40 is taken.
        var v = LESignalingChannel()
        for (i, first) in stride(from: UInt16(0x40), to: 0x7E, by: 2).enumerated() {
            _ = v.receive(Self.request(UInt8(i + 1), cids: [first, first + 1]), role: .peripheral, context: Self.context())
        }
        XCTAssertEqual(v.openChannels.count, 62)
        let partial = v.receive(Self.request(0x71, cids: [0x7E, 0x7F, 0x40]), role: .peripheral, context: Self.context())
        XCTAssertEqual(Self.response(partial)?.destinationCIDs, [0x7E, 0x7F, 0])
        XCTAssertEqual(Self.response(partial)?.result, .sourceCIDAlreadyAllocated)
        // 62 of our 64 CIDs wait on requests of ours: two of five accepted, three refused for
        // lack of resources.
        var w = LESignalingChannel()
        for i in 0..<31 {
            _ = w.connect(spsm: 0x80, parameters: Self.ours, token: UInt64(i), now: .zero)
            _ = w.connect(spsm: 0x80, parameters: Self.ours, token: UInt64(100 + i), now: .zero)
        }
        let noRoom = w.receive(Self.request(0xF0, cids: [0x40, 0x41, 0x42, 0x43, 0x44]), role: .peripheral, context: Self.context())
        XCTAssertEqual(Self.response(noRoom)?.destinationCIDs, [0x7E, 0x7F, 0, 0, 0])
        XCTAssertEqual(Self.response(noRoom)?.result, .noResourcesAvailable)
    }

    func testAListenerBelowTheEnhancedMinimumOffers64() {
        var s = LESignalingChannel()
        let small = [Self.psm: CreditBasedListener(parameters: .init(mtu: 23, mps: 23, initialCredits: 1))]
        let actions = s.receive(Self.request(cids: [0x40]), role: .peripheral, context: Self.context(listeners: small))
        XCTAssertEqual(Self.response(actions), .init(mtu: 64, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x40]))
    }

    // MARK: Our requests

    func testOurRequestOpensWhatThePeerAccepts() throws {
        var s = LESignalingChannel()
        let request = try XCTUnwrap(s.connectEnhanced(spsm: 0x80, parameters: Self.ours, count: 3, token: 5, now: .seconds(1)))
        XCTAssertEqual(request, [.send(hexBytes("17 01 0E00 8000 6400 4000 0200 4000 4100 4200"))])
        XCTAssertEqual(s.creditBasedDeadline, .seconds(31))
        XCTAssertEqual(s.pendingEnhancedTokens, [5])
        let partial = Cmd.creditBasedConnectionResponse(identifier: 1, .init(
            mtu: 300, mps: 100, initialCredits: 4, result: .noResourcesAvailable, destinationCIDs: [0x50, 0, 0x52]))
        let actions = s.receive(partial.encode(), role: .central)
        guard case let .enhancedConnected(5, infos, result)? = Self.events(actions).first else { return XCTFail("\(actions)") }
        XCTAssertEqual(result, .noResourcesAvailable)
        XCTAssertEqual(infos.map(\.localCID), [0x40, 0x42])
        XCTAssertEqual(infos.map(\.remoteCID), [0x50, 0x52])
        XCTAssertTrue(infos.allSatisfy { $0.mode == .enhancedCreditBased && $0.remote == .init(mtu: 300, mps: 100, initialCredits: 4) })
        XCTAssertNil(s.creditBasedDeadline)
        XCTAssertEqual(s.receive(partial.encode(), role: .central), [], "an answer to nothing is dropped")
        // The refused CID 0x41 is free again.
        XCTAssertEqual(Self.sent(s.connectEnhanced(spsm: 0x80, parameters: Self.ours, count: 1, token: 6, now: .zero) ?? []).first,
                       .creditBasedConnectionRequest(identifier: 2, .init(spsm: 0x80, mtu: 100, mps: 64, initialCredits: 2, sourceCIDs: [0x41])))
    }

    func testOurRequestRefusedRejectedTimedOutOrBroken() throws {
        var s = LESignalingChannel()
        XCTAssertNil(s.connectEnhanced(spsm: 0x80, parameters: Self.ours, count: 0, token: 1, now: .zero))
        XCTAssertNil(s.connectEnhanced(spsm: 0x80, parameters: Self.ours, count: 6, token: 1, now: .zero))
        XCTAssertNil(s.connectEnhanced(spsm: 0x80, parameters: .init(mtu: 63, mps: 64, initialCredits: 1), count: 1, token: 1, now: .zero))

        func ask(_ count: Int, _ token: UInt64) -> UInt8 {
            Self.identifier(s.connectEnhanced(spsm: 0x81, parameters: Self.ours, count: count, token: token, now: .zero))
        }
        // All refused, with zeros or (as Bumble does) with no Destination CID at all.
        XCTAssertEqual(ask(2, 1), 1)
        XCTAssertEqual(Self.events(s.receive(hexBytes("18 01 0800 0000 0000 0000 0200"), role: .central)),
                       [.connectFailed(token: 1, .refused(.spsmNotSupported))])
        var id = ask(2, 2)
        XCTAssertEqual(Self.events(s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 0, mps: 0, initialCredits: 0, result: .insufficientEncryption, destinationCIDs: [0, 0])).encode(), role: .central)),
                       [.connectFailed(token: 2, .refused(.insufficientEncryption))])

        // "Some refused" with no Destination CID at all (Bumble's way): nothing opened.
        id = ask(2, 8)
        XCTAssertEqual(Self.events(s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 64, mps: 64, initialCredits: 0, result: .sourceCIDAlreadyAllocated, destinationCIDs: [])).encode(), role: .central)),
                       [.connectFailed(token: 8, .refused(.sourceCIDAlreadyAllocated))])

        // A peer without the enhanced mode rejects the command.
        id = ask(1, 3)
        XCTAssertEqual(Self.events(s.receive(Cmd.commandReject(identifier: id, reason: .notUnderstood).encode(), role: .central)),
                       [.connectFailed(token: 3, .rejected)])

        // "Pending" waits for the final answer under the same identifier.
        id = ask(1, 4)
        XCTAssertEqual(s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 0, mps: 0, initialCredits: 0, result: .authenticationPending, destinationCIDs: [0])).encode(), role: .central), [])
        let final = s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 64, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x44])).encode(), role: .central)
        guard case .enhancedConnected(4, _, .success)? = Self.events(final).first else { return XCTFail("\(final)") }

        // 30 s without an answer; a success after that is disconnected again.
        id = ask(2, 5)
        XCTAssertEqual(s.expireCreditBased(now: .milliseconds(29_999)), [])
        XCTAssertEqual(s.expireCreditBased(now: .seconds(30)), [.channel(.connectFailed(token: 5, .timeout))])
        let late = s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 64, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x60, 0x61])).encode(), role: .central)
        XCTAssertEqual(Self.sent(late).count, 2)
        XCTAssertTrue(Self.sent(late).allSatisfy { if case .disconnectionRequest = $0 { return true } else { return false } })
        XCTAssertEqual(Self.events(late), [])

        // An MTU below 64, or a list of the wrong length: what the peer opened is disconnected.
        id = ask(2, 6)
        let small = s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 23, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x62, 0x63])).encode(), role: .central)
        XCTAssertEqual(Self.sent(small).count, 2)
        guard case .connectFailed(6, .invalidResponse)? = Self.events(small).last else { return XCTFail("\(small)") }
        id = ask(2, 7)
        let short = s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 64, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x64])).encode(), role: .central)
        XCTAssertEqual(Self.sent(short).count, 1)
        guard case .connectFailed(7, .invalidResponse)? = Self.events(short).last else { return XCTFail("\(short)") }
        XCTAssertEqual(s.openChannels.map(\.remoteCID), [0x44])
    }

    // MARK: The peer reconfigures

    func testPeerReconfigurationAcceptedAndRefused() {
        var s = Self.accepted([0x50, 0x51], mtu: 200, mps: 80)
        _ = s.receive(CreditBasedChannelTests.request(9, cid: 0x52, mtu: 200, mps: 80), role: .peripheral,
                      context: CreditBasedChannelTests.context(listeners: [Self.psm: CreditBasedListener(parameters: Self.ours)]))
        XCTAssertEqual(s.channel(0x42)?.mode, .leCreditBased)
        func reconfigure(_ mtu: UInt16, _ mps: UInt16, _ cids: [UInt16]) -> [SignalingAction] {
            s.receive(Cmd.creditBasedReconfigureRequest(identifier: 0x33, .init(mtu: mtu, mps: mps, destinationCIDs: cids)).encode(),
                      role: .peripheral)
        }
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 80, [])), .unacceptableParameters)
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 80, [0x50, 0x99])), .invalidDestinationCID, "a CID the peer has no channel on")
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 80, [0x52])), .invalidDestinationCID, "an LE credit-based channel")
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 80, [0x50, 0x50])), .invalidDestinationCID, "a channel twice")
        XCTAssertEqual(Self.reconfigureResult(reconfigure(63, 80, [0x50])), .unacceptableParameters)
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 63, [0x50])), .unacceptableParameters)
        XCTAssertEqual(Self.reconfigureResult(reconfigure(199, 80, [0x50])), .mtuReductionNotAllowed)
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 79, [0x50, 0x51])), .mpsReductionNotAllowed)
        XCTAssertEqual(s.channel(0x40)?.remote, .init(mtu: 200, mps: 80, initialCredits: 3), "a refusal changes nothing")

        let ok = reconfigure(300, 90, [0x50, 0x51])
        XCTAssertEqual(ok.first, .send(hexBytes("1A 33 0200 0000")))
        guard case let .peerReconfigured(infos)? = Self.events(ok).first else { return XCTFail("\(ok)") }
        XCTAssertEqual(infos.map(\.localCID), [0x40, 0x41])
        XCTAssertEqual(s.channel(0x41)?.remote, .init(mtu: 300, mps: 90, initialCredits: 3))
        // One channel may lower its MPS; the same MTU is no reduction.
        XCTAssertEqual(Self.reconfigureResult(reconfigure(300, 64, [0x50])), .success)
        XCTAssertEqual(s.channel(0x40)?.remote.mps, 64)
        // SDUs up to the new MTU go out, cut at the new MPS.
        let sent = s.send(Array(repeating: 7, count: 300), cid: 0x40, token: 1) ?? []
        XCTAssertEqual(Self.frames(sent).map(\.count), [64, 64, 64], "three credits: 62 + 64 + 64 bytes so far")
    }

    func testQueuedKFramesAreCutAgainWhenThePeersMPSShrinks() {
        var s = Self.accepted([0x50], mtu: 400, mps: 200, credits: 1)
        let sdu = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        // One credit: the first K-frame (198 bytes of SDU) goes, the rest waits.
        XCTAssertEqual(Self.frames(s.send(sdu, cid: 0x40, token: 1) ?? []).map(\.count), [200])
        _ = s.send([1, 2, 3], cid: 0x40, token: 2)
        XCTAssertEqual(Self.reconfigureResult(s.receive(Cmd.creditBasedReconfigureRequest(identifier: 2, .init(
            mtu: 400, mps: 64, destinationCIDs: [0x50])).encode(), role: .peripheral)), .success)
        let rest = s.receive(Cmd.flowControlCredit(identifier: 3, channelID: 0x50, credits: 10).encode(), role: .peripheral)
        XCTAssertEqual(Self.frames(rest).map(\.count), [64, 38, 5], "102 bytes left at MPS 64, then the next SDU whole")
        XCTAssertEqual(Self.frames(rest).last, [3, 0, 1, 2, 3])
        XCTAssertEqual(Array(Self.frames(rest).dropLast().joined()), Array(sdu[198...]))
    }

    // MARK: We reconfigure

    func testOurReconfigurationAppliesAndReverts() throws {
        var s = Self.accepted([0x50, 0x51])
        _ = s.receive(CreditBasedChannelTests.request(9, cid: 0x52), role: .peripheral,
                      context: CreditBasedChannelTests.context(listeners: [Self.psm: CreditBasedListener(parameters: Self.ours)]))
        XCTAssertThrowsError(try s.reconfigure(cids: [0x42], mtu: 200, mps: 64, token: 1, now: .zero)) {
            XCTAssertEqual($0 as? LESignalingChannel.ReconfigureProblem, .notEnhanced(cid: 0x42))
        }
        XCTAssertThrowsError(try s.reconfigure(cids: [0x40], mtu: 99, mps: 64, token: 1, now: .zero)) {
            XCTAssertEqual($0 as? LESignalingChannel.ReconfigureProblem, .mtuReduction(cid: 0x40))
        }
        XCTAssertThrowsError(try s.reconfigure(cids: [0x40], mtu: 200, mps: 63, token: 1, now: .zero))
        XCTAssertThrowsError(try s.reconfigure(cids: [], mtu: 200, mps: 64, token: 1, now: .zero))
        XCTAssertThrowsError(try s.reconfigure(cids: [0x40, 0x40], mtu: 200, mps: 64, token: 1, now: .zero))

        let request = try s.reconfigure(cids: [0x40, 0x41], mtu: 500, mps: 100, token: 7, now: .seconds(2))
        XCTAssertEqual(request, [.send(hexBytes("19 01 0800 F401 6400 4000 4100"))])
        XCTAssertEqual(s.channel(0x40)?.local.mtu, 500, "a larger MTU is ours at once")
        XCTAssertEqual(s.creditBasedDeadline, .seconds(32))
        XCTAssertThrowsError(try s.reconfigure(cids: [0x41], mtu: 600, mps: 100, token: 8, now: .zero)) {
            XCTAssertEqual($0 as? LESignalingChannel.ReconfigureProblem, .busy(cid: 0x41))
        }
        // An SDU of the new size may arrive before the response.
        let big = s.receiveFrame([0xF4, 0x01] + Array(repeating: 1, count: 98), cid: 0x40, now: .seconds(3))
        XCTAssertEqual(Self.events(big), [], "the first of several K-frames")
        XCTAssertEqual(Self.events(s.receive(Cmd.creditBasedReconfigureResponse(identifier: Self.identifier(request), result: .success).encode(), role: .central)),
                       [.reconfigured(token: 7, [s.info(s.channel(0x40))!, s.info(s.channel(0x41))!])])
        XCTAssertEqual(s.channel(0x41)?.local, .init(mtu: 500, mps: 100, initialCredits: 2))

        // Lowering one channel's MPS: the old MPS is accepted until the peer agrees; a refusal
        // puts the old values back.
        var id = Self.identifier(try s.reconfigure(cids: [0x41], mtu: 600, mps: 64, token: 9, now: .zero))
        XCTAssertEqual(s.channel(0x41)?.local, .init(mtu: 600, mps: 100, initialCredits: 2))
        XCTAssertEqual(Self.events(s.receive(Cmd.creditBasedReconfigureResponse(identifier: id, result: .mpsReductionNotAllowed).encode(),
                                             role: .central)), [.reconfigureFailed(token: 9, .reconfigureRefused(.mpsReductionNotAllowed))])
        XCTAssertEqual(s.channel(0x41)?.local, .init(mtu: 500, mps: 100, initialCredits: 2))
        id = Self.identifier(try s.reconfigure(cids: [0x41], mtu: 600, mps: 64, token: 10, now: .zero))
        _ = s.receive(Cmd.creditBasedReconfigureResponse(identifier: id, result: .success).encode(), role: .central)
        XCTAssertEqual(s.channel(0x41)?.local, .init(mtu: 600, mps: 64, initialCredits: 2))

        // A rejected request reverts too; an unanswered one disconnects its channels after 30 s.
        id = Self.identifier(try s.reconfigure(cids: [0x41], mtu: 700, mps: 64, token: 11, now: .zero))
        XCTAssertEqual(Self.events(s.receive(Cmd.commandReject(identifier: id, reason: .notUnderstood).encode(), role: .central)),
                       [.reconfigureFailed(token: 11, .rejected)])
        XCTAssertEqual(s.channel(0x41)?.local.mtu, 600)
        _ = try s.reconfigure(cids: [0x41], mtu: 700, mps: 64, token: 12, now: .seconds(100))
        XCTAssertEqual(s.expireCreditBased(now: .seconds(129)), [])
        let expired = s.expireCreditBased(now: .seconds(130))
        XCTAssertEqual(Self.events(expired), [.closed(cid: 0x41, error: .timeout, unsent: []), .reconfigureFailed(token: 12, .timeout)])
        XCTAssertNil(s.channel(0x41))
        XCTAssertNotNil(s.channel(0x40))
    }

    // MARK: K-frames and credits on enhanced channels

    func testInterleavedChannelsReassembleApartWithCredits() {
        var s = Self.accepted([0x50, 0x51, 0x52], ours: .init(mtu: 300, mps: 64, initialCredits: 4))
        let a = (0..<150).map { UInt8($0) }, b = (0..<70).map { UInt8(255 - $0) }
        let fa = CreditBasedChannel.segment(a, mps: 64), fb = CreditBasedChannel.segment(b, mps: 64)
        XCTAssertEqual(fa.map(\.count), [64, 64, 24])
        var got: [UInt16: [UInt8]] = [:]
        for (cid, frame) in [(0x40, fa[0]), (0x41, fb[0]), (0x40, fa[1]), (0x42, [1, 0, 9]), (0x41, fb[1]), (0x40, fa[2])] as [(UInt16, [UInt8])] {
            for case let .sdu(c, sdu) in Self.events(s.receiveFrame(frame, cid: cid, now: .zero)) { got[c] = sdu }
        }
        XCTAssertEqual(got, [0x40: a, 0x41: b, 0x42: [9]])
        // Channel 0x40 took 3 of 4 credits: the two continuation K-frames' went back once the
        // peer was down to half (2); the SDU's waits until the application consumes it, and
        // then for the peer to be down to half again.
        XCTAssertEqual(s.channel(0x40)?.peerCredits, 3)
        XCTAssertEqual(s.channelConsumed(cid: 0x40), [])
        XCTAssertEqual(s.channel(0x40)?.returnableCredits, 1)
        // A K-frame past the credits, or over our MPS, disconnects that channel only.
        var t = Self.accepted([0x50, 0x51], ours: .init(mtu: 300, mps: 64, initialCredits: 1))
        _ = t.receiveFrame([1, 0, 1], cid: 0x40, now: .zero)
        let overrun = t.receiveFrame([1, 0, 1], cid: 0x40, now: .zero)
        XCTAssertEqual(Self.events(overrun), [.closed(cid: 0x40, error: .frameWithoutCredit, unsent: [])])
        let long = t.receiveFrame([63, 0] + Array(repeating: 0, count: 63), cid: 0x41, now: .zero)
        XCTAssertEqual(Self.events(long), [.closed(cid: 0x41, error: .frameTooLong(length: 65, mps: 64), unsent: [])])
    }

    func testCreditsGateSegmentedSendsOnEveryChannel() {
        var s = Self.accepted([0x50, 0x51], mps: 64, credits: 2)
        let sdu = Array(repeating: UInt8(5), count: 190)   // 62 + 64 + 64: three K-frames
        XCTAssertEqual(Self.frames(s.send(sdu, cid: 0x40, token: 1) ?? []).count, 2)
        XCTAssertEqual(Self.frames(s.send(sdu, cid: 0x41, token: 2) ?? []).count, 2, "the other channel has its own credits")
        let more = s.receive(Cmd.flowControlCredit(identifier: 4, channelID: 0x50, credits: 1).encode(), role: .peripheral)
        XCTAssertEqual(Self.frames(more).count, 1)
        XCTAssertEqual(Self.events(more), [.sent(cid: 0x40, tokens: [1])])
        let filled = s.receive(Cmd.flowControlCredit(identifier: 5, channelID: 0x51, credits: 65535).encode(), role: .peripheral)
        XCTAssertEqual(Self.events(filled), [.sent(cid: 0x41, tokens: [2])], "65535 is the most a peer may give")
        let overflow = s.receive(Cmd.flowControlCredit(identifier: 6, channelID: 0x51, credits: 2).encode(), role: .peripheral)
        XCTAssertEqual(Self.events(overflow), [.closed(cid: 0x41, error: .creditOverflow, unsent: [])])
        XCTAssertNil(s.send(Array(repeating: 0, count: 201), cid: 0x40, token: 3), "longer than the peer's MTU")
    }

    // MARK: Review: races and a hostile peer

    /// A reconfiguration waits for its answer while its channel closes and the CID is reused for
    /// a new channel: neither the late answer nor the 30 s timeout may touch the new channel.
    func testAPendingReconfigurationForgetsAChannelThatClosed() throws {
        var s = Self.accepted([0x50])
        let request = try s.reconfigure(cids: [0x40], mtu: 300, mps: 64, token: 1, now: .zero)
        let reconfigureID = Self.identifier(request)
        // We close the channel; the peer confirms, so CID 0x40 is free again.
        let close = s.disconnect(cid: 0x40, now: .seconds(1))
        XCTAssertEqual(Self.events(close), [.closed(cid: 0x40, error: nil, unsent: []), .reconfigureFailed(token: 1, .closed)],
                       "the caller hears at once that its channel is gone")
        guard case let .disconnectionRequest(disconnectID, _, _)? = Self.sent(close).first else { return XCTFail("\(close)") }
        _ = s.receive(Cmd.disconnectionResponse(identifier: disconnectID, destinationCID: 0x50, sourceCID: 0x40).encode(), role: .peripheral)
        // The peer opens a new channel: it gets CID 0x40, with our listener's MTU 100.
        let reopened = s.receive(Self.request(3, cids: [0x51]), role: .peripheral, context: Self.context(now: .seconds(2)))
        XCTAssertEqual(Self.response(reopened)?.destinationCIDs, [0x40])
        XCTAssertEqual(s.channel(0x40)?.local.mtu, 100)
        XCTAssertNoThrow(try s.reconfigure(cids: [0x40], mtu: 120, mps: 64, token: 2, now: .seconds(2)),
                         "the new channel is not busy with the old channel's reconfiguration")

        // The old request times out: the new channel stays open.
        let expired = s.expireCreditBased(now: .seconds(30))
        XCTAssertFalse(Self.events(expired).contains { if case .closed = $0 { return true } else { return false } }, "\(expired)")
        XCTAssertEqual(Self.events(expired), [], "the request was already reported failed")
        XCTAssertNotNil(s.channel(0x40))

        // A late answer to the old request changes nothing on the new channel either.
        var t = Self.accepted([0x50])
        let id = Self.identifier(try t.reconfigure(cids: [0x40], mtu: 300, mps: 64, token: 1, now: .zero))
        let bye = t.receive(Cmd.disconnectionRequest(identifier: 9, destinationCID: 0x40, sourceCID: 0x50).encode(), role: .peripheral)
        XCTAssertEqual(Self.events(bye), [.closed(cid: 0x40, error: nil, unsent: []), .reconfigureFailed(token: 1, .closed)])
        _ = t.receive(Self.request(3, cids: [0x52]), role: .peripheral, context: Self.context())
        XCTAssertEqual(t.channel(0x40)?.remoteCID, 0x52)
        let answer = t.receive(Cmd.creditBasedReconfigureResponse(identifier: id, result: .success).encode(), role: .peripheral)
        XCTAssertEqual(Self.events(answer), [])
        XCTAssertEqual(t.channel(0x40)?.local, Self.ours, "the new channel keeps its own MTU and MPS")
        XCTAssertNotEqual(reconfigureID, 0)
    }

    /// A "pending" answer that comes after our request timed out must not make us forget the
    /// request: the final success that follows opened channels on the peer, which we close.
    func testAPendingAnswerAfterTheTimeoutStillClosesWhatTheFinalAnswerOpens() throws {
        var s = LESignalingChannel()
        let id = Self.identifier(s.connectEnhanced(spsm: 0x80, parameters: Self.ours, count: 2, token: 1, now: .zero))
        XCTAssertEqual(Self.events(s.expireCreditBased(now: .seconds(30))), [.connectFailed(token: 1, .timeout)])
        XCTAssertEqual(s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 0, mps: 0, initialCredits: 0, result: .pending, destinationCIDs: [0, 0])).encode(), role: .central), [])
        let late = s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 64, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x60, 0x61])).encode(), role: .central)
        XCTAssertEqual(Self.sent(late).compactMap { c -> UInt16? in
            if case let .disconnectionRequest(_, destination, _) = c { return destination } else { return nil }
        }, [0x60, 0x61])
        XCTAssertEqual(Self.events(late), [])
        XCTAssertEqual(s.openChannels, [])
    }

    /// A Destination CID the peer still uses for a channel we are disconnecting is in use: the
    /// response may not open a second channel with it.
    func testADestinationCIDStillBeingDisconnectedIsInUse() throws {
        var s = Self.accepted([0x50])
        _ = s.disconnect(cid: 0x40, now: .zero)
        let id = Self.identifier(s.connectEnhanced(spsm: 0x80, parameters: Self.ours, count: 1, token: 1, now: .zero))
        let r = s.receive(Cmd.creditBasedConnectionResponse(identifier: id, .init(
            mtu: 64, mps: 64, initialCredits: 1, result: .success, destinationCIDs: [0x50])).encode(), role: .central)
        guard case .connectFailed(1, .invalidResponse)? = Self.events(r).last else { return XCTFail("\(r)") }
        XCTAssertEqual(s.openChannels, [])
    }
}

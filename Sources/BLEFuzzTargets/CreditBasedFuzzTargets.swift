import BLEWire
import BLEHost

/// Fuzz targets for LE credit-based channels (Core spec Vol 3 Part A §3.4.3, §4.6, §4.7,
/// §4.22–§4.24, §10.2): the K-frame reassembler and credit counting of one channel, and the
/// signaling that opens, feeds and closes channels.
enum CreditBasedFuzzTargets {
    // MARK: The K-frame reassembler

    /// One `CreditBasedChannel` with fuzzed MTU/MPS/credits, fed raw K-frames, K-frames cut by
    /// `segment` from SDUs, consumptions and credit grants. A reference model written from
    /// §3.4.3/§10.2 says what each frame must give (an SDU, nothing, or which error); the
    /// channel must agree, never trap, never let the peer hold more credits than offered, and
    /// keep at most `initialCredits` unconsumed SDUs. SDUs sent through `segment` come back whole.
    static func kFrameReassembler(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let mtu = 23 + input.u16() % 2000
        let mps = 23 + input.u16() % 300
        let credits = 1 + UInt16(input.u8() % 16)
        let local = CreditBasedChannelParameters(mtu: mtu, mps: mps, initialCredits: credits)
        var channel = CreditBasedChannel(spsm: 0x80, localCID: 0x40, remoteCID: 0x41, local: local,
                                         remote: .init(mtu: mtu, mps: mps, initialCredits: 0))
        // The model.
        var peerCredits = Int(credits)
        var expected: Int?
        var buffered = 0
        var unconsumed = 0
        var pendingSDUs: [[UInt8]] = []
        var steps = 0

        func feed(_ frame: [UInt8], channel: inout CreditBasedChannel) -> Bool {
            let want: L2CAPChannelError?
            var completes = false
            if peerCredits == 0 {
                want = .frameWithoutCredit
            } else if frame.count > Int(mps) {
                want = .frameTooLong(length: frame.count, mps: Int(mps))
            } else if expected == nil && frame.count < 2 {
                want = .malformedFrame
            } else {
                var length = expected ?? 0
                var body = frame.count
                if expected == nil {
                    length = Int(frame[0]) | Int(frame[1]) << 8
                    body -= 2
                }
                if expected == nil && length > Int(mtu) {
                    want = .sduTooLong(length: length, mtu: Int(mtu))
                } else if (expected == nil ? 0 : buffered) + body > length {
                    want = .sduOverrun(expected: length, received: (expected == nil ? 0 : buffered) + body)
                } else {
                    want = nil
                    completes = (expected == nil ? 0 : buffered) + body == length
                }
            }
            do {
                let sdu = try channel.receive(frame)
                FuzzCheck.require(want == nil, "K-frame \(fuzzHex(frame)) accepted; the model says \(want.map { "\($0)" } ?? "")")
                peerCredits -= 1
                if expected == nil {
                    expected = Int(frame[0]) | Int(frame[1]) << 8
                    buffered = frame.count - 2
                } else {
                    buffered += frame.count
                }
                FuzzCheck.require((sdu != nil) == completes, "K-frame \(fuzzHex(frame)): SDU \(sdu != nil), model \(completes)")
                if let sdu {
                    FuzzCheck.require(sdu.count == expected && sdu.count <= Int(mtu), "SDU of \(sdu.count) bytes, expected \(expected ?? -1)")
                    if let first = pendingSDUs.first {
                        FuzzCheck.require(sdu == first, "a segmented SDU came back different")
                        pendingSDUs.removeFirst()
                    }
                    expected = nil
                    buffered = 0
                    unconsumed += 1
                }
                return true
            } catch {
                FuzzCheck.require(error == want, "K-frame \(fuzzHex(frame)) threw \(error); the model says \(want.map { "\($0)" } ?? "accept")")
                return false
            }
        }

        while !input.isAtEnd, steps < 256 {
            steps += 1
            var ended = false
            switch input.u8() % 6 {
            case 0, 1:
                pendingSDUs = []
                ended = !feed(input.longChunk(maximum: Int(mps) + 8), channel: &channel)
            case 2:
                // A whole SDU cut at our MPS, with credits topped up as a peer would wait for them.
                guard expected == nil else { continue }
                let length = Int(input.u16()) % (Int(mtu) + 1)
                let fill = input.u8()
                let sdu = (0..<length).map { UInt8(truncatingIfNeeded: $0) &+ fill }
                pendingSDUs = [sdu]
                for frame in CreditBasedChannel.segment(sdu, mps: mps) {
                    if peerCredits == 0 {
                        // The peer waits; consume everything delivered so credits flow back.
                        while unconsumed > 0 { channel.consumed(); unconsumed -= 1 }
                        if let n = channel.creditsToGrant() { peerCredits += Int(n) }
                    }
                    if peerCredits == 0 { break }
                    if !feed(frame, channel: &channel) { ended = true; break }
                    if let n = channel.creditsToGrant() { peerCredits += Int(n) }
                }
            case 3:
                if unconsumed > 0 { channel.consumed(); unconsumed -= 1 }
            case 4:
                if let n = channel.creditsToGrant() {
                    FuzzCheck.require(n > 0, "granted 0 credits")
                    peerCredits += Int(n)
                }
            default:
                channel.consumed()  // one too many is ignored
                unconsumed = max(0, unconsumed - 1)
            }
            if ended { return }
            FuzzCheck.require(channel.peerCredits == peerCredits, "channel says the peer holds \(channel.peerCredits), model \(peerCredits)")
            FuzzCheck.require(peerCredits <= Int(credits), "the peer holds \(peerCredits) credits, more than the \(credits) offered")
            FuzzCheck.require(channel.unconsumedSDUs == unconsumed && unconsumed <= Int(credits),
                              "\(channel.unconsumedSDUs) unconsumed SDUs (model \(unconsumed), bound \(credits))")
            FuzzCheck.require(channel.isReassembling == (expected != nil), "reassembly state differs from the model")
        }
    }

    // MARK: Credit-based signaling

    /// `LESignalingChannel` with a listener (fuzzed SPSM, parameters and security) on a link of
    /// fuzzed security, fed raw C-frames, LE Credit Based Connection Requests and Responses,
    /// LE Flow Control Credits, Disconnection Requests and Responses built from fields (naming
    /// open CIDs and pending identifiers as often as not), K-frames on open CIDs, and our own
    /// connects, sends, consumptions, closes and timeouts. It must never trap, and:
    /// - every C-frame it sends decodes and fits the LE minimum MTU_sig (23);
    /// - a peer's connection request gets exactly one response with its identifier, success
    ///   only for a listened SPSM whose security the link meets, valid parameters and a free,
    ///   dynamic source CID, and then `.opened` with the channel;
    /// - open channels have distinct dynamic local and remote CIDs; K-frames we send fit the
    ///   peer's MPS and never outnumber its credits; SDUs delivered fit our MTU; the peer never
    ///   holds more credits than we offered; every `.closed` channel is gone;
    /// - each of our connect tokens ends at most once.
    static func creditBasedSignaling(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var channel = LESignalingChannel()
        let role: LESignalingChannel.Role = input.bool() ? .central : .peripheral
        let spsm = UInt16(input.u8())
        let ours = CreditBasedChannelParameters(mtu: 23 + input.u16() % 600, mps: 23 + UInt16(input.u8()), initialCredits: 1 + UInt16(input.u8() % 8))
        let levels: [SecurityLevel] = [.none, .encrypted, .authenticated, .secureConnections]
        let requirement = L2CAPSecurityRequirement(level: levels[Int(input.u8() % 4)], minimumKeySize: 7 + Int(input.u8() % 10),
                                                   authorization: input.bool())
        let flags = input.u8()
        let security = LinkSecurity(encrypted: flags & 1 != 0, authenticated: flags & 2 != 0, authorized: flags & 4 != 0,
                                    hasLongTermKey: flags & 8 != 0, keySize: 7 + Int(flags >> 4) % 10, secureConnections: flags & 0x80 != 0)
        let context = CreditBasedContext(listeners: [spsm: CreditBasedListener(parameters: ours, security: requirement)], security: security)
        var now: Duration = .zero
        var token: UInt64 = 0
        var ended: Set<UInt64> = []
        var steps = 0

        while !input.isAtEnd, steps < 128 {
            steps += 1
            let open = channel.openChannels
            let someOpen = open.isEmpty ? nil : open[Int(input.u8()) % open.count]
            var received: [UInt8]?
            var actions: [SignalingAction]
            switch input.u8() % 12 {
            case 0:
                received = input.chunk()
                actions = channel.receive(received!, role: role, context: ctx(context, now))
            case 1, 2:
                let q = LESignalingCommand.LECreditBasedConnectionRequest(
                    spsm: input.bool() ? spsm : UInt16(input.u8()), sourceCID: input.bool() ? 0x40 + UInt16(input.u8() % 0x44) : input.u16(),
                    mtu: input.bool() ? ours.mtu : input.u16() % 100, mps: input.bool() ? 23 + UInt16(input.u8()) : input.u16(),
                    initialCredits: input.bool() ? UInt16(input.u8()) : input.u16())
                received = LESignalingCommand.leCreditBasedConnectionRequest(identifier: input.u8(), q).encode()
                actions = channel.receive(received!, role: role, context: ctx(context, now))
                checkConnectionResponse(actions, request: q, identifier: received![1], spsm: spsm, ours: ours, allowed: requirement.refusal(for: security) == nil)
            case 3:
                let r = LESignalingCommand.LECreditBasedConnectionResponse(
                    destinationCID: 0x40 + UInt16(input.u8() % 0x44), mtu: input.u16(), mps: input.u16(), initialCredits: input.u16(),
                    result: .init(rawValue: input.bool() ? 0 : UInt16(input.u8() % 12)))
                received = LESignalingCommand.leCreditBasedConnectionResponse(identifier: input.u8() % 8, r).encode()
                actions = channel.receive(received!, role: role, context: ctx(context, now))
            case 4:
                let cid = someOpen?.remoteCID ?? input.u16()
                received = LESignalingCommand.flowControlCredit(identifier: input.u8() | 1, channelID: cid, credits: input.bool() ? UInt16(input.u8()) : input.u16()).encode()
                actions = channel.receive(received!, role: role, context: ctx(context, now))
            case 5:
                let local = someOpen?.localCID ?? input.u16(), remote = someOpen?.remoteCID ?? input.u16()
                received = (input.bool() ? LESignalingCommand.disconnectionRequest(identifier: input.u8() | 1, destinationCID: local, sourceCID: remote)
                            : LESignalingCommand.disconnectionResponse(identifier: input.u8() % 8, destinationCID: remote, sourceCID: local)).encode()
                actions = channel.receive(received!, role: role, context: ctx(context, now))
            case 6, 7:
                guard let c = someOpen else { continue }
                actions = channel.receiveFrame(input.longChunk(maximum: Int(c.local.mps) + 4), cid: c.localCID, now: now)
            case 8:
                token += 1
                actions = channel.connect(spsm: UInt16(input.u8()), parameters: ours, token: token, now: now) ?? []
            case 9:
                guard let c = someOpen else { continue }
                token += 1
                actions = channel.send(input.longChunk(maximum: Int(c.remote.mtu) + 2), cid: c.localCID, token: token) ?? []
            case 10:
                guard let c = someOpen else { continue }
                actions = input.bool() ? channel.channelConsumed(cid: c.localCID) : channel.disconnect(cid: c.localCID, now: now)
            default:
                now += .seconds(Int64(input.u8() % 40))
                actions = channel.expireCreditBased(now: now)
            }
            check(actions, before: open, after: channel, ended: &ended, context: received.map { "received \(fuzzHex($0))" } ?? "step \(steps)")
        }
    }

    static func ctx(_ c: CreditBasedContext, _ now: Duration) -> CreditBasedContext {
        var c = c
        c.now = now
        return c
    }

    private static func checkConnectionResponse(_ actions: [SignalingAction], request q: LESignalingCommand.LECreditBasedConnectionRequest,
                                                identifier: UInt8, spsm: UInt16, ours: CreditBasedChannelParameters, allowed: Bool) {
        let responses = actions.compactMap { a -> LESignalingCommand? in
            if case let .send(b) = a { return try? LESignalingCommand(pdu: b) } else { return nil }
        }
        guard identifier != 0 else {
            FuzzCheck.require(responses.isEmpty, "identifier 0 answered")
            return
        }
        guard responses.count == 1, case let .leCreditBasedConnectionResponse(id, r) = responses[0] else {
            FuzzCheck.fail("request \(q) got \(responses)")
            return
        }
        FuzzCheck.require(id == identifier, "response identifier \(id) for request \(identifier)")
        let valid = CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: q.initialCredits).isValid
        let mayOpen = valid && q.spsm == spsm && (1...0xFF).contains(spsm) && allowed && L2CAPChannel.dynamicRange.contains(q.sourceCID)
        if r.result == .success {
            FuzzCheck.require(mayOpen, "accepted \(q)")
            FuzzCheck.require(r.mtu == ours.mtu && r.mps == ours.mps && r.initialCredits == ours.initialCredits, "accepted with other parameters")
            FuzzCheck.require(actions.contains { if case .channel(.opened) = $0 { return true } else { return false } }, "accepted without .opened")
        } else {
            FuzzCheck.require(r.destinationCID == 0 && r.mtu == 0 && r.mps == 0 && r.initialCredits == 0, "a refusal with fields set")
            if !valid { FuzzCheck.require(r.result == .unacceptableParameters, "invalid parameters refused with \(r.result)") }
        }
    }

    /// `largestMTU`: an SDU our reconfiguration let start may still complete after a refusal
    /// put the smaller MTU back (§4.27); SDUs are checked against the larger of the two.
    static func check(_ actions: [SignalingAction], before: [CreditBasedChannelInfo], after channel: LESignalingChannel,
                      ended: inout Set<UInt64>, context: String, largestMTU: UInt16 = 0) {
        for action in actions {
            switch action {
            case let .send(bytes):
                FuzzCheck.require(bytes.count <= 23, "\(context): sent a \(bytes.count)-byte C-frame")
                FuzzCheck.require((try? LESignalingCommand(pdu: bytes)) != nil, "\(context): sent \(fuzzHex(bytes)), which does not decode")
            case let .frame(cid, payload):
                guard let c = before.first(where: { $0.remoteCID == cid }) else {
                    FuzzCheck.fail("\(context): a K-frame for remote CID \(cid), which was not open")
                    continue
                }
                FuzzCheck.require(payload.count <= Int(c.remote.mps), "\(context): a \(payload.count)-byte K-frame over the peer's MPS \(c.remote.mps)")
            case let .channel(event):
                switch event {
                case let .connected(t, _), let .connectFailed(t, _):
                    FuzzCheck.require(ended.insert(t).inserted, "\(context): connect token \(t) ended twice")
                case let .sdu(cid, sdu):
                    let mtu = max(before.first(where: { $0.localCID == cid })?.local.mtu ?? 0, largestMTU)
                    FuzzCheck.require(sdu.count <= Int(mtu), "\(context): an SDU of \(sdu.count) bytes over our MTU \(mtu)")
                case let .closed(cid, _, _):
                    FuzzCheck.require(channel.channel(cid) == nil, "\(context): channel \(cid) closed but still open")
                case let .enhancedConnected(t, infos, _):
                    FuzzCheck.require(ended.insert(t).inserted, "\(context): connect token \(t) ended twice")
                    FuzzCheck.require((1...5).contains(infos.count), "\(context): \(infos.count) channels from one enhanced request")
                case .opened, .sent, .reconfigured, .reconfigureFailed, .peerReconfigured:
                    break
                }
            default:
                break
            }
        }
        let open = channel.openChannels
        FuzzCheck.require(Set(open.map(\.localCID)).count == open.count && Set(open.map(\.remoteCID)).count == open.count,
                          "\(context): two channels share a CID")
        for info in open {
            FuzzCheck.require(L2CAPChannel.dynamicRange.contains(info.localCID) && L2CAPChannel.dynamicRange.contains(info.remoteCID),
                              "\(context): a channel on a CID outside 0x0040-0x007F")
            guard let c = channel.channel(info.localCID) else { continue }
            FuzzCheck.require(c.sendCredits >= 0 && c.sendCredits <= 65535, "\(context): \(c.sendCredits) send credits")
            FuzzCheck.require(c.peerCredits >= 0 && c.peerCredits <= Int(c.local.initialCredits),
                              "\(context): the peer holds \(c.peerCredits) credits of \(c.local.initialCredits)")
        }
    }
}

import BLEWire
import BLEHost

/// Fuzz target for the enhanced credit-based mode (Core spec Vol 3 Part A §4.25–§4.28): the
/// Credit Based Connection and Reconfigure Requests and Responses, mixed with K-frames,
/// credits, disconnections, our own requests and timeouts.
enum EnhancedCreditBasedFuzzTargets {
    /// `LESignalingChannel` with a listener on a fuzzed SPSM (both modes or the enhanced one
    /// only), fed raw C-frames and enhanced commands built from fields (naming open CIDs and
    /// pending identifiers as often as not). Besides the checks of `credit-based-signaling`:
    /// - a peer's Credit Based Connection Request gets exactly one response, with its
    ///   identifier, one Destination CID per Source CID (at most five), success only when every
    ///   channel opened, and one `.opened` per non-zero Destination CID, each a new channel;
    ///   nothing opens for parameters below 64 or an SPSM nobody listens on;
    /// - a peer's Credit Based Reconfigure Request gets exactly one response; success exactly
    ///   when the model (§4.27) allows it, and then the channels carry the new MTU and MPS,
    ///   otherwise nothing changed;
    /// - our reconfigurations either throw before sending or send one request.
    static func enhancedSignaling(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var channel = LESignalingChannel()
        let role: LESignalingChannel.Role = input.bool() ? .central : .peripheral
        let spsm = UInt16(input.u8())
        let ours = CreditBasedChannelParameters(mtu: 23 + input.u16() % 600, mps: 23 + UInt16(input.u8()), initialCredits: 1 + UInt16(input.u8() % 8))
        var listener = CreditBasedListener(parameters: ours)
        if input.bool() { listener.modes = [.enhancedCreditBased] }
        let context = CreditBasedContext(listeners: [spsm: listener])
        var now: Duration = .zero
        var token: UInt64 = 0
        var ended: Set<UInt64> = []
        var steps = 0
        var largestMTU: UInt16 = 0

        func cid(_ open: [CreditBasedChannelInfo], remote: Bool, _ input: inout FuzzInput) -> UInt16 {
            if !open.isEmpty, input.bool() {
                let c = open[Int(input.u8()) % open.count]
                return remote ? c.remoteCID : c.localCID
            }
            return input.bool() ? 0x40 + UInt16(input.u8() % 0x44) : input.u16()
        }

        while !input.isAtEnd, steps < 128 {
            steps += 1
            let open = channel.openChannels
            var received: [UInt8]?
            var actions: [SignalingAction]
            switch input.u8() % 12 {
            case 0:
                let bytes = input.chunk()
                received = bytes
                actions = channel.receive(bytes, role: role, context: CreditBasedFuzzTargets.ctx(context, now))
            case 1, 2:
                let count = Int(input.u8() % 6)
                var cids: [UInt16] = []
                for _ in 0..<count { cids.append(cid(open, remote: true, &input)) }
                let q = LESignalingCommand.CreditBasedConnectionRequest(
                    spsm: input.bool() ? spsm : UInt16(input.u8()), mtu: input.bool() ? 64 + input.u16() % 500 : input.u16() % 100,
                    mps: input.bool() ? 64 + UInt16(input.u8()) : input.u16(), initialCredits: input.u16(), sourceCIDs: cids)
                let id = input.u8()
                let bytes = LESignalingCommand.creditBasedConnectionRequest(identifier: id, q).encode()
                received = bytes
                actions = channel.receive(bytes, role: role, context: CreditBasedFuzzTargets.ctx(context, now))
                checkConnection(actions, request: q, identifier: id, spsm: spsm, listener: listener, before: open)
            case 3:
                let count = Int(input.u8() % 6)
                var cids: [UInt16] = []
                for _ in 0..<count { cids.append(input.bool() ? 0 : 0x40 + UInt16(input.u8() % 0x44)) }
                let r = LESignalingCommand.CreditBasedConnectionResponse(
                    mtu: input.bool() ? 64 + input.u16() % 500 : input.u16(), mps: input.bool() ? 64 + UInt16(input.u8()) : input.u16(),
                    initialCredits: input.u16(), result: .init(rawValue: input.bool() ? 0 : UInt16(input.u8() % 17)), destinationCIDs: cids)
                let bytes = LESignalingCommand.creditBasedConnectionResponse(identifier: input.u8() % 8, r).encode()
                received = bytes
                actions = channel.receive(bytes, role: role, context: CreditBasedFuzzTargets.ctx(context, now))
            case 4:
                let count = Int(input.u8() % 6)
                var cids: [UInt16] = []
                for _ in 0..<count { cids.append(cid(open, remote: true, &input)) }
                let q = LESignalingCommand.CreditBasedReconfigureRequest(
                    mtu: input.bool() ? 64 + input.u16() % 700 : input.u16(), mps: input.bool() ? 64 + UInt16(input.u8()) : input.u16(),
                    destinationCIDs: cids)
                let id = input.u8() | 1
                let bytes = LESignalingCommand.creditBasedReconfigureRequest(identifier: id, q).encode()
                received = bytes
                actions = channel.receive(bytes, role: role, context: CreditBasedFuzzTargets.ctx(context, now))
                checkReconfigure(actions, request: q, identifier: id, before: open, after: channel)
            case 5:
                let bytes = (input.bool()
                    ? LESignalingCommand.creditBasedReconfigureResponse(identifier: input.u8() % 8, result: .init(rawValue: UInt16(input.u8() % 6)))
                    : LESignalingCommand.commandReject(identifier: input.u8() % 8, reason: .notUnderstood)).encode()
                received = bytes
                actions = channel.receive(bytes, role: role, context: CreditBasedFuzzTargets.ctx(context, now))
            case 6:
                guard !open.isEmpty else { continue }
                let c = open[Int(input.u8()) % open.count]
                actions = channel.receiveFrame(input.longChunk(maximum: Int(c.local.mps) + 4), cid: c.localCID, now: now)
            case 7:
                let remote = cid(open, remote: true, &input)
                let bytes = (input.bool()
                    ? LESignalingCommand.flowControlCredit(identifier: input.u8() | 1, channelID: remote, credits: UInt16(input.u8()))
                    : LESignalingCommand.disconnectionRequest(identifier: input.u8() | 1, destinationCID: cid(open, remote: false, &input),
                                                              sourceCID: remote)).encode()
                received = bytes
                actions = channel.receive(bytes, role: role, context: CreditBasedFuzzTargets.ctx(context, now))
            case 8:
                token += 1
                let p = CreditBasedChannelParameters(mtu: 64 + input.u16() % 300, mps: 64 + UInt16(input.u8()), initialCredits: 1 + UInt16(input.u8() % 8))
                actions = channel.connectEnhanced(spsm: UInt16(input.u8()), parameters: p, count: Int(input.u8() % 7), token: token, now: now) ?? []
            case 9:
                token += 1
                let count = 1 + Int(input.u8() % 5)
                var cids: [UInt16] = []
                for _ in 0..<count { cids.append(cid(open, remote: false, &input)) }
                let mtu = input.u16()
                do {
                    actions = try channel.reconfigure(cids: cids, mtu: mtu, mps: input.u16(), token: token, now: now)
                    largestMTU = max(largestMTU, mtu)
                    FuzzCheck.require(actions.count == 1, "a reconfiguration sent \(actions.count) actions")
                } catch {
                    actions = []
                }
            case 10:
                guard !open.isEmpty else { continue }
                let c = open[Int(input.u8()) % open.count]
                token += 1
                actions = input.bool() ? channel.send(input.longChunk(maximum: Int(c.remote.mtu) + 2), cid: c.localCID, token: token) ?? []
                    : channel.channelConsumed(cid: c.localCID)
            default:
                now += .seconds(Int64(input.u8() % 40))
                actions = channel.expireCreditBased(now: now)
            }
            CreditBasedFuzzTargets.check(actions, before: open, after: channel, ended: &ended,
                                         context: received.map { "received \(fuzzHex($0))" } ?? "step \(steps)", largestMTU: largestMTU)
        }
    }

    private static func sent(_ actions: [SignalingAction]) -> [LESignalingCommand] {
        actions.compactMap { if case let .send(b) = $0 { return try? LESignalingCommand(pdu: b) } else { return nil } }
    }

    private static func checkConnection(_ actions: [SignalingAction], request q: LESignalingCommand.CreditBasedConnectionRequest,
                                        identifier: UInt8, spsm: UInt16, listener: CreditBasedListener, before: [CreditBasedChannelInfo]) {
        let encoded = LESignalingCommand.creditBasedConnectionRequest(identifier: identifier, q).encode()
        guard identifier != 0, encoded.count <= 23 else { return }
        let responses = sent(actions)
        guard responses.count == 1, case let .creditBasedConnectionResponse(id, r) = responses[0] else {
            FuzzCheck.fail("request \(q) got \(responses)")
            return
        }
        FuzzCheck.require(id == identifier, "response identifier \(id) for request \(identifier)")
        FuzzCheck.require(r.destinationCIDs.count == min(q.sourceCIDs.count, 5), "\(r.destinationCIDs.count) DCIDs for \(q.sourceCIDs.count) SCIDs")
        let opened = actions.compactMap { a -> CreditBasedChannelInfo? in
            if case let .channel(.opened(info)) = a { return info } else { return nil }
        }
        let nonzero = r.destinationCIDs.filter { $0 != 0 }
        FuzzCheck.require(opened.map(\.localCID) == nonzero, "DCIDs \(r.destinationCIDs) but opened \(opened.map(\.localCID))")
        FuzzCheck.require(opened.allSatisfy { o in !before.contains { $0.localCID == o.localCID || $0.remoteCID == o.remoteCID } },
                          "a channel opened on a CID already in use")
        FuzzCheck.require(r.result != .success || nonzero.count == q.sourceCIDs.count, "success with a refused channel")
        let mayOpen = CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: 0).isValidEnhanced && q.spsm == spsm
            && (1...0xFF).contains(spsm) && (1...5).contains(q.sourceCIDs.count)
        if !mayOpen { FuzzCheck.require(opened.isEmpty, "opened \(opened.count) channels for \(q)") }
        for o in opened {
            FuzzCheck.require(o.mode == .enhancedCreditBased && o.local.isValidEnhanced, "opened \(o) with parameters below 64")
        }
    }

    /// The model of §4.27 for a peer's reconfiguration, checked against what the channel did.
    private static func checkReconfigure(_ actions: [SignalingAction], request q: LESignalingCommand.CreditBasedReconfigureRequest,
                                         identifier: UInt8, before: [CreditBasedChannelInfo], after channel: LESignalingChannel) {
        let encoded = LESignalingCommand.creditBasedReconfigureRequest(identifier: identifier, q).encode()
        guard encoded.count <= 23 else { return }
        let responses = sent(actions)
        guard responses.count == 1, case let .creditBasedReconfigureResponse(id, result) = responses[0] else {
            FuzzCheck.fail("reconfiguration \(q) got \(responses)")
            return
        }
        FuzzCheck.require(id == identifier, "response identifier \(id) for request \(identifier)")
        let named = q.destinationCIDs.compactMap { cid in before.first { $0.remoteCID == cid && $0.mode == .enhancedCreditBased } }
        let allowed = (1...5).contains(q.destinationCIDs.count) && named.count == q.destinationCIDs.count
            && Set(q.destinationCIDs).count == q.destinationCIDs.count
            && CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: 0).isValidEnhanced
            && named.allSatisfy { q.mtu >= $0.remote.mtu && (named.count == 1 || q.mps >= $0.remote.mps) }
        FuzzCheck.require((result == .success) == allowed, "reconfiguration \(q) answered \(result); the model says \(allowed ? "success" : "refuse")")
        for info in before {
            guard let now = channel.channel(info.localCID) else { continue }
            if allowed && named.contains(info) {
                FuzzCheck.require(now.remote.mtu == q.mtu && now.remote.mps == q.mps, "channel \(info.localCID) not reconfigured")
            } else {
                FuzzCheck.require(now.remote == info.remote, "channel \(info.localCID) changed without a successful reconfiguration")
            }
        }
    }
}

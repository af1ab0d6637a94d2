import BLEWire

/// Our enhanced credit-based request waiting for its Credit Based Connection Response (§4.25).
struct PendingEnhancedConnect: Sendable {
    let token: UInt64
    /// Our endpoints, in the order of the request's Source CID list.
    let localCIDs: [UInt16]
    let spsm: UInt16
    let parameters: CreditBasedChannelParameters
    var deadline: Duration
    /// The 30 s ran out and the request was reported failed; its identifier and CIDs stay taken
    /// another 30 s so that channels a late success opened can be disconnected (§4.6).
    var expired = false
}

/// Our Credit Based Reconfigure Request waiting for its response (§4.27, §4.28).
struct PendingReconfigure: Sendable {
    let token: UInt64
    /// The channels still open: one that closes leaves the list at once, since its CID may be
    /// reused by a new channel before the answer or the timeout comes.
    var cids: [UInt16]
    /// Each channel's own parameters before the request, to go back to on a refusal.
    let previous: [UInt16: CreditBasedChannelParameters]
    let mtu: UInt16
    let mps: UInt16
    let deadline: Duration
    /// Every channel closed and the request was reported failed (`.closed`); it stays only to
    /// take its answer (and keep its identifier) until the deadline.
    var reported = false
}

/// Enhanced Credit Based Flow Control mode (Core spec Vol 3 Part A §4.25–§4.28, §10.2): up to
/// five channels per Credit Based Connection Request, accepted or refused one by one, and the
/// Credit Based Reconfigure Request that raises MTU and MPS of open channels. Channels opened
/// this way carry K-frames and credits exactly as LE credit-based ones (`CreditBasedChannel`).
extension LESignalingChannel {
    /// The results with which a peer may still have opened some of the channels (§4.26: the
    /// "some connections refused" ones); every other failure refuses all of them.
    static let partialResults: Set<LESignalingCommand.CreditBasedConnectionResult> = [
        .success, .noResourcesAvailable, .invalidSourceCID, .sourceCIDAlreadyAllocated,
    ]

    /// "All connections pending" (§4.26): the final response comes later under the same identifier.
    static let pendingResults: Set<LESignalingCommand.CreditBasedConnectionResult> = [
        .pending, .authenticationPending, .authorizationPending,
    ]

    // MARK: - Our requests

    /// Asks the peer for `count` (1...5) channels on `spsm` at once (Credit Based Connection
    /// Request, §4.25; `parameters` need MTU ≥ 64 and MPS 64...65533). The answer comes as
    /// `.enhancedConnected(token:)` with the channels opened or `.connectFailed(token:)`, the
    /// latter also after 30 s without one. Nil when the count or parameters are out of range or
    /// fewer than `count` dynamic CIDs are free.
    public mutating func connectEnhanced(spsm: UInt16, parameters: CreditBasedChannelParameters, count: Int,
                                         token: UInt64, now: Duration) -> [SignalingAction]? {
        guard (1...LESignalingCommand.CreditBasedConnectionRequest.maximumChannels).contains(count),
              parameters.isValidEnhanced else { return nil }
        let cids = creditBased.freeCIDs(count)
        guard cids.count == count else { return nil }
        let id = nextIdentifier()
        creditBased.enhancedConnects[id] = PendingEnhancedConnect(
            token: token, localCIDs: cids, spsm: spsm, parameters: parameters, deadline: now + Self.creditBasedRequestTimeout)
        let request = LESignalingCommand.CreditBasedConnectionRequest(
            spsm: spsm, mtu: parameters.mtu, mps: parameters.mps, initialCredits: parameters.initialCredits, sourceCIDs: cids)
        return [.send(LESignalingCommand.creditBasedConnectionRequest(identifier: id, request).encode())]
    }

    /// Why a reconfiguration of ours cannot be asked for, checked before anything is sent.
    public enum ReconfigureProblem: Error, Sendable, Hashable {
        /// No CID, more than five, or one twice.
        case channelCount
        /// A CID is not an open enhanced credit-based channel of the link.
        case notEnhanced(cid: UInt16)
        /// MTU below 64, or MPS outside 64...65533.
        case outOfRange
        /// The MTU would get smaller on channel `cid` (§4.27: never allowed).
        case mtuReduction(cid: UInt16)
        /// The MPS would get smaller on one of several channels (§4.27).
        case mpsReduction(cid: UInt16)
        /// A reconfiguration of channel `cid` is already waiting for its answer.
        case busy(cid: UInt16)
    }

    /// Announces a new MTU and MPS for our enhanced channels `cids` (Credit Based Reconfigure
    /// Request, §4.27). The larger MTU (and MPS) apply to what we accept at once, so whatever the
    /// peer sends after its response fits; a smaller MPS (one channel only) applies once the peer
    /// has accepted. The answer comes as `.reconfigured(token:)` or `.reconfigureFailed(token:)`;
    /// a refusal puts the old values back, and 30 s without an answer disconnects the channels,
    /// since which values the peer uses is then unknown.
    public mutating func reconfigure(cids: [UInt16], mtu: UInt16, mps: UInt16, token: UInt64,
                                     now: Duration) throws(ReconfigureProblem) -> [SignalingAction] {
        guard (1...LESignalingCommand.CreditBasedReconfigureRequest.maximumChannels).contains(cids.count),
              Set(cids).count == cids.count else { throw .channelCount }
        guard CreditBasedChannelParameters(mtu: mtu, mps: mps, initialCredits: 0).isValidEnhanced else { throw .outOfRange }
        var previous: [UInt16: CreditBasedChannelParameters] = [:]
        for cid in cids {
            guard let c = creditBased.channels[cid], c.mode == .enhancedCreditBased else { throw .notEnhanced(cid: cid) }
            guard mtu >= c.local.mtu else { throw .mtuReduction(cid: cid) }
            guard cids.count == 1 || mps >= c.local.mps else { throw .mpsReduction(cid: cid) }
            guard !creditBased.reconfigures.values.contains(where: { $0.cids.contains(cid) }) else { throw .busy(cid: cid) }
            previous[cid] = c.local
        }
        for cid in cids {
            let old = creditBased.channels[cid]!.local
            creditBased.channels[cid]!.local = CreditBasedChannelParameters(
                mtu: mtu, mps: max(mps, old.mps), initialCredits: old.initialCredits)
        }
        let id = nextIdentifier()
        creditBased.reconfigures[id] = PendingReconfigure(
            token: token, cids: cids, previous: previous, mtu: mtu, mps: mps, deadline: now + Self.creditBasedRequestTimeout)
        let request = LESignalingCommand.CreditBasedReconfigureRequest(mtu: mtu, mps: mps, destinationCIDs: cids)
        return [.send(LESignalingCommand.creditBasedReconfigureRequest(identifier: id, request).encode())]
    }

    /// Tokens of our enhanced requests and reconfigurations still waiting for an answer.
    public var pendingEnhancedTokens: [UInt64] {
        (creditBased.enhancedConnects.values.filter { !$0.expired }.map(\.token)
            + creditBased.reconfigures.values.filter { !$0.reported }.map(\.token)).sorted()
    }

    // MARK: - Timeouts

    /// RTX (§6.2.1) for the enhanced requests: a connect is reported failed and keeps its CIDs
    /// another 30 s; a reconfiguration disconnects its channels.
    mutating func expireEnhanced(now: Duration) -> [SignalingAction] {
        var actions: [SignalingAction] = []
        for id in creditBased.enhancedConnects.keys.sorted() {
            guard let c = creditBased.enhancedConnects[id], c.deadline <= now else { continue }
            if c.expired {
                creditBased.enhancedConnects[id] = nil
                continue
            }
            creditBased.enhancedConnects[id]!.expired = true
            creditBased.enhancedConnects[id]!.deadline = now + Self.creditBasedRequestTimeout
            actions.append(.channel(.connectFailed(token: c.token, .timeout)))
        }
        for id in creditBased.reconfigures.keys.sorted() {
            guard let r = creditBased.reconfigures[id], r.deadline <= now else { continue }
            creditBased.reconfigures[id] = nil
            guard !r.reported else { continue }
            for cid in r.cids { actions += close(cid, error: .timeout, now: now) }
            actions.append(.channel(.reconfigureFailed(token: r.token, .timeout)))
        }
        return actions
    }

    // MARK: - Signaling commands

    /// Handles the enhanced commands (§4.25–§4.28) and a Command Reject of our enhanced
    /// requests; nil for anything else.
    mutating func receiveEnhanced(_ command: LESignalingCommand, context: CreditBasedContext) -> [SignalingAction]? {
        switch command {
        case let .creditBasedConnectionRequest(id, request):
            return acceptEnhanced(request, identifier: id, context: context)
        case let .creditBasedConnectionResponse(id, response):
            guard let pending = creditBased.enhancedConnects.removeValue(forKey: id) else { return [] }
            if Self.pendingResults.contains(response.result) {
                // The final answer follows under the same identifier. A request that already
                // timed out keeps waiting for it too: what that answer opens must be closed.
                creditBased.enhancedConnects[id] = pending
                return []
            }
            return connectedEnhanced(pending, response, now: context.now)
        case let .creditBasedReconfigureRequest(id, request):
            return acceptReconfigure(request, identifier: id)
        case let .creditBasedReconfigureResponse(id, result):
            guard let pending = creditBased.reconfigures.removeValue(forKey: id) else { return [] }
            return reconfigureAnswered(pending, result == .success ? nil : .reconfigureRefused(result))
        case let .commandReject(id, _):
            if let pending = creditBased.enhancedConnects.removeValue(forKey: id) {
                return pending.expired ? [] : [.channel(.connectFailed(token: pending.token, .rejected))]
            }
            if let pending = creditBased.reconfigures.removeValue(forKey: id) {
                return reconfigureAnswered(pending, .rejected)
            }
            return nil
        default:
            return nil
        }
    }

    /// Answers a peer's Credit Based Connection Request (§4.25, results §4.26): the whole
    /// request is refused for a CID count outside 1...5, parameters below the mode's minimum,
    /// an SPSM nobody listens on (in this mode) or security the link lacks; otherwise each
    /// Source CID is accepted or refused on its own (not dynamic, already allocated, or no
    /// local CID left), the response's result naming the first refusal, if any. The response
    /// lists one Destination CID per Source CID, 0x0000 for each refused.
    private mutating func acceptEnhanced(_ q: LESignalingCommand.CreditBasedConnectionRequest, identifier: UInt8,
                                         context: CreditBasedContext) -> [SignalingAction] {
        typealias R = LESignalingCommand.CreditBasedConnectionResult
        func respond(_ result: R, _ cids: [UInt16], _ ours: CreditBasedChannelParameters?) -> SignalingAction {
            let response = LESignalingCommand.CreditBasedConnectionResponse(
                mtu: ours?.mtu ?? 0, mps: ours?.mps ?? 0, initialCredits: ours?.initialCredits ?? 0, result: result, destinationCIDs: cids)
            return .send(LESignalingCommand.creditBasedConnectionResponse(identifier: identifier, response).encode())
        }
        let refuseAll = { (result: R) -> [SignalingAction] in
            [respond(result, Array(repeating: 0, count: min(q.sourceCIDs.count, LESignalingCommand.CreditBasedConnectionRequest.maximumChannels)), nil)]
        }
        guard (1...LESignalingCommand.CreditBasedConnectionRequest.maximumChannels).contains(q.sourceCIDs.count) else {
            return refuseAll(.invalidParameters)
        }
        let remote = CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: q.initialCredits)
        guard remote.isValidEnhanced else { return refuseAll(.unacceptableParameters) }
        guard (0x0001...0x00FF).contains(q.spsm), let listener = context.listeners[q.spsm],
              listener.modes.contains(.enhancedCreditBased) else { return refuseAll(.spsmNotSupported) }
        if let refusal = listener.security.refusal(for: context.security) { return refuseAll(refusal) }

        let ours = listener.parameters.raisedToEnhancedMinimum
        var result = R.success
        var destinationCIDs: [UInt16] = []
        var opened: [SignalingAction] = []
        for (index, source) in q.sourceCIDs.enumerated() {
            var refusal: R?
            if !L2CAPChannel.dynamicRange.contains(source) {
                refusal = .invalidSourceCID
            } else if creditBased.channels.values.contains(where: { $0.remoteCID == source })
                        || creditBased.disconnects.values.contains(where: { $0.remoteCID == source })
                        || q.sourceCIDs[..<index].contains(source) {
                refusal = .sourceCIDAlreadyAllocated
            }
            guard refusal == nil, let cid = creditBased.freeCID() else {
                if result == .success { result = refusal ?? .noResourcesAvailable }
                destinationCIDs.append(0)
                continue
            }
            var channel = CreditBasedChannel(spsm: q.spsm, localCID: cid, remoteCID: source, local: ours, remote: remote)
            channel.mode = .enhancedCreditBased
            creditBased.channels[cid] = channel
            destinationCIDs.append(cid)
            opened.append(.channel(.opened(info(channel)!)))
        }
        // The response goes first, so nothing is sent on a channel before the peer knows it.
        return [respond(result, destinationCIDs, opened.isEmpty ? nil : ours)] + opened
    }

    /// The peer answered our enhanced request: opens the channels it accepted. A channel whose
    /// Destination CID is unusable (not dynamic, already a remote CID of the link) or whose
    /// parameters are out of range is disconnected again (§4.6) and counts as refused.
    private mutating func connectedEnhanced(_ pending: PendingEnhancedConnect, _ r: LESignalingCommand.CreditBasedConnectionResponse,
                                            now: Duration) -> [SignalingAction] {
        let accepting = Self.partialResults.contains(r.result)
        guard !pending.expired else {
            // Too late: close whatever it opened.
            guard accepting else { return [] }
            return zip(pending.localCIDs, r.destinationCIDs).compactMap { local, remote in
                L2CAPChannel.dynamicRange.contains(remote) ? disconnectUnopened(local: local, remote: remote, now: now) : nil
            }
        }
        guard accepting else { return [.channel(.connectFailed(token: pending.token, .refused(r.result)))] }
        // Bumble 0.0.236 refuses some results ("source CID already allocated", "insufficient
        // resources") with no Destination CID at all: nothing was opened.
        guard !r.destinationCIDs.isEmpty else {
            return [.channel(.connectFailed(token: pending.token, .refused(r.result == .success ? .noResourcesAvailable : r.result)))]
        }
        var actions: [SignalingAction] = []
        var problem: String?
        // A list of the wrong length cannot be matched to our CIDs: none of it is kept.
        let broken = r.destinationCIDs.count != pending.localCIDs.count
        if broken { problem = "\(r.destinationCIDs.count) destination CIDs for \(pending.localCIDs.count) requested" }
        let remote = CreditBasedChannelParameters(mtu: r.mtu, mps: r.mps, initialCredits: r.initialCredits)
        var opened: [CreditBasedChannelInfo] = []
        var seen: Set<UInt16> = []
        for (local, dcid) in zip(pending.localCIDs, r.destinationCIDs) where dcid != 0 {
            guard L2CAPChannel.dynamicRange.contains(dcid) else {
                problem = problem ?? "destination CID 0x\(String(dcid, radix: 16)) is not a dynamic CID"
                continue
            }
            // The peer's CID stays taken until it answers our Disconnection Request (§4.6).
            let inUse = seen.contains(dcid) || creditBased.channels.values.contains { $0.remoteCID == dcid }
                || creditBased.disconnects.values.contains { $0.remoteCID == dcid }
            seen.insert(dcid)
            guard !broken, !inUse, remote.isValidEnhanced else {
                if problem == nil {
                    problem = inUse ? "destination CID 0x\(String(dcid, radix: 16)) is already in use"
                        : "MTU \(r.mtu) / MPS \(r.mps) out of range for the enhanced mode"
                }
                actions.append(disconnectUnopened(local: local, remote: dcid, now: now))
                continue
            }
            var channel = CreditBasedChannel(spsm: pending.spsm, localCID: local, remoteCID: dcid, local: pending.parameters, remote: remote)
            channel.mode = .enhancedCreditBased
            creditBased.channels[local] = channel
            opened.append(info(channel)!)
        }
        if opened.isEmpty {
            // A success that opened nothing reads as a lack of resources.
            let error: L2CAPChannelError = problem.map { .invalidResponse($0) } ?? .refused(r.result == .success ? .noResourcesAvailable : r.result)
            actions.append(.channel(.connectFailed(token: pending.token, error)))
        } else {
            // A channel the peer botched counts as refused; the others are good.
            let result = opened.count < pending.localCIDs.count && r.result == .success ? .noResourcesAvailable : r.result
            actions.append(.channel(.enhancedConnected(token: pending.token, opened, result: result)))
        }
        return actions
    }

    /// A Disconnection Request for an end the peer opened that we do not keep (§4.6).
    private mutating func disconnectUnopened(local: UInt16, remote: UInt16, now: Duration) -> SignalingAction {
        let id = nextIdentifier()
        creditBased.disconnects[id] = .init(localCID: local, remoteCID: remote, deadline: now + Self.creditBasedRequestTimeout)
        return .send(LESignalingCommand.disconnectionRequest(identifier: id, destinationCID: remote, sourceCID: local).encode())
    }

    /// Answers a peer's Credit Based Reconfigure Request (§4.27, results §4.28). Nothing
    /// changes unless every check passes: 1...5 CIDs, each an enhanced channel the peer owns
    /// (its CID is our remote CID), MTU ≥ 64 and MPS 64...65533, no MTU smaller than before,
    /// and no smaller MPS when more than one channel is named. Then the new values are the
    /// peer's for those channels and the K-frames still queued for them are cut again.
    private mutating func acceptReconfigure(_ q: LESignalingCommand.CreditBasedReconfigureRequest, identifier: UInt8) -> [SignalingAction] {
        typealias R = LESignalingCommand.CreditBasedReconfigureResult
        func respond(_ result: R) -> SignalingAction {
            .send(LESignalingCommand.creditBasedReconfigureResponse(identifier: identifier, result: result).encode())
        }
        guard (1...LESignalingCommand.CreditBasedReconfigureRequest.maximumChannels).contains(q.destinationCIDs.count) else {
            return [respond(.unacceptableParameters)]
        }
        var cids: [UInt16] = []
        for remoteCID in q.destinationCIDs {
            guard let cid = creditBased.channels.first(where: { $0.value.remoteCID == remoteCID && $0.value.mode == .enhancedCreditBased })?.key,
                  !cids.contains(cid) else { return [respond(.invalidDestinationCID)] }
            cids.append(cid)
        }
        guard CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: 0).isValidEnhanced else {
            return [respond(.unacceptableParameters)]
        }
        for cid in cids where q.mtu < creditBased.channels[cid]!.remote.mtu { return [respond(.mtuReductionNotAllowed)] }
        if cids.count > 1 {
            for cid in cids where q.mps < creditBased.channels[cid]!.remote.mps { return [respond(.mpsReductionNotAllowed)] }
        }
        var infos: [CreditBasedChannelInfo] = []
        for cid in cids {
            let old = creditBased.channels[cid]!.remote
            creditBased.channels[cid]!.remote = CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: old.initialCredits)
            if q.mps != old.mps { creditBased.channels[cid]!.resegmentOutbound(mps: q.mps) }
            infos.append(info(creditBased.channels[cid])!)
        }
        return [respond(.success), .channel(.peerReconfigured(infos))]
    }

    /// Channel `cid` closed (either side, or an error): no reconfiguration of ours may touch it
    /// again, since a new channel may get its CID before the answer or the timeout comes. A
    /// request left without channels is reported failed now and kept only to take its answer.
    mutating func forgetReconfigurations(of cid: UInt16) -> [SignalingAction] {
        var actions: [SignalingAction] = []
        for id in creditBased.reconfigures.keys.sorted() {
            guard var r = creditBased.reconfigures[id], let index = r.cids.firstIndex(of: cid) else { continue }
            r.cids.remove(at: index)
            if r.cids.isEmpty && !r.reported {
                r.reported = true
                actions.append(.channel(.reconfigureFailed(token: r.token, .closed)))
            }
            creditBased.reconfigures[id] = r
        }
        return actions
    }

    /// Our reconfiguration was answered: success (`error` nil) makes a smaller MPS ours too;
    /// anything else puts back the parameters the channels had.
    private mutating func reconfigureAnswered(_ pending: PendingReconfigure, _ error: L2CAPChannelError?) -> [SignalingAction] {
        guard !pending.reported else { return [] }
        var infos: [CreditBasedChannelInfo] = []
        for cid in pending.cids where creditBased.channels[cid] != nil {
            if error == nil {
                let old = creditBased.channels[cid]!.local
                creditBased.channels[cid]!.local = CreditBasedChannelParameters(mtu: pending.mtu, mps: pending.mps, initialCredits: old.initialCredits)
            } else if let previous = pending.previous[cid] {
                creditBased.channels[cid]!.local = previous
            }
            infos.append(info(creditBased.channels[cid])!)
        }
        if let error { return [.channel(.reconfigureFailed(token: pending.token, error))] }
        return [.channel(.reconfigured(token: pending.token, infos))]
    }
}

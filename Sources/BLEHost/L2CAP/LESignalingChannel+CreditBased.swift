import BLEWire

/// What a listener on an SPSM asks of a link before it accepts a channel, checked against the
/// link's `LinkSecurity` when the LE Credit Based Connection Request arrives (Core spec Vol 3
/// Part A §4.22, §4.23 results 0x0005–0x0008; Vol 3 Part C §10.2 security levels).
public struct L2CAPSecurityRequirement: Sendable, Hashable, CustomStringConvertible {
    /// The lowest security level the link must have.
    public var level: SecurityLevel
    /// The shortest encryption key accepted, in octets (7...16), when `level` needs encryption.
    public var minimumKeySize: Int
    /// Whether the application must have authorized the peer.
    public var authorization: Bool

    /// A requirement of `level` or better, keys of at least `minimumKeySize` octets, and the
    /// application's authorization when `authorization`.
    public init(level: SecurityLevel = .none, minimumKeySize: Int = 7, authorization: Bool = false) {
        self.level = level
        self.minimumKeySize = minimumKeySize
        self.authorization = authorization
    }

    /// No security: any link.
    public static let none = L2CAPSecurityRequirement()

    /// The refusal a link at `security` gets, or nil when it meets the requirement. An
    /// unencrypted link gets "insufficient encryption" when the peer is bonded (it could just
    /// encrypt) and "insufficient authentication" otherwise (it must pair first), as ATT does
    /// (Vol 3 Part F §4); an encrypted one with too weak a key "insufficient authentication",
    /// with too short a key "encryption key size too short".
    public func refusal(for security: LinkSecurity) -> LESignalingCommand.CreditBasedConnectionResult? {
        typealias R = LESignalingCommand.CreditBasedConnectionResult
        if level > .none {
            guard security.encrypted else { return security.hasLongTermKey ? R.insufficientEncryption : R.insufficientAuthentication }
            let have = SecurityLevel.of(authenticated: security.authenticated, secureConnections: security.secureConnections,
                                        keySize: security.keySize)
            if have < level { return R.insufficientAuthentication }
            if security.keySize < minimumKeySize { return R.encryptionKeySizeTooShort }
        }
        if authorization && !security.authorized { return R.insufficientAuthorization }
        return nil
    }

    /// E.g. `level 2 (unauthenticated encryption)`.
    public var description: String {
        "level \(level)" + (authorization ? ", authorization" : "")
    }
}

/// A listener on one SPSM: the channel parameters it offers and the security it requires.
public struct CreditBasedListener: Sendable, Hashable {
    /// Our MTU, MPS and initial credits for every channel accepted (§4.23).
    public var parameters: CreditBasedChannelParameters
    /// What the link must have before a channel is accepted.
    public var security: L2CAPSecurityRequirement
    /// The modes whose requests are accepted (both unless told otherwise); a request in another
    /// mode is refused with "SPSM not supported". In the enhanced mode, `parameters` below the
    /// mode's minimum MTU/MPS of 64 are offered as 64 (§4.26).
    public var modes: Set<CreditBasedMode> = [.leCreditBased, .enhancedCreditBased]

    /// A listener offering `parameters` to links that meet `security`.
    public init(parameters: CreditBasedChannelParameters, security: L2CAPSecurityRequirement = .none) {
        self.parameters = parameters
        self.security = security
    }
}

/// What is known of an open LE credit-based channel (Vol 3 Part A §4.22, §4.23).
public struct CreditBasedChannelInfo: Sendable, Hashable, CustomStringConvertible {
    /// The SPSM the channel was opened on.
    public var spsm: UInt16
    /// Our endpoint's CID: where the peer sends.
    public var localCID: UInt16
    /// The peer's endpoint's CID: where we send.
    public var remoteCID: UInt16
    /// Our MTU, MPS and initial credits.
    public var local: CreditBasedChannelParameters
    /// The peer's MTU, MPS and initial credits.
    public var remote: CreditBasedChannelParameters
    /// The mode the channel was opened in (§4.22 or §4.25).
    public var mode: CreditBasedMode = .leCreditBased

    /// The channel as both sides' request and response described it.
    public init(spsm: UInt16, localCID: UInt16, remoteCID: UInt16, local: CreditBasedChannelParameters, remote: CreditBasedChannelParameters) {
        self.spsm = spsm
        self.localCID = localCID
        self.remoteCID = remoteCID
        self.local = local
        self.remote = remote
    }

    /// E.g. `PSM 0x0080, CID 0x0040 → 0x0041, MTU 512/512, MPS 247/247, credits 10/10` (ours/peer's).
    public var description: String {
        func hex(_ v: UInt16) -> String {
            let h = String(v, radix: 16, uppercase: true)
            return "0x" + String(repeating: "0", count: max(0, 4 - h.count)) + h
        }
        return "PSM \(hex(spsm)), CID \(hex(localCID)) → \(hex(remoteCID)), MTU \(local.mtu)/\(remote.mtu), "
            + "MPS \(local.mps)/\(remote.mps), credits \(local.initialCredits)/\(remote.initialCredits)"
            + (mode == .enhancedCreditBased ? ", enhanced" : "")
    }
}

/// What happens on a link's LE credit-based channels, for the owner to act on.
public enum CreditBasedChannelEvent: Sendable, Hashable {
    /// A peer's request was accepted on a listener's SPSM; the channel is open.
    case opened(CreditBasedChannelInfo)
    /// Our request `token` was accepted; the channel is open.
    case connected(token: UInt64, CreditBasedChannelInfo)
    /// Our request `token` failed.
    case connectFailed(token: UInt64, L2CAPChannelError)
    /// A whole SDU arrived on our channel `cid`. Call `channelConsumed(cid:)` once the
    /// application has taken it, so its credit can go back.
    case sdu(cid: UInt16, [UInt8])
    /// The last K-frames of these queued SDUs were handed out.
    case sent(cid: UInt16, tokens: [UInt64])
    /// The channel is closed: by either side's Disconnection Request (`error` nil), or by us
    /// after the peer broke a rule (`error`). `unsent` are SDUs that never went out whole.
    case closed(cid: UInt16, error: L2CAPChannelError?, unsent: [UInt64])
    /// Our enhanced request `token` opened these channels (§4.26); fewer than asked for when
    /// the peer refused some, `result` saying why. A request that opened none ends in
    /// `.connectFailed` instead.
    case enhancedConnected(token: UInt64, [CreditBasedChannelInfo], result: LESignalingCommand.CreditBasedConnectionResult)
    /// Our Credit Based Reconfigure Request `token` succeeded; the channels as they are now (§4.28).
    case reconfigured(token: UInt64, [CreditBasedChannelInfo])
    /// Our reconfiguration `token` failed: refused (the channels keep their old MTU and MPS),
    /// rejected, or timed out (then its channels were disconnected).
    case reconfigureFailed(token: UInt64, L2CAPChannelError)
    /// The peer reconfigured these channels of ours: their `remote` MTU and MPS are new (§4.27).
    case peerReconfigured([CreditBasedChannelInfo])
}

/// A link's LE credit-based channels and the signaling requests of ours that wait for an answer.
struct CreditBasedChannelSet: Sendable {
    struct PendingConnect: Sendable {
        let token: UInt64
        let localCID: UInt16
        let spsm: UInt16
        let parameters: CreditBasedChannelParameters
        var deadline: Duration
        /// The 30 s ran out and the request was reported failed; its identifier and CID stay
        /// taken for another 30 s so that a late success can be disconnected (§4.6).
        var expired = false
    }

    struct PendingDisconnect: Sendable {
        let localCID: UInt16
        let remoteCID: UInt16
        let deadline: Duration
    }

    var channels: [UInt16: CreditBasedChannel] = [:]
    var connects: [UInt8: PendingConnect] = [:]
    var disconnects: [UInt8: PendingDisconnect] = [:]
    /// Our enhanced-mode requests (`LESignalingChannel+Enhanced.swift`).
    var enhancedConnects: [UInt8: PendingEnhancedConnect] = [:]
    var reconfigures: [UInt8: PendingReconfigure] = [:]

    /// The lowest dynamic CID not in use, pending or closing (Vol 3 Part A §2.1).
    func freeCID() -> UInt16? { freeCIDs(1).first }

    /// The `count` lowest dynamic CIDs not in use, pending or closing; fewer when there are not.
    func freeCIDs(_ count: Int) -> [UInt16] {
        Array(L2CAPChannel.dynamicRange.lazy.filter { cid in
            channels[cid] == nil && !connects.values.contains { $0.localCID == cid }
                && !disconnects.values.contains { $0.localCID == cid }
                && !enhancedConnects.values.contains { $0.localCIDs.contains(cid) }
        }.prefix(count))
    }

    var nextDeadline: Duration? {
        // Asked after every batch of frames the host receives; almost always nothing is pending.
        if connects.isEmpty && disconnects.isEmpty && enhancedConnects.isEmpty && reconfigures.isEmpty { return nil }
        var next: Duration?
        for c in connects.values { next = next.map { min($0, c.deadline) } ?? c.deadline }
        for d in disconnects.values { next = next.map { min($0, d.deadline) } ?? d.deadline }
        for c in enhancedConnects.values { next = next.map { min($0, c.deadline) } ?? c.deadline }
        for r in reconfigures.values { next = next.map { min($0, r.deadline) } ?? r.deadline }
        return next
    }
}

extension LESignalingChannel {
    /// The signaling response timeout (RTX) for credit-based requests: 30 s. Vol 3 Part A §6.2.1.
    public static let creditBasedRequestTimeout: Duration = .seconds(30)

    /// The channels open on this link.
    public var openChannels: [CreditBasedChannelInfo] {
        creditBased.channels.keys.sorted().compactMap { info(creditBased.channels[$0]) }
    }

    /// The state of our channel `cid`, if open (for tests and diagnostics).
    public func channel(_ cid: UInt16) -> CreditBasedChannel? { creditBased.channels[cid] }

    /// The earliest response deadline of our outstanding credit-based requests.
    public var creditBasedDeadline: Duration? { creditBased.nextDeadline }

    func info(_ c: CreditBasedChannel?) -> CreditBasedChannelInfo? {
        guard let c else { return nil }
        var info = CreditBasedChannelInfo(spsm: c.spsm, localCID: c.localCID, remoteCID: c.remoteCID, local: c.local, remote: c.remote)
        info.mode = c.mode
        return info
    }

    /// Asks the peer for a channel on `spsm` (LE Credit Based Connection Request, Vol 3 Part A
    /// §4.22); the answer arrives as `.connected(token:)` or `.connectFailed(token:)`, the latter
    /// also after 30 s without one. Returns nil when every dynamic CID is taken.
    public mutating func connect(spsm: UInt16, parameters: CreditBasedChannelParameters, token: UInt64, now: Duration) -> [SignalingAction]? {
        guard let cid = creditBased.freeCID() else { return nil }
        let id = nextIdentifier()
        creditBased.connects[id] = .init(token: token, localCID: cid, spsm: spsm, parameters: parameters,
                                         deadline: now + Self.creditBasedRequestTimeout)
        let request = LESignalingCommand.LECreditBasedConnectionRequest(
            spsm: spsm, sourceCID: cid, mtu: parameters.mtu, mps: parameters.mps, initialCredits: parameters.initialCredits)
        return [.send(LESignalingCommand.leCreditBasedConnectionRequest(identifier: id, request).encode())]
    }

    /// Queues an SDU on our channel `cid` and returns the K-frames its credits allow now; nil
    /// when the channel is not open or the SDU is longer than the peer's MTU. `token` comes back
    /// in `.sent` once the SDU has gone out whole. Vol 3 Part A §3.4.3, §10.2.
    public mutating func send(_ sdu: [UInt8], cid: UInt16, token: UInt64) -> [SignalingAction]? {
        guard creditBased.channels[cid] != nil, creditBased.channels[cid]!.enqueue(sdu, token: token) else { return nil }
        return release(cid)
    }

    /// Takes back the SDU `token` queued on `cid` if none of it has gone out yet (a cancelled
    /// send); false when it has started or is not queued. §3.4.3.
    public mutating func withdraw(token: UInt64, cid: UInt16) -> Bool {
        creditBased.channels[cid]?.withdraw(token: token) ?? false
    }

    /// The application took one SDU of `cid`: gives credits back when due (LE Flow Control
    /// Credit, §4.24).
    public mutating func channelConsumed(cid: UInt16) -> [SignalingAction] {
        guard creditBased.channels[cid] != nil else { return [] }
        creditBased.channels[cid]!.consumed()
        return grant(cid)
    }

    /// Closes our channel `cid` (Disconnection Request, §4.6): the channel is closed at once
    /// (`.closed` with no error); the CID is reused once the peer answers or 30 s pass.
    public mutating func disconnect(cid: UInt16, now: Duration) -> [SignalingAction] {
        guard creditBased.channels[cid] != nil else { return [] }
        return close(cid, error: nil, now: now)
    }

    /// One K-frame received on our dynamic channel `cid` (§3.4.3). A violation disconnects it.
    public mutating func receiveFrame(_ payload: [UInt8], cid: UInt16, now: Duration) -> [SignalingAction] {
        guard creditBased.channels[cid] != nil else { return [] }
        let sdu: [UInt8]?
        do {
            sdu = try creditBased.channels[cid]!.receive(payload)
        } catch {
            return close(cid, error: error, now: now)
        }
        var actions = grant(cid)
        if let sdu { actions.append(.channel(.sdu(cid: cid, sdu))) }
        return actions
    }

    /// Fails the requests whose response did not come within 30 s (RTX, §6.2.1). A failed
    /// connect keeps its identifier and CID another 30 s, for a late answer to be disconnected.
    public mutating func expireCreditBased(now: Duration) -> [SignalingAction] {
        var actions: [SignalingAction] = []
        for (id, c) in creditBased.connects where c.deadline <= now {
            if c.expired {
                creditBased.connects[id] = nil
                continue
            }
            var held = c
            held.expired = true
            held.deadline = now + Self.creditBasedRequestTimeout
            creditBased.connects[id] = held
            actions.append(.channel(.connectFailed(token: c.token, .timeout)))
        }
        for (id, d) in creditBased.disconnects where d.deadline <= now {
            creditBased.disconnects[id] = nil
        }
        actions += expireEnhanced(now: now)
        return actions
    }

    /// Every channel of the link, for when the link goes down: their CIDs and queued SDUs.
    public mutating func dropAllChannels() -> [(cid: UInt16, unsent: [UInt64])] {
        let cids = creditBased.channels.keys.sorted()
        defer { creditBased = CreditBasedChannelSet() }
        return cids.map { ($0, creditBased.channels[$0]!.dropOutbound()) }
    }

    /// Tokens of our requests still waiting for an answer.
    public var pendingConnectTokens: [UInt64] { creditBased.connects.values.filter { !$0.expired }.map(\.token).sorted() }

    // MARK: - Signaling commands

    /// Handles the credit-based commands (§4.6, §4.7, §4.22–§4.24) and Command Reject of our
    /// requests; nil for any other command.
    mutating func receiveCreditBased(_ command: LESignalingCommand, context: CreditBasedContext) -> [SignalingAction]? {
        if let actions = receiveEnhanced(command, context: context) { return actions }
        switch command {
        case let .leCreditBasedConnectionRequest(id, request):
            return accept(request, identifier: id, context: context)

        case let .leCreditBasedConnectionResponse(id, response):
            guard let pending = creditBased.connects.removeValue(forKey: id) else { return [] }
            guard !pending.expired else { return closeLate(pending, response, now: context.now) }
            return connected(pending, response, now: context.now)

        case let .flowControlCredit(_, remoteCID, credits):
            // The CID is the sender's own (our remote CID). Credits for no open channel, or 0,
            // are ignored (§4.24).
            guard credits > 0, let cid = creditBased.channels.first(where: { $0.value.remoteCID == remoteCID })?.key else { return [] }
            do {
                try creditBased.channels[cid]!.addSendCredits(credits)
            } catch {
                return close(cid, error: error, now: context.now)
            }
            return release(cid)

        case let .disconnectionRequest(id, destination, source):
            let response = LESignalingCommand.disconnectionResponse(identifier: id, destinationCID: destination, sourceCID: source).encode()
            if let c = creditBased.channels[destination], c.remoteCID == source {
                let unsent = creditBased.channels[destination]!.dropOutbound()
                creditBased.channels[destination] = nil
                return [.send(response), .channel(.closed(cid: destination, error: nil, unsent: unsent))]
                    + forgetReconfigurations(of: destination)
            }
            if creditBased.disconnects.values.contains(where: { $0.localCID == destination && $0.remoteCID == source }) {
                // Both sides closed at once: answer theirs too.
                return [.send(response)]
            }
            // §4.6: a destination CID of ours with another source CID is silently discarded.
            if creditBased.channels[destination] != nil || creditBased.disconnects.values.contains(where: { $0.localCID == destination }) {
                return []
            }
            // §4.6: the destination CID is not one of ours (Command Reject "invalid CID").
            return nil

        case let .disconnectionResponse(id, destination, source):
            if let d = creditBased.disconnects[id], d.localCID == source, d.remoteCID == destination {
                creditBased.disconnects[id] = nil
            }
            return []

        case let .commandReject(id, _):
            guard let pending = creditBased.connects.removeValue(forKey: id) else {
                creditBased.disconnects[id] = nil
                return nil
            }
            return pending.expired ? [] : [.channel(.connectFailed(token: pending.token, .rejected))]

        default:
            return nil
        }
    }

    /// Answers a peer's LE Credit Based Connection Request (§4.22, results §4.23).
    private mutating func accept(_ q: LESignalingCommand.LECreditBasedConnectionRequest, identifier: UInt8, context: CreditBasedContext) -> [SignalingAction] {
        typealias R = LESignalingCommand.CreditBasedConnectionResult
        func refuse(_ result: R) -> [SignalingAction] {
            [.send(LESignalingCommand.leCreditBasedConnectionResponse(identifier: identifier, .init(
                destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: result)).encode())]
        }
        let remote = CreditBasedChannelParameters(mtu: q.mtu, mps: q.mps, initialCredits: q.initialCredits)
        guard remote.isValid else { return refuse(.unacceptableParameters) }
        guard (0x0001...0x00FF).contains(q.spsm), let listener = context.listeners[q.spsm],
              listener.modes.contains(.leCreditBased) else { return refuse(.spsmNotSupported) }
        if let refusal = listener.security.refusal(for: context.security) { return refuse(refusal) }
        guard L2CAPChannel.dynamicRange.contains(q.sourceCID) else { return refuse(.invalidSourceCID) }
        let taken = creditBased.channels.values.contains { $0.remoteCID == q.sourceCID }
            || creditBased.disconnects.values.contains { $0.remoteCID == q.sourceCID }
        guard !taken else { return refuse(.sourceCIDAlreadyAllocated) }
        guard let cid = creditBased.freeCID() else { return refuse(.noResourcesAvailable) }
        let channel = CreditBasedChannel(spsm: q.spsm, localCID: cid, remoteCID: q.sourceCID, local: listener.parameters, remote: remote)
        creditBased.channels[cid] = channel
        let response = LESignalingCommand.LECreditBasedConnectionResponse(
            destinationCID: cid, mtu: listener.parameters.mtu, mps: listener.parameters.mps,
            initialCredits: listener.parameters.initialCredits, result: .success)
        // The response goes first: the owner performs actions in order, so nothing is sent on
        // the channel before the peer knows it is open.
        return [.send(LESignalingCommand.leCreditBasedConnectionResponse(identifier: identifier, response).encode()),
                .channel(.opened(info(channel)!))]
    }

    private mutating func connected(_ pending: CreditBasedChannelSet.PendingConnect,
                                    _ r: LESignalingCommand.LECreditBasedConnectionResponse, now: Duration) -> [SignalingAction] {
        guard r.result == .success else { return [.channel(.connectFailed(token: pending.token, .refused(r.result)))] }
        let remote = CreditBasedChannelParameters(mtu: r.mtu, mps: r.mps, initialCredits: r.initialCredits)
        var problem: String?
        if !L2CAPChannel.dynamicRange.contains(r.destinationCID) {
            problem = "destination CID 0x\(String(r.destinationCID, radix: 16)) is not a dynamic CID"
        } else if creditBased.channels.values.contains(where: { $0.remoteCID == r.destinationCID }) {
            problem = "destination CID 0x\(String(r.destinationCID, radix: 16)) is already in use"
        } else if !remote.isValid {
            problem = "MTU \(r.mtu) / MPS \(r.mps) out of range"
        }
        if let problem {
            var actions: [SignalingAction] = []
            if L2CAPChannel.dynamicRange.contains(r.destinationCID) {
                // The peer opened its end: close it (§4.6).
                let id = nextIdentifier()
                creditBased.disconnects[id] = .init(localCID: pending.localCID, remoteCID: r.destinationCID,
                                                    deadline: now + Self.creditBasedRequestTimeout)
                actions.append(.send(LESignalingCommand.disconnectionRequest(
                    identifier: id, destinationCID: r.destinationCID, sourceCID: pending.localCID).encode()))
            }
            actions.append(.channel(.connectFailed(token: pending.token, .invalidResponse(problem))))
            return actions
        }
        let channel = CreditBasedChannel(spsm: pending.spsm, localCID: pending.localCID, remoteCID: r.destinationCID,
                                         local: pending.parameters, remote: remote)
        creditBased.channels[pending.localCID] = channel
        return [.channel(.connected(token: pending.token, info(channel)!))]
    }

    /// A response to a request that already timed out: a success opened the peer's end, which
    /// is closed again at once (§4.6); anything else needs nothing.
    private mutating func closeLate(_ pending: CreditBasedChannelSet.PendingConnect,
                                    _ r: LESignalingCommand.LECreditBasedConnectionResponse, now: Duration) -> [SignalingAction] {
        guard r.result == .success, L2CAPChannel.dynamicRange.contains(r.destinationCID) else { return [] }
        let id = nextIdentifier()
        creditBased.disconnects[id] = .init(localCID: pending.localCID, remoteCID: r.destinationCID,
                                            deadline: now + Self.creditBasedRequestTimeout)
        return [.send(LESignalingCommand.disconnectionRequest(
            identifier: id, destinationCID: r.destinationCID, sourceCID: pending.localCID).encode())]
    }

    /// Sends a Disconnection Request for `cid` and forgets the channel. §4.6.
    mutating func close(_ cid: UInt16, error: L2CAPChannelError?, now: Duration) -> [SignalingAction] {
        guard var c = creditBased.channels.removeValue(forKey: cid) else { return [] }
        let unsent = c.dropOutbound()
        let id = nextIdentifier()
        creditBased.disconnects[id] = .init(localCID: cid, remoteCID: c.remoteCID, deadline: now + Self.creditBasedRequestTimeout)
        return [
            .send(LESignalingCommand.disconnectionRequest(identifier: id, destinationCID: c.remoteCID, sourceCID: cid).encode()),
            .channel(.closed(cid: cid, error: error, unsent: unsent)),
        ] + forgetReconfigurations(of: cid)
    }

    mutating func release(_ cid: UInt16) -> [SignalingAction] {
        guard let remoteCID = creditBased.channels[cid]?.remoteCID else { return [] }
        let (frames, sent) = creditBased.channels[cid]!.release()
        var actions = frames.map { SignalingAction.frame(cid: remoteCID, $0) }
        if !sent.isEmpty { actions.append(.channel(.sent(cid: cid, tokens: sent))) }
        return actions
    }

    private mutating func grant(_ cid: UInt16) -> [SignalingAction] {
        guard let credits = creditBased.channels[cid]?.creditsToGrant() else { return [] }
        return [.send(LESignalingCommand.flowControlCredit(identifier: nextIdentifier(), channelID: cid, credits: credits).encode())]
    }
}

/// What the signaling channel needs from its owner to answer a connection request: the
/// listeners, the link's security now, and the time.
public struct CreditBasedContext: Sendable {
    /// Who accepts channels, by SPSM.
    public var listeners: [UInt16: CreditBasedListener]
    /// The link's security now.
    public var security: LinkSecurity
    /// The time now (for the 30 s response timeouts).
    public var now: Duration

    /// A context; the defaults listen on nothing, on an unencrypted link, at time zero.
    public init(listeners: [UInt16: CreditBasedListener] = [:], security: LinkSecurity = LinkSecurity(), now: Duration = .zero) {
        self.listeners = listeners
        self.security = security
        self.now = now
    }
}

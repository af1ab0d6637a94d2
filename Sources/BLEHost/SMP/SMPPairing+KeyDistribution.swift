import BLEWire

/// Phase 3, key distribution (Core spec Vol 3 Part H §2.4.3, §3.6): once the link is encrypted
/// with the STK or the Secure Connections LTK, the responder sends its keys, then the initiator
/// sends its own, each in the order of §3.6.1: Encryption Information and Central
/// Identification (legacy only: Secure Connections derives the LTK instead), Identity
/// Information and Identity Address Information, Signing Information.
extension SMPPairing {
    /// The key kinds each side gives in this pairing, as the Pairing Response settled them.
    private func distribution(_ s: SMPSession) -> (initiator: SMPKeyDistribution, responder: SMPKeyDistribution) {
        guard let responder = s.responder else { return ([], []) }
        var i = responder.initiatorKeyDistribution, r = responder.responderKeyDistribution
        if s.secureConnections {
            i.remove(.encryptionKey)
            r.remove(.encryptionKey)
        }
        return (i.subtracting(.linkKey), r.subtracting(.linkKey))
    }

    /// The PDU codes that make up a set of keys, in the order they travel.
    private static func codes(for kinds: SMPKeyDistribution) -> [SMPCode] {
        var c: [SMPCode] = []
        if kinds.contains(.encryptionKey) { c += [.encryptionInformation, .centralIdentification] }
        if kinds.contains(.identityKey) { c += [.identityInformation, .identityAddressInformation] }
        if kinds.contains(.signingKey) { c.append(.signingInformation) }
        return c
    }

    /// The link is encrypted with the new key.
    mutating func beginDistribution(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session else { return [] }
        let (initiatorKeys, responderKeys) = distribution(s)
        s.expected = Self.codes(for: role == .initiator ? responderKeys : initiatorKeys)
        session = s
        phase = .distributing
        touch(now)
        var actions: [SMPAction] = []
        if role == .responder { actions += try sendOwnKeys(responderKeys, now: now) }
        return actions + (try finishIfDone(now: now))
    }

    /// Sends our keys and records what we sent.
    private mutating func sendOwnKeys(_ kinds: SMPKeyDistribution, now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session else { return [] }
        var pdus: [SMPPDU] = []
        if kinds.contains(.encryptionKey) {
            // A fresh LTK per pairing, named by a random EDIV and Rand (§2.4.2.1, legacy).
            let ltk = Self.masked(try random(16), toSize: s.keySize)
            let ident = try random(10)
            let ediv = UInt16(ident[0]) | UInt16(ident[1]) << 8
            let rand = ident[2...].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            s.sent.longTermKey = ltk
            s.sent.ediv = ediv
            s.sent.rand = rand
            pdus += [.encryptionInformation(longTermKey: ltk), .centralIdentification(ediv: ediv, rand: rand)]
        }
        if kinds.contains(.identityKey) {
            s.sent.identityResolvingKey = identity.identityResolvingKey
            s.sent.identityAddress = identity.identityAddress
            pdus += [.identityInformation(identityResolvingKey: identity.identityResolvingKey),
                     .identityAddressInformation(identity.identityAddress)]
        }
        if kinds.contains(.signingKey) {
            s.sent.signatureKey = identity.signatureKey
            pdus.append(.signingInformation(signatureKey: identity.signatureKey))
        }
        session = s
        return pdus.map { send($0.encode(), now: now) }
    }

    mutating func receiveKey(_ pdu: SMPPDU, now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, phase == .distributing, let next = s.expected.first, next == pdu.code else {
            throw Abort(.unspecifiedReason, "unexpected \(pdu.code) (keys arrive in the order of §3.6.1, after encryption)")
        }
        s.expected.removeFirst()
        switch pdu {
        case let .encryptionInformation(ltk):
            // Only the negotiated size is ever used; keep no more of it (§2.3.4).
            s.received.longTermKey = Self.masked(ltk, toSize: s.keySize)
        case let .centralIdentification(ediv, rand):
            s.received.ediv = ediv
            s.received.rand = rand
        case let .identityInformation(irk):
            s.received.identityResolvingKey = irk
        case let .identityAddressInformation(address):
            // An identity is public or static random (§3.6.5); anything else cannot identify.
            guard address.type == .public || address.address.randomKind == .staticRandom else {
                throw Abort(.invalidParameters, "identity address \(address) is neither public nor static random")
            }
            s.received.identityAddress = address
        case let .signingInformation(csrk):
            s.received.signatureKey = csrk
        default:
            break
        }
        session = s
        touch(now)
        return try finishIfDone(now: now)
    }

    /// When every expected key is in: the initiator sends its own keys, then both sides finish.
    private mutating func finishIfDone(now: Duration) throws(Abort) -> [SMPAction] {
        guard let s = session, s.expected.isEmpty else { return [] }
        var actions: [SMPAction] = []
        if role == .initiator { actions += try sendOwnKeys(distribution(s).initiator, now: now) }
        guard let done = session, let linkKey = done.linkKey else { throw Abort(.unspecifiedReason, "no link key") }
        let outcome = SMPPairingOutcome(
            secureConnections: done.secureConnections, model: done.method.model, keySize: done.keySize,
            authenticated: done.method.model.isAuthenticated, bonded: done.bonding, linkKey: linkKey,
            secureConnectionsLongTermKey: done.secureConnections ? linkKey : nil,
            sent: done.sent, received: done.received)
        reset()
        actions.append(.completed(outcome))
        return actions
    }
}

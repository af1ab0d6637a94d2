import BLECrypto

/// LE Secure Connections, phase 2 (Core spec Vol 3 Part H §2.3.5.6): P-256 public keys (checked
/// to be on the curve before use), then authentication stage 1 — Just Works / Numeric
/// Comparison (Cb, Na, Nb, g2), Passkey Entry (20 rounds of f4 over the passkey's bits) or OOB —
/// then stage 2: the LTK and MacKey from f5 and the DHKey checks Ea/Eb from f6.
extension SMPPairing {
    mutating func beginSecureConnections(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session else { return [] }
        if s.method.model == .outOfBand, let local = outOfBand.local {
            s.keyPair = local.keyPair
        } else {
            s.keyPair = try crypto("P-256 key generation") { () throws(CryptoError) in try entropy.keyPair() }
        }
        session = s
        phase = .publicKey
        guard role == .initiator, let pair = s.keyPair else { return [] }
        return [send(publicKeyPDU(pair), now: now)]
    }

    private func publicKeyPDU(_ pair: P256KeyPair) -> [UInt8] {
        SMPPDU.pairingPublicKey(x: Array(pair.publicKeyX.reversed()), y: Array(pair.publicKeyY.reversed())).encode()
    }

    mutating func receivePublicKey(x: [UInt8], y: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, s.secureConnections, phase == .publicKey, s.peerPublicKeyX.isEmpty, let pair = s.keyPair else {
            throw Abort(.unspecifiedReason, "unexpected Pairing Public Key")
        }
        let px = Array(x.reversed()), py = Array(y.reversed())
        // An invalid point would let the peer learn bits of our private key (CVE-2018-5383).
        guard P256.isValidPublicKey(x: px, y: py) else {
            throw Abort(.dhKeyCheckFailed, "the peer's public key is not a point on P-256")
        }
        // A key with our own X coordinate (ours reflected, or the mirrored point (X, p − Y))
        // lets the sender reflect Passkey Entry's commitments and nonces and read the passkey
        // bit by bit, since f4 takes only X (CVE-2020-26558).
        guard px != pair.publicKeyX else {
            throw Abort(.authenticationRequirements, "the peer's public key has our own X coordinate (a reflection)")
        }
        // The debug key's private half is public: such a pairing protects nothing (§2.3.5.6.1).
        // X alone: the mirrored point (X, p − Y) has the negated, equally known private key.
        guard settings.acceptsDebugKeys || px != P256.debugPublicKeyX else {
            throw Abort(.authenticationRequirements, "the peer uses the published debug key pair")
        }
        s.peerPublicKeyX = px
        s.dhKey = try crypto("ECDH") { () throws(CryptoError) in
            try P256.sharedSecret(privateKey: pair.privateKey, peerPublicKeyX: px, peerPublicKeyY: py)
        }
        // OOB: the peer's public key must be the one its OOB confirm value commits to.
        if s.method.model == .outOfBand, ownFlag(s), let r = outOfBand.peerRandom, let c = outOfBand.peerConfirm {
            let expected = try crypto("f4") { () throws(CryptoError) in try SMPCrypto.f4(u: px, v: px, x: Array(r.reversed()), z: 0) }
            guard ConstantTime.equal(expected, Array(c.reversed())) else {
                throw Abort(.confirmValueFailed, "the peer's public key does not match its OOB confirm value")
            }
        }
        session = s
        var actions: [SMPAction] = []
        if role == .responder { actions.append(send(publicKeyPDU(pair), now: now)) } else { touch(now) }
        switch s.method.model {
        case .justWorks, .numericComparison:
            phase = role == .initiator ? .confirm : .random
            if role == .responder {
                // Cb = f4(PKbx, PKax, Nb, 0) (§2.3.5.6.2).
                let nb = try random(16)
                let cb = try f4(pair.publicKeyX, px, nb, 0)
                s.localNonce = nb
                session = s
                actions.append(send(SMPPDU.pairingConfirm(Array(cb.reversed())).encode(), now: now))
            }
        case .outOfBand:
            phase = .random
            if role == .initiator { actions += try sendNonce(now: now) }
        case .passkeyEntry:
            phase = .confirm
            if role == .initiator && s.passkey != nil { actions += try sendPasskeyCommitment(now: now) }
        }
        return actions
    }

    /// Whether our OOB_Data_Flag said we hold the peer's OOB data.
    private func ownFlag(_ s: SMPSession) -> Bool {
        (role == .initiator ? s.initiator.oobDataFlag : s.responder?.oobDataFlag) == 1
    }

    mutating func scPasskeyKnown(now: Duration) throws(Abort) -> [SMPAction] {
        guard let s = session, phase == .confirm, !s.peerPublicKeyX.isEmpty else { return [] }
        if role == .initiator { return try sendPasskeyCommitment(now: now) }
        // The responder answers a commitment that arrived while the user was typing.
        if let pending = s.peerConfirm { return try answerPasskeyCommitment(pending, now: now) }
        return []
    }

    /// Bit `round` of the passkey as the Z of f4: 0x80 | bit (§2.3.5.6.3).
    private func passkeyBit(_ s: SMPSession) -> UInt8 {
        0x80 | UInt8(((s.passkey ?? 0) >> UInt32(s.passkeyRound)) & 1)
    }

    /// Initiator, Passkey Entry round i: Cai = f4(PKax, PKbx, Nai, rai).
    private mutating func sendPasskeyCommitment(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, let pair = s.keyPair else { return [] }
        s.localNonce = try random(16)
        let c = try f4(pair.publicKeyX, s.peerPublicKeyX, s.localNonce, passkeyBit(s))
        s.peerConfirm = nil
        session = s
        return [send(SMPPDU.pairingConfirm(Array(c.reversed())).encode(), now: now)]
    }

    /// Responder, Passkey Entry round i: Cbi = f4(PKbx, PKax, Nbi, rbi).
    private mutating func answerPasskeyCommitment(_ cai: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, let pair = s.keyPair else { return [] }
        s.peerConfirm = cai
        s.localNonce = try random(16)
        let c = try f4(pair.publicKeyX, s.peerPublicKeyX, s.localNonce, passkeyBit(s))
        session = s
        phase = .random
        return [send(SMPPDU.pairingConfirm(Array(c.reversed())).encode(), now: now)]
    }

    mutating func receiveSCConfirm(_ value: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, phase == .confirm else { throw Abort(.unspecifiedReason, "unexpected Pairing Confirm") }
        let confirm = Array(value.reversed())
        switch (s.method.model, role) {
        case (.justWorks, .initiator), (.numericComparison, .initiator):
            s.peerConfirm = confirm
            session = s
            phase = .random
            return try sendNonce(now: now)
        case (.passkeyEntry, .initiator):
            guard !s.localNonce.isEmpty else { throw Abort(.unspecifiedReason, "Pairing Confirm before ours") }
            s.peerConfirm = confirm
            session = s
            phase = .random
            return [send(SMPPDU.pairingRandom(Array(s.localNonce.reversed())).encode(), now: now)]
        case (.passkeyEntry, .responder):
            guard s.peerConfirm == nil else { throw Abort(.unspecifiedReason, "a second Pairing Confirm in one round") }
            if s.passkey == nil {
                s.peerConfirm = confirm
                session = s
                touch(now)
                return []
            }
            return try answerPasskeyCommitment(confirm, now: now)
        default:
            throw Abort(.unspecifiedReason, "unexpected Pairing Confirm")
        }
    }

    /// Initiator: Na, after Cb (Just Works, Numeric Comparison) or the public keys (OOB).
    private mutating func sendNonce(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session else { return [] }
        s.localNonce = try random(16)
        session = s
        return [send(SMPPDU.pairingRandom(Array(s.localNonce.reversed())).encode(), now: now)]
    }

    mutating func receiveSCRandom(_ value: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, phase == .random, let pair = s.keyPair else { throw Abort(.unspecifiedReason, "unexpected Pairing Random") }
        let nonce = Array(value.reversed())
        let (pkLocal, pkPeer) = (pair.publicKeyX, s.peerPublicKeyX)
        switch (s.method.model, role) {
        case (.justWorks, .responder), (.numericComparison, .responder), (.outOfBand, .responder):
            if s.method.model == .outOfBand { s.localNonce = try random(16) }
            s.initiatorNonce = nonce
            s.responderNonce = s.localNonce
            session = s
            phase = .dhKeyCheck
            var actions = [send(SMPPDU.pairingRandom(Array(s.localNonce.reversed())).encode(), now: now)]
            if s.method.model == .numericComparison {
                actions += try askNumericComparison(pkA: pkPeer, pkB: pkLocal)
            } else if s.method.model == .justWorks && settings.confirmsJustWorks {
                actions.append(askJustWorks())
            }
            return actions
        case (.justWorks, .initiator), (.numericComparison, .initiator):
            // Cb = f4(PKbx, PKax, Nb, 0) must match what the responder committed to.
            guard let cb = s.peerConfirm, ConstantTime.equal(try f4(pkPeer, pkLocal, nonce, 0), cb) else {
                throw Abort(.confirmValueFailed, "the responder's confirm value does not match its nonce")
            }
            s.initiatorNonce = s.localNonce
            s.responderNonce = nonce
            session = s
            phase = .dhKeyCheck
            if s.method.model == .numericComparison { return try askNumericComparison(pkA: pkLocal, pkB: pkPeer) }
            if s.method.model == .justWorks && settings.confirmsJustWorks { return [askJustWorks()] }
            return try sendDHKeyCheck(now: now)
        case (.outOfBand, .initiator):
            s.initiatorNonce = s.localNonce
            s.responderNonce = nonce
            session = s
            phase = .dhKeyCheck
            return try sendDHKeyCheck(now: now)
        case (.passkeyEntry, _):
            guard let commitment = s.peerConfirm, ConstantTime.equal(try f4(pkPeer, pkLocal, nonce, passkeyBit(s)), commitment) else {
                throw Abort(.confirmValueFailed, "passkey round \(s.passkeyRound + 1): the peer's commitment does not match (wrong passkey?)")
            }
            var actions: [SMPAction] = []
            if role == .responder {
                actions.append(send(SMPPDU.pairingRandom(Array(s.localNonce.reversed())).encode(), now: now))
            } else {
                touch(now)
            }
            s.passkeyRound += 1
            s.peerConfirm = nil
            if s.passkeyRound < 20 {
                session = s
                phase = .confirm
                if role == .initiator { actions += try sendPasskeyCommitment(now: now) }
                return actions
            }
            // After the 20th round Na = Na20, Nb = Nb20 (§2.3.5.6.3).
            (s.initiatorNonce, s.responderNonce) = role == .initiator ? (s.localNonce, nonce) : (nonce, s.localNonce)
            session = s
            phase = .dhKeyCheck
            if role == .initiator { actions += try sendDHKeyCheck(now: now) }
            return actions
        }
    }

    /// Va = Vb = g2(PKax, PKbx, Na, Nb) mod 10^6, shown on both sides (§2.3.5.6.2).
    private mutating func askNumericComparison(pkA: [UInt8], pkB: [UInt8]) throws(Abort) -> [SMPAction] {
        guard var s = session else { return [] }
        let (na, nb) = (s.initiatorNonce, s.responderNonce)
        let value = try crypto("g2") { () throws(CryptoError) in try SMPCrypto.g2(u: pkA, v: pkB, x: na, y: nb) }
        s.awaitingNumericConfirmation = true
        session = s
        return [.confirmNumericComparison(value % 1_000_000)]
    }

    /// Waits for the user to accept Just Works where a comparison would wait (§2.3.5.6.2 step 6).
    private mutating func askJustWorks() -> SMPAction {
        session?.awaitingNumericConfirmation = true
        return .confirmJustWorks
    }

    mutating func numericComparisonAccepted(now: Duration) throws(Abort) -> [SMPAction] {
        guard let s = session, phase == .dhKeyCheck else { return [] }
        if role == .initiator { return try sendDHKeyCheck(now: now) }
        if let pending = s.pendingPeerCheck { return try receiveDHKeyCheck(pending, now: now) }
        return []
    }

    /// f5 then f6 for this pairing: (MacKey, LTK, Ea, Eb), MSB-first (§2.3.5.6.5).
    private func stage2Values(_ s: SMPSession) throws(Abort) -> (ltk: [UInt8], ea: [UInt8], eb: [UInt8]) {
        guard let responder = s.responder else { throw Abort(.unspecifiedReason, "no features") }
        let (a, b) = (initiatorAddress.smpF5Form, responderAddress.smpF5Form)
        let (na, nb, dh) = (s.initiatorNonce, s.responderNonce, s.dhKey)
        let (mac, ltk) = try crypto("f5") { () throws(CryptoError) in try SMPCrypto.f5(w: dh, n1: na, n2: nb, a1: a, a2: b) }
        // ra/rb: the passkey for Passkey Entry; for OOB the random of the side whose data the
        // other holds (zero otherwise); zero for Just Works and Numeric Comparison.
        var ra = [UInt8](repeating: 0, count: 16), rb = ra
        switch s.method.model {
        case .passkeyEntry:
            ra = Self.passkeyValue(s.passkey ?? 0)
            rb = ra
        case .outOfBand:
            let local = outOfBand.local.map { Array($0.random.reversed()) }
            let peer = outOfBand.peerRandom.map { Array($0.reversed()) }
            if responder.oobDataFlag == 1, let r = role == .initiator ? local : peer { ra = r }
            if s.initiator.oobDataFlag == 1, let r = role == .initiator ? peer : local { rb = r }
        default:
            break
        }
        let ioA = [s.initiator.authRequirements.rawValue, s.initiator.oobDataFlag, s.initiator.ioCapability.rawValue]
        let ioB = [responder.authRequirements.rawValue, responder.oobDataFlag, responder.ioCapability.rawValue]
        let ea = try crypto("f6") { () throws(CryptoError) in try SMPCrypto.f6(w: mac, n1: na, n2: nb, r: rb, ioCap: ioA, a1: a, a2: b) }
        let eb = try crypto("f6") { () throws(CryptoError) in try SMPCrypto.f6(w: mac, n1: nb, n2: na, r: ra, ioCap: ioB, a1: b, a2: a) }
        return (ltk, ea, eb)
    }

    /// Initiator: sends Ea, then waits for Eb.
    private mutating func sendDHKeyCheck(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, !s.sentCheck else { return [] }
        let values = try stage2Values(s)
        s.sentCheck = true
        s.secureConnectionsLTK = values.ltk
        session = s
        return [send(SMPPDU.pairingDHKeyCheck(Array(values.ea.reversed())).encode(), now: now)]
    }

    mutating func receiveDHKeyCheck(_ value: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, s.secureConnections, phase == .dhKeyCheck, s.pendingPeerCheck == nil || s.pendingPeerCheck == value else {
            throw Abort(.unspecifiedReason, "unexpected Pairing DHKey Check")
        }
        if role == .responder && s.awaitingNumericConfirmation {
            // Ea may arrive before our user answered; it waits for the answer (§2.3.5.6.2).
            s.pendingPeerCheck = value
            session = s
            touch(now)
            return []
        }
        if role == .initiator && !s.sentCheck { throw Abort(.unspecifiedReason, "DHKey Check before ours") }
        let values = try stage2Values(s)
        let expected = role == .initiator ? values.eb : values.ea
        guard ConstantTime.equal(Array(value.reversed()), expected) else {
            throw Abort(.dhKeyCheckFailed, "the peer's DHKey check value does not match")
        }
        s.secureConnectionsLTK = values.ltk
        s.linkKey = Self.masked(Array(values.ltk.reversed()), toSize: s.keySize)
        s.pendingPeerCheck = nil
        session = s
        phase = .encrypting
        if role == .initiator {
            touch(now)
            return [.startEncryption(longTermKey: s.linkKey ?? [], ediv: 0, rand: 0)]
        }
        return [send(SMPPDU.pairingDHKeyCheck(Array(values.eb.reversed())).encode(), now: now)]
    }

    private func f4(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ z: UInt8) throws(Abort) -> [UInt8] {
        try crypto("f4") { () throws(CryptoError) in try SMPCrypto.f4(u: u, v: v, x: x, z: z) }
    }
}

import BLECrypto

/// LE legacy pairing, phase 2 (Core spec Vol 3 Part H §2.3.5.2–2.3.5.5): a TK from Just Works
/// (zero), Passkey Entry (the passkey as a 128-bit number) or OOB; Mconfirm/Sconfirm with c1,
/// Mrand/Srand, then the STK from s1, shortened to the negotiated key size.
extension SMPPairing {
    mutating func beginLegacy(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session else { return [] }
        s.localRandom = try random(16)
        switch s.method.model {
        case .justWorks:
            if settings.confirmsJustWorks {
                // The TK (zero) is set when the user accepts (`justWorksConfirmed`); a peer's
                // confirm that arrives meanwhile waits for it.
                s.awaitingNumericConfirmation = true
                session = s
                phase = .legacyConfirm
                return [.confirmJustWorks]
            }
            s.temporaryKey = [UInt8](repeating: 0, count: 16)
        case .outOfBand:
            guard let tk = outOfBand.legacyTemporaryKey, tk.count == 16 else { throw Abort(.oobNotAvailable, "no OOB TK") }
            s.temporaryKey = Array(tk.reversed())
        case .passkeyEntry:
            if let passkey = s.passkey { s.temporaryKey = Self.passkeyValue(passkey) }
        case .numericComparison:
            throw Abort(.unspecifiedReason, "Numeric Comparison does not exist in legacy pairing")
        }
        session = s
        phase = .legacyConfirm
        return try legacyTemporaryKeyKnown(now: now)
    }

    /// The passkey as the 128-bit value TK, ra and rb take (§2.3.5.3, §2.3.5.6.3), MSB-first.
    static func passkeyValue(_ passkey: UInt32) -> [UInt8] {
        [UInt8](repeating: 0, count: 12) + [UInt8(passkey >> 24), UInt8(passkey >> 16 & 0xFF), UInt8(passkey >> 8 & 0xFF), UInt8(passkey & 0xFF)]
    }

    /// Sends our confirm value once the TK is known: the initiator right away, the responder
    /// once the initiator's confirm has arrived (§2.3.5.5).
    mutating func legacyTemporaryKeyKnown(now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, phase == .legacyConfirm else { return [] }
        if s.temporaryKey == nil, let passkey = s.passkey { s.temporaryKey = Self.passkeyValue(passkey) }
        guard let tk = s.temporaryKey, !s.sentConfirm else { session = s; return [] }
        if role == .responder && s.peerConfirm == nil { session = s; return [] }
        let confirm = try legacyConfirm(tk: tk, random: s.localRandom, s)
        s.localConfirm = confirm
        s.sentConfirm = true
        session = s
        if role == .responder { phase = .legacyRandom }
        return [send(SMPPDU.pairingConfirm(Array(confirm.reversed())).encode(), now: now)]
    }

    mutating func receiveLegacyConfirm(_ value: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, phase == .legacyConfirm, s.peerConfirm == nil else { throw Abort(.unspecifiedReason, "unexpected Pairing Confirm") }
        if role == .initiator && !s.sentConfirm { throw Abort(.unspecifiedReason, "Pairing Confirm before ours") }
        // Erratum ES-24491 (§2.3.5.5): our own confirm value sent back is a reflection.
        guard !(s.localConfirm.map { ConstantTime.equal($0, Array(value.reversed())) } ?? false) else {
            throw Abort(.confirmValueFailed, "the peer sent our own confirm value back")
        }
        s.peerConfirm = Array(value.reversed())
        session = s
        if role == .initiator {
            phase = .legacyRandom
            return [send(SMPPDU.pairingRandom(Array(s.localRandom.reversed())).encode(), now: now)]
        }
        touch(now)
        return try legacyTemporaryKeyKnown(now: now)
    }

    mutating func receiveLegacyRandom(_ value: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        guard var s = session, phase == .legacyRandom, let tk = s.temporaryKey, let peerConfirm = s.peerConfirm else {
            throw Abort(.unspecifiedReason, "unexpected Pairing Random")
        }
        let peerRandom = Array(value.reversed())
        guard !ConstantTime.equal(peerRandom, s.localRandom) else { throw Abort(.confirmValueFailed, "the peer sent our own random value back") }
        let expected = try legacyConfirm(tk: tk, random: peerRandom, s)
        guard ConstantTime.equal(expected, peerConfirm) else {
            throw Abort(.confirmValueFailed, "the peer's confirm value does not match its random (wrong passkey or TK?)")
        }
        // STK = s1(TK, Srand, Mrand) (§2.2.4).
        let (srand, mrand) = role == .initiator ? (peerRandom, s.localRandom) : (s.localRandom, peerRandom)
        let stk = try crypto("s1") { () throws(CryptoError) in try SMPCrypto.s1(k: tk, r1: srand, r2: mrand) }
        s.linkKey = Self.masked(Array(stk.reversed()), toSize: s.keySize)
        session = s
        phase = .encrypting
        if role == .initiator {
            touch(now)
            return [.startEncryption(longTermKey: s.linkKey ?? [], ediv: 0, rand: 0)]
        }
        return [send(SMPPDU.pairingRandom(Array(s.localRandom.reversed())).encode(), now: now)]
    }

    /// c1(TK, r, preq, pres, iat, ia, rat, ra) for this link (§2.2.3), MSB-first.
    private func legacyConfirm(tk: [UInt8], random r: [UInt8], _ s: SMPSession) throws(Abort) -> [UInt8] {
        let (ia, ra) = (initiatorAddress, responderAddress)
        return try crypto("c1") { () throws(CryptoError) in
            try SMPCrypto.c1(k: tk, r: r, preq: Array(s.preq.reversed()), pres: Array(s.pres.reversed()),
                             iat: ia.smpTypeOctet, ia: ia.smpMSBFirst, rat: ra.smpTypeOctet, ra: ra.smpMSBFirst)
        }
    }
}

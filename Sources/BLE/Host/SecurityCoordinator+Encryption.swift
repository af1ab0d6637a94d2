import BLEHCI
import BLEHost
import BLEWire

// The controller's side of security (Core spec Vol 3 Part H §2.4.4, Vol 4 Part E §7.8.24–26):
// LE Enable Encryption as central, the LE Long Term Key Request as peripheral, Encryption Change
// and Key Refresh, what each key is worth, and raising a link's security when a request needs it.
// Secure Connections Only mode allows only mode 1 level 4 (Vol 3 Part C §10.2.4), so a weaker
// bond's key is not used (`refusal(of:)`).
extension SecurityCoordinator {
    /// Why `bond`'s key may not encrypt a link, if it may not: in Secure Connections Only mode
    /// only mode 1 level 4 is allowed (Vol 3 Part C §10.2.4), and a bond made before the mode
    /// was switched on may be legacy or unauthenticated.
    func refusal(of bond: Bond) -> String? {
        guard settings.pairing.secureConnectionsOnly, bond.securityLevel < .secureConnections else { return nil }
        return "Secure Connections Only mode needs a level 4 key (authenticated Secure Connections, 16 octets), and the bond of \(bond.peer) is level \(bond.securityLevel.rawValue): pair again"
    }

    /// Peripheral: the controller asks for the key the central is encrypting with.
    func longTermKeyRequested(handle: UInt16, ediv: UInt16, rand: UInt64, _ host: isolated some SecurityDriver) {
        guard let link = host.link(handle) else { return }
        if let m = machines[handle], let key = m.longTermKeyRequested(ediv: ediv, rand: rand) {
            pendingKey[handle] = KeyWorth(pairing: m)
            host.sendInBackground(.leLongTermKeyRequestReply(handle: handle, longTermKey: key), "LE Long Term Key Request Reply")
            return
        }
        if let b = bond(for: link.peer, host), let key = b.key(as: .responder), key.ediv == ediv, key.rand == rand {
            if let why = refusal(of: b) {
                host.log("refused \(link.peer)'s encryption request: \(why)")
                host.sendInBackground(.leLongTermKeyRequestNegativeReply(handle: handle), "LE Long Term Key Request Negative Reply")
                return
            }
            pendingKey[handle] = KeyWorth(b, key: key.ltk)
            host.sendInBackground(.leLongTermKeyRequestReply(handle: handle, longTermKey: key.ltk), "LE Long Term Key Request Reply")
            return
        }
        // No key for this peer (never bonded, or it lost ours): the central learns at once.
        host.log("no key for \(link.peer)'s encryption request")
        host.sendInBackground(.leLongTermKeyRequestNegativeReply(handle: handle), "LE Long Term Key Request Negative Reply")
    }

    /// Encryption Change (enabled or failed) or Encryption Key Refresh Complete.
    func encryptionChanged(handle: UInt16, status: HCIStatus, enabled: Bool, _ host: isolated some SecurityDriver) {
        let worth = pendingKey.removeValue(forKey: handle)
        if status == .success, enabled {
            let stillBonded = worth.flatMap { bond(givenIn: $0, handle: handle, host) }
            host.withLink(handle) { link in
                link.security.encrypted = true
                // A key we did not choose (nothing pending): assume the least of it.
                let worth = worth ?? .least
                link.security.authenticated = worth.authenticated
                link.security.secureConnections = worth.secureConnections
                link.security.keySize = worth.keySize
                if stillBonded != nil { link.security.hasLongTermKey = true }
                link.encryptedWithBondKey = stillBonded != nil
            }
            if worth?.bonded == true, stillBonded == nil {
                host.log("the bond whose key encrypted 0x\(String(handle, radix: 16)) was removed or replaced meanwhile: the link speaks for no bond")
            }
            host.linkEncrypted(handle: handle, bondIdentity: stillBonded?.peer)
        } else if status != .success {
            host.log("encryption on 0x\(String(handle, radix: 16)) failed: \(status)")
        } else {
            host.withLink(handle) {
                $0.security.encrypted = false
                $0.encryptedWithBondKey = false
            }
        }
        // Callers of `encrypt` learn their encryption's outcome, whatever else runs.
        for w in encryptionWaiters.removeValue(forKey: handle) ?? [] {
            if status == .success && enabled { w.succeed(nil) } else { w.fail(BLEError.security(.encryptionFailed(status: status.rawValue))) }
        }
        defer {
            // A Security Request held while the encryption ran is answered now.
            if let auth = deferredSecurityRequests.removeValue(forKey: handle) { securityRequested(auth, handle: handle, host) }
        }
        if var m = machines[handle], m.isPairing {
            let actions = m.encryptionChanged(status: status.rawValue, enabled: enabled, now: host.now)
            machines[handle] = m
            perform(actions, handle: handle, host)
            return
        }
        // A re-encryption with a bond's key ended.
        if let link = host.link(handle) {
            if status == .success && enabled {
                link.observation.reportSecurity(.encrypted(.of(authenticated: link.security.authenticated,
                                                               secureConnections: link.security.secureConnections,
                                                               keySize: link.security.keySize)))
            } else if status != .success {
                link.observation.reportSecurity(.encryptionFailed(status: status.rawValue))
            }
        }
        let waiting = waiters.removeValue(forKey: handle) ?? []
        if status == .success && enabled {
            for w in waiting { w.succeed(nil) }
        } else {
            // A MIC failure or a key the peer no longer has: the bond is stale; pairing again repairs it.
            for w in waiting { w.fail(BLEError.security(.encryptionFailed(status: status.rawValue))) }
        }
    }

    /// The bond whose key `worth` is, if it is still there with that key: removed or replaced
    /// since the key was given (LTK Request Reply, LE Enable Encryption), the link speaks for no bond.
    private func bond(givenIn worth: KeyWorth, handle: UInt16, _ host: isolated some SecurityDriver) -> Bond? {
        guard let given = worth.bond, let link = host.link(handle), let b = bond(for: link.peer, host),
              b.peer == given.peer, b.key(as: link.role == .central ? .initiator : .responder)?.ltk == given.ltk else { return nil }
        return b
    }

    /// Central: encrypts with the bond's key and waits for the controller's answer.
    func encrypt(linkID: UInt64, _ host: isolated some SecurityDriver) async throws {
        guard let handle = host.linkHandle(forID: linkID), let link = host.link(handle) else {
            throw BLEError.notConnected
        }
        guard let b = bond(for: link.peer, host), let key = b.key(as: .initiator) else {
            throw BLEError.security(.unavailable("no bond with \(link.peer)"))
        }
        if let why = refusal(of: b) { throw BLEError.security(.unavailable(why)) }
        let waiter = OneShot<PairingResult?>()
        if machines[handle]?.isPairing == true {
            // A pairing under way (another caller's raise): its end is this wait's.
            waiters[handle, default: []].append(waiter)
        } else {
            // Our own encryption, or one under way that this joins rather than start a second
            // one, which the controller would refuse.
            encryptionWaiters[handle, default: []].append(waiter)
            if pendingKey[handle] == nil {
                startEncryption(handle: handle, key: key, worth: KeyWorth(b, key: key.ltk), host)
            }
        }
        _ = try await waiter.wait()
    }

    /// How many `raise` steps a refused request may take: encryption, then an authenticated
    /// (or longer) key. Each step raises the link or fails, so the bound is only a backstop.
    static let raiseSteps = 2

    /// Raises the link one step towards what `code` (an ATT or L2CAP security refusal) asks
    /// for, and fails unless the step was made. A central encrypts with a bond's key when the
    /// link is not encrypted (that may be all the peer wanted: servers refuse an unencrypted
    /// link for Insufficient Authentication too), else pairs, with MITM when authentication
    /// is missing. A peripheral asks with a Security Request (Vol 3 Part H §2.4.6), also over
    /// an encrypted link whose key is too weak. The step made: an unencrypted link is now
    /// encrypted; an encrypted one now has an authenticated key (Insufficient Authentication
    /// over an unauthenticated key), a longer key (Encryption Key Size) or a higher level;
    /// otherwise `.notRaised` (the peer answered with a key no better, e.g. the same bond's
    /// key again). A refusal for Insufficient Encryption of a link encrypted since is stale:
    /// nothing to do. The callers retry the refused request after each step, so two steps take
    /// a link from none to authenticated.
    func raise(for code: ATTErrorCode, linkID: UInt64, _ host: isolated some SecurityDriver) async throws {
        guard let handle = host.linkHandle(forID: linkID), let link = host.link(handle) else {
            throw BLEError.notConnected
        }
        let before = link.security
        // Refused for want of encryption, and encrypted since (the refusal was on its way while
        // the link was encrypted): the step is made; the caller's retry is what it needs.
        if code == .insufficientEncryption && before.encrypted { return }
        let needsAuthentication = code == .insufficientAuthentication && before.encrypted
        // A bond Secure Connections Only mode refuses is paired over instead (that mode pairs
        // only at level 4, which may replace a weaker bond), as for a Security Request.
        // Only a central starts encryption (LE Enable Encryption); a peripheral asks for it with
        // a Security Request.
        if link.role == .central, !before.encrypted, let b = bond(for: link.peer, host), b.key(as: .initiator) != nil,
           refusal(of: b) == nil {
            // A failure here (the peer lost our key, or is not who the bond says) is the
            // caller's error: pairing again over it is for an explicit `pair()`, since a
            // spoofed peer could otherwise get a weaker bond in place of the real one.
            try await encrypt(linkID: linkID, host)
            try checkRaised(code, from: before, linkID: linkID, host)
            return
        }
        if needsAuthentication && !settings.pairing.ioCapability.canProtectMITM {
            throw BLEError.security(.local(.authenticationRequirements, detail: "the server needs an authenticated key, and this side's IO capability allows only Just Works"))
        }
        // Ask for MITM protection where the IO capability allows it; demand it when the link
        // is encrypted already and only an authenticated key can help.
        if var m = machine(for: link.handle, host), !m.isPairing {
            if settings.pairing.ioCapability.canProtectMITM { m.settings.requestsMITM = true }
            if needsAuthentication { m.settings.mitm = true }
            machines[link.handle] = m
        }
        if link.role == .peripheral {
            // The central may answer by pairing or by encrypting with a bond's key: either
            // may raise the link (`secure`, not `pair`, which wants a pairing).
            _ = try await secure(linkID: linkID, evenIfEncrypted: true, host)
        } else {
            _ = try await pair(linkID: linkID, host)
        }
        try checkRaised(code, from: before, linkID: linkID, host)
    }

    /// Throws `.notRaised` unless the link's security now makes the step `raise` promises over
    /// `before` for `code`.
    private func checkRaised(_ code: ATTErrorCode, from before: LinkSecurity, linkID: UInt64, _ host: isolated some SecurityDriver) throws {
        guard let handle = host.linkHandle(forID: linkID), let now = host.link(handle)?.security else {
            throw BLEError.notConnected
        }
        let shortfall: String?
        if !now.encrypted {
            shortfall = "the link is still not encrypted"
        } else if !before.encrypted {
            shortfall = nil
        } else if code == .insufficientAuthentication && !before.authenticated {
            shortfall = now.authenticated ? nil : "the peer answered with an unauthenticated key again, where the refusal wants an authenticated one"
        } else if code == .encryptionKeySizeTooShort {
            shortfall = now.keySize > before.keySize ? nil : "the key is still \(now.keySize) octets, which the peer refused as too short"
        } else {
            let level = { (s: LinkSecurity) in SecurityLevel.of(authenticated: s.authenticated, secureConnections: s.secureConnections, keySize: s.keySize) }
            shortfall = level(now) > level(before) ? nil : "the link's security is still level \(level(now).rawValue)"
        }
        if let shortfall { throw BLEError.security(.notRaised(shortfall)) }
    }

    func startEncryption(handle: UInt16, key: (ltk: [UInt8], ediv: UInt16, rand: UInt64), worth: KeyWorth, _ host: isolated some SecurityDriver) {
        encryptionSerial &+= 1
        let serial = encryptionSerial
        var worth = worth
        worth.serial = serial
        pendingKey[handle] = worth
        guard let linkID = host.link(handle)?.id else { return }
        let listed = host.info?.lists(.leEnableEncryption) ?? true
        host.spawn("LE Enable Encryption") {
            do {
                // A controller that does not list it fails the encryption as one that answers
                // Unknown HCI Command would, without the command being sent.
                guard listed else { throw BLEError.hci(.commandFailed(opcode: .leEnableEncryption, status: .unknownCommand)) }
                try await host.command(.leEnableEncryption(handle: handle, randomNumber: key.rand, encryptedDiversifier: key.ediv, longTermKey: key.ltk))
            } catch {
                let status: HCIStatus
                if case let BLEError.hci(.commandFailed(_, s)) = error { status = s } else { status = .unspecifiedError }
                // Only if the link is still the one we started on (a handle can be reused), and
                // this start is the encryption pending there.
                await host.run { host in
                    guard host.linkHandle(forID: linkID) == handle, host.security.pendingKey[handle]?.serial == serial else { return }
                    host.security.encryptionChanged(handle: handle, status: status, enabled: false, host)
                }
            }
        }
    }
}

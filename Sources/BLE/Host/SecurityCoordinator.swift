import BLECrypto
import BLEHCI
import BLEHost
import BLEWire

/// The host's Security Manager part: one sans-IO `SMPPairing` per link, the bond store, the
/// pairing agent, and the controller's side of encryption (LE Enable Encryption as central, the
/// LE Long Term Key Request as peripheral, Encryption Change and Key Refresh; Core spec Vol 3
/// Part H §2.4.4, Vol 4 Part E §7.8.24–26). It decides what each link's security is, so the GATT
/// server's permission checks and the client's retries read it from the link. Isolated to the
/// host actor that owns it.
final class SecurityCoordinator {
    let settings: SecuritySettings
    private var machines: [UInt16: SMPPairing] = [:]
    /// Callers waiting for a pairing (or a re-encryption) on a link to end.
    private var waiters: [UInt16: [OneShot<PairingResult?>]] = [:]
    /// What the key being switched on is worth, until the controller confirms encryption.
    private var pendingKey: [UInt16: KeyWorth] = [:]
    private var limiter: SMPAttemptLimiter
    var cachedBonds: [Bond]?
    var ephemeralIdentity: LocalIdentity?
    /// Whether the fixed passkey (`displayedPasskey`) is used up: one recorded Passkey Entry
    /// pairing reveals all of it (Vol 3 Part H §2.3.5.6.3), so it is shown once, in this host's
    /// life and, through the bond store, across restarts; later pairings draw random passkeys.
    /// Nil until the store was asked.
    private var fixedPasskeyRetired: Bool?
    /// The pairing the application started on a link (`pair()`), by the machine's
    /// `generation` at its start: only that pairing's bond may replace a stronger old one, not
    /// a later one the peer starts after ours failed.
    private var explicitPairing: [UInt16: UInt64] = [:]

    /// What a key is worth, noted when encryption with it starts and applied to the link when
    /// the controller confirms it.
    struct KeyWorth {
        var secureConnections: Bool
        var authenticated: Bool
        var keySize: Int
        var bonded: Bool

        /// A bond's key.
        init(_ bond: Bond) {
            self.init(secureConnections: bond.secureConnections, authenticated: bond.authenticated, keySize: bond.keySize, bonded: true)
        }

        /// The key a running pairing negotiated; the least a key can be when it has not.
        init(pairing m: SMPPairing?) {
            guard let n = m?.negotiatedKey else { self = .least; return }
            self.init(secureConnections: n.secureConnections, authenticated: n.authenticated, keySize: n.keySize, bonded: false)
        }

        init(secureConnections: Bool, authenticated: Bool, keySize: Int, bonded: Bool) {
            self.secureConnections = secureConnections
            self.authenticated = authenticated
            self.keySize = keySize
            self.bonded = bonded
        }

        /// For a key we did not choose: fail closed.
        static let least = KeyWorth(secureConnections: false, authenticated: false, keySize: 7, bonded: false)
    }

    /// Peripheral callers waiting on a Security Request, by serial, for its deadline.
    private var requestDeadlines: [UInt64: OneShot<PairingResult?>] = [:]
    private var requestSerial: UInt64 = 0
    /// The agent's open questions (passkey, comparison, approval) per link, as host task ids.
    private var prompts: [UInt16: [UInt64]] = [:]

    init(settings: SecuritySettings) {
        self.settings = settings
        self.limiter = settings.attemptLimiter
    }

    var nextDeadline: Duration? {
        guard !machines.isEmpty else { return nil }
        var next: Duration?
        for m in machines.values { next = earliest(next, m.nextDeadline) }
        return next
    }

    // MARK: - Links

    /// A new link: an encrypted reconnection will be judged against the peer's bond.
    func linkOpened(handle: UInt16, _ host: isolated HostController) {
        guard let link = host.connections.links[handle] else { return }
        // A bond Secure Connections Only mode refuses to encrypt with counts as none: the client
        // is told to pair (Insufficient Authentication), not to encrypt with a key that would
        // be refused (Insufficient Encryption).
        let usable = bond(for: link.peer, host).flatMap { refusal(of: $0) == nil ? $0 : nil }
        let hasKey = usable?.key(as: link.role == .central ? .initiator : .responder) != nil
        host.connections.links.withLink(handle) {
            $0.security.hasLongTermKey = hasKey
            $0.security.requiredKeySize = settings.minimumServerKeySize
        }
    }

    func linkClosed(_ link: Link, error: BLEError, _ host: isolated HostController) {
        if link.encryptedWithBondKey { saveSubscriptions(link, host) }
        for id in prompts.removeValue(forKey: link.handle) ?? [] { host.cancelTask(id) }
        machines[link.handle] = nil
        pendingKey[link.handle] = nil
        explicitPairing[link.handle] = nil
        for w in waiters.removeValue(forKey: link.handle) ?? [] { w.fail(error) }
    }

    /// Keeps a bonded client's CCCDs with its bond (Vol 3 Part G §3.3.3.3).
    func saveSubscriptions(_ link: Link, _ host: isolated HostController) {
        guard link.encryptedWithBondKey, var b = bond(for: link.peer, host) else { return }
        let now = link.server.subscriptions
        guard b.clientConfigurations != now else { return }
        b.clientConfigurations = now
        _ = store(b, replacing: true, host)
    }

    private func machine(for handle: UInt16, _ host: isolated HostController) -> SMPPairing? {
        if let m = machines[handle] { return m }
        guard let link = host.connections.links[handle], let own = link.localOnAir ?? host.ownDeviceAddress,
              let identity = localIdentity(ownAddress: own, host) else { return nil }
        // The addresses as they went on the air when the link was made (Vol 3 Part H §2.2.3).
        let peer = link.peerOnAir ?? link.peer
        let central = link.role == .central
        var pairing = settings.pairing
        if fixedPasskeyIsRetired(host) { pairing.displayedPasskey = nil }
        let m = SMPPairing(role: central ? .initiator : .responder, settings: pairing, identity: identity,
                           initiatorAddress: central ? own : peer, responderAddress: central ? peer : own)
        machines[handle] = m
        return m
    }

    /// Whether the fixed passkey was shown before, by this host or (the bond store says) by an
    /// earlier run. A store that cannot answer counts it as shown: a random passkey costs nothing.
    private func fixedPasskeyIsRetired(_ host: isolated HostController) -> Bool {
        if let fixedPasskeyRetired { return fixedPasskeyRetired }
        guard let fixed = settings.pairing.displayedPasskey else { return false }
        var retired = false
        do {
            retired = try settings.bondStore?.isPasskeyRetired(fixed) ?? false
        } catch {
            host.log("bond store: \(error); not using the fixed passkey")
            retired = true
        }
        if retired { host.log("the fixed passkey was used before: pairings show random passkeys") }
        fixedPasskeyRetired = retired
        return retired
    }

    /// The fixed passkey is about to be used: it is not used again in this host's life, and the
    /// bond store records that before anyone sees it, so a restart does not bring it back. False
    /// when the store could not record it: then it must not be used at all (fail closed, as a
    /// SignCounter the store cannot record is not used), since after a restart nothing would
    /// say it was.
    private func retireFixedPasskey(_ value: UInt32, _ host: isolated HostController) -> Bool {
        fixedPasskeyRetired = true
        for h in machines.keys { machines[h]?.settings.displayedPasskey = nil }
        do {
            try settings.bondStore?.retirePasskey(value)
            host.log("the fixed passkey is used once: later pairings show random passkeys and refuse it typed")
            return true
        } catch {
            host.log("recording that the fixed passkey was used failed: \(error); it is not used (after a restart nothing would say it was), and later pairings use random passkeys")
            return false
        }
    }

    /// Whether `typed` is the fixed passkey and was used before; if it is the fixed passkey
    /// and was not, it is retired now. Typed or shown, it is the same 20-bit secret that one
    /// recorded pairing reveals (Vol 3 Part H §2.3.5.6.3), so it serves one pairing either way.
    private func typedFixedPasskeyWasUsed(_ typed: UInt32?, _ host: isolated HostController) -> Bool {
        guard let typed, typed == settings.pairing.displayedPasskey else { return false }
        if fixedPasskeyIsRetired(host) { return true }
        // Not recorded: refused as if used, so it is not used unrecorded.
        return !retireFixedPasskey(typed, host)
    }

    // MARK: - Inbound

    /// One SMP PDU from the link's fixed channel 0x0006.
    func receive(_ pdu: [UInt8], handle: UInt16, _ host: isolated HostController) {
        guard let link = host.connections.links[handle] else { return }
        guard var m = machine(for: handle, host) else {
            // No identity to pair with (an unreadable identity file): say so at once rather
            // than leave the peer to its 30-second timeout.
            if pdu.first == SMPCode.pairingRequest.rawValue || pdu.first == SMPCode.securityRequest.rawValue {
                host.sendL2CAP(handle: handle, channel: L2CAPChannel.smp, payload: SMPPDU.pairingFailed(.unspecifiedReason).encode())
            }
            return
        }
        if pdu.first == SMPCode.pairingRequest.rawValue, !m.isPairing, !limiter.mayPair(link.peer, now: host.now) {
            // Repeated Attempts (§2.3.6): refuse before any work.
            host.log("pairing from \(link.peer) refused: repeated attempts")
            host.sendL2CAP(handle: handle, channel: L2CAPChannel.smp, payload: SMPPDU.pairingFailed(.repeatedAttempts).encode())
            return
        }
        if pdu.first == SMPCode.pairingRequest.rawValue, !m.isPairing {
            // The central starts every pairing a peripheral takes part in.
            m.protectsExistingBond = protectsBond(of: link, explicit: false, host)
        }
        let actions = m.receive(pdu, now: host.now)
        machines[handle] = m
        perform(actions, handle: handle, host)
    }

    /// Whether a pairing on `link` must not give its bonded peer an unauthenticated key:
    /// the peer is bonded, the pairing is not the application's own (`explicit`), and
    /// `allowsUnauthenticatedBondReplacement` is off.
    private func protectsBond(of link: Link, explicit: Bool, _ host: isolated HostController) -> Bool {
        guard !settings.allowsUnauthenticatedBondReplacement, !explicit else { return false }
        return bond(for: link.peer, host) != nil
    }

    /// Why `bond`'s key may not encrypt a link, if it may not: in Secure Connections Only mode
    /// only mode 1 level 4 is allowed (Vol 3 Part C §10.2.4), and a bond made before the mode
    /// was switched on may be legacy or unauthenticated.
    func refusal(of bond: Bond) -> String? {
        guard settings.pairing.secureConnectionsOnly, bond.securityLevel < .secureConnections else { return nil }
        return "Secure Connections Only mode needs a level 4 key (authenticated Secure Connections, 16 octets), and the bond of \(bond.peer) is level \(bond.securityLevel.rawValue): pair again"
    }

    /// Peripheral: the controller asks for the key the central is encrypting with.
    func longTermKeyRequested(handle: UInt16, ediv: UInt16, rand: UInt64, _ host: isolated HostController) {
        guard let link = host.connections.links[handle] else { return }
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
            pendingKey[handle] = KeyWorth(b)
            host.sendInBackground(.leLongTermKeyRequestReply(handle: handle, longTermKey: key.ltk), "LE Long Term Key Request Reply")
            return
        }
        // No key for this peer (never bonded, or it lost ours): the central learns at once.
        host.log("no key for \(link.peer)'s encryption request")
        host.sendInBackground(.leLongTermKeyRequestNegativeReply(handle: handle), "LE Long Term Key Request Negative Reply")
    }

    /// Encryption Change (enabled or failed) or Encryption Key Refresh Complete.
    func encryptionChanged(handle: UInt16, status: HCIStatus, enabled: Bool, _ host: isolated HostController) {
        let worth = pendingKey.removeValue(forKey: handle)
        if status == .success, enabled {
            host.connections.links.withLink(handle) { link in
                link.security.encrypted = true
                // A key we did not choose (nothing pending): assume the least of it.
                let worth = worth ?? .least
                link.security.authenticated = worth.authenticated
                link.security.secureConnections = worth.secureConnections
                link.security.keySize = worth.keySize
                if worth.bonded { link.security.hasLongTermKey = true }
                link.encryptedWithBondKey = worth.bonded
            }
            // Enhanced ATT bearers need an encrypted link (Vol 3 Part G §5.3.1).
            host.client.linkEncrypted(handle: handle, host)
            if let worth, worth.bonded, let link = host.connections.links[handle] {
                // CCCDs, features and change awareness, unless the connection restored them.
                if let identity = bond(for: link.peer, host)?.peer { host.server.bondedClientReturned(handle: handle, identity: identity, host) }
            }
        } else if status != .success {
            host.log("encryption on 0x\(String(handle, radix: 16)) failed: \(status)")
        } else {
            host.connections.links.withLink(handle) {
                $0.security.encrypted = false
                $0.encryptedWithBondKey = false
            }
        }
        if var m = machines[handle], m.isPairing {
            let actions = m.encryptionChanged(status: status.rawValue, enabled: enabled, now: host.now)
            machines[handle] = m
            perform(actions, handle: handle, host)
            return
        }
        // A re-encryption with a bond's key ended.
        let waiting = waiters.removeValue(forKey: handle) ?? []
        if status == .success && enabled {
            for w in waiting { w.succeed(nil) }
        } else {
            // A MIC failure or a key the peer no longer has: the bond is stale; pairing again repairs it.
            for w in waiting { w.fail(BLEError.security(.encryptionFailed(status: status.rawValue))) }
        }
    }

    func expire(now: Duration, _ host: isolated HostController) {
        for handle in machines.keys.sorted() {
            guard var m = machines[handle], let deadline = m.nextDeadline, now >= deadline else { continue }
            let actions = m.expire(now: now)
            machines[handle] = m
            perform(actions, handle: handle, host)
        }
    }

    // MARK: - Outbound

    /// Central: pairs now and waits for the outcome. `explicit` when the application asked
    /// (`Peripheral.pair()`): only then may the new bond replace a stronger one of the same
    /// device. Pairings the peer set off (a Security Request, an ATT security error) may not.
    func pair(linkID: UInt64, explicit: Bool = false, _ host: isolated HostController) async throws -> PairingResult {
        guard let result = try await secure(linkID: linkID, explicit: explicit, host) else {
            throw BLEError.security(.unavailable("the link was encrypted with a stored key instead of pairing"))
        }
        return result
    }

    /// Pairs (central), or sends a Security Request (peripheral), and waits until the link is
    /// secured: the pairing's result, or nil when the central encrypted with a bond's key.
    /// `explicit` (central): the application asked for this pairing; it counts only for a
    /// pairing started here, not one already under way.
    func secure(linkID: UInt64, explicit: Bool = false, _ host: isolated HostController) async throws -> PairingResult? {
        guard let handle = host.connections.links.handle(forID: linkID), let link = host.connections.links[handle] else {
            throw BLEError.notConnected
        }
        guard var m = machine(for: handle, host) else { throw BLEError.security(.unavailable("no local identity for pairing")) }
        if link.role == .peripheral, link.security.encrypted, !m.isPairing { return nil }
        guard !m.isClosed else {
            throw BLEError.security(.timeout)
        }
        let waiter = OneShot<PairingResult?>()
        waiters[handle, default: []].append(waiter)
        if link.role == .peripheral && !m.isPairing {
            // A central may ignore a Security Request (Vol 3 Part H §2.4.6): give up after the
            // SMP timeout rather than wait for ever.
            let clock = host.clock
            requestSerial &+= 1
            let serial = requestSerial
            requestDeadlines[serial] = waiter
            let linkID = link.id
            host.spawn("Security Request deadline") {
                try await clock.sleep(for: SMPPairing.timeout)
                await host.run { host in
                    guard let waiter = host.security.requestDeadlines.removeValue(forKey: serial) else { return }
                    // A pairing under way settles the wait itself (its outcome or SMP timeout).
                    if let h = host.connections.links.handle(forID: linkID), host.security.machines[h]?.isPairing == true { return }
                    waiter.fail(BLEError.security(.timeout))
                }
            }
        }
        if !m.isPairing {
            if link.role == .central {
                guard limiter.mayPair(link.peer, now: host.now) else {
                    waiters[handle]?.removeAll { $0 === waiter }
                    throw BLEError.security(.local(.repeatedAttempts, detail: "wait before pairing with \(link.peer) again"))
                }
                m.protectsExistingBond = protectsBond(of: link, explicit: explicit, host)
                let actions = m.start(now: host.now)
                machines[handle] = m
                if explicit { explicitPairing[handle] = m.generation } else { explicitPairing[handle] = nil }
                perform(actions, handle: handle, host)
            } else {
                perform(m.securityRequest(), handle: handle, host)
            }
        }
        return try await waiter.wait()
    }

    /// The level of the link with this id now.
    func level(linkID: UInt64, _ host: isolated HostController) -> SecurityLevel {
        guard let handle = host.connections.links.handle(forID: linkID), let s = host.connections.links[handle]?.security,
              s.encrypted else { return .none }
        return .of(authenticated: s.authenticated, secureConnections: s.secureConnections, keySize: s.keySize)
    }

    /// Central: encrypts with the bond's key and waits for the controller's answer.
    func encrypt(linkID: UInt64, _ host: isolated HostController) async throws {
        guard let handle = host.connections.links.handle(forID: linkID), let link = host.connections.links[handle] else {
            throw BLEError.notConnected
        }
        guard let b = bond(for: link.peer, host), let key = b.key(as: .initiator) else {
            throw BLEError.security(.unavailable("no bond with \(link.peer)"))
        }
        if let why = refusal(of: b) { throw BLEError.security(.unavailable(why)) }
        let waiter = OneShot<PairingResult?>()
        waiters[handle, default: []].append(waiter)
        startEncryption(handle: handle, key: key, worth: KeyWorth(b), host)
        _ = try await waiter.wait()
    }

    /// Raises a central's link to what `code` (an ATT security error) asks for: encryption with
    /// a bond's key when that is enough, else pairing (with MITM when authentication is missing).
    func raise(for code: ATTErrorCode, linkID: UInt64, _ host: isolated HostController) async throws {
        guard let handle = host.connections.links.handle(forID: linkID), let link = host.connections.links[handle] else {
            throw BLEError.notConnected
        }
        let needsAuthentication = code == .insufficientAuthentication && link.security.encrypted
        if !link.security.encrypted, let b = bond(for: link.peer, host), b.key(as: .initiator) != nil {
            // A failure here (the peer lost our key, or is not who the bond says) is the
            // caller's error: pairing again over it is for an explicit `pair()`, since a
            // spoofed peer could otherwise get a weaker bond in place of the real one.
            try await encrypt(linkID: linkID, host)
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
        _ = try await pair(linkID: linkID, host)
    }

    private func startEncryption(handle: UInt16, key: (ltk: [UInt8], ediv: UInt16, rand: UInt64), worth: KeyWorth, _ host: isolated HostController) {
        pendingKey[handle] = worth
        guard let linkID = host.connections.links[handle]?.id else { return }
        host.spawn("LE Enable Encryption") {
            do {
                try await host.command(.leEnableEncryption(handle: handle, randomNumber: key.rand, encryptedDiversifier: key.ediv, longTermKey: key.ltk))
            } catch {
                let status: HCIStatus
                if case let BLEError.hci(.commandFailed(_, s)) = error { status = s } else { status = .unspecifiedError }
                // Only if the link is still the one we started on (a handle can be reused).
                await host.run { host in
                    guard host.connections.links.handle(forID: linkID) == handle else { return }
                    host.security.encryptionChanged(handle: handle, status: status, enabled: false, host)
                }
            }
        }
    }

    private func perform(_ actions: [SMPAction], handle: UInt16, _ host: isolated HostController) {
        guard let link = host.connections.links[handle] else { return }
        let peer = link.peer, linkID = link.id
        let agent = settings.agent
        let generation = machines[handle]?.generation ?? 0
        for action in actions {
            switch action {
            case let .send(pdu):
                host.sendL2CAP(handle: handle, channel: L2CAPChannel.smp, payload: pdu)
            case let .displayPasskey(value):
                // A fixed passkey is used for one pairing only: once shown, the peer holds what
                // it needs to find it (legacy Mrand, Secure Connections' nonces), whatever the
                // pairing's end (Vol 3 Part H §2.3.5.3 wants a fresh one each time).
                if value == settings.pairing.displayedPasskey, fixedPasskeyRetired != true, !retireFixedPasskey(value, host) {
                    // Its use could not be recorded: not shown, and the pairing ends here (the
                    // rest of these actions belonged to it).
                    guard var m = machines[handle] else { return }
                    let ended = m.abandon(.passkeyEntryFailed, detail: "the fixed passkey's use could not be recorded in the bond store, so it is not used")
                    machines[handle] = m
                    perform(ended, handle: handle, host)
                    return
                }
                host.spawn("passkey display") { await agent.displayPasskey(value, for: peer) }
            case .requestPasskey:
                prompts[handle, default: []].append(host.spawn("passkey entry") {
                    let value = await agent.enterPasskey(for: peer)
                    await host.run { host in
                        let usedBefore = host.security.typedFixedPasskeyWasUsed(value, host)
                        host.security.answer(linkID: linkID, generation: generation, host) { m, now in m.passkeyEntered(value, usedBefore: usedBefore, now: now) }
                    }
                })
            case let .confirmNumericComparison(value):
                prompts[handle, default: []].append(host.spawn("numeric comparison") {
                    let ok = await agent.confirmNumericComparison(value, for: peer)
                    let byPerson = !agent.confirmsWithoutAPerson
                    await host.run { $0.security.answer(linkID: linkID, generation: generation, $0) { m, now in m.numericComparisonConfirmed(ok, byPerson: byPerson, now: now) } }
                })
            case let .requestApproval(features):
                prompts[handle, default: []].append(host.spawn("pairing approval") {
                    let ok = await agent.approvePairing(with: peer, features: features)
                    await host.run { $0.security.answer(linkID: linkID, generation: generation, $0) { m, now in m.approve(ok, now: now) } }
                })
            case let .startEncryption(ltk, ediv, rand):
                startEncryption(handle: handle, key: (ltk, ediv, rand), worth: KeyWorth(pairing: machines[handle]), host)
            case let .completed(outcome):
                cancelPrompts(handle, host)
                completed(outcome, handle: handle, host)
            case let .failed(error):
                cancelPrompts(handle, host)
                explicitPairing[handle] = nil
                // Only a failed guess at a secret (a passkey, OOB data) that this side caught counts
                // towards every peer's wait; a Just Works or comparison failure proves nothing and
                // is free to provoke, so it slows only its own peer.
                let model = machines[handle]?.lastModel
                let guessed = model == .passkeyEntry || model == .outOfBand
                switch error {
                case let .local(reason, _): limiter.failed(peer, reason: reason, local: guessed, now: host.now)
                case let .peer(reason): limiter.failed(peer, reason: reason, local: false, now: host.now)
                default: break
                }
                host.log("pairing with \(peer): \(error)")
                for w in waiters.removeValue(forKey: handle) ?? [] { w.fail(BLEError.security(error)) }
                if link.role == .peripheral {
                    host.server.emit(.pairingFailed(link.central, error))
                } else {
                    link.observation.update { $0.lastPairingFailure = error }
                }
            case let .securityRequested(auth):
                securityRequested(auth, handle: handle, host)
            }
        }
        host.rescheduleTimer()
    }

    /// A pairing ended: questions still open for it are withdrawn (the agent's task is
    /// cancelled), so a stale prompt cannot take an answer meant for another.
    private func cancelPrompts(_ handle: UInt16, _ host: isolated HostController) {
        for id in prompts.removeValue(forKey: handle) ?? [] { host.cancelTask(id) }
    }

    /// Hands the user's answer to the link's machine, if the link (by id) is still there.
    private func answer(linkID: UInt64, generation: UInt64, _ host: isolated HostController, _ body: (inout SMPPairing, Duration) -> [SMPAction]) {
        guard let handle = host.connections.links.handle(forID: linkID), var m = machines[handle], m.generation == generation else { return }
        let actions = body(&m, host.now)
        machines[handle] = m
        perform(actions, handle: handle, host)
    }

    private func completed(_ outcome: SMPPairingOutcome, handle: UInt16, _ host: isolated HostController) {
        guard let link = host.connections.links[handle] else { return }
        limiter.succeeded(link.peer)
        let role: SMPPairing.Role = link.role == .central ? .initiator : .responder
        var stored = false
        let started = explicitPairing.removeValue(forKey: handle)
        let explicit = started != nil && started == machines[handle]?.generation
        if outcome.bonded {
            // A new key starts without the old bond's subscriptions; this link's are saved
            // when it closes.
            var bond = Bond(outcome: outcome, connectedPeer: link.peer, role: role)
            let all = bonds(host)
            let old = all.first { $0.peer.sameDevice(as: bond.peer) }
            let others = all.filter { !$0.peer.sameDevice(as: bond.peer) }
            // Our server keeps a client's last SignCounter when a pairing again distributes the
            // same CSRK (other stacks may reuse it), so older signed writes stay refused.
            if let old, old.peerSignatureKey != nil, old.peerSignatureKey == bond.peerSignatureKey { bond.peerSignCounter = old.peerSignCounter }
            switch BondReplacement.decide(old: old, others: others, new: bond, from: link.peerOnAir ?? link.peer, explicit: explicit,
                                          localIRK: localIRK(host)) {
            case .store:
                stored = store(bond, replacing: true, host)
                // New keys: the client state the old bond kept is not this one's.
                if stored { host.server.forgetBondedClient(bond.peer) }
            case let .keep(why):
                host.log("kept the bond of \(bond.peer): \(why)")
                // No call waits for a pairing the peer started: the central's application
                // reads why its bond was not replaced here (the peripheral's gets `.paired`
                // with `bonded` false).
                if link.role == .central { link.observation.update { $0.lastPairingFailure = .existingBondKept(why) } }
            case let .conflict(why):
                // Someone claims a bonded device's identity from an address that bond does not
                // know: refuse the claim and the link (Zephyr's update_keys_check does the same).
                host.log("pairing with \(link.peer) refused: \(why)")
                let error = BLEError.security(.identityConflict(why))
                for w in waiters.removeValue(forKey: handle) ?? [] { w.fail(error) }
                let failure = SMPPairingError.local(.authenticationRequirements, detail: why)
                if link.role == .peripheral {
                    host.server.emit(.pairingFailed(link.central, failure))
                } else {
                    link.observation.update { $0.lastPairingFailure = failure }
                }
                host.connections.disconnectInBackground(handle: handle, "refusing a claimed identity", host)
                return
            }
        }
        host.connections.links.withLink(handle) {
            $0.security.encrypted = true
            $0.security.authenticated = outcome.authenticated
            $0.security.secureConnections = outcome.secureConnections
            $0.security.keySize = outcome.keySize
            $0.security.hasLongTermKey = stored
            $0.encryptedWithBondKey = stored
        }
        let result = PairingResult(secureConnections: outcome.secureConnections, method: outcome.model, keySize: outcome.keySize,
                                   securityLevel: outcome.securityLevel, bonded: stored, keysSent: outcome.sent.kinds,
                                   keysReceived: outcome.received.kinds, peerIdentity: outcome.received.identityAddress)
        host.log("paired with \(link.peer): \(result)")
        for w in waiters.removeValue(forKey: handle) ?? [] { w.succeed(result) }
        if link.role == .peripheral { host.server.emit(.paired(link.central, result)) }
    }

    /// Central: a peripheral's Security Request (Vol 3 Part H §2.4.6): encrypt with the bond's
    /// key when it is good enough for what was asked, else pair.
    private func securityRequested(_ auth: SMPAuthRequirements, handle: UInt16, _ host: isolated HostController) {
        guard settings.answersSecurityRequests, let link = host.connections.links[handle], !link.security.encrypted else { return }
        let linkID = link.id
        // A bond Secure Connections Only mode refuses (`refusal(of:)`) is paired over: that mode
        // pairs only at level 4, which the replacement rules let replace a weaker bond.
        if let b = bond(for: link.peer, host), b.key(as: .initiator) != nil, b.authenticated || !auth.contains(.mitm), refusal(of: b) == nil {
            host.spawn("encryption for a Security Request") { try await host.run { try await $0.security.encrypt(linkID: linkID, $0) } }
        } else {
            host.spawn("pairing for a Security Request") { _ = try await host.run { try await $0.security.pair(linkID: linkID, $0) } }
        }
    }
}

import BLECrypto
import BLEHCI
import BLEHost
import BLEWire

/// The host's Security Manager part. It decides what each link's security is, so the GATT
/// server's permission checks and the client's retries read it from the link. Isolated to the
/// host actor that owns it. One concern per file:
/// - here, pairing: one sans-IO `SMPPairing` per link, the callers waiting on it, the pairing
///   agent's prompts, and a peripheral's Security Request answered (Vol 3 Part H §2.4.6);
/// - `+Encryption`: the controller's side of encryption (LE Enable Encryption as central, the
///   LE Long Term Key Request as peripheral, Encryption Change and Key Refresh; Vol 3 Part H
///   §2.4.4, Vol 4 Part E §7.8.24–26) and raising a link's security on demand;
/// - `+Bonds`: the bond cache and store, the local identity, and what a finished pairing keeps;
/// - `+Policy`: the fixed passkey's single use and the protection of existing bonds;
/// - `+Signing`: data signing with the keys bonds keep (Vol 3 Part C §10.4).
final class SecurityCoordinator {
    let settings: SecuritySettings
    var machines: [UInt16: SMPPairing] = [:]
    /// Callers waiting for a pairing (or a re-encryption) on a link to end.
    var waiters: [UInt16: [OneShot<PairingResult?>]] = [:]
    /// Central: callers of `encrypt` waiting for an encryption with a bond's key (their own or
    /// one they joined), woken by its Encryption Change even if a pairing runs meanwhile.
    var encryptionWaiters: [UInt16: [OneShot<PairingResult?>]] = [:]
    /// Central: a Security Request that arrived while an encryption with a bond's key was under
    /// way, answered once that encryption ends (its outcome decides what the request needs).
    var deferredSecurityRequests: [UInt16: SMPAuthRequirements] = [:]
    /// What the key being switched on is worth, until the controller confirms encryption.
    var pendingKey: [UInt16: KeyWorth] = [:]
    var limiter: SMPAttemptLimiter
    var cachedBonds: [Bond]?
    var ephemeralIdentity: LocalIdentity?
    /// Whether the fixed passkey (`displayedPasskey`) is used up: one recorded Passkey Entry
    /// pairing reveals all of it (Vol 3 Part H §2.3.5.6.3), so it is shown once, in this host's
    /// life and, through the bond store, across restarts; later pairings draw random passkeys.
    /// Nil until the store was asked.
    var fixedPasskeyRetired: Bool?
    /// The pairing the application started on a link (`pair()`), by the machine's
    /// `generation` at its start: only that pairing's bond may replace a stronger old one, not
    /// a later one the peer starts after ours failed.
    var explicitPairing: [UInt16: UInt64] = [:]
    /// Links whose pairing this side is ending for a reason of its own (the fixed passkey's use
    /// could not be recorded): the failure is not the peer's, so it does not count as an attempt.
    var abandonedByThisSide: Set<UInt16> = []
    /// Central: links on which a Security Request asking for MITM over an unauthenticated key
    /// was answered by pairing (`securityRequested`): once per link.
    private var pairedOverEncryption: Set<UInt16> = []
    /// Numbers each encryption started (`startEncryption`), so a failed start is taken for its own.
    var encryptionSerial: UInt64 = 0

    /// What a key is worth, noted when encryption with it starts and applied to the link when
    /// the controller confirms it.
    struct KeyWorth {
        var secureConnections: Bool
        var authenticated: Bool
        var keySize: Int
        /// The bond whose key it is (its peer's identity and the key given), if it is one: the
        /// link speaks for that bond once encrypted only if the bond is still there with that
        /// key (it may be removed or replaced while the encryption is under way).
        var bond: (peer: DeviceAddress, ltk: [UInt8])?
        var bonded: Bool { bond != nil }
        /// `encryptionSerial` of the start that gave it, for one this host started (0 otherwise).
        var serial: UInt64 = 0

        /// `ltk`, `bond`'s key for our role.
        init(_ bond: Bond, key ltk: [UInt8]) {
            self.init(secureConnections: bond.secureConnections, authenticated: bond.authenticated, keySize: bond.keySize)
            self.bond = (bond.peer, ltk)
        }

        /// The key a running pairing negotiated; the least a key can be when it has not.
        init(pairing m: SMPPairing?) {
            guard let n = m?.negotiatedKey else { self = .least; return }
            self.init(secureConnections: n.secureConnections, authenticated: n.authenticated, keySize: n.keySize)
        }

        init(secureConnections: Bool, authenticated: Bool, keySize: Int) {
            self.secureConnections = secureConnections
            self.authenticated = authenticated
            self.keySize = keySize
        }

        /// For a key we did not choose: fail closed.
        static let least = KeyWorth(secureConnections: false, authenticated: false, keySize: 7)
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
    func linkOpened(handle: UInt16, _ host: isolated some SecurityDriver) {
        guard let link = host.link(handle) else { return }
        // A bond Secure Connections Only mode refuses to encrypt with counts as none: the client
        // is told to pair (Insufficient Authentication), not to encrypt with a key that would
        // be refused (Insufficient Encryption).
        let usable = bond(for: link.peer, host).flatMap { refusal(of: $0) == nil ? $0 : nil }
        let hasKey = usable?.key(as: link.role == .central ? .initiator : .responder) != nil
        host.withLink(handle) {
            $0.security.hasLongTermKey = hasKey
            $0.security.requiredKeySize = settings.minimumServerKeySize
        }
    }

    func linkClosed(_ link: Link, error: BLEError, _ host: isolated some SecurityDriver) {
        if link.encryptedWithBondKey { saveSubscriptions(link, host) }
        for id in prompts.removeValue(forKey: link.handle) ?? [] { host.cancelTask(id) }
        machines[link.handle] = nil
        pendingKey[link.handle] = nil
        explicitPairing[link.handle] = nil
        abandonedByThisSide.remove(link.handle)
        pairedOverEncryption.remove(link.handle)
        deferredSecurityRequests[link.handle] = nil
        for w in waiters.removeValue(forKey: link.handle) ?? [] { w.fail(error) }
        for w in encryptionWaiters.removeValue(forKey: link.handle) ?? [] { w.fail(error) }
    }

    /// Keeps a bonded client's CCCDs with its bond (Vol 3 Part G §3.3.3.3).
    func saveSubscriptions(_ link: Link, _ host: isolated some SecurityDriver) {
        guard link.encryptedWithBondKey, var b = bond(for: link.peer, host) else { return }
        let now = link.server.subscriptions
        guard b.clientConfigurations != now else { return }
        b.clientConfigurations = now
        _ = store(b, replacing: true, host)
    }

    func machine(for handle: UInt16, _ host: isolated some SecurityDriver) -> SMPPairing? {
        if let m = machines[handle] { return m }
        guard let link = host.link(handle), let own = link.localOnAir ?? host.ownDeviceAddress,
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

    // MARK: - Inbound

    /// One SMP PDU from the link's fixed channel 0x0006.
    func receive(_ pdu: [UInt8], handle: UInt16, _ host: isolated some SecurityDriver) {
        guard let link = host.link(handle) else { return }
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
        if link.role == .peripheral, !m.isPairing, pdu.count == 2, pdu[0] == SMPCode.pairingFailed.rawValue,
           let waiting = waiters[handle], !waiting.isEmpty {
            // The central refused our Security Request (Vol 3 Part H §2.4.6): no pairing ran,
            // so the machine has nothing to end; those waiting on the request learn at once.
            let error = SMPPairingError.peer(SMPPairingFailedReason(rawValue: pdu[1]))
            host.log("\(link.peer) refused the Security Request: \(error)")
            for w in waiters.removeValue(forKey: handle) ?? [] { w.fail(BLEError.security(error)) }
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

    func expire(now: Duration, _ host: isolated some SecurityDriver) {
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
    func pair(linkID: UInt64, explicit: Bool = false, _ host: isolated some SecurityDriver) async throws -> PairingResult {
        guard let result = try await secure(linkID: linkID, explicit: explicit, host) else {
            throw BLEError.security(.unavailable("the link was encrypted with a stored key instead of pairing"))
        }
        return result
    }

    /// Pairs (central), or sends a Security Request (peripheral), and waits until the link is
    /// secured: the pairing's result, or nil when the central encrypted with a bond's key.
    /// `explicit` (central): the application asked for this pairing; it counts only for a
    /// pairing started here, not one already under way. `evenIfEncrypted` (peripheral): send
    /// the Security Request on a link already encrypted too (asking for more than its key),
    /// where otherwise that link counts as secured at once.
    func secure(linkID: UInt64, explicit: Bool = false, evenIfEncrypted: Bool = false, _ host: isolated some SecurityDriver) async throws -> PairingResult? {
        guard let handle = host.linkHandle(forID: linkID), let link = host.link(handle) else {
            throw BLEError.notConnected
        }
        guard var m = machine(for: handle, host) else { throw BLEError.security(.unavailable("no local identity for pairing")) }
        if link.role == .peripheral, link.security.encrypted, !m.isPairing, !evenIfEncrypted { return nil }
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
                    if let h = host.linkHandle(forID: linkID), host.security.machines[h]?.isPairing == true { return }
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
    func level(linkID: UInt64, _ host: isolated some SecurityDriver) -> SecurityLevel {
        guard let handle = host.linkHandle(forID: linkID), let s = host.link(handle)?.security,
              s.encrypted else { return .none }
        return .of(authenticated: s.authenticated, secureConnections: s.secureConnections, keySize: s.keySize)
    }

    func perform(_ actions: [SMPAction], handle: UInt16, _ host: isolated some SecurityDriver) {
        guard let link = host.link(handle) else { return }
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
                    abandonedByThisSide.insert(handle)
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
            case .confirmJustWorks:
                prompts[handle, default: []].append(host.spawn("just works confirmation") {
                    let ok = await agent.confirmJustWorks(for: peer)
                    await host.run { $0.security.answer(linkID: linkID, generation: generation, $0) { m, now in m.justWorksConfirmed(ok, now: now) } }
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
                // A pairing this side ended for a reason of its own (`abandon`) counts for no one.
                let model = machines[handle]?.lastModel
                let guessed = model == .passkeyEntry || model == .outOfBand
                let endedByThisSide = abandonedByThisSide.remove(handle) != nil
                switch error {
                case let .local(reason, _) where !endedByThisSide: limiter.failed(peer, reason: reason, local: guessed, now: host.now)
                case let .peer(reason): limiter.failed(peer, reason: reason, local: false, now: host.now)
                default: break
                }
                host.log("pairing with \(peer): \(error)")
                for w in waiters.removeValue(forKey: handle) ?? [] { w.fail(BLEError.security(error)) }
                pairingFailed(error, on: link, host)
            case let .securityRequested(auth):
                securityRequested(auth, handle: handle, host)
            }
        }
        host.rescheduleTimer()
    }

    /// A pairing ended: questions still open for it are withdrawn (the agent's task is
    /// cancelled), so a stale prompt cannot take an answer meant for another.
    private func cancelPrompts(_ handle: UInt16, _ host: isolated some SecurityDriver) {
        for id in prompts.removeValue(forKey: handle) ?? [] { host.cancelTask(id) }
    }

    /// Hands the user's answer to the link's machine, if the link (by id) is still there.
    private func answer(linkID: UInt64, generation: UInt64, _ host: isolated some SecurityDriver, _ body: (inout SMPPairing, Duration) -> [SMPAction]) {
        guard let handle = host.linkHandle(forID: linkID), var m = machines[handle], m.generation == generation else { return }
        let actions = body(&m, host.now)
        machines[handle] = m
        perform(actions, handle: handle, host)
    }

    /// Central: a peripheral's Security Request (Vol 3 Part H §2.4.6): encrypt with the bond's
    /// key when it is good enough for what was asked, else pair. On a link already encrypted,
    /// only a request for more than its key gives (MITM protection over an unauthenticated
    /// key) is answered, by pairing; one the key meets is ignored.
    func securityRequested(_ auth: SMPAuthRequirements, handle: UInt16, _ host: isolated some SecurityDriver) {
        guard settings.answersSecurityRequests, let link = host.link(handle) else { return }
        let linkID = link.id
        if pendingKey[handle] != nil {
            // Our encryption with a bond's key is under way: a pairing now would run beside
            // it. The request is looked at again when the encryption ends.
            deferredSecurityRequests[handle] = auth
            return
        }
        // A pairing asks for what the peripheral asked for, where this side's IO capability allows.
        if auth.contains(.mitm), settings.pairing.ioCapability.canProtectMITM, var m = machine(for: handle, host), !m.isPairing {
            m.settings.requestsMITM = true
            machines[handle] = m
        }
        if link.security.encrypted {
            // Once per link, and only where a pairing can give MITM protection: a peer that
            // cannot (or will not) would otherwise set off Just Works pairing after pairing.
            guard auth.contains(.mitm), !link.security.authenticated, settings.pairing.ioCapability.canProtectMITM,
                  pairedOverEncryption.insert(handle).inserted else { return }
            host.spawn("pairing for a Security Request over a weaker key") { _ = try await host.run { try await $0.security.pair(linkID: linkID, $0) } }
            return
        }
        // A bond Secure Connections Only mode refuses (`refusal(of:)`) is paired over: that mode
        // pairs only at level 4, which the replacement rules let replace a weaker bond.
        // A pairing that cannot give MITM protection either (our IO capability) is no better
        // than the bond's key.
        let pairingHelpsNot = !auth.contains(.mitm) || !settings.pairing.ioCapability.canProtectMITM
        if let b = bond(for: link.peer, host), b.key(as: .initiator) != nil, b.authenticated || pairingHelpsNot, refusal(of: b) == nil {
            host.spawn("encryption for a Security Request") { try await host.run { try await $0.security.encrypt(linkID: linkID, $0) } }
        } else {
            host.spawn("pairing for a Security Request") { _ = try await host.run { try await $0.security.pair(linkID: linkID, $0) } }
        }
    }
}

/// What the Security Manager part needs from the host beyond `HostServices`: itself (for its own
/// tasks and prompts, which it may cancel); the link table (each link's `LinkSecurity`); SMP PDUs
/// sent on a link, the encryption commands, a link dropped (a refused identity claim); our own
/// address as the peer sees it and our identity address (what pairing distributes); a report to
/// the application; and the driver's routing of what it decided: the bonds changed (privacy's
/// resolutions go stale), a client's bonded state on our server is no longer its own, a link
/// encrypted (with the identity of the bond whose key did it, if one).
protocol SecurityDriver: LinkTableAccess {
    var security: SecurityCoordinator { get }
    /// What the controller said of itself at initialisation (nil before): whether it lists LE
    /// Enable Encryption.
    var info: ControllerInfo? { get }
    nonisolated var clock: any BLEClock { get }
    func cancelTask(_ id: UInt64)
    func sendInBackground(_ command: HCICommand, _ name: String)
    @discardableResult
    func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int
    func disconnectInBackground(handle: UInt16, _ why: String)
    var ownDeviceAddress: DeviceAddress? { get }
    var ownIdentityAddress: DeviceAddress? { get }
    func report(_ event: PeripheralManagerEvent)
    func bondsChanged()
    func forgetBondedClient(_ identity: DeviceAddress)
    func linkEncrypted(handle: UInt16, bondIdentity: DeviceAddress?)
}

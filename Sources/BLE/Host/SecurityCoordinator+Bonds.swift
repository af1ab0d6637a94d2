import BLECrypto
import BLEHCI
import BLEHost
import BLEWire

// The bond cache and the local identity of `SecurityCoordinator` (its own file: one concern).
extension SecurityCoordinator {
    // MARK: - Bonds

    /// Every bond, cached after the first read (the store is read once per host).
    func bonds(_ host: isolated some SecurityDriver) -> [Bond] {
        if let cachedBonds { return cachedBonds }
        guard let store = settings.bondStore else { return [] }
        do {
            let all = try store.bonds()
            for problem in store.problems() { host.log("bond store: \(problem)") }
            cachedBonds = all
            return all
        } catch {
            host.log("bond store: \(error)")
            cachedBonds = []
            return []
        }
    }

    /// The bond for the device at `address`: the one whose identity it is, else the one whose
    /// IRK resolves it, else the one that last connected from it. In that order, so a bond
    /// cannot shadow another's identity by having connected from it.
    func bond(for address: DeviceAddress, _ host: isolated some SecurityDriver) -> Bond? {
        let all = bonds(host)
        if let b = all.first(where: { $0.peer.sameDevice(as: address) }) { return b }
        if address.type.peerType == .random, address.address.randomKind == .resolvablePrivate,
           let b = all.first(where: { b in b.resolvingKey.map { ResolvablePrivateAddress.resolves(address.address, irk: $0) } ?? false }) {
            return b
        }
        return all.first { $0.connectionAddress?.sameDevice(as: address) == true }
    }

    /// Stores `bond`. Unless `replacing` (an explicit `pair()`), a bond is never replaced by one
    /// of a lower level: a Just Works pairing claiming a bonded device's identity must not take
    /// its place. New identities past `SecuritySettings.maximumBonds` are not stored.
    func store(_ bond: Bond, replacing: Bool, _ host: isolated some SecurityDriver) -> Bool {
        var all = bonds(host)
        var evicted: Bond?
        if let old = all.first(where: { $0.peer.sameDevice(as: bond.peer) }) {
            if !replacing && old.securityLevel > bond.securityLevel {
                host.log("kept the bond of \(bond.peer) (level \(old.securityLevel.rawValue)): a level \(bond.securityLevel.rawValue) pairing does not replace it")
                return false
            }
        } else if all.count >= settings.maximumBonds {
            // Full: an authenticated bond takes the place of an unauthenticated one (anyone in
            // range can make those with Just Works, so they must not lock out real ones).
            guard bond.authenticated, let victim = all.first(where: { !$0.authenticated }) else {
                host.log("not storing the bond of \(bond.peer): \(settings.maximumBonds) bonds already")
                return false
            }
            host.log("bond store full: forgetting unauthenticated \(victim.peer) for authenticated \(bond.peer)")
            all.removeAll { $0.peer.sameDevice(as: victim.peer) }
            evicted = victim
        }
        let previous = all.first { $0.peer.sameDevice(as: bond.peer) }
        all.removeAll { $0.peer.sameDevice(as: bond.peer) }
        all.append(bond)
        // On disk first: a bond (or a SignCounter) the store could not record is not used
        // either, so a restart cannot find an older state than this run acted on. The evicted
        // bond's file goes before the new one is written: were it left, the store would hold
        // more than `maximumBonds`, and a forgotten bond would come back after a restart.
        if let store = settings.bondStore {
            if let evicted {
                do {
                    try store.remove(DeviceAddress(evicted.peer.address, type: evicted.peer.type.peerType))
                } catch {
                    host.log("not storing the bond of \(bond.peer): removing the evicted bond of \(evicted.peer) failed: \(error)")
                    // Failed after its file went (the directory's fsync): memory follows the
                    // disk, as in `removeBond`, so its key no longer answers.
                    if let listed = try? store.bonds(), !listed.contains(where: { $0.peer.sameDevice(as: evicted.peer) }) {
                        forget(evicted.peer, host)
                    }
                    return false
                }
            }
            do {
                try store.save(bond)
            } catch {
                host.log("saving the bond of \(bond.peer): \(error)")
                if let evicted {
                    // The evicted bond's file is gone: memory follows the disk.
                    cachedBonds = all.filter { !$0.peer.sameDevice(as: bond.peer) }
                    bondGone(evicted, host)
                    host.bondsChanged()
                }
                return false
            }
        }
        cachedBonds = all
        if let evicted { bondGone(evicted, host) }
        // Only a new identity or IRK changes what resolves to whom (not a counter or a CCCD).
        if evicted != nil || previous?.peer != bond.peer || previous?.peerIdentityResolvingKey != bond.peerIdentityResolvingKey {
            host.bondsChanged()
        }
        return true
    }

    /// Forgets the bond of `peer`: its file first (the store makes the removal durable), then
    /// the host's memory, so a removal the store could not carry out is thrown and the bond stays
    /// in use, as it would after a restart. A failure after the file went (the store no longer
    /// lists the bond) is thrown too, and the bond forgotten.
    func removeBond(_ peer: DeviceAddress, _ host: isolated some SecurityDriver) throws -> Bool {
        let stored: Bool
        do {
            stored = try settings.bondStore?.remove(DeviceAddress(peer.address, type: peer.type.peerType)) ?? false
        } catch {
            // The store failed, perhaps after the file went (an fsync of the directory after the
            // unlink): the host then forgets the bond as its store did, and still reports.
            if let listed = try? settings.bondStore?.bonds(), !listed.contains(where: { $0.peer.sameDevice(as: peer) }) {
                forget(peer, host)
            }
            throw error
        }
        return forget(peer, host) || stored
    }

    /// Drops `peer`'s bond from the cache (the store no longer has it); true when it was there.
    @discardableResult
    func forget(_ peer: DeviceAddress, _ host: isolated some SecurityDriver) -> Bool {
        var all = bonds(host)
        let before = all.count
        let gone = all.filter { $0.peer.sameDevice(as: peer) }
        all.removeAll { $0.peer.sameDevice(as: peer) }
        cachedBonds = all
        for b in gone { bondGone(b, host) }
        host.bondsChanged()
        return all.count != before
    }

    /// `bond` is gone (removed or evicted): what its client left on this server goes, and its
    /// key no longer speaks for a bond on the links it encrypted.
    func bondGone(_ bond: Bond, _ host: isolated some SecurityDriver) {
        host.forgetBondedClient(bond.peer)
        bondKeyWithdrawn(bond, host)
    }

    /// `bond` is gone or replaced: an open link encrypted with its key (but `except`, the link
    /// that made the new bond) no longer speaks for a bond, so what its client does is not kept
    /// with whatever bond that identity has next.
    func bondKeyWithdrawn(_ bond: Bond, except: UInt16? = nil, _ host: isolated some SecurityDriver) {
        for h in host.linkHandles where h != except {
            host.withLink(h) { link in
                if link.encryptedWithBondKey, bond.matches(link.peer) { link.encryptedWithBondKey = false }
            }
        }
    }

    /// Our keys for distribution: the stored local identity, or one made for this host's life.
    func localIdentity(ownAddress: DeviceAddress, _ host: isolated some SecurityDriver) -> SMPLocalIdentity? {
        guard let identity = localIdentity(host) else { return nil }
        // The identity address we give is the one this link uses (public or static random), so
        // the peer finds us by it next time (Vol 3 Part H §3.6.5); with privacy, the static
        // random identity behind our RPAs.
        // A CSRK of its own for every pairing (as BlueZ and Zephyr do): one shared by all peers
        // would let any of them sign writes as us to the others, and a pairing again that
        // restarts the counters would let writes captured before it be replayed. The bond
        // keeps the one it got (`Bond.localSignatureKey`).
        guard let signatureKey = try? SecureRandom.bytes(count: 16) else {
            host.log("no random CSRK: not pairing")
            return nil
        }
        return SMPLocalIdentity(identityResolvingKey: identity.identityResolvingKey,
                                identityAddress: host.ownIdentityAddress ?? ownAddress,
                                signatureKey: signatureKey)
    }

    /// Our IRK, for RPAs and the resolving list.
    func localIRK(_ host: isolated some SecurityDriver) -> [UInt8]? { localIdentity(host)?.identityResolvingKey }

    /// The stored local identity, or one made for this host's life.
    func localIdentity(_ host: isolated some SecurityDriver) -> LocalIdentity? {
        var identity = ephemeralIdentity
        if identity == nil {
            do {
                identity = try settings.bondStore?.localIdentity() ?? LocalIdentity.generate()
            } catch {
                host.log("local identity: \(error)")
                return nil
            }
            ephemeralIdentity = identity
        }
        return identity
    }

    func completed(_ outcome: SMPPairingOutcome, handle: UInt16, _ host: isolated some SecurityDriver) {
        guard let link = host.link(handle) else { return }
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
                if stored {
                    // New keys: the client state the old bond kept is not this one's, neither
                    // kept for the next connection nor restored on this link; and another link
                    // encrypted with the old key no longer speaks for the bond.
                    host.forgetBondedClient(bond.peer)
                    // Features restored from the old bond by address go, unless this link proved
                    // itself that bond's client (encrypted with its key, which restored its
                    // CCCDs too): then it is the same client pairing again, and they are its own.
                    host.withLink(handle) {
                        if !$0.server.hasRestoredBondedSubscriptions { $0.server.forgetRestoredFeatures() }
                    }
                    if let old { bondKeyWithdrawn(old, except: handle, host) }
                }
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
                pairingFailed(failure, on: link, host)
                host.disconnectInBackground(handle: handle, "refusing a claimed identity")
                return
            }
        }
        host.withLink(handle) {
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
        link.observation.reportSecurity(.paired(result))
        if link.role == .peripheral { host.report(.paired(link.central, result)) }
    }
}

extension SecurityCoordinator {
    /// A pairing on `link` ended without keys: its `securityEvents` watchers learn it, then the
    /// peripheral manager's `.pairingFailed` event, or the central's `lastPairingFailure` (no
    /// call of the application waits for a pairing the peripheral started).
    func pairingFailed(_ failure: SMPPairingError, on link: Link, _ host: isolated some SecurityDriver) {
        link.observation.reportSecurity(.pairingFailed(failure))
        if link.role == .peripheral {
            host.report(.pairingFailed(link.central, failure))
        } else {
            link.observation.update { $0.lastPairingFailure = failure }
        }
    }
}

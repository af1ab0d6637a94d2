import BLEHost
import BLEWire

/// The server's side of GATT caching across connections, Core spec Vol 3 Part G §2.5.2 and
/// §2.5.2.1: every client becomes change-unaware when the database changes; a bonded client's
/// state (change awareness, Client Supported Features §7.2, CCCDs §3.3.3.3) persists while it
/// is away.
///
/// A returning bonded client gets its change awareness and features back as soon as the server
/// knows who it is (its CCCDs only once its link is encrypted with the bond's key, so a device
/// copying its address does not learn or receive its subscriptions):
/// - at connection, when the address it connected with names a bond (its identity address, or
///   a resolvable private address that a bonded IRK resolves, in the controller or here), so
///   its first request is already judged by it: a change-unaware client that enabled robust
///   caching is answered Database Out Of Sync, not served from a stale layout;
/// - otherwise once its link is encrypted with a bond's key. Until then the server cannot tell
///   it from a client without a trusted relationship, and treats it as one: change-aware, no
///   features, no CCCDs (§2.5.2.1: the initial state of a client without a trusted
///   relationship is change-aware).
///
/// A change-unaware client is sent a Service Changed indication of the whole database (§7.1)
/// once its link is encrypted with the bond's key, when its restored CCCD asks for them: the
/// proof that it is the bonded client, and the point our own client has its cache in hand.
/// What a client does on a link not encrypted so is not kept for the next connection.
///
/// Why change awareness and features are restored by address, before the proof of encryption:
/// a bonded client may send requests over its cached handles before it encrypts, and a write
/// to a handle that moved would change the wrong attribute; Database Out Of Sync is what stops
/// it (§2.5.2.1), so the state must be in place for the first request (Zephyr also looks its
/// client features and change awareness up by address). What a device copying the address can
/// learn from this is whether the database changed since the bonded client was last connected
/// (one bit; the Database Hash itself is readable by anyone) and which of the three defined
/// feature bits that client enabled. It cannot change either: nothing is kept from a link not
/// encrypted with the bond's key. The CCCDs, which say what the client follows and would
/// deliver its data, wait for that encryption.
///
/// The state of absent bonded clients is kept for the host's lifetime and, as the hash of the
/// database they last knew and their features, with their bond (`Bond.servedDatabaseHash`,
/// `Bond.clientSupportedFeatures`), so a server restarted with a changed database tells them
/// too. A bond without a served-database hash (stored before it was recorded, or left while
/// the client was change-unaware) makes the client change-unaware: nothing shows that it saw
/// the database as it is.
extension GATTServerSessions {
    /// The database changed: connected clients and absent bonded ones are change-unaware.
    func databaseChangedForAllClients(_ host: isolated some GATTServerDriver) {
        for handle in host.linkHandles {
            host.withLink(handle) { $0.server.databaseChanged() }
        }
        for identity in bondedChangeAwareness.keys { bondedChangeAwareness[identity] = false }
    }

    /// A bonded client's link ends: keep whether it knew the database as it is.
    func rememberChangeAwareness(of link: Link, _ host: isolated some GATTServerDriver) {
        guard link.encryptedWithBondKey, var bond = host.bond(for: link.peer) else { return }
        bondedChangeAwareness[bond.peer] = link.server.isChangeAware
        let features = link.server.clientSupportedFeatures
        if !features.isEmpty { bondedClientFeatures[bond.peer] = features }
        var changed = false
        if !features.isEmpty, bond.clientSupportedFeatures != features {
            bond.clientSupportedFeatures = features
            changed = true
        }
        // The hash of the database it knew: the current one if it is aware, else the one kept.
        if link.server.isChangeAware, let hash = try? database.databaseHashCharacteristicValue(), bond.servedDatabaseHash != hash {
            bond.servedDatabaseHash = hash
            changed = true
        }
        if changed { _ = host.store(bond, replacing: true) }
    }

    /// A bond went (removed, evicted, or replaced by a new pairing's): what its client left on
    /// this server goes with it, so a device that bonds again under that identity starts from
    /// its own link's state, not the old bond's features or change awareness.
    func forgetBondedClient(_ identity: DeviceAddress) {
        bondedChangeAwareness = bondedChangeAwareness.filter { !$0.key.sameDevice(as: identity) }
        bondedClientFeatures = bondedClientFeatures.filter { !$0.key.sameDevice(as: identity) }
    }

    /// A link is up: when its peer's address names a bond, that client's kept state is
    /// restored before its first request (see the type's comment).
    func bondedClientConnected(handle: UInt16, _ host: isolated some GATTServerDriver) {
        guard let link = host.link(handle), let bond = host.bond(for: link.peer) else { return }
        restoreBondedState(handle: handle, bond, host)
    }

    /// A bonded client is back on an encrypted link: its state is restored if the connection
    /// did not already do so, and if the database changed while it was away it is told with a
    /// Service Changed indication of the whole database (§7.1: the server need not say which
    /// part changed).
    func bondedClientReturned(handle: UInt16, identity: DeviceAddress, _ host: isolated some GATTServerDriver) {
        guard let link = host.link(handle), let bond = host.bond(for: identity) else { return }
        if !link.server.hasRestoredBondedState { restoreBondedState(handle: handle, bond, host) }
        host.withLink(handle) { $0.server.restoreBondedSubscriptions(bond.clientConfigurations) }
        guard let restored = host.link(handle), !restored.server.isChangeAware else { return }
        let scHandle = database.serviceChangedHandle
        guard scHandle != 0,
              restored.server.deliverableSubscription(valueHandle: scHandle, database: database, security: restored.security) & 0x0002 != 0 else { return }
        let id = host.makeToken()
        let t = host.now
        host.withLink(handle) {
            _ = $0.server.indicate(valueHandle: scHandle, value: [0x01, 0x00, 0xFF, 0xFF], id: id, now: t, database: database, security: $0.security)
        }
        pumpNotifications(handle: handle, host)
    }

    /// Gives the link the bonded client's kept state: what this host remembers of it, else what
    /// its bond holds. Aware only when it last knew the database whose hash the server has now.
    private func restoreBondedState(handle: UInt16, _ bond: Bond, _ host: isolated some GATTServerDriver) {
        let current = try? database.databaseHashCharacteristicValue()
        let aware = bondedChangeAwareness[bond.peer] ?? (bond.servedDatabaseHash != nil && bond.servedDatabaseHash == current)
        let features = bondedClientFeatures[bond.peer] ?? bond.clientSupportedFeatures
        host.withLink(handle) {
            $0.server.restoreBondedState(changeAware: aware, features: features)
        }
    }
}

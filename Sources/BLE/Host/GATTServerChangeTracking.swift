import BLEHost
import BLEWire

/// The server's side of GATT caching across connections, Core spec Vol 3 Part G §2.5.2 and
/// §2.5.2.1: every client becomes change-unaware when the database changes; a bonded client's
/// state persists while it is away, and one that comes back change-unaware is sent a Service
/// Changed indication (§7.1) once its link is encrypted with the bond's key (when its restored
/// CCCD asks for them), and answered Database Out Of Sync meanwhile if it enabled robust caching.
///
/// The state of absent bonded clients is kept for the host's lifetime and, as the hash of the
/// database they last knew, with their bond (`Bond.servedDatabaseHash`), so a server restarted
/// with a changed database tells them too.
extension GATTServerSessions {
    /// The database changed: connected clients and absent bonded ones are change-unaware.
    func databaseChangedForAllClients(_ host: isolated HostController) {
        for handle in host.connections.links.handles {
            host.connections.links.withLink(handle) { $0.server.databaseChanged() }
        }
        for identity in bondedChangeAwareness.keys { bondedChangeAwareness[identity] = false }
    }

    /// A bonded client's link ends: keep whether it knew the database as it is.
    func rememberChangeAwareness(of link: Link, _ host: isolated HostController) {
        guard link.security.encrypted, link.security.hasLongTermKey,
              var bond = host.security.bond(for: link.peer, host) else { return }
        bondedChangeAwareness[bond.peer] = link.server.isChangeAware
        if !link.server.clientSupportedFeatures.isEmpty { bondedClientFeatures[bond.peer] = link.server.clientSupportedFeatures }
        // The hash of the database it knew: the current one if it is aware, else the one kept.
        guard link.server.isChangeAware, let hash = try? database.databaseHashCharacteristicValue(),
              bond.servedDatabaseHash != hash else { return }
        bond.servedDatabaseHash = hash
        _ = host.security.store(bond, replacing: true, host)
    }

    /// A bonded client is back on an encrypted link: its awareness is restored, and if the
    /// database changed while it was away it is told with a Service Changed indication of the
    /// whole database (§7.1: the server need not say which part changed).
    func bondedClientReturned(handle: UInt16, identity: DeviceAddress, _ host: isolated HostController) {
        // Client Supported Features first: whether Database Out Of Sync applies depends on them.
        if let features = bondedClientFeatures[identity] {
            host.connections.links.withLink(handle) { $0.server.restoreClientSupportedFeatures(features) }
        }
        let kept = host.security.bond(for: identity, host)?.servedDatabaseHash
        guard let aware = bondedChangeAwareness[identity]
                ?? kept.map({ $0 == (try? database.databaseHashCharacteristicValue()) }) else { return }
        host.connections.links.withLink(handle) { $0.server.restoreChangeAwareness(aware) }
        guard !aware, let link = host.connections.links[handle] else { return }
        let scHandle = database.serviceChangedHandle
        guard scHandle != 0,
              link.server.deliverableSubscription(valueHandle: scHandle, database: database, security: link.security) & 0x0002 != 0 else { return }
        let id = host.makeToken()
        let t = host.now
        host.connections.links.withLink(handle) {
            _ = $0.server.indicate(valueHandle: scHandle, value: [0x01, 0x00, 0xFF, 0xFF], id: id, now: t, database: database, security: $0.security)
        }
        pumpNotifications(handle: handle, host)
    }
}

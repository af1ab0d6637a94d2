import BLEHost

/// A link's ATT servers, one per bearer (Core spec Vol 3 Part F §3.2.11): `server` for the
/// unenhanced bearer, which also holds the per-client state (`ATTClientState`), and
/// `enhancedServers` for the Enhanced ATT bearers, which borrow that state for each call.
extension Link {
    /// Runs `body` on the server of `bearer`, with the link's per-client state (CCCDs, Client
    /// Supported Features, change awareness) in it; nil when that bearer has no server (closed).
    mutating func withServer<R>(_ bearer: ATTBearerID, _ body: (inout ATTServer) -> R) -> R? {
        switch bearer {
        case .unenhanced:
            return body(&server)
        case let .enhanced(cid):
            // Taken out and put back, so the bearer's server is changed in place, not copied.
            guard var bearerServer = enhancedServers.removeValue(forKey: cid) else { return nil }
            defer { enhancedServers[cid] = bearerServer }
            return server.sharingClientState(with: &bearerServer, body)
        }
    }

    /// Whether the update queue of `bearer`'s server has room for `count` more PDUs.
    func hasRoomForUpdate(on bearer: ATTBearerID, count: Int = 1) -> Bool {
        switch bearer {
        case .unenhanced:
            // One update, the usual ask: the server's own check, one call.
            if count == 1 { return server.hasRoomForUpdate }
            return server.queuedUpdates + count <= server.notificationQueueLimit
        case let .enhanced(cid):
            guard let s = enhancedServers[cid] else { return false }
            return s.queuedUpdates + count <= s.notificationQueueLimit
        }
    }

    /// The link's bearers that can carry updates, best first: largest ATT_MTU first (a value is
    /// cut to ATT_MTU − 3), Enhanced ATT bearers before the unenhanced one at the same MTU, lower
    /// CID first. Fixed while the same bearers are open, so one characteristic's updates keep
    /// their order on one bearer.
    var updateBearers: [(bearer: ATTBearerID, mtu: Int, indicationInFlight: Bool)] {
        var all: [(bearer: ATTBearerID, mtu: Int, indicationInFlight: Bool)] = []
        for cid in enhancedServers.keys.sorted() {
            guard let s = enhancedServers[cid], !s.isClosed, s.carriesUpdates(clientState: server) else { continue }
            all.append((.enhanced(cid: cid), s.mtu, s.hasIndicationInFlight))
        }
        all.append((.unenhanced, server.mtu, server.hasIndicationInFlight))
        // Stable: equal MTUs keep the order above.
        var order = Array(all.indices)
        order.sort { all[$0].mtu != all[$1].mtu ? all[$0].mtu > all[$1].mtu : $0 < $1 }
        return order.map { all[$0] }
    }

    /// Where an update of `valueHandle` goes on this link (Vol 3 Part F §3.2.11: notifications
    /// and indications may go on any bearer): a notification on the best bearer
    /// (`updateBearers`); an indication on the best bearer without one outstanding or queued
    /// (§3.3.2: one indication at a time per bearer), else behind the best bearer's.
    func updateBearer(for valueHandle: UInt16) -> ATTBearerID {
        let bearers = updateBearers
        let best = bearers.first?.bearer ?? .unenhanced
        if server.cccd(valueHandle: valueHandle) & 0x0001 != 0 { return best }
        return bearers.first { !$0.indicationInFlight }?.bearer ?? best
    }
}

import BLEHCI
import BLEHost
import BLEWire

/// Our GATT server on Enhanced ATT bearers (Core spec Vol 3 Part G §5.3, Vol 3 Part F
/// §3.2.11): one `ATTServer` per bearer in `Link.enhancedServers`, keyed by the channel's local
/// CID, with its own ATT_MTU (the channel's, §3.2.8), request flow (§3.3.2), prepare queue and
/// outstanding indication, all sharing the link's per-client state (`Link.withServer`). A
/// bearer that closes fails only its own work; the link and its other bearers go on.
extension GATTServerSessions {
    /// A request, command or confirmation for our server on `bearer` of this link.
    func receive(_ payload: [UInt8], handle: UInt16, bearer: ATTBearerID, _ host: isolated some GATTServerDriver) {
        guard case let .enhanced(cid) = bearer else { return receive(payload, handle: handle, host) }
        guard let central = host.readLink(handle, { $0.enhancedServers[cid] != nil ? $0.central : nil }) ?? nil else { return }
        if hasEventSinks, let first = payload.first, ATTOpcode(rawValue: first).kind != .confirmation {
            emit(.request(central, opcode: ATTOpcode(rawValue: first), handle: Self.firstHandle(of: payload)))
        }
        if payload.first == ATTOpcode.signedWriteCommand.rawValue {
            receiveSignedWrite(payload, handle: handle, bearer: bearer, host)
            return
        }
        let t = host.now
        let actions = host.withLink(handle) { link in
            let security = link.security
            return link.withServer(bearer) { $0.receive(payload, database: &database, security: security, now: t) }
        } ?? nil
        perform(actions ?? [], handle: handle, bearer: bearer, host)
    }

    /// An Enhanced ATT bearer opened on `handle` with this ATT_MTU (by the peer, or by our
    /// client): it gets a server of its own.
    func enhancedBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, openedByPeer: Bool, _ host: isolated some GATTServerDriver) {
        host.withLink(handle) { link in
            link.enhancedServers[cid] = ATTServer.enhancedBearer(mtu: mtu, openedByPeer: openedByPeer,
                                                                 notificationQueueLimit: link.server.notificationQueueLimit,
                                                                 indicationTimeout: link.server.indicationTimeout)
            link.server.enhancedBearersOpen = true
        }
    }

    /// An Enhanced ATT bearer closed: its server goes, with the request it was answering (the
    /// application's late answer finds nobody) and its indications (reported timed out, nobody
    /// will confirm them). Writers waiting for room try again, on the bearers left, and an
    /// application told `.queueFull` for this bearer hears `.readyToUpdateSubscribers`.
    func enhancedBearerClosed(handle: UInt16, cid: UInt16, error: BLEError, _ host: isolated some GATTServerDriver) {
        guard let actions = host.withLink(handle, { link -> [ServerAction] in
            guard var server = link.enhancedServers.removeValue(forKey: cid) else { return [] }
            link.server.enhancedBearersOpen = !link.enhancedServers.isEmpty
            return server.bearerClosed()
        }) else { return }
        let bearer = ATTBearerID.enhanced(cid: cid)
        pending = pending.filter { !($0.value.linkHandle == handle && $0.value.bearer == bearer) }
        roomWaiters.resumeAll(with: .success(()))
        // Events the closed server still had (`.readyToUpdate`, timed-out indications); nothing
        // of them is sent, the bearer is gone.
        perform(actions.filter { if case .send = $0 { return false } else { return true } }, handle: handle, bearer: bearer, host)
    }

    /// The bearer's channel was reconfigured: its ATT_MTU is now `mtu` (Vol 3 Part F §3.2.8).
    func enhancedBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated some GATTServerDriver) {
        host.withLink(handle) { $0.enhancedServers[cid]?.enhancedMTUChanged(to: mtu) }
    }

    /// Indication timeouts of the link's Enhanced ATT bearers (Vol 3 Part F §3.3.3): a bearer
    /// whose indication went unconfirmed is closed alone.
    func expireEnhancedBearers(handle: UInt16, now: Duration, _ host: isolated some GATTServerDriver) {
        guard let cids = host.readLink(handle, { $0.enhancedServers.isEmpty ? [] : $0.enhancedServers.keys.sorted() }) else { return }
        for cid in cids {
            let bearer = ATTBearerID.enhanced(cid: cid)
            guard let actions = host.withLink(handle, { $0.withServer(bearer) { $0.expire(now: now) } }) ?? nil,
                  !actions.isEmpty else { continue }
            perform(actions, handle: handle, bearer: bearer, host)
        }
    }

    /// Moves queued updates of the link's Enhanced ATT bearers into their channels, keeping only
    /// a couple of PDUs waiting for the controller and for the peer's credits, as for the
    /// unenhanced bearer (`pumpNotifications`).
    func pumpEnhancedBearers(handle: UInt16, _ host: isolated some GATTServerDriver) {
        guard let cids = host.readLink(handle, { $0.enhancedServers.keys.sorted() }) else { return }
        let t = host.now
        var indicationSent = false
        for cid in cids {
            let bearer = ATTBearerID.enhanced(cid: cid)
            while host.queuedACLPDUs(handle: handle) < 2, host.queuedATTSDUs(handle: handle, bearer: bearer) < 2,
                  let pdu = host.withLink(handle, { $0.enhancedServers[cid]?.nextOutgoing(now: t) }) ?? nil {
                if pdu.first == ATTOpcode.handleValueIndication.rawValue { indicationSent = true }
                host.sendATT(pdu, handle: handle, bearer: bearer)
            }
            if let events = host.withLink(handle, { $0.enhancedServers[cid]?.takeEvents() }) ?? nil, !events.isEmpty {
                perform(events, handle: handle, bearer: bearer, host)
            }
        }
        if indicationSent { host.rescheduleTimer() }
    }

    // MARK: - Several values at once

    /// Notifies several values to every central subscribed to them (or to the given ones): one
    /// Multiple Handle Value Notification (Vol 3 Part F §3.4.7.4) to a client that set Client
    /// Supported Features bit 2 (Vol 3 Part G §7.2), separate Handle Value Notifications to any
    /// other; a value whose CCCD asks for indications only is indicated on its own. Each value is
    /// stored as `updateValue` stores it. All or nothing, as `updateValue`: when a target's queue
    /// lacks room for all of its PDUs, nothing is queued anywhere (`.queueFull`).
    /// One link's share of `updateValues`.
    private struct Target {
        let handle: UInt16
        let notifications: [(handle: UInt16, value: [UInt8])]
        let indications: [(handle: UInt16, value: [UInt8])]
        let notifyOn: ATTBearerID
        let indicateOn: ATTBearerID
    }

    func updateValues(_ values: [(handle: UInt16, value: [UInt8])], centrals: Set<UInt64>?, _ host: isolated some GATTServerDriver) -> UpdateValueResult {
        var targets: [Target] = []
        var full = false
        for handle in host.linkHandles {
            guard let target = host.readLink(handle, { link -> Target? in
                guard centrals?.contains(link.id) ?? true else { return nil }
                var notifications: [(handle: UInt16, value: [UInt8])] = []
                var indications: [(handle: UInt16, value: [UInt8])] = []
                for v in values {
                    let bits = link.server.deliverableSubscription(valueHandle: v.handle, database: database, security: link.security)
                    if bits & 0x0001 != 0 { notifications.append(v) } else if bits & 0x0002 != 0 { indications.append(v) }
                }
                guard !notifications.isEmpty || !indications.isEmpty else { return nil }
                let bearers = link.updateBearers
                let best = bearers.first?.bearer ?? .unenhanced
                let indicateOn = bearers.first { !$0.indicationInFlight }?.bearer ?? best
                return Target(handle: handle, notifications: notifications, indications: indications, notifyOn: best, indicateOn: indicateOn)
            }) ?? nil else { continue }
            targets.append(target)
            let roomy = host.readLink(handle) { link in
                target.notifyOn == target.indicateOn
                    ? link.hasRoomForUpdate(on: target.notifyOn, count: target.notifications.count + target.indications.count)
                    : link.hasRoomForUpdate(on: target.notifyOn, count: target.notifications.count)
                        && link.hasRoomForUpdate(on: target.indicateOn, count: target.indications.count)
            } ?? false
            if !roomy { full = true }
        }
        if full {
            for t in targets {
                host.withLink(t.handle) { link in
                    for b in Set([t.notifyOn, t.indicateOn]) { _ = link.withServer(b) { $0.signalReadyWhenRoom() } }
                }
            }
            return .queueFull
        }
        var queued = 0
        let now = host.now
        for t in targets {
            var any = false
            if !t.notifications.isEmpty {
                let result = host.withLink(t.handle) { link in
                    let security = link.security
                    return link.withServer(t.notifyOn) { $0.notifyMultiple(t.notifications, database: database, security: security) }
                } ?? nil
                if case .queued = result { any = true }
            }
            for v in t.indications {
                let id = host.makeToken()
                let result = host.withLink(t.handle) { link in
                    let security = link.security
                    return link.withServer(t.indicateOn) {
                        $0.indicate(valueHandle: v.handle, value: v.value, id: id, now: now, database: database, security: security)
                    }
                } ?? nil
                if case .queued = result {
                    any = true
                    indications[id] = IndicationWaiter(valueHandle: v.handle, linkHandle: t.handle)
                }
            }
            if any { queued += 1 }
            pumpNotifications(handle: t.handle, host)
        }
        for v in values { database.setValue(v.value, forHandle: v.handle) }
        return .queued(centrals: queued)
    }
}

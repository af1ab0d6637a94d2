import BLEHCI
import BLEHost

/// Enhanced ATT bearers (Core spec Vol 3 Part G §5.3, Vol 3 Part F §3.2.11): enhanced
/// credit-based channels on SPSM 0x0027 that the host keeps for ATT instead of handing them to
/// the application. Incoming ones are those the Enhanced ATT listener accepted (installed when
/// `HostConfiguration.offersEnhancedATT`), outgoing ones those `openATTBearers` asked for; a
/// channel the application opens or accepts on 0x0027 itself stays the application's. Their
/// SDUs go to the driver's `receiveATT(_:handle:bearer:)`, whole. An SDU's credit goes back
/// once what was queued on the bearer when it had been handled (its answer: a response, a
/// confirmation) has left for the peer, at once when nothing waits: a peer that withholds its
/// credits stalls its own requests after the credits we granted (Vol 3 Part A §10.2), instead of
/// making us queue answers without bound.
extension L2CAPChannelSessions {
    /// Whether a channel the peer opened on `spsm` is an Enhanced ATT bearer: the host offers
    /// EATT and the application has no listener of its own there.
    func isATTListener(_ spsm: UInt16, _ host: isolated some L2CAPDriver) -> Bool {
        spsm == ATTBearerID.enhancedATTPSM && host.configuration.offersEnhancedATT
    }

    /// Takes the router's `event` when it concerns an Enhanced ATT bearer or an open of one;
    /// false to handle it as an application channel's.
    func routeATT(_ event: CreditBasedChannelEvent, handle: UInt16, _ host: isolated some L2CAPDriver) -> Bool {
        switch event {
        case let .opened(info):
            guard isATTListener(info.spsm, host) else { return false }
            attBearers.insert(Key(handle: handle, cid: info.localCID))
            attBearersAnnounced += 1
            host.enhancedATTBearerOpened(handle: handle, cid: info.localCID, mtu: Self.attMTU(info), openedByPeer: true)
            return true
        case let .enhancedConnected(token, infos, _):
            guard attOpenHandles.removeValue(forKey: token) != nil else { return false }
            for info in infos { attBearers.insert(Key(handle: handle, cid: info.localCID)) }
            guard attOpenWaiters.contains(token) else {
                // Nobody waits any more (cancelled): the bearers are closed again without the
                // GATT roles ever hearing of them (work dispatched there would only fail).
                for info in infos {
                    attUnannounced.insert(Key(handle: handle, cid: info.localCID))
                    closeATTBearer(handle: handle, cid: info.localCID, host)
                }
                return true
            }
            for info in infos {
                attBearersAnnounced += 1
                host.enhancedATTBearerOpened(handle: handle, cid: info.localCID, mtu: Self.attMTU(info), openedByPeer: false)
            }
            attOpenWaiters.resume(token, with: .success(infos.map { .enhanced(cid: $0.localCID) }))
            return true
        case let .connectFailed(token, error):
            guard attOpenHandles.removeValue(forKey: token) != nil else { return false }
            attOpenWaiters.resume(token, with: .failure(BLEError.l2cap(error)))
            return true
        case let .sdu(cid, sdu):
            let key = Key(handle: handle, cid: cid)
            guard attBearers.contains(key) else { return false }
            // A late bearer being closed unannounced: nobody reads it.
            guard !attUnannounced.contains(key) else {
                host.performSignaling(host.router.consumed(handle: handle, cid: cid), handle: handle)
                return true
            }
            host.receiveATT(sdu[...], handle: handle, bearer: .enhanced(cid: cid))
            guard attBearers.contains(key) else { return true }
            // The credit waits until the answer (the last SDU queued now, the queue being FIFO)
            // has gone out.
            let queued = host.router.channel(handle: handle, cid: cid)?.queuedSDUs ?? 0
            if queued == 0 {
                host.performSignaling(host.router.consumed(handle: handle, cid: cid), handle: handle)
            } else {
                attHeldCredits[key, default: []].append(queued)
            }
            return true
        case let .sent(cid, tokens):
            let key = Key(handle: handle, cid: cid)
            guard attBearers.contains(key) else { return false }
            releaseHeldCredits(key, sent: tokens.count, host)
            host.enhancedATTBearerSent(handle: handle, cid: cid)
            return true
        case let .closed(cid, error, _):
            attHeldCredits[Key(handle: handle, cid: cid)] = nil
            guard attBearers.remove(Key(handle: handle, cid: cid)) != nil else { return false }
            guard attUnannounced.remove(Key(handle: handle, cid: cid)) == nil else { return true }
            host.enhancedATTBearerClosed(handle: handle, cid: cid, error: error.map { BLEError.l2cap($0) } ?? BLEError.l2cap(.closed))
            return true
        case let .peerReconfigured(infos), let .reconfigured(_, infos):
            // Either side raised MTU or MPS (Vol 3 Part A §4.27): the bearer's ATT_MTU follows
            // (Vol 3 Part F §3.2.8). Our reconfigure waiters are still the application's part.
            for info in infos where attBearers.contains(Key(handle: handle, cid: info.localCID))
                && !attUnannounced.contains(Key(handle: handle, cid: info.localCID)) {
                host.enhancedATTBearerMTUChanged(handle: handle, cid: info.localCID, mtu: Self.attMTU(info))
            }
            return false
        case .connected, .reconfigureFailed:
            return false
        }
    }

    /// `sent` SDUs of bearer `key` went out: the credits of SDUs whose answers are now gone go back.
    private func releaseHeldCredits(_ key: Key, sent: Int, _ host: isolated some L2CAPDriver) {
        guard let held = attHeldCredits[key] else { return }
        let left = held.map { $0 - sent }
        let due = left.filter { $0 <= 0 }.count
        let waiting = left.filter { $0 > 0 }
        attHeldCredits[key] = waiting.isEmpty ? nil : waiting
        for _ in 0..<due {
            host.performSignaling(host.router.consumed(handle: key.handle, cid: key.cid), handle: key.handle)
        }
    }

    /// An Enhanced ATT bearer's ATT_MTU: the smaller of both sides' L2CAP MTU (Vol 3 Part F §3.2.8).
    static func attMTU(_ info: CreditBasedChannelInfo) -> Int {
        Int(min(info.local.mtu, info.remote.mtu))
    }

    /// Opens `count` (1...5) Enhanced ATT bearers to the peer of `linkID` with one Credit Based
    /// Connection Request (Vol 3 Part A §4.25) and waits for the answer. Returns the bearers the
    /// peer accepted (at least one); each was announced with `enhancedATTBearerOpened` first.
    func openATTBearers(linkID: UInt64, count: Int, parameters: CreditBasedChannelParameters,
                        _ host: isolated some L2CAPDriver) async throws -> [ATTBearerID] {
        if let failure = host.failure { throw failure }
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        guard (1...5).contains(count) else { throw BLEError.invalidArgument("\(count) bearers: one request opens 1...5") }
        let token = host.makeToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<[ATTBearerID], any Error>) in
                guard let actions = host.router.connectEnhanced(handle: handle, spsm: ATTBearerID.enhancedATTPSM, parameters: parameters,
                                                                count: count, token: token, now: host.now) else {
                    c.resume(throwing: BLEError.l2cap(.refused(.noResourcesAvailable)))
                    return
                }
                attOpenWaiters.insert(token, c)
                attOpenHandles[token] = handle
                host.performSignaling(actions, handle: handle)
                host.rescheduleTimer()
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) {
                await host.run { $0.l2cap.attOpenWaiters.resume(token, with: .failure(CancellationError())) }
            }
        }
    }

    /// Closes the Enhanced ATT bearer `cid` of `handle` (Disconnection Request, Vol 3 Part A §4.6);
    /// `enhancedATTBearerClosed` follows when the channel is gone.
    func closeATTBearer(handle: UInt16, cid: UInt16, _ host: isolated some L2CAPDriver) {
        guard attBearers.contains(Key(handle: handle, cid: cid)) else { return }
        host.performSignaling(host.router.disconnect(handle: handle, cid: cid, now: host.now), handle: handle)
        host.rescheduleTimer()
    }

    /// Whether `cid` of `handle` is an open Enhanced ATT bearer.
    func isATTBearer(handle: UInt16, cid: UInt16) -> Bool {
        attBearers.contains(Key(handle: handle, cid: cid))
    }

    /// The link is gone: its bearers are forgotten (the GATT parts drop theirs with the link)
    /// and opens waiting on it fail.
    func attLinkClosed(handle: UInt16, error: BLEError) {
        attBearers = attBearers.filter { $0.handle != handle }
        attHeldCredits = attHeldCredits.filter { $0.key.handle != handle }
        attUnannounced = attUnannounced.filter { $0.handle != handle }
        for (token, h) in attOpenHandles.sorted(by: { $0.key < $1.key }) where h == handle {
            attOpenHandles[token] = nil
            attOpenWaiters.resume(token, with: .failure(error))
        }
    }
}

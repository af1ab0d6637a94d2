import BLEHCI
import BLEHost
import BLEWire

/// Our GATT client on Enhanced ATT bearers (Core spec Vol 3 Part G §5.3, Vol 3 Part F
/// §3.2.11): the hooks the host calls for each bearer, both for bearers our client opened
/// (the host's `openEnhancedATTBearers`) and for those the peer opened to our server
/// (every bearer carries both directions). Each bearer joins the link's `ATTClientBearerSet`,
/// which runs independent procedures in parallel, one per free bearer; what it sends goes out
/// with the driver's `sendATT(_:handle:bearer:)`.
///
/// On a central's link that becomes encrypted, the client reads the server's Server Supported
/// Features (§7.4) in the background (one Read By Type, once per server in the host's life) and,
/// when it offers EATT (bit 0), opens bearers up to `HostConfiguration.enhancedATTBearers` on the
/// link (at most 5, one L2CAP request): those open or being opened on the application's request
/// count, so the background never adds bearers on top of an explicit open.
extension GATTClientSessions {
    /// A response, notification or indication for our client on the Enhanced ATT bearer `cid`.
    func receiveEnhanced(_ payload: ArraySlice<UInt8>, handle: UInt16, cid: UInt16, _ host: isolated some GATTClientDriver) {
        let t = host.now
        guard let actions = host.withLink(handle, { $0.clients.receive(payload, on: .enhanced(cid: cid), now: t) }) else { return }
        perform(actions, handle: handle, host)
        host.rescheduleTimer()
    }

    /// An Enhanced ATT bearer opened on `handle` with this ATT_MTU: procedures waiting for a free
    /// bearer may start on it at once.
    func enhancedBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated some GATTClientDriver) {
        let t = host.now, timeout = host.configuration.attTransactionTimeout
        let bearer = ATTClientBearer(mtu: mtu, transactionTimeout: timeout)
        guard let actions = host.withLink(handle, { $0.clients.add(.enhanced(cid: cid), bearer: bearer, now: t) }) else { return }
        perform(actions, handle: handle, host)
        host.rescheduleTimer()
    }

    /// An Enhanced ATT bearer closed: only its own procedure fails (`GATTError.bearerClosed`);
    /// those waiting move to the link's other bearers.
    func enhancedBearerClosed(handle: UInt16, cid: UInt16, error: BLEError, _ host: isolated some GATTClientDriver) {
        let t = host.now
        guard let actions = host.withLink(handle, { $0.clients.remove(.enhanced(cid: cid), now: t) }) else { return }
        if !actions.isEmpty { host.log("\(ATTBearerID.enhanced(cid: cid)) of 0x\(String(handle, radix: 16)) closed (\(error)): its procedure fails") }
        perform(actions, handle: handle, host)
        host.rescheduleTimer()
    }

    /// SDUs queued on the bearer went out. The client sends at most one request and one
    /// confirmation at a time per bearer, so it has nothing waiting for that room.
    func enhancedBearerSent(handle: UInt16, cid: UInt16, _ host: isolated some GATTClientDriver) {}

    /// The bearer's channel was reconfigured: its ATT_MTU is now `mtu` (Vol 3 Part F §3.2.8).
    func enhancedBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int, _ host: isolated some GATTClientDriver) {
        host.withLink(handle) { $0.clients.bearerMTUChanged(mtu, on: .enhanced(cid: cid)) }
    }

    /// Transaction timeouts of the link's Enhanced ATT bearers (Vol 3 Part F §3.3.3): nothing
    /// to do here, `ConnectionManager.expire` fires every bearer of the set at once.
    func expireEnhancedBearers(handle: UInt16, now: Duration, _ host: isolated some GATTClientDriver) {}

    // MARK: - Opening bearers in the background

    /// The link `handle` is encrypted now: on a central's link, unless EATT is configured off or
    /// already set up, the background set-up starts (see the type's comment).
    func linkEncrypted(handle: UInt16, _ host: isolated some GATTClientDriver) {
        let count = min(5, host.configuration.enhancedATTBearers)
        guard count > 0, let link = host.link(handle), link.role == .central,
              link.clients.enhancedCount == 0, enhancedSetups.begin(handle: handle) else { return }
        let linkID = link.id, peer = link.peer
        Task(executorPreference: host.clock.taskExecutor) {
            await host.run { host in await host.client.setUpEnhancedATT(linkID: linkID, handle: handle, peer: peer, count: count, host) }
        }
    }

    private func setUpEnhancedATT(linkID: UInt64, handle: UInt16, peer: DeviceAddress, count: Int, _ host: isolated some GATTClientDriver) async {
        defer { if host.linkHandle(forID: linkID) == handle { enhancedSetups.finish(handle: handle) } }
        let features: [UInt8]
        if let known = enhancedSetups.serverFeatures[peer] ?? storedServerFeatures(linkID: linkID, peer: peer, host) {
            // Learned on an earlier link to this server, in this host's life or kept in the
            // bonded server's attribute cache: no request (a reconnection stays as quiet as it
            // was without EATT).
            features = known
        } else {
            do {
                let read = AnyGATTProcedure(ReadByUUIDProcedure(uuid: GATTDatabaseSnapshot.serverSupportedFeaturesUUID))
                guard case let .handleValues(found) = try await perform(read, onLink: linkID, host) else { return }
                features = found.first?.value ?? []
            } catch BLEError.gatt(.att(code: .attributeNotFound, _, _)) {
                // No such characteristic: a server without any of those features (§7.4).
                features = []
            } catch {
                host.log("Server Supported Features of link \(linkID) not read (\(error)): no Enhanced ATT")
                return
            }
            enhancedSetups.serverFeatures[peer] = features
            // Kept with the link's attribute cache when it has one now; otherwise the cache
            // takes it when it is prepared (`GATTCacheSessions.install`).
            host.serverFeaturesRead(features, linkID: linkID)
        }
        // Bit 0, EATT Supported (Vol 3 Part G §7.4).
        guard (features.first ?? 0) & 0x01 != 0 else { return }
        // Top the link up to the configured count, no more: bearers the application opened or is
        // opening (the host's `openEnhancedATTBearers`, e.g. the one whose pairing started
        // this set-up) count against it. Checked now, after the read, when they are known.
        let open = host.link(handle)?.clients.enhancedCount ?? 0
        let wanted = count - open - enhancedSetups.requested(handle: handle)
        guard wanted > 0 else {
            host.log("Enhanced ATT on link \(linkID): \(open) open, \(enhancedSetups.requested(handle: handle)) being opened on request; none more")
            return
        }
        do {
            // Straight to L2CAP, not `openEnhancedATTBearers`: a refusal for want of security
            // must not start a pairing nobody asked for in the background (the link is
            // encrypted; a server that wants more gets no bearers, `Peripheral.openEnhancedATTBearers`
            // raises security when the application asks).
            let opened = try await host.openATTBearers(linkID: linkID, count: wanted)
            host.log("opened \(opened.count) Enhanced ATT bearers on link \(linkID): \(opened)")
        } catch {
            host.log("Enhanced ATT bearers on link \(linkID) not opened: \(error)")
        }
    }

    /// The Server Supported Features value the link's attribute cache holds, or (before the
    /// link's cache is prepared) the one stored for this bonded server; nil when none is known.
    private func storedServerFeatures(linkID: UInt64, peer: DeviceAddress, _ host: isolated some GATTClientDriver) -> [UInt8]? {
        if let features = host.cachedServerFeatures(linkID: linkID) { return features }
        guard let store = host.configuration.gattCache, let identity = host.bond(for: peer)?.peer else { return nil }
        return (try? store.load(.bonded(identity)))?.serverFeatures
    }

    /// The number of Enhanced ATT bearers open on the link, once its background set-up (if one
    /// runs) has ended, or at once when the calling task is cancelled; nil when the link is gone.
    func enhancedBearerCount(linkID: UInt64, waitingForSetUp: Bool, _ host: isolated some GATTClientDriver) async -> Int? {
        guard let handle = host.linkHandle(forID: linkID) else { return nil }
        if waitingForSetUp, enhancedSetups.isRunning(handle: handle) {
            let token = host.makeToken()
            await withTaskCancellationHandler {
                await withCheckedContinuation(isolation: host) { (c: CheckedContinuation<Void, Never>) in
                    // Cancelled before it waits: the handler below has nothing to resume yet.
                    guard !Task.isCancelled else { return c.resume() }
                    enhancedSetups.wait(handle: handle, token: token, c)
                }
            } onCancel: {
                Task(executorPreference: host.clock.taskExecutor) {
                    await host.run { $0.client.enhancedSetups.stopWaiting(handle: handle, token: token) }
                }
            }
        }
        guard let h = host.linkHandle(forID: linkID), h == handle else { return nil }
        return host.link(handle)?.clients.enhancedCount
    }
}

/// Which links have their Enhanced ATT set-up running or done, and who waits for it to end.
struct EnhancedATTSetups {
    private enum State {
        /// Running, with who waits for its end, by token.
        case running([UInt64: CheckedContinuation<Void, Never>])
        case done
    }

    private var states: [UInt16: State] = [:]
    /// Server Supported Features (Vol 3 Part G §7.4) read from each server during this host's
    /// life, empty for a server without the characteristic.
    var serverFeatures: [DeviceAddress: [UInt8]] = [:]

    /// Enhanced ATT bearers being opened on explicit request (the host's `openEnhancedATTBearers`)
    /// per link handle, from the call until it returns (pairing included).
    private var requests: [UInt16: Int] = [:]

    /// How many bearers explicit requests are opening on `handle` now.
    func requested(handle: UInt16) -> Int { requests[handle] ?? 0 }

    /// An explicit request for `count` bearers on `handle` starts (`+`) or ends (`-`).
    mutating func request(handle: UInt16, adding count: Int) {
        let total = (requests[handle] ?? 0) + count
        requests[handle] = total > 0 ? total : nil
    }

    /// Marks the set-up of `handle` running; false when it already ran or runs.
    mutating func begin(handle: UInt16) -> Bool {
        guard states[handle] == nil else { return false }
        states[handle] = .running([:])
        return true
    }

    /// Whether the set-up of `handle` is running.
    func isRunning(handle: UInt16) -> Bool {
        if case .running? = states[handle] { return true }
        return false
    }

    /// Waits for the running set-up of `handle` to end (resumed at once if none runs).
    mutating func wait(handle: UInt16, token: UInt64, _ c: CheckedContinuation<Void, Never>) {
        guard case var .running(waiters)? = states[handle] else { return c.resume() }
        waiters[token] = c
        states[handle] = .running(waiters)
    }

    /// The waiter `token` was cancelled: it resumes now, the set-up runs on.
    mutating func stopWaiting(handle: UInt16, token: UInt64) {
        guard case var .running(waiters)? = states[handle], let c = waiters.removeValue(forKey: token) else { return }
        states[handle] = .running(waiters)
        c.resume()
    }

    /// The set-up of `handle` ended, or its link went: its waiters resume. A gone link's entry
    /// is dropped (`finish` from `linkClosed`), so a new link on the handle starts afresh.
    mutating func finish(handle: UInt16, linkGone: Bool = false) {
        if case let .running(waiters)? = states[handle] { for w in waiters.values { w.resume() } }
        states[handle] = linkGone ? nil : .done
    }
}

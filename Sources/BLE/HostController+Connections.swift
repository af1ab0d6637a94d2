import BLEHCI
import BLEHost
import BLEWire

/// A connection being initiated (LE Create Connection sent, LE Connection Complete awaited).
final class PendingConnection {
    let id: UInt64
    let peer: DeviceAddress
    let deadline: Duration
    let result = OneShot<UInt16>()
    var cancelSent = false
    var timedOut = false
    var cancelledByTask = false

    init(id: UInt64, peer: DeviceAddress, deadline: Duration) {
        self.id = id
        self.peer = peer
        self.deadline = deadline
    }
}

/// What a new connection looks like to the API.
struct LinkHandle: Sendable {
    let id: UInt64
    let handle: UInt16
    let peer: DeviceAddress
    let observation: LinkObservation
}

extension HostController {
    /// Connects as central (LE Create Connection, Vol 4 Part E §7.8.12). At the deadline, or when
    /// the calling task is cancelled, LE Create Connection Cancel (§7.8.13) stops the initiator;
    /// the controller then reports the connection as failed with Unknown Connection Identifier.
    func connect(to peer: DeviceAddress, timeout: Duration) async throws -> LinkHandle {
        if let failure { throw failure }
        guard pendingConnection == nil else { throw BLEError.busy("another connection attempt is in progress") }
        let pending = PendingConnection(id: nextConnectionAttempt, peer: peer, deadline: now + timeout)
        nextConnectionAttempt += 1
        let attemptID = pending.id
        pendingConnection = pending
        defer { if pendingConnection === pending { pendingConnection = nil } }
        let c = configuration
        do {
            try await command(.leCreateConnection(
                scanInterval: c.scanInterval, scanWindow: c.scanWindow, filterPolicy: 0, peer: DeviceAddress(peer.address, type: peer.type.peerType),
                ownAddressType: ownAddressType, connectionIntervalMin: c.connectionIntervalMin, connectionIntervalMax: c.connectionIntervalMax,
                maxLatency: c.maxLatency, supervisionTimeout: c.supervisionTimeout, minCELength: 0, maxCELength: 0))
        } catch {
            throw error
        }
        rescheduleTimer()
        let handle: UInt16 = try await withTaskCancellationHandler {
            try await pending.result.wait()
        } onCancel: {
            Task(executorPreference: clock.taskExecutor) { await self.cancelConnectionAttempt(id: attemptID) }
        }
        guard let link = links[handle] else { throw BLEError.notConnected }
        return LinkHandle(id: link.id, handle: handle, peer: link.peer, observation: link.observation)
    }

    func cancelConnectionAttempt(id: UInt64) {
        // Only the attempt this task started: a later attempt must not be cancelled by a stale handler.
        guard let pending = pendingConnection, pending.id == id, !pending.result.isFulfilled else { return }
        pending.cancelledByTask = true
        sendCreateConnectionCancel(pending)
    }

    func connectionTimedOut() {
        guard let pending = pendingConnection, !pending.result.isFulfilled else { return }
        pending.timedOut = true
        sendCreateConnectionCancel(pending)
    }

    /// LE Create Connection Cancel (Vol 4 Part E §7.8.13). The attempt then ends with the
    /// controller's LE Connection Complete (status Unknown Connection Identifier), or with a
    /// completed connection that won the race. If neither comes within a command timeout (the
    /// cancel failed or the event was lost), the attempt fails anyway: it never hangs.
    private func sendCreateConnectionCancel(_ pending: PendingConnection) {
        guard !pending.cancelSent else { return }
        pending.cancelSent = true
        let limit = configuration.commandTimeout
        let clock = self.clock
        let owned = ActorOwned(pending)
        Task(executorPreference: clock.taskExecutor) {
            do {
                _ = try await self.commandReturning(.leCreateConnectionCancel)
            } catch {
                // Command Disallowed: the connection completed meanwhile; its event settles it.
                self.log("LE Create Connection Cancel: \(error)")
            }
            try? await clock.sleep(for: limit)
            await self.abandonConnectionAttempt(owned.value)
        }
    }

    private func abandonConnectionAttempt(_ pending: PendingConnection) {
        guard !pending.result.isFulfilled else { return }
        pending.result.fail(pending.cancelledByTask ? CancellationError() : BLEError.timeout("connecting to \(pending.peer)"))
    }

    func connectionCompleted(_ event: LEConnectionComplete) {
        let pending = pendingConnection
        if event.status != .success {
            guard let pending else { return }
            if pending.timedOut {
                pending.result.fail(BLEError.timeout("connecting to \(pending.peer)"))
            } else if pending.cancelledByTask {
                pending.result.fail(CancellationError())
            } else {
                pending.result.fail(BLEError.connectionFailed(event.status))
            }
            return
        }
        let parameters = LinkParameters(interval: event.interval, latency: event.latency, supervisionTimeout: event.supervisionTimeout)
        let observation = LinkObservation(parameters: parameters)
        let link = Link(
            id: nextLinkID, handle: event.handle, peer: event.peer,
            role: event.role == .central ? .central : .peripheral, parameters: parameters,
            bearer: ATTClientBearer(transactionTimeout: configuration.attTransactionTimeout),
            server: ATTServer(preferredMTU: configuration.preferredATTMTU),
            observation: observation)
        nextLinkID += 1
        links[event.handle] = link
        applyLinkPreferences(handle: event.handle)
        if event.role == .peripheral {
            // A central connected to our advertising (Vol 6 Part B §4.5): serve it.
            advertisingEndedByConnection()
            emit(.connected(ConnectedCentral(id: link.id, address: link.peer)))
            return
        }
        guard let pending else {
            // A central-role connection nobody waits for: drop it.
            Task(executorPreference: clock.taskExecutor) { try? await self.disconnect(handle: event.handle, reason: .remoteUserTerminatedConnection) }
            return
        }
        if pending.timedOut || pending.cancelledByTask {
            // The connection won the race with our cancel: the caller has gone, so drop it.
            pending.result.fail(pending.timedOut ? BLEError.timeout("connecting to \(pending.peer)") : CancellationError())
            Task(executorPreference: clock.taskExecutor) { try? await self.disconnect(handle: event.handle, reason: .remoteUserTerminatedConnection) }
            return
        }
        pending.result.succeed(event.handle)
    }

    /// Disconnects (Vol 4 Part E §7.1.6) and waits for Disconnection Complete.
    ///
    /// Ends when the link is down, when the controller reports the disconnect failed (the link
    /// stays up and the error is thrown), or at a deadline of the command timeout plus the
    /// supervision timeout, after which the controller must have dropped the link.
    func disconnect(handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) async throws {
        guard let link = links[handle] else { return }
        link.observation.update { $0.state = .disconnecting }
        let attempt = OneShot<Void>()
        disconnectAttempts[handle, default: []].append(attempt)
        let linkID = link.id
        let limit = configuration.commandTimeout + .milliseconds(Int64(link.parameters.supervisionTimeoutMilliseconds))
        let clock = self.clock
        let owned = ActorOwned(attempt)
        Task(executorPreference: clock.taskExecutor) {
            try? await clock.sleep(for: limit)
            await self.disconnectTimedOut(owned.value, linkID: linkID)
        }
        do {
            try await command(.disconnect(handle: handle, reason: reason))
        } catch BLEError.hci(.commandFailed(_, .unknownConnectionIdentifier)) {
            linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: .notConnected)
            return
        } catch {
            link.observation.update { $0.state = .connected }
            throw error
        }
        try await attempt.wait()
    }

    private func disconnectTimedOut(_ attempt: OneShot<Void>, linkID: UInt64) {
        guard !attempt.isFulfilled else { return }
        attempt.fail(BLEError.timeout("the controller did not report the disconnect"))
        // The controller never reported the link down: treat it as gone, so nothing waits on it.
        if let handle = linkHandle(forID: linkID) {
            linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: .timeout("disconnecting"))
        }
    }

    /// Disconnection Complete with an error status (Vol 4 Part E §7.7.5): the link stays up.
    func disconnectFailed(handle: UInt16, status: HCIStatus) {
        links[handle]?.observation.update { $0.state = .connected }
        for attempt in disconnectAttempts.removeValue(forKey: handle) ?? [] {
            attempt.fail(BLEError.hci(.commandFailed(opcode: .disconnect, status: status)))
        }
    }

    /// Tears down a link's state: fails its GATT work, finishes its streams, returns its ACL credits.
    func linkClosed(handle: UInt16, reason: HCIStatus, error: BLEError) {
        guard var link = links.removeValue(forKey: handle) else { return }
        for attempt in disconnectAttempts.removeValue(forKey: handle) ?? [] { attempt.succeed(()) }
        defer { releaseACLWaiters(handle: handle) }
        _ = link.bearer.close()
        for (_, waiter) in link.procedureWaiters { waiter.resume(throwing: error) }
        link.procedureWaiters = [:]
        for sinks in link.notificationSinks.values { for s in sinks.values { s.finish() } }
        for s in link.servicesChangedSinks.values { s.finish() }
        sendACL(aclFlow.connectionClosed(handle: handle))
        reassembler.reset(handle: handle)
        link.observation.update { $0.state = .disconnected(reason: reason) }
        link.disconnected.succeed(reason)
        pendingServerRequests = pendingServerRequests.filter { $0.value.linkHandle != handle }
        for (id, waiter) in indicationWaiters where waiter.linkHandle == handle {
            indicationWaiters[id] = nil
            waiter.continuation?.resume(throwing: BLEError.disconnected(reason: reason))
        }
        resumeRoomWaiters()
        if link.role == .peripheral {
            emit(.disconnected(ConnectedCentral(id: link.id, address: link.peer), reason: reason))
            if failure == nil { restartAdvertisingIfWanted(afterConnection: false) }
        }
    }

    /// Disconnects the link with this id (resolved inside the actor, so a reused handle is never hit).
    func disconnect(linkID: UInt64, reason: HCIStatus) async throws {
        guard let handle = linkHandle(forID: linkID) else { return }
        try await disconnect(handle: handle, reason: reason)
    }

    func linkHandle(forID id: UInt64) -> UInt16? {
        links.first(where: { $0.value.id == id })?.key
    }
}

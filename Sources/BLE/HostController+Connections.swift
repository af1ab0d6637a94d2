import BLEHCI
import BLEHost
import BLEWire

/// A connection being initiated (LE Create Connection sent, LE Connection Complete awaited).
final class PendingConnection {
    let peer: DeviceAddress
    let deadline: Duration
    let result = OneShot<UInt16>()
    var cancelSent = false
    var timedOut = false
    var cancelledByTask = false

    init(peer: DeviceAddress, deadline: Duration) {
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
        let pending = PendingConnection(peer: peer, deadline: now + timeout)
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
            Task { await self.cancelConnectionAttempt() }
        }
        guard let link = links[handle] else { throw BLEError.notConnected }
        return LinkHandle(id: link.id, handle: handle, peer: link.peer, observation: link.observation)
    }

    func cancelConnectionAttempt() {
        guard let pending = pendingConnection, !pending.result.isFulfilled else { return }
        pending.cancelledByTask = true
        sendCreateConnectionCancel(pending)
    }

    func connectionTimedOut() {
        guard let pending = pendingConnection, !pending.result.isFulfilled else { return }
        pending.timedOut = true
        sendCreateConnectionCancel(pending)
    }

    private func sendCreateConnectionCancel(_ pending: PendingConnection) {
        guard !pending.cancelSent else { return }
        pending.cancelSent = true
        Task {
            do {
                _ = try await self.commandReturning(.leCreateConnectionCancel)
            } catch {
                // Command Disallowed: the connection completed meanwhile; its event settles it.
                self.log("LE Create Connection Cancel: \(error)")
            }
        }
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
        if event.role == .peripheral {
            // A central connected to our advertising (Vol 6 Part B §4.5): serve it.
            advertisingEndedByConnection()
            emit(.connected(ConnectedCentral(id: link.id, address: link.peer)))
            return
        }
        guard let pending else {
            // A central-role connection nobody waits for: drop it.
            Task { try? await self.disconnect(handle: event.handle, reason: .remoteUserTerminatedConnection) }
            return
        }
        if pending.timedOut || pending.cancelledByTask {
            // The connection won the race with our cancel: the caller has gone, so drop it.
            pending.result.fail(pending.timedOut ? BLEError.timeout("connecting to \(pending.peer)") : CancellationError())
            Task { try? await self.disconnect(handle: event.handle, reason: .remoteUserTerminatedConnection) }
            return
        }
        pending.result.succeed(event.handle)
    }

    /// Disconnects (Vol 4 Part E §7.1.6) and waits for Disconnection Complete.
    func disconnect(handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) async throws {
        guard let link = links[handle] else { return }
        link.observation.update { $0.state = .disconnecting }
        do {
            try await command(.disconnect(handle: handle, reason: reason))
        } catch BLEError.hci(.commandFailed(_, .unknownConnectionIdentifier)) {
            linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: .notConnected)
            return
        }
        _ = try await link.disconnected.wait()
    }

    /// Tears down a link's state: fails its GATT work, finishes its streams, returns its ACL credits.
    func linkClosed(handle: UInt16, reason: HCIStatus, error: BLEError) {
        guard var link = links.removeValue(forKey: handle) else { return }
        _ = link.bearer.close()
        for (_, waiter) in link.procedureWaiters { waiter.resume(throwing: error) }
        link.procedureWaiters = [:]
        for sinks in link.notificationSinks.values { for s in sinks.values { s.finish() } }
        for s in link.servicesChangedSinks.values { s.finish() }
        sendACL(aclFlow.connectionClosed(handle: handle))
        reassembler.reset(handle: handle)
        link.observation.update { $0.state = .disconnected(reason: reason) }
        link.disconnected.succeed(reason)
        pendingServerRequests = pendingServerRequests.filter { entry in
            switch entry.value {
            case let .read(h), let .write(h, _): return h != handle
            }
        }
        resumeRoomWaiters()
        if link.role == .peripheral {
            emit(.disconnected(ConnectedCentral(id: link.id, address: link.peer), reason: reason))
            if failure == nil { restartAdvertisingIfWanted(afterConnection: false) }
        }
    }

    func linkHandle(forID id: UInt64) -> UInt16? {
        links.first(where: { $0.value.id == id })?.key
    }
}

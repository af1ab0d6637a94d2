import BLEHCI
import BLEHost
import BLEWire

/// A dynamic read or write the server is waiting on the application for. `serverID` is the
/// link's ATT server's own number for it; the host-wide token that keys this entry is what the
/// application sees (two links' servers number their requests independently).
struct PendingServerRequest {
    enum Kind { case read, write }
    let kind: Kind
    let linkHandle: UInt16
    let serverID: UInt64
    /// When the request is answered with Unlikely Error if the application has not answered:
    /// well inside the client's 30-second transaction timeout (Vol 3 Part F §3.3.3).
    let deadline: Duration
}

extension HostController {
    // MARK: - Database

    /// Adds a service to the local GATT database; connected clients subscribed to Service
    /// Changed are told (Vol 3 Part G §7.1).
    func addService(_ definition: GATTServiceDefinition) throws -> GATTServiceHandles {
        let handles = try database.add(definition)
        announceDatabaseChange()
        return handles
    }

    func removeService(_ service: GATTServiceHandles) throws {
        try database.remove(serviceStartingAt: service.range.lowerBound)
        for handle in links.keys.sorted() { links[handle]?.server.forgetHandles(in: service.range) }
        readHandlers = readHandlers.filter { !service.range.contains($0.key) }
        writeHandlers = writeHandlers.filter { !service.range.contains($0.key) }
        announceDatabaseChange()
    }

    private func announceDatabaseChange() {
        guard let range = database.serviceChangedRange else { return }
        database.serviceChangedRange = nil
        let scHandle = database.serviceChangedHandle
        let value = [UInt8(range.lowerBound & 0xFF), UInt8(range.lowerBound >> 8), UInt8(range.upperBound & 0xFF), UInt8(range.upperBound >> 8)]
        for handle in links.keys.sorted() {
            guard var link = links[handle], link.server.cccd(valueHandle: scHandle) & 0x0002 != 0 else { continue }
            let id = nextToken
            nextToken += 1
            _ = link.server.indicate(valueHandle: scHandle, value: value, id: id, now: now)
            links[handle] = link
            pumpNotifications(handle: handle)
        }
    }

    /// Sets the Device Name and Appearance of the GAP service.
    public func setDeviceName(_ name: String, appearance: UInt16) {
        database.setDeviceName(name, appearance: appearance)
    }

    // MARK: - Incoming ATT for the server

    func receiveServerATT(_ payload: [UInt8], handle: UInt16) {
        guard var link = links[handle] else { return }
        if !managerEventSinks.isEmpty, let first = payload.first, ATTOpcode(rawValue: first).kind != .confirmation {
            let central = ConnectedCentral(id: link.id, address: link.peer)
            emit(.request(central, opcode: ATTOpcode(rawValue: first), handle: Self.firstHandle(of: payload)))
        }
        let actions = link.server.receive(payload, database: &database, security: link.security, now: now)
        links[handle] = link
        performServer(actions, handle: handle)
    }

    /// The handle a request names first (after the opcode), if its layout has one.
    static func firstHandle(of pdu: [UInt8]) -> UInt16? {
        guard pdu.count >= 3 else { return nil }
        switch ATTOpcode(rawValue: pdu[0]).kind {
        case .request, .command:
            if pdu[0] == ATTOpcode.exchangeMTURequest.rawValue || pdu[0] == ATTOpcode.executeWriteRequest.rawValue { return nil }
            return UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        default:
            return nil
        }
    }

    /// Carries out what a link's ATT server asked for.
    func performServer(_ actions: [ServerAction], handle: UInt16) {
        guard let link = links[handle] else { return }
        let central = ConnectedCentral(id: link.id, address: link.peer)
        for action in actions {
            switch action {
            case let .send(bytes):
                sendL2CAP(handle: handle, channel: L2CAPChannel.att, payload: bytes)
            case let .read(id, attribute, offset):
                let token = nextToken
                nextToken += 1
                pendingServerRequests[token] = PendingServerRequest(kind: .read, linkHandle: handle, serverID: id, deadline: now + configuration.applicationResponseTimeout)
                let request = GATTReadRequest(id: token, central: central, handle: attribute, offset: offset)
                if let handler = readHandlers[attribute] {
                    Task(executorPreference: clock.taskExecutor) {
                        let result = await handler(request)
                        await self.respond(toRead: request.id, with: result)
                    }
                } else if managerEventSinks.isEmpty {
                    // Nobody could answer: say so now rather than leave the central waiting.
                    respond(toRead: token, with: .failure(.unlikelyError))
                } else {
                    emit(.read(request))
                }
            case let .write(id, attribute, value, offset, kind):
                let publicKind: GATTWriteRequest.Kind
                switch kind {
                case .request: publicKind = .request
                case .command: publicKind = .command
                case .prepared: publicKind = .prepared
                }
                let token = nextToken
                nextToken += 1
                // A Write Command gets no answer (Vol 3 Part F §3.4.5.3): nothing to keep pending.
                if publicKind != .command {
                    pendingServerRequests[token] = PendingServerRequest(kind: .write, linkHandle: handle, serverID: id, deadline: now + configuration.applicationResponseTimeout)
                }
                let request = GATTWriteRequest(id: token, central: central, handle: attribute, value: value, offset: offset, kind: publicKind)
                if let handler = writeHandlers[attribute] {
                    Task(executorPreference: clock.taskExecutor) {
                        let result = await handler(request)
                        await self.respond(toWrite: request.id, with: result)
                    }
                } else if managerEventSinks.isEmpty {
                    respond(toWrite: token, with: .failure(.unlikelyError))
                } else {
                    emit(.write(request))
                }
            case let .valueWritten(attribute, value):
                emit(.valueWritten(central, handle: attribute, value: value))
            case let .subscriptionChanged(valueHandle, notifications, indications):
                emit(.subscriptionChanged(central, valueHandle: valueHandle, notifications: notifications, indications: indications))
            case let .indicationConfirmed(id):
                if let waiter = indicationWaiters.removeValue(forKey: id) {
                    waiter.continuation?.resume()
                    emit(.indicationConfirmed(central, valueHandle: waiter.valueHandle))
                }
            case let .indicationTimedOut(id):
                if let waiter = indicationWaiters.removeValue(forKey: id) {
                    waiter.continuation?.resume(throwing: BLEError.timeout("indication confirmation"))
                }
            case .readyToUpdate:
                emit(.readyToUpdateSubscribers(central))
                resumeRoomWaiters()
            case let .mtuChanged(mtu):
                // One ATT_MTU per bearer (Vol 3 Part F §3.4.2): our client uses it too.
                if var link = links[handle] {
                    _ = link.bearer.peerExchangedMTU(clientMTU: mtu, serverMTU: mtu)
                    links[handle] = link
                    link.publish()
                }
                emit(.mtuChanged(central, mtu: mtu))
            case .closeBearer:
                Task(executorPreference: clock.taskExecutor) { try? await self.disconnect(handle: handle, reason: .remoteUserTerminatedConnection) }
            }
        }
        pumpNotifications(handle: handle)
        rescheduleTimer()
    }

    /// Answers a dynamic read the application was asked for.
    func respond(toRead token: UInt64, with result: Result<[UInt8], ATTErrorCode>) {
        guard let pending = pendingServerRequests.removeValue(forKey: token), pending.kind == .read,
              var link = links[pending.linkHandle] else { return }
        let handle = pending.linkHandle
        let actions = link.server.completeRead(id: pending.serverID, result: result, database: &database, now: now)
        links[handle] = link
        performServer(actions, handle: handle)
    }

    /// Answers a dynamic write the application was asked for.
    func respond(toWrite token: UInt64, with result: Result<Void, ATTErrorCode>) {
        guard let pending = pendingServerRequests.removeValue(forKey: token), pending.kind == .write,
              var link = links[pending.linkHandle] else { return }
        let handle = pending.linkHandle
        let actions = link.server.completeWrite(id: pending.serverID, result: result, database: &database, now: now)
        links[handle] = link
        performServer(actions, handle: handle)
    }

    // MARK: - Notifications and indications

    /// Moves queued notifications and indications from a link's server into ACL, keeping only a
    /// couple of PDUs waiting for controller credits so the server's bounded queue is where
    /// backpressure shows (and "queue full" means something).
    func pumpNotifications(handle: UInt16) {
        let t = now
        while aclFlow.queuedPDUs(handle: handle) < 2, let pdu = withLink(handle, { $0.server.nextOutgoing(now: t) }) ?? nil {
            sendL2CAP(handle: handle, channel: L2CAPChannel.att, payload: pdu)
        }
        // Signals a drained queue produced (readyToUpdate) come out here.
        guard let events = withLink(handle, { $0.server.takeEvents() }) else { return }
        if !events.isEmpty { performServer(events, handle: handle) }
    }

    /// Notifies or indicates `value` to every central subscribed to `valueHandle` (or to the
    /// given ones), as CoreBluetooth's `updateValue(_:for:onSubscribedCentrals:)`. All or
    /// nothing: if any target central's queue is full, nothing is queued anywhere (so sending
    /// again after the ready signal never duplicates a value for the others).
    func updateValue(_ value: [UInt8], valueHandle: UInt16, centrals: Set<UInt64>?) -> UpdateValueResult {
        let targets = links.filter { entry in
            (centrals?.contains(entry.value.id) ?? true) && entry.value.server.cccd(valueHandle: valueHandle) != 0
        }.map(\.key).sorted()
        let full = targets.filter { links[$0].map { !$0.server.hasRoomForUpdate } ?? false }
        if !full.isEmpty {
            // Nothing is queued anywhere; the full ones send the ready signal once they drain.
            for h in full { links[h]?.server.signalReadyWhenRoom() }
            return .queueFull
        }
        var queued = 0
        let t = now
        for handle in targets {
            guard let notifies = links[handle].map({ $0.server.cccd(valueHandle: valueHandle) & 0x0001 != 0 }) else { continue }
            let result: UpdateResult?
            if notifies {
                result = withLink(handle) { $0.server.notify(valueHandle: valueHandle, value: value) }
            } else {
                let id = nextToken
                nextToken += 1
                result = withLink(handle) { $0.server.indicate(valueHandle: valueHandle, value: value, id: id, now: t) }
                if case .queued = result { indicationWaiters[id] = IndicationWaiter(valueHandle: valueHandle, linkHandle: handle, continuation: nil) }
            }
            if case .queued = result { queued += 1 }
            pumpNotifications(handle: handle)
        }
        rescheduleTimer()
        return .queued(centrals: queued)
    }

    /// `updateValue` that waits for room instead of reporting a full queue. The check and the
    /// wait happen inside the actor with no suspension between them, so a ready signal cannot
    /// slip past; cancelling the task ends the wait. The value is made at each attempt, inside
    /// the actor, right before it is queued.
    func updateValueWaiting(valueHandle: UInt16, centrals: Set<UInt64>?, _ makeValue: @Sendable () -> [UInt8]) async throws -> Int {
        while true {
            try Task.checkCancellation()
            if case let .queued(n) = updateValueStoring(makeValue(), valueHandle: valueHandle, centrals: centrals) { return n }
            try await waitForRoom()
        }
    }

    /// Waits until some link's server reports room again, a link closes, or the task is cancelled.
    func waitForRoom() async throws {
        let id = nextToken
        nextToken += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    c.resume(throwing: CancellationError())
                } else {
                    roomWaiters[id] = c
                }
            }
        } onCancel: {
            Task(executorPreference: clock.taskExecutor) { await self.cancelRoomWaiter(id) }
        }
    }

    private func cancelRoomWaiter(_ id: UInt64) {
        roomWaiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }

    func resumeRoomWaiters() {
        let waiters = roomWaiters
        roomWaiters = [:]
        for w in waiters.values { w.resume() }
    }

    // MARK: - Events

    func emit(_ event: PeripheralManagerEvent) {
        for sink in managerEventSinks.values { sink.yield(event) }
    }

    func peripheralManagerEvents() -> AsyncStream<PeripheralManagerEvent> {
        let (stream, continuation) = AsyncStream<PeripheralManagerEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = nextToken
        nextToken += 1
        managerEventSinks[id] = continuation
        continuation.onTermination = { _ in Task(executorPreference: self.clock.taskExecutor) { await self.removeEventSink(id) } }
        return stream
    }

    private func removeEventSink(_ id: UInt64) {
        managerEventSinks[id] = nil
    }

    func setReadHandler(_ handler: GATTReadHandler?, forHandle handle: UInt16) {
        readHandlers[handle] = handler
    }

    func setWriteHandler(_ handler: GATTWriteHandler?, forHandle handle: UInt16) {
        writeHandlers[handle] = handler
    }
}

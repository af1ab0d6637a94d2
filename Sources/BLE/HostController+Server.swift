import BLEHCI
import BLEHost
import BLEWire

/// A dynamic read or write the server is waiting on the application for.
enum PendingServerRequest {
    case read(linkHandle: UInt16)
    case write(linkHandle: UInt16, answers: Bool)
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
        for handle in Array(links.keys) { links[handle]?.server.forgetHandles(in: service.range) }
        readHandlers = readHandlers.filter { !service.range.contains($0.key) }
        writeHandlers = writeHandlers.filter { !service.range.contains($0.key) }
        announceDatabaseChange()
    }

    private func announceDatabaseChange() {
        guard let range = database.serviceChangedRange else { return }
        database.serviceChangedRange = nil
        let scHandle = database.serviceChangedHandle
        let value = [UInt8(range.lowerBound & 0xFF), UInt8(range.lowerBound >> 8), UInt8(range.upperBound & 0xFF), UInt8(range.upperBound >> 8)]
        for handle in Array(links.keys) {
            guard var link = links[handle], link.server.cccd(valueHandle: scHandle) & 0x0002 != 0 else { continue }
            let id = nextToken
            nextToken += 1
            _ = link.server.indicate(valueHandle: scHandle, value: value, id: id, now: now)
            links[handle] = link
            pumpNotifications(handle: handle)
        }
    }

    func setDeviceName(_ name: String, appearance: UInt16) {
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
                pendingServerRequests[id] = .read(linkHandle: handle)
                let request = GATTReadRequest(id: id, central: central, handle: attribute, offset: offset)
                if let handler = readHandlers[attribute] {
                    Task {
                        let result = await handler(request)
                        self.respond(toRead: request.id, with: result)
                    }
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
                pendingServerRequests[id] = .write(linkHandle: handle, answers: publicKind != .command)
                let request = GATTWriteRequest(id: id, central: central, handle: attribute, value: value, offset: offset, kind: publicKind)
                if let handler = writeHandlers[attribute] {
                    Task {
                        let result = await handler(request)
                        self.respond(toWrite: request.id, with: result)
                    }
                } else {
                    emit(.write(request))
                }
            case let .valueWritten(attribute, value):
                emit(.valueWritten(central, handle: attribute, value: value))
            case let .subscriptionChanged(valueHandle, notifications, indications):
                emit(.subscriptionChanged(central, valueHandle: valueHandle, notifications: notifications, indications: indications))
            case let .indicationConfirmed(id):
                if let (valueHandle, waiter) = indicationWaiters.removeValue(forKey: id) {
                    waiter?.resume()
                    emit(.indicationConfirmed(central, valueHandle: valueHandle))
                }
            case let .indicationTimedOut(id):
                if let (_, waiter) = indicationWaiters.removeValue(forKey: id) {
                    waiter?.resume(throwing: BLEError.timeout("indication confirmation"))
                }
            case .readyToUpdate:
                emit(.readyToUpdateSubscribers(central))
                resumeRoomWaiters()
            case let .mtuChanged(mtu):
                links[handle]?.publish()
                emit(.mtuChanged(central, mtu: mtu))
            case .closeBearer:
                Task { try? await self.disconnect(handle: handle, reason: .remoteUserTerminatedConnection) }
            }
        }
        pumpNotifications(handle: handle)
        rescheduleTimer()
    }

    /// Answers a dynamic read the application was asked for.
    func respond(toRead id: UInt64, with result: Result<[UInt8], ATTErrorCode>) {
        guard case let .read(handle)? = pendingServerRequests.removeValue(forKey: id), var link = links[handle] else { return }
        let actions = link.server.completeRead(id: id, result: result, database: &database, now: now)
        links[handle] = link
        performServer(actions, handle: handle)
    }

    /// Answers a dynamic write the application was asked for.
    func respond(toWrite id: UInt64, with result: Result<Void, ATTErrorCode>) {
        guard case let .write(handle, _)? = pendingServerRequests.removeValue(forKey: id), var link = links[handle] else { return }
        let actions = link.server.completeWrite(id: id, result: result, database: &database, now: now)
        links[handle] = link
        performServer(actions, handle: handle)
    }

    // MARK: - Notifications and indications

    /// Moves queued notifications and indications from a link's server into ACL, keeping only a
    /// couple of PDUs waiting for controller credits so the server's bounded queue is where
    /// backpressure shows (and "queue full" means something).
    func pumpNotifications(handle: UInt16) {
        while var link = links[handle], aclFlow.queuedPDUs(handle: handle) < 2, let pdu = link.server.nextOutgoing(now: now) {
            links[handle] = link
            sendL2CAP(handle: handle, channel: L2CAPChannel.att, payload: pdu)
        }
        // Signals a drained queue produced (readyToUpdate) come out here.
        guard var link = links[handle] else { return }
        let events = link.server.takeEvents()
        links[handle] = link
        if !events.isEmpty { performServer(events, handle: handle) }
    }

    /// Notifies or indicates `value` to every central subscribed to `valueHandle` (or to the
    /// given ones), as CoreBluetooth's `updateValue(_:for:onSubscribedCentrals:)`.
    func updateValue(_ value: [UInt8], valueHandle: UInt16, centrals: Set<UInt64>?) -> UpdateValueResult {
        var queued = 0
        var full = false
        for handle in Array(links.keys) {
            guard var link = links[handle] else { continue }
            if let centrals, !centrals.contains(link.id) { continue }
            let cccd = link.server.cccd(valueHandle: valueHandle)
            guard cccd != 0 else { continue }
            let result: UpdateResult
            if cccd & 0x0001 != 0 {
                result = link.server.notify(valueHandle: valueHandle, value: value)
            } else {
                let id = nextToken
                nextToken += 1
                result = link.server.indicate(valueHandle: valueHandle, value: value, id: id, now: now)
                if case .queued = result { indicationWaiters[id] = (valueHandle, nil) }
            }
            links[handle] = link
            switch result {
            case .queued: queued += 1
            case .queueFull: full = true
            case .notSubscribed: break
            }
            pumpNotifications(handle: handle)
        }
        rescheduleTimer()
        return full ? .queueFull : .queued(centrals: queued)
    }

    /// Waits until some link's server reports room again, or a link closes.
    func waitForRoom() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            roomWaiters.append(c)
        }
    }

    func resumeRoomWaiters() {
        let waiters = roomWaiters
        roomWaiters = []
        for w in waiters { w.resume() }
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
        continuation.onTermination = { _ in Task { await self.removeEventSink(id) } }
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

import BLEHCI
import BLEHost
import BLEWire

extension HostController {
    /// Runs one GATT procedure on a link's ATT bearer and waits for its output. The bearer keeps
    /// one request outstanding (Vol 3 Part F §3.3.2); cancelling the task drops the procedure.
    func perform(_ procedure: AnyGATTProcedure, onLink linkID: UInt64) async throws -> GATTOutput {
        if let failure { throw failure }
        guard let handle = linkHandle(forID: linkID) else { throw BLEError.notConnected }
        let id = nextToken
        nextToken += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<GATTOutput, any Error>) in
                guard var link = links[handle] else {
                    c.resume(throwing: BLEError.notConnected)
                    return
                }
                link.procedureWaiters[id] = c
                let actions = link.bearer.submit(procedure, id: id, now: now)
                links[handle] = link
                perform(actions, handle: handle)
                rescheduleTimer()
            }
        } onCancel: {
            Task(executorPreference: clock.taskExecutor) { await self.cancelProcedure(id: id, handle: handle) }
        }
    }

    private func cancelProcedure(id: UInt64, handle: UInt16) {
        guard var link = links[handle], let waiter = link.procedureWaiters.removeValue(forKey: id) else { return }
        let actions = link.bearer.cancel(id: id)
        links[handle] = link
        waiter.resume(throwing: CancellationError())
        perform(actions, handle: handle)
    }

    /// Sends a Write Command (Vol 3 Part G §4.9.1): no response and no transaction, but not
    /// unbounded either: it waits while earlier data for this link still waits for controller
    /// buffers, so a loop of writes follows the controller's pace instead of filling memory.
    func writeWithoutResponse(handle attribute: UInt16, value: [UInt8], onLink linkID: UInt64) async throws {
        guard let handle = linkHandle(forID: linkID) else { throw BLEError.notConnected }
        await waitForACL(handle: handle) { flow in flow.queuedPDUs(handle: handle) == 0 }
        guard let current = linkHandle(forID: linkID), current == handle, var link = links[handle] else { throw BLEError.notConnected }
        do {
            let actions = try link.bearer.writeWithoutResponse(handle: attribute, value: value)
            links[handle] = link
            perform(actions, handle: handle)
        } catch {
            throw BLEError.gatt(error)
        }
    }

    /// Waits until everything sent on this link has left the host and the controller has
    /// reported it sent (Number Of Completed Packets), or `limit` passes. Used before a
    /// deliberate disconnect so queued writes are not flushed away.
    func drain(linkID: UInt64, limit: Duration = .seconds(2)) async {
        guard let handle = linkHandle(forID: linkID) else { return }
        let clock = self.clock
        let deadline = Task(executorPreference: clock.taskExecutor) {
            try? await clock.sleep(for: limit)
            await self.releaseACLWaiters(handle: handle, force: true)
        }
        await waitForACL(handle: handle) { flow in flow.queuedPDUs(handle: handle) == 0 && flow.inFlight(handle: handle) == 0 }
        deadline.cancel()
    }

    func waitForACL(handle: UInt16, until condition: @escaping (ACLFlowController) -> Bool) async {
        guard links[handle] != nil, !condition(aclFlow) else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            aclWaiters.append(ACLWaiter(handle: handle, condition: condition, continuation: c))
        }
    }

    /// Wakes ACL waiters whose condition now holds (or all of a closed link's, or on `force`).
    func releaseACLWaiters(handle: UInt16? = nil, force: Bool = false) {
        var keep: [ACLWaiter] = []
        for w in aclWaiters {
            if (handle == nil || w.handle == handle) && (force || links[w.handle] == nil || w.condition(aclFlow)) {
                w.continuation.resume()
            } else {
                keep.append(w)
            }
        }
        aclWaiters = keep
    }

    /// Splits one ATT bearer between our client and our server by opcode (Vol 3 Part F §3.3):
    /// requests, commands and confirmations are for the server; the rest for the client.
    func receiveATT(_ payload: [UInt8], handle: UInt16) {
        guard let first = payload.first else { return }
        switch ATTOpcode(rawValue: first).kind {
        case .request, .command, .confirmation, .unknown:
            receiveServerATT(payload, handle: handle)
            return
        case .response, .notification, .indication:
            break
        }
        let t = now
        guard let actions = withLink(handle, { $0.bearer.receive(payload, now: t) }) else { return }
        perform(actions, handle: handle)
    }

    /// Carries out what a bearer asked for.
    func perform(_ actions: [BearerAction], handle: UInt16) {
        for action in actions {
            switch action {
            case let .send(bytes):
                sendL2CAP(handle: handle, channel: L2CAPChannel.att, payload: bytes)
            case let .complete(id, result):
                guard var link = links[handle], let waiter = link.procedureWaiters.removeValue(forKey: id) else { continue }
                links[handle] = link
                switch result {
                case let .success(output): waiter.resume(returning: output)
                case let .failure(error): waiter.resume(throwing: BLEError.gatt(error))
                }
            case let .notification(valueHandle, value), let .indication(valueHandle, value):
                deliver(value, from: valueHandle, handle: handle)
            case let .mtuChanged(mtu):
                // One ATT_MTU per bearer (Vol 3 Part F §3.4.2): our server uses it too.
                if var link = links[handle] {
                    link.server.mtu = mtu
                    links[handle] = link
                    link.publish()
                }
            case .closeBearer:
                // After an ATT transaction timeout no more ATT PDUs may be sent on this bearer;
                // the link is useless for GATT, so it is closed (Vol 3 Part F §3.3.3).
                Task(executorPreference: clock.taskExecutor) { try? await self.disconnect(handle: handle, reason: .remoteUserTerminatedConnection) }
            case let .peerRequest(bytes):
                receiveServerATT(bytes, handle: handle)
            }
        }
    }

    private func deliver(_ value: [UInt8], from valueHandle: UInt16, handle: UInt16) {
        guard let link = links[handle] else { return }
        if link.serviceChangedHandles.contains(valueHandle) {
            // Service Changed (Vol 3 Part G §7.1): the affected range's discovery is stale.
            var range: ClosedRange<UInt16> = 0x0001...0xFFFF
            if value.count >= 4 {
                let start = UInt16(value[0]) | UInt16(value[1]) << 8
                let end = UInt16(value[2]) | UInt16(value[3]) << 8
                if start <= end { range = start...end }
            }
            link.observation.invalidateServices(in: range)
            for s in link.servicesChangedSinks.values { s.yield(range) }
        }
        for sink in (link.notificationSinks[valueHandle] ?? [:]).values { sink.yield(value) }
    }

    // MARK: - Subscriptions

    func notificationStream(valueHandle: UInt16, onLink linkID: UInt64) -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingOldest(configuration.notificationBufferLimit))
        guard let handle = linkHandle(forID: linkID), var link = links[handle] else {
            continuation.finish()
            return stream
        }
        let id = nextToken
        nextToken += 1
        link.notificationSinks[valueHandle, default: [:]][id] = continuation
        links[handle] = link
        continuation.onTermination = { _ in
            Task(executorPreference: self.clock.taskExecutor) { await self.removeNotificationSink(id: id, valueHandle: valueHandle, linkID: linkID) }
        }
        return stream
    }

    private func removeNotificationSink(id: UInt64, valueHandle: UInt16, linkID: UInt64) {
        guard let handle = linkHandle(forID: linkID) else { return }
        links[handle]?.notificationSinks[valueHandle]?[id] = nil
    }

    func servicesChangedStream(onLink linkID: UInt64) -> AsyncStream<ClosedRange<UInt16>> {
        let (stream, continuation) = AsyncStream<ClosedRange<UInt16>>.makeStream()
        guard let handle = linkHandle(forID: linkID) else {
            continuation.finish()
            return stream
        }
        let id = nextToken
        nextToken += 1
        links[handle]?.servicesChangedSinks[id] = continuation
        return stream
    }

    /// Records a Service Changed value handle; true the first time it is seen on this link.
    func noteServiceChangedHandle(_ valueHandle: UInt16, onLink linkID: UInt64) -> Bool {
        guard let handle = linkHandle(forID: linkID) else { return false }
        return links[handle]?.serviceChangedHandles.insert(valueHandle).inserted ?? false
    }

    func attMTU(onLink linkID: UInt64) -> Int? {
        guard let handle = linkHandle(forID: linkID) else { return nil }
        return links[handle]?.bearer.mtu
    }
}

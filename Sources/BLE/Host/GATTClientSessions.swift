import BLERuntime
import BLEHCI
import BLEHost
import BLEWire

/// Our GATT client on every link: runs procedures on each link's `ATTClientBearer` (one
/// request outstanding per bearer, Vol 3 Part F §3.3.2), delivers notifications and
/// indications to their streams, watches Service Changed (Vol 3 Part G §7.1), and paces Write
/// Commands by the controller's ACL buffers. Isolated to the host actor that owns it.
final class GATTClientSessions {
    /// A task waiting for a link's ACL queue to reach a state (room for a write, fully sent).
    private struct ACLWaiter {
        let handle: UInt16
        let condition: (ACLFlowController) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private var sessions = GATTClientSessionTable()
    /// Each link's background set-up of Enhanced ATT bearers (GATTClientSessions+Enhanced.swift).
    var enhancedSetups = EnhancedATTSetups()
    private var aclWaiters: [ACLWaiter] = []

    // MARK: - Procedures

    /// Runs one GATT procedure on a link's ATT bearer and waits for its output. Cancelling the
    /// task drops the procedure.
    func perform(_ procedure: AnyGATTProcedure, onLink linkID: UInt64, _ host: isolated some GATTClientDriver) async throws -> GATTOutput {
        if let failure = host.failure { throw failure }
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        let id = host.makeToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<GATTOutput, any Error>) in
                let t = host.now
                guard let actions = host.withLink(handle, { $0.clients.submit(procedure, id: id, now: t) }) else {
                    c.resume(throwing: BLEError.notConnected)
                    return
                }
                sessions.withSession(creating: handle) { $0.procedures.insert(id, c) }
                perform(actions, handle: handle, host)
                host.rescheduleTimer()
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.client.cancel(id: id, handle: handle, $0) } }
        }
    }

    private func cancel(id: UInt64, handle: UInt16, _ host: isolated some GATTClientDriver) {
        guard sessions.withSession(handle, { $0.procedures.resume(id, with: .failure(CancellationError())) }) == true,
              let actions = host.withLink(handle, { [t = host.now] in $0.clients.cancel(id: id, now: t) }) else { return }
        perform(actions, handle: handle, host)
    }

    /// Sends a Write Command (Vol 3 Part G §4.9.1): no response and no transaction, but not
    /// unbounded either: it waits while earlier data for this link still waits for controller
    /// buffers, so a loop of writes follows the controller's pace instead of filling memory.
    func writeWithoutResponse(handle attribute: UInt16, value: [UInt8], onLink linkID: UInt64, _ host: isolated some GATTClientDriver) async throws {
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        // Checked here first: when nothing waits (the usual case) no waiter closure is made and
        // no async call is paid for.
        if host.aclFlow.queuedPDUs(handle: handle) != 0 {
            await waitForACL(handle: handle, host) { flow in flow.queuedPDUs(handle: handle) == 0 }
        }
        guard host.linkHandle(forID: linkID) == handle,
              let result = host.withLink(handle, { link in Result { try link.bearer.writeWithoutResponse(handle: attribute, value: value) } })
        else { throw BLEError.notConnected }
        do {
            perform(try result.get(), handle: handle, host)
        } catch let error as GATTError {
            throw BLEError.gatt(error)
        }
    }

    /// Signed Write Without Response (Vol 3 Part G §4.9.2), paced like `writeWithoutResponse`.
    /// On an unencrypted link the Signed Write Command is signed with the CSRK we gave the
    /// bonded peer and the bond's next SignCounter, which is stored one higher first; on an
    /// encrypted link a plain Write Command goes instead, as §4.9.2 says. Throws
    /// `BLEError.security(.unavailable)` without sending when the peer is not bonded or has no
    /// CSRK of ours, `.invalidArgument` for a value over ATT_MTU − 15.
    func signedWriteWithoutResponse(handle attribute: UInt16, value: [UInt8], onLink linkID: UInt64, _ host: isolated some GATTClientDriver) async throws {
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        await waitForACL(handle: handle, host) { flow in flow.queuedPDUs(handle: handle) == 0 }
        guard host.linkHandle(forID: linkID) == handle,
              let (peer, encrypted, mtu) = host.link(handle).map({ ($0.peer, $0.security.encrypted, $0.bearer.mtu) }) else {
            throw BLEError.notConnected
        }
        let signing: (key: [UInt8], counter: UInt32)?
        if encrypted {
            signing = nil
        } else {
            let limit = SignedWriteWithoutResponse.maximumValueLength(mtu: mtu)
            guard value.count <= limit else {
                throw BLEError.invalidArgument("\(value.count) bytes do not fit one signed write (max \(limit))")
            }
            signing = try host.takeLocalSignCounter(towards: peer)
        }
        let result = host.withLink(handle) { link in
            Result { () throws(GATTError) in
                guard let signing else { return try link.bearer.writeWithoutResponse(handle: attribute, value: value) }
                return try link.bearer.signedWriteWithoutResponse(handle: attribute, value: value, key: signing.key, counter: signing.counter)
            }
        }
        guard let result else { throw BLEError.notConnected }
        do {
            perform(try result.get(), handle: handle, host)
        } catch {
            throw BLEError.gatt(error)
        }
    }

    /// Waits until everything sent on this link has left the host and the controller has
    /// reported it sent (Number Of Completed Packets), or `limit` passes. Used before a
    /// deliberate disconnect so queued writes are not flushed away.
    func drain(linkID: UInt64, limit: Duration, _ host: isolated some GATTClientDriver) async {
        guard let handle = host.linkHandle(forID: linkID) else { return }
        let clock = host.clock
        let deadline = Task(executorPreference: clock.taskExecutor) {
            try? await clock.sleep(for: limit) // cancelled once drained: nothing to report
            await host.run { $0.client.releaseACLWaiters(handle: handle, force: true, $0) }
        }
        await waitForACL(handle: handle, host) { flow in flow.queuedPDUs(handle: handle) == 0 && flow.inFlight(handle: handle) == 0 }
        deadline.cancel()
    }

    private func waitForACL(handle: UInt16, _ host: isolated some GATTClientDriver, until condition: @escaping (ACLFlowController) -> Bool) async {
        guard host.hasLink(handle), !condition(host.aclFlow) else { return }
        await withCheckedContinuation(isolation: host) { (c: CheckedContinuation<Void, Never>) in
            aclWaiters.append(ACLWaiter(handle: handle, condition: condition, continuation: c))
        }
    }

    /// The controller reported packets sent: wakes writers waiting for room.
    func aclProgressed(_ host: isolated some GATTClientDriver) {
        if !aclWaiters.isEmpty { releaseACLWaiters(handle: nil, force: false, host) }
    }

    /// Wakes ACL waiters whose condition now holds (or all of a closed link's, or on `force`).
    private func releaseACLWaiters(handle: UInt16?, force: Bool, _ host: isolated some GATTClientDriver) {
        var keep: [ACLWaiter] = []
        for w in aclWaiters {
            if (handle == nil || w.handle == handle) && (force || !host.hasLink(w.handle) || w.condition(host.aclFlow)) {
                w.continuation.resume()
            } else {
                keep.append(w)
            }
        }
        aclWaiters = keep
    }

    // MARK: - Incoming

    /// A response, notification or indication for our client on `bearer` of this link.
    ///
    /// Nearly every PDU is a notification or an indication, which changes nothing in the link's
    /// bearers (`ATTClientBearerSet.update`): it is taken without the clock, the scheduler or a
    /// timer change. The rest go through `ATTClientBearerSet.receive`. (`withLink`, not
    /// `LinkTable.read`: a borrow from the array through a getter or an unsafe address is
    /// still a copy of the whole link, an `inout` access is not.)
    @inline(__always)
    func receive(_ payload: ArraySlice<UInt8>, handle: UInt16, bearer: ATTBearerID, _ host: isolated some GATTClientDriver) {
        switch host.withLink(handle, { $0.clients.update(payload, on: bearer) }) {
        case nil:
            return // no such link
        case let update??:
            perform(update, handle: handle, host)
        case .some(nil):
            guard case let .enhanced(cid) = bearer else { return receive(payload, handle: handle, host) }
            receiveEnhanced(payload, handle: handle, cid: cid, host)
        }
    }

    /// A response, notification or indication for our client on this link's unenhanced bearer.
    func receive(_ payload: ArraySlice<UInt8>, handle: UInt16, _ host: isolated some GATTClientDriver) {
        let t = host.now
        guard let actions = host.withLink(handle, { $0.clients.receive(payload, on: .unenhanced, now: t) }) else { return }
        perform(actions, handle: handle, host)
    }

    /// Carries out what the unenhanced bearer asked for (a command it sent).
    func perform(_ actions: [BearerAction], handle: UInt16, _ host: isolated some GATTClientDriver) {
        for action in actions { perform(action, on: .unenhanced, handle: handle, host) }
    }

    /// Carries out what the link's bearers asked for, each on its own bearer.
    @inline(__always)
    func perform(_ actions: ATTBearerSetActions, handle: UInt16, _ host: isolated some GATTClientDriver) {
        for a in actions { perform(a.action, on: a.bearer, handle: handle, host) }
    }

    @inline(__always)
    private func perform(_ action: BearerAction, on bearer: ATTBearerID, handle: UInt16, _ host: isolated some GATTClientDriver) {
        switch action {
        case let .send(bytes):
            if case .unenhanced = bearer {
                host.sendL2CAP(handle: handle, channel: L2CAPChannel.att, payload: bytes)
            } else {
                host.sendATT(bytes, handle: handle, bearer: bearer)
            }
        case let .complete(id, result):
            if case .failure(.att(.databaseOutOfSync, _, _)) = result, let link = host.link(handle) {
                host.databaseOutOfSync(linkID: link.id)
            }
            sessions.withSession(handle) { $0.procedures.resume(id, with: result.mapError { BLEError.gatt($0) }) }
        case let .notification(valueHandle, value), let .indication(valueHandle, value):
            deliver(value, from: valueHandle, handle: handle, host)
        case let .mtuChanged(mtu):
            // An Enhanced ATT bearer's MTU is its channel's (Vol 3 Part F §3.2.8), set by L2CAP.
            guard case .unenhanced = bearer else { return }
            // One ATT_MTU per bearer (Vol 3 Part F §3.4.2): our server uses it too.
            host.withLink(handle) {
                $0.server.mtu = mtu
                $0.publish()
            }
        case .closeBearer:
            // After an ATT transaction timeout no more ATT PDUs may be sent on this bearer
            // (Vol 3 Part F §3.3.3): an Enhanced ATT bearer's channel is closed, the rest of
            // the link goes on; the unenhanced bearer lives as long as the link, which is
            // useless for GATT without it, so the link is closed.
            guard case .unenhanced = bearer else {
                if let linkID = host.link(handle)?.id {
                    host.log("closing timed-out \(bearer) of 0x\(String(handle, radix: 16))")
                    host.closeEnhancedATTBearer(linkID: linkID, bearer)
                }
                return
            }
            host.disconnectInBackground(handle: handle, "closing a timed-out ATT bearer")
        case let .peerRequest(bytes):
            host.serverReceives(bytes, handle: handle, bearer: bearer)
        }
    }

    /// A notification's or indication's value to the streams of `valueHandle` on the link, read
    /// in place (no copy of the session per PDU).
    @inline(__always)
    private func deliver(_ value: [UInt8], from valueHandle: UInt16, handle: UInt16, _ host: isolated some GATTClientDriver) {
        let abandoned: Bool
        switch sessions.deliver(value, from: valueHandle, onLink: handle) {
        case .noSession:
            return
        case let .delivered(gone):
            abandoned = gone
        case .serviceChanged:
            serviceChanged(value, handle: handle, host)
            abandoned = sessions.read(handle) { GATTClientSession.yield(value, from: valueHandle, to: $0.notificationSinks) } ?? false
        }
        // A consumer that let its stream go is forgotten here rather than by a task of its own.
        if abandoned {
            sessions.withSession(handle) { $0.notificationSinks.removeAll { $0.valueHandle == valueHandle && $0.queue.isEnded } }
        }
    }

    /// Service Changed (Vol 3 Part G §7.1) arrived on the link: the affected range's discovery is
    /// stale, and so is what the link's procedures learned there. They are told now, before the
    /// link's next PDU (an answer to one of them), on every bearer
    /// (`ATTClientBearerSet.serverDatabaseChanged`): one whose answers may come from what is now
    /// another attribute ends with `GATTError.databaseChanged`, a discovery walks the range again.
    private func serviceChanged(_ value: [UInt8], handle: UInt16, _ host: isolated some GATTClientDriver) {
        guard let link = host.link(handle) else { return }
        var range: ClosedRange<UInt16> = 0x0001...0xFFFF
        if value.count >= 4 {
            let start = UInt16(value[0]) | UInt16(value[1]) << 8
            let end = UInt16(value[2]) | UInt16(value[3]) << 8
            if start <= end { range = start...end }
        }
        link.observation.invalidateServices(in: range)
        host.servicesChanged(range, linkID: link.id)
        let t = host.now
        if let actions = host.withLink(handle, { $0.clients.serverDatabaseChanged(range, now: t) }), !actions.isEmpty {
            perform(actions, handle: handle, host)
            host.rescheduleTimer()
        }
        let sinks = sessions.read(handle) { Array($0.servicesChangedSinks.values) } ?? []
        for s in sinks { s.yield(range) }
    }

    // MARK: - Streams

    func notificationStream(valueHandle: UInt16, onLink linkID: UInt64, _ host: isolated some GATTClientDriver) -> NotificationStream {
        let queue = NotificationQueue(limit: host.configuration.notificationBufferLimit)
        guard let handle = host.linkHandle(forID: linkID) else {
            queue.close()
            return NotificationStream(queue)
        }
        sessions.withSession(creating: handle) { session in
            // Streams let go of are otherwise forgotten only at their own value's next
            // notification: a link whose app opens and drops streams of a value that never
            // notifies would keep them all, and every notification would scan them.
            session.notificationSinks.removeAll { $0.queue.isEnded }
            session.notificationSinks.append(.init(valueHandle: valueHandle, queue: queue))
        }
        return NotificationStream(queue)
    }

    /// How many notification streams the link keeps (tests check dropped ones are forgotten).
    func notificationSinkCount(onLink linkID: UInt64, _ host: isolated some GATTClientDriver) -> Int {
        guard let handle = host.linkHandle(forID: linkID) else { return 0 }
        return sessions.read(handle) { $0.notificationSinks.count } ?? 0
    }

    func servicesChangedStream(onLink linkID: UInt64, _ host: isolated some GATTClientDriver) -> AsyncStream<ClosedRange<UInt16>> {
        let (stream, continuation) = AsyncStream<ClosedRange<UInt16>>.makeStream()
        guard let handle = host.linkHandle(forID: linkID) else {
            continuation.finish()
            return stream
        }
        let token = host.makeToken()
        sessions.withSession(creating: handle) { $0.servicesChangedSinks[token] = continuation }
        return stream
    }

    /// Records a Service Changed value handle; true the first time it is seen on this link.
    func noteServiceChangedHandle(_ valueHandle: UInt16, onLink linkID: UInt64, _ host: isolated some GATTClientDriver) -> Bool {
        guard let handle = host.linkHandle(forID: linkID) else { return false }
        return sessions.withSession(creating: handle) { s in
            guard !s.serviceChangedHandles.contains(valueHandle) else { return false }
            s.serviceChangedHandles.append(valueHandle)
            return true
        }
    }

    /// The link is gone: its procedures fail with `error`, its streams finish, its writers wake.
    func linkClosed(_ link: Link, error: BLEError, _ host: isolated some GATTClientDriver) {
        var clients = link.clients
        _ = clients.close()
        if var session = sessions.remove(link.handle) {
            session.procedures.resumeAll(with: .failure(error))
            for s in session.notificationSinks { s.queue.close() }
            for s in session.servicesChangedSinks.values { s.finish() }
        }
        releaseACLWaiters(handle: link.handle, force: false, host)
        enhancedSetups.finish(handle: link.handle, linkGone: true)
    }
}

/// What the GATT client needs from the host beyond `HostServices`: itself (for its own tasks);
/// the link table (each link's client bearers live in it) and the ACL flow it paces Write
/// Commands by; sending ATT PDUs, on the unenhanced bearer or an Enhanced ATT one, opening and
/// closing Enhanced ATT bearers (L2CAP) and dropping a link whose bearer timed out (Vol 3 Part F
/// §3.3.3); handing the GATT server the requests that arrive on an Enhanced ATT bearer; of the
/// attribute caches, what the client learnt (Server Supported Features, a Service Changed range,
/// Database Out Of Sync) and the features they hold; and of security, a peer's bond and the next
/// signing counter (Vol 3 Part H §2.4.5).
protocol GATTClientDriver: LinkTableAccess {
    var client: GATTClientSessions { get }
    nonisolated var clock: any BLEClock { get }
    var aclFlow: ACLFlowController { get }
    func makeToken() -> UInt64
    @discardableResult
    func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int
    @discardableResult
    func sendATT(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) -> Bool
    /// Opens up to `count` Enhanced ATT bearers on the link (no security raised for them).
    func openATTBearers(linkID: UInt64, count: Int) async throws -> [ATTBearerID]
    func closeEnhancedATTBearer(linkID: UInt64, _ bearer: ATTBearerID)
    func disconnectInBackground(handle: UInt16, _ why: String)
    /// A request, command or confirmation that came on a bearer: the server's.
    func serverReceives(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID)
    func serverFeaturesRead(_ features: [UInt8], linkID: UInt64)
    func cachedServerFeatures(linkID: UInt64) -> [UInt8]?
    func servicesChanged(_ range: ClosedRange<UInt16>, linkID: UInt64)
    func databaseOutOfSync(linkID: UInt64)
    func bond(for peer: DeviceAddress) -> Bond?
    func takeLocalSignCounter(towards peer: DeviceAddress) throws(BLEError) -> (key: [UInt8], counter: UInt32)
}

import BLEHCI
import BLEHost
import BLEWire

/// Our GATT server: the attribute database, each link's `ATTServer`, the dynamic reads and
/// writes waiting on the application, notifications and indications with their bounded queues,
/// and the peripheral manager's event streams. Isolated to the host actor that owns it.
final class GATTServerSessions {
    /// A dynamic read or write the server is waiting on the application for. `serverID` is the
    /// link's ATT server's own number for it; the host-wide token that keys this entry is what
    /// the application sees (two links' servers number their requests independently).
    struct PendingRequest {
        enum Kind { case read, write }
        let kind: Kind
        let linkHandle: UInt16
        /// The bearer the request came on, whose server answers it (Vol 3 Part F §3.2.11).
        let bearer: ATTBearerID
        let serverID: UInt64
        /// When the request is answered with Unlikely Error if the application has not
        /// answered: well inside the client's 30-second transaction timeout (Vol 3 Part F §3.3.3).
        let deadline: Duration
    }

    /// An indication queued by `updateValue`, until its confirmation (or the link closing).
    struct IndicationWaiter {
        let valueHandle: UInt16
        let linkHandle: UInt16
    }

    var database = GATTServerDatabase(deviceName: "SwiftBLE", appearance: 0)
    private var readHandlers: [UInt16: GATTReadHandler] = [:]
    private var writeHandlers: [UInt16: GATTWriteHandler] = [:]
    var pending: [UInt64: PendingRequest] = [:]
    var indications: [UInt64: IndicationWaiter] = [:]
    /// Callers of `updateValueWaiting` waiting for room in a full queue.
    var roomWaiters = ContinuationTable<Void>()
    private var eventSinks: [UInt64: StreamQueue<PeripheralManagerEvent>] = [:]
    /// Bonded clients' change awareness while they are away, by identity (Vol 3 Part G
    /// §2.5.2.1; GATTServerChangeTracking.swift).
    var bondedChangeAwareness: [DeviceAddress: Bool] = [:]
    /// Bonded clients' Client Supported Features while they are away, by identity: persistent
    /// across connections for a client with a trusted relationship (Vol 3 Part G §7.2).
    var bondedClientFeatures: [DeviceAddress: [UInt8]] = [:]

    var nextDeadline: Duration? { pending.isEmpty ? nil : pending.values.lazy.map(\.deadline).min() }

    /// A server whose GATT service says what `offersEnhancedATT` asks: with Server Supported
    /// Features "EATT Supported" (Vol 3 Part G §7.4) when the host accepts Enhanced ATT bearers.
    init(offersEnhancedATT: Bool = false) {
        if offersEnhancedATT {
            database = GATTServerDatabase(deviceName: "SwiftBLE", appearance: 0, serverSupportedFeatures: [0x01])
        }
    }

    // MARK: - Database

    /// Adds a service; connected clients subscribed to Service Changed are told (Vol 3 Part G §7.1).
    func addService(_ definition: GATTServiceDefinition, _ host: isolated HostController) throws -> GATTServiceHandles {
        let handles = try database.add(definition)
        announceDatabaseChange(host)
        return handles
    }

    func removeService(_ service: GATTServiceHandles, _ host: isolated HostController) throws {
        try database.remove(serviceStartingAt: service.range.lowerBound)
        // The client's CCCDs and every bearer's prepare queue (each Enhanced ATT bearer has its own).
        for handle in host.connections.links.handles {
            host.connections.links.withLink(handle) { link in
                link.server.forgetHandles(in: service.range)
                for cid in link.enhancedServers.keys.sorted() { link.enhancedServers[cid]?.forgetHandles(in: service.range) }
            }
        }
        readHandlers = readHandlers.filter { !service.range.contains($0.key) }
        writeHandlers = writeHandlers.filter { !service.range.contains($0.key) }
        announceDatabaseChange(host)
    }

    func announceDatabaseChange(_ host: isolated HostController) {
        guard let range = database.serviceChangedRange else { return }
        database.serviceChangedRange = nil
        databaseChangedForAllClients(host)
        let scHandle = database.serviceChangedHandle
        let value = [UInt8(range.lowerBound & 0xFF), UInt8(range.lowerBound >> 8), UInt8(range.upperBound & 0xFF), UInt8(range.upperBound >> 8)]
        let t = host.now
        for handle in host.connections.links.handles {
            guard let link = host.connections.links[handle],
                  link.server.deliverableSubscription(valueHandle: scHandle, database: database, security: link.security) & 0x0002 != 0 else { continue }
            let id = host.makeToken()
            host.connections.links.withLink(handle) {
                _ = $0.server.indicate(valueHandle: scHandle, value: value, id: id, now: t, database: database, security: $0.security)
            }
            pumpNotifications(handle: handle, host)
        }
    }

    func setReadHandler(_ handler: GATTReadHandler?, forHandle handle: UInt16) {
        readHandlers[handle] = handler
    }

    func setWriteHandler(_ handler: GATTWriteHandler?, forHandle handle: UInt16) {
        writeHandlers[handle] = handler
    }

    // MARK: - Incoming ATT

    /// A request, command or confirmation for our server on this link.
    func receive(_ payload: [UInt8], handle: UInt16, _ host: isolated HostController) {
        guard let central = host.connections.links.read(handle, { $0.central }) else { return }
        if hasEventSinks, let first = payload.first, ATTOpcode(rawValue: first).kind != .confirmation {
            emit(.request(central, opcode: ATTOpcode(rawValue: first), handle: Self.firstHandle(of: payload)))
        }
        if payload.first == ATTOpcode.signedWriteCommand.rawValue {
            receiveSignedWrite(payload, handle: handle, bearer: .unenhanced, host)
            return
        }
        let t = host.now
        let actions = host.connections.links.withLink(handle) { $0.server.receive(payload, database: &database, security: $0.security, now: t) } ?? []
        perform(actions, handle: handle, host)
    }

    /// A Signed Write Command (Vol 3 Part G §4.9.2): checked against the client's bond, its
    /// SignCounter stored with the bond, then applied. A write whose counter cannot be stored
    /// is dropped (a command gets no answer, Vol 3 Part F §3.4.5.4), so no counter ever
    /// takes effect without being on record.
    func receiveSignedWrite(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID, _ host: isolated HostController) {
        // Read through the table, never a Link copy kept across `withLink` (it would copy the
        // server's queues).
        guard let verdict = host.connections.links[handle].map({ link in
            (link.peer, link.server.verifySignedWrite(pdu, signingKey: host.security.peerSigningKey(from: link.peer, host),
                                                      database: database, security: link.security))
        }) else { return }
        let (peer, result) = verdict
        switch result {
        case let .failure(why):
            host.log("signed write from \(peer) ignored: \(why)")
        case let .success(write):
            guard host.security.acceptPeerSignCounter(write.counter, from: peer, host) else {
                host.log("signed write from \(peer) ignored: its SignCounter \(write.counter) could not be stored")
                return
            }
            let t = host.now
            let actions = host.connections.links.withLink(handle) { link in
                let security = link.security
                return link.withServer(bearer) { $0.applySignedWrite(write, database: &database, security: security, now: t) }
            } ?? nil
            perform(actions ?? [], handle: handle, bearer: bearer, host)
        }
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

    /// Carries out what the ATT server of `bearer` of a link asked for.
    func perform(_ actions: [ServerAction], handle: UInt16, bearer: ATTBearerID = .unenhanced, _ host: isolated HostController) {
        guard let central = host.connections.links.read(handle, { $0.central }) else { return }
        for action in actions {
            switch action {
            case let .send(bytes):
                host.sendATT(bytes, handle: handle, bearer: bearer)
            case let .read(id, attribute, offset):
                let token = pend(.read, serverID: id, handle: handle, bearer: bearer, host)
                let request = GATTReadRequest(id: token, central: central, handle: attribute, offset: offset)
                if let handler = readHandlers[attribute] {
                    host.spawn("read handler for 0x\(String(attribute, radix: 16))") {
                        let result = await handler(request)
                        await host.run { $0.server.respond(toRead: request.id, with: result, $0) }
                    }
                } else if !hasEventSinks {
                    // Nobody could answer: say so now rather than leave the central waiting.
                    respond(toRead: token, with: .failure(.unlikelyError), host)
                } else {
                    emit(.read(request))
                }
            case let .write(id, attribute, value, offset, kind):
                let publicKind: GATTWriteRequest.Kind
                switch kind {
                case .request: publicKind = .request
                case .command, .signedCommand: publicKind = .command
                case .prepared: publicKind = .prepared
                }
                // A Write Command gets no answer (Vol 3 Part F §3.4.5.3): nothing to keep pending.
                let token = publicKind == .command ? host.makeToken() : pend(.write, serverID: id, handle: handle, bearer: bearer, host)
                let request = GATTWriteRequest(id: token, central: central, handle: attribute, value: value, offset: offset, kind: publicKind,
                                               isSigned: kind == .signedCommand)
                if let handler = writeHandlers[attribute] {
                    host.spawn("write handler for 0x\(String(attribute, radix: 16))") {
                        let result = await handler(request)
                        await host.run { $0.server.respond(toWrite: request.id, with: result, $0) }
                    }
                } else if !hasEventSinks {
                    respond(toWrite: token, with: .failure(.unlikelyError), host)
                } else {
                    emit(.write(request))
                }
            case let .valueWritten(attribute, value):
                emit(.valueWritten(central, handle: attribute, value: value))
            case let .subscriptionChanged(valueHandle, notifications, indications):
                emit(.subscriptionChanged(central, valueHandle: valueHandle, notifications: notifications, indications: indications))
            case let .indicationConfirmed(id):
                if let waiter = indications.removeValue(forKey: id) {
                    emit(.indicationConfirmed(central, valueHandle: waiter.valueHandle))
                }
            case let .indicationTimedOut(id):
                indications[id] = nil
            case .readyToUpdate:
                emit(.readyToUpdateSubscribers(central))
                roomWaiters.resumeAll(with: .success(()))
            case let .mtuChanged(mtu):
                // One ATT_MTU per bearer (Vol 3 Part F §3.4.2): our client uses it too.
                host.connections.links.withLink(handle) {
                    _ = $0.bearer.peerExchangedMTU(clientMTU: mtu, serverMTU: mtu)
                    $0.publish()
                }
                emit(.mtuChanged(central, mtu: mtu))
            case .closeBearer:
                guard case let .enhanced(cid) = bearer else {
                    host.connections.disconnectInBackground(handle: handle, "closing a timed-out ATT bearer", host)
                    continue
                }
                // An Enhanced ATT bearer that timed out is closed alone (Vol 3 Part F §3.3.3).
                host.l2cap.closeATTBearer(handle: handle, cid: cid, host)
            }
        }
        pumpNotifications(handle: handle, host)
        host.rescheduleTimer()
    }

    /// Answers a dynamic read the application was asked for.
    func respond(toRead token: UInt64, with result: Result<[UInt8], ATTErrorCode>, _ host: isolated HostController) {
        answer(token, .read, host) { server, id, database, security, now in
            server.completeRead(id: id, result: result, database: &database, security: security, now: now)
        }
    }

    /// Answers a dynamic write the application was asked for.
    func respond(toWrite token: UInt64, with result: Result<Void, ATTErrorCode>, _ host: isolated HostController) {
        answer(token, .write, host) { server, id, database, security, now in
            server.completeWrite(id: id, result: result, database: &database, security: security, now: now)
        }
    }

    /// Keeps a request for the application under a new host-wide token, with its deadline.
    private func pend(_ kind: PendingRequest.Kind, serverID: UInt64, handle: UInt16, bearer: ATTBearerID, _ host: isolated HostController) -> UInt64 {
        let token = host.makeToken()
        pending[token] = PendingRequest(kind: kind, linkHandle: handle, bearer: bearer, serverID: serverID,
                                        deadline: host.now + host.configuration.applicationResponseTimeout)
        return token
    }

    /// Ends the pending request `token` of `kind` (once) by having its link's server complete it,
    /// with the link's security as it is now for the requests held meanwhile.
    private func answer(_ token: UInt64, _ kind: PendingRequest.Kind, _ host: isolated HostController,
                        _ complete: (inout ATTServer, UInt64, inout GATTServerDatabase, LinkSecurity, Duration) -> [ServerAction]) {
        guard let request = pending[token], request.kind == kind else { return }
        pending[token] = nil
        let now = host.now
        // The bearer may have closed meanwhile: then nobody waits for the answer.
        guard let actions = host.connections.links.withLink(request.linkHandle, { link in
            let security = link.security
            return link.withServer(request.bearer) { complete(&$0, request.serverID, &database, security, now) }
        }) ?? nil else { return }
        perform(actions, handle: request.linkHandle, bearer: request.bearer, host)
    }

    /// Requests the application did not answer in time get Unlikely Error.
    func expire(now: Duration, _ host: isolated HostController) {
        for (token, request) in pending.sorted(by: { $0.key < $1.key }) where request.deadline <= now {
            host.log("the application did not answer a dynamic \(request.kind) in time: Unlikely Error")
            switch request.kind {
            case .read: respond(toRead: token, with: .failure(.unlikelyError), host)
            case .write: respond(toWrite: token, with: .failure(.unlikelyError), host)
            }
        }
    }

    // MARK: - Notifications and indications

    /// Moves queued notifications and indications from a link's server into ACL, keeping only a
    /// couple of PDUs waiting for controller credits so the server's bounded queue is where
    /// backpressure shows (and "queue full" means something).
    ///
    /// The whole drain is one in-place access to the link (`withLink`, `drain`); what it leaves
    /// to do is `finishPump`.
    func pumpNotifications(handle: UInt16, _ host: isolated HostController) {
        let now = host.now
        guard let drained = host.connections.links.withLink(handle, { Self.drain(&$0, handle: handle, now: now, host) }) else { return }
        finishPump(drained, handle: handle, host)
    }

    /// What a drain of a link's unenhanced server leaves to do once the link is let go.
    struct Drained {
        /// Signals a drained queue produced (`.readyToUpdate`).
        let events: [ServerAction]
        /// The link has Enhanced ATT bearers, whose servers are pumped next.
        let enhanced: Bool
        /// An indication went out: its transaction timer starts (Vol 3 Part F §3.3.3).
        let indicationSent: Bool
    }

    /// Moves PDUs from the link's unenhanced server, held in place by the caller, straight to the
    /// flow controller while fewer than two PDUs of the handle wait for credits (enqueue answers
    /// how many then wait, so nothing else is asked per PDU); takes the server's events in the
    /// same access. Touches no other link and no link table (the caller holds it).
    static func drain(_ link: inout Link, handle: UInt16, now: Duration, _ host: isolated HostController) -> Drained {
        let indicationOpcode = ATTOpcode.handleValueIndication.rawValue
        var indicationSent = false
        // One access to the flow controller for the whole drain.
        host.withACLFlow { flow, send in
            var queued = flow.queuedPDUs(handle: handle)
            while queued < 2, let pdu = link.server.nextOutgoing(now: now) {
                if pdu.first == indicationOpcode { indicationSent = true }
                // An ATT PDU fits the basic header's length field (ATT_MTU ≤ 65535): no cut, so
                // no call beside the flow controller's own on the notification path.
                let header = L2CAPFrame.basicHeader(length: pdu.count, channel: L2CAPChannel.att)
                queued = flow.enqueue(handle: handle, prefix: header, payload: consume pdu, send: send)
            }
        }
        return Drained(events: link.server.takeEvents(), enhanced: !link.enhancedServers.isEmpty, indicationSent: indicationSent)
    }

    /// The rest of `pumpNotifications` after `drain`: the timer for an indication sent, the
    /// server's events carried out, the link's Enhanced ATT bearers pumped.
    func finishPump(_ drained: Drained, handle: UInt16, _ host: isolated HostController) {
        // Notifications move no deadline, so they leave the timer alone.
        if drained.indicationSent { host.rescheduleTimer() }
        if !drained.events.isEmpty {
            perform(drained.events, handle: handle, host)
            if host.connections.links.read(handle, { !$0.enhancedServers.isEmpty }) == true { pumpEnhancedBearers(handle: handle, host) }
        } else if drained.enhanced {
            pumpEnhancedBearers(handle: handle, host)
        }
    }

    /// One link an update goes to (`updateValue`): on which bearer, and whether its CCCD asks
    /// for notifications (else indications).
    struct UpdateTarget {
        let handle: UInt16
        let bearer: ATTBearerID
        let notifies: Bool
    }

    /// The links an update goes to, in handle order: the first kept inline, so the usual single
    /// subscriber costs no array.
    struct UpdateTargets {
        private(set) var first: UpdateTarget?
        private(set) var rest: [UpdateTarget] = []

        mutating func append(_ target: UpdateTarget) {
            if first == nil { first = target } else { rest.append(target) }
        }

        func forEach(_ body: (UpdateTarget) -> Void) {
            guard let first else { return }
            body(first)
            for t in rest { body(t) }
        }
    }

    /// Notifies or indicates `value` to every central subscribed to `valueHandle` (or to the
    /// given ones), as CoreBluetooth's `updateValue(_:for:onSubscribedCentrals:)`, and stores it
    /// when the server keeps this value, so a later read returns what was last sent. All or
    /// nothing: if any target central's queue is full, nothing is queued anywhere (so sending
    /// again after the ready signal never duplicates a value for the others). A central whose
    /// link's current security could not read the value counts as not subscribed
    /// (`ATTServer.deliverableSubscription`).
    func updateValue(_ value: [UInt8], valueHandle: UInt16, centrals: Set<UInt64>?, _ host: isolated HostController) -> UpdateValueResult {
        // Each link is reached in place (`withLink`): `read` copies the link when its body calls
        // out of this module (the table lives in a class, which the callee could reach), and a
        // copy alive while a link mutates would copy its server's queues. Each link's update goes
        // on one of its bearers (`Link.updateBearer`): the unenhanced one unless Enhanced ATT
        // bearers are open.
        let handles = host.connections.links.handles
        let queued: Int
        do {
            // One copy of the database for the whole update (each read of the property copies
            // it), gone before `setValue` below changes the database.
            let database = self.database
            let update = Update(valueHandle: valueHandle, value: value, centrals: centrals, database: database)
            let result = handles.count == 1 ? updateOneLink(handles[0], update, host) : updateLinks(handles, update, host)
            guard let n = result else { return .queueFull }
            queued = n
        }
        // Kept when the server stores this value (`setValue` leaves fixed and dynamic ones).
        database.setValue(value, forHandle: valueHandle)
        return .queued(centrals: queued)
    }

    /// One `updateValue` call's inputs, for its per-link steps.
    struct Update {
        let valueHandle: UInt16
        let value: [UInt8]
        let centrals: Set<UInt64>?
        let database: GATTServerDatabase
    }

    /// The first step of `updateValue` on one link: whether the update goes to it, on which
    /// bearer, and whether that bearer's queue has room.
    static func target(_ link: inout Link, handle: UInt16, _ update: Update) -> (target: UpdateTarget, roomy: Bool)? {
        guard update.centrals?.contains(link.id) ?? true else { return nil }
        let bits = link.server.deliverableSubscription(valueHandle: update.valueHandle, database: update.database, security: link.security)
        guard bits != 0 else { return nil }
        let bearer = link.enhancedServers.isEmpty ? ATTBearerID.unenhanced : link.updateBearer(for: update.valueHandle)
        return (UpdateTarget(handle: handle, bearer: bearer, notifies: bits & 0x0001 != 0), link.hasRoomForUpdate(on: bearer))
    }

    /// The second step of `updateValue` on one link: the update queued on its bearer's server
    /// (an indication as `id`), then the link drained as `pumpNotifications` would drain it right
    /// after. The result is nil when the bearer closed meanwhile.
    static func queue(_ link: inout Link, _ target: UpdateTarget, _ update: Update, id: UInt64, now: Duration,
                      _ host: isolated HostController) -> (result: UpdateResult?, drained: Drained) {
        let security = link.security
        let result = link.withServer(target.bearer) { server in
            target.notifies
                ? server.notify(valueHandle: update.valueHandle, value: update.value, database: update.database, security: security)
                : server.indicate(valueHandle: update.valueHandle, value: update.value, id: id, now: now, database: update.database,
                                  security: security)
        }
        return (result, drain(&link, handle: target.handle, now: now, host))
    }

    /// What a queued update leaves to do once its link is let go: the indication's waiter, the
    /// count, the rest of the pump.
    private func finishQueue(_ target: UpdateTarget, _ result: UpdateResult?, _ drained: Drained, id: UInt64, valueHandle: UInt16,
                             queued: inout Int, _ host: isolated HostController) {
        if case .queued = result {
            queued += 1
            if !target.notifies { indications[id] = IndicationWaiter(valueHandle: valueHandle, linkHandle: target.handle) }
        }
        finishPump(drained, handle: target.handle, host)
    }

    /// `updateValue` on a host with one link, in one access to it: with a single target, "all or
    /// nothing" is that link's own room, so the check, the queueing and the drain need not be
    /// apart (`updateLinks` gives the same result). nil: the queue is full.
    private func updateOneLink(_ handle: UInt16, _ update: Update, _ host: isolated HostController) -> Int? {
        let now = host.now
        enum Outcome { case notTargeted, full, queued(UpdateTarget, UpdateResult?, Drained, UInt64) }
        let outcome: Outcome = host.connections.links.withLink(handle) { link -> Outcome in
            guard let (target, roomy) = Self.target(&link, handle: handle, update) else { return .notTargeted }
            guard roomy else {
                // Nothing is queued; the ready signal comes once the queue drains.
                _ = link.withServer(target.bearer) { $0.signalReadyWhenRoom() }
                return .full
            }
            let id = target.notifies ? 0 : host.makeToken()
            let (result, drained) = Self.queue(&link, target, update, id: id, now: now, host)
            return .queued(target, result, drained, id)
        } ?? .notTargeted
        switch outcome {
        case .notTargeted: return 0
        case .full: return nil
        case let .queued(target, result, drained, id):
            var queued = 0
            finishQueue(target, result, drained, id: id, valueHandle: update.valueHandle, queued: &queued, host)
            return queued
        }
    }

    /// `updateValue` over several links: every target found and its room checked first, then,
    /// only if all have room, each queued and drained. nil: some queue is full (nothing queued).
    private func updateLinks(_ handles: [UInt16], _ update: Update, _ host: isolated HostController) -> Int? {
        var targets = UpdateTargets()
        var full = false
        for handle in handles {
            guard let (target, roomy) = host.connections.links.withLink(handle, { Self.target(&$0, handle: handle, update) }) ?? nil else { continue }
            targets.append(target)
            if !roomy { full = true }
        }
        if full {
            // Nothing is queued anywhere; the full ones send the ready signal once they drain.
            targets.forEach { t in host.connections.links.withLink(t.handle) { $0.withServer(t.bearer) { $0.signalReadyWhenRoom() } } }
            return nil
        }
        let now = host.now
        var queued = 0
        targets.forEach { target in
            let id = target.notifies ? 0 : host.makeToken()
            // nil: the link is gone (nothing to pump).
            guard let (result, drained) = host.connections.links.withLink(target.handle, { Self.queue(&$0, target, update, id: id, now: now, host) })
            else { return }
            finishQueue(target, result, drained, id: id, valueHandle: update.valueHandle, queued: &queued, host)
        }
        return queued
    }

    /// `updateValue` that waits for room instead of reporting a full queue. The check and the
    /// wait happen with no suspension between them, so a ready signal cannot slip past;
    /// cancelling the task ends the wait. The value is made at each attempt, right before it is
    /// queued.
    func updateValueWaiting(valueHandle: UInt16, centrals: Set<UInt64>?, _ makeValue: @Sendable () -> [UInt8],
                            _ host: isolated HostController) async throws -> Int {
        while true {
            try Task.checkCancellation()
            if case let .queued(n) = updateValue(makeValue(), valueHandle: valueHandle, centrals: centrals, host) { return n }
            try await waitForRoom(host)
        }
    }

    /// Waits until some link's server reports room again, a link closes, or the task is cancelled.
    private func waitForRoom(_ host: isolated HostController) async throws {
        let id = host.makeToken()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    c.resume(throwing: CancellationError())
                } else {
                    roomWaiters.insert(id, c)
                }
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) {
                await host.run { $0.server.roomWaiters.resume(id, with: .failure(CancellationError())) }
            }
        }
    }

    /// The link is gone: its pending requests and indications are dropped, writers waiting for
    /// room try again, and the application hears of the disconnect.
    func linkClosed(_ link: Link, reason: HCIStatus, _ host: isolated HostController) {
        rememberChangeAwareness(of: link, host)
        pending = pending.filter { $0.value.linkHandle != link.handle }
        indications = indications.filter { $0.value.linkHandle != link.handle }
        roomWaiters.resumeAll(with: .success(()))
        if link.role == .peripheral {
            emit(.disconnected(link.central, reason: reason))
        }
    }

    // MARK: - Events

    func emit(_ event: PeripheralManagerEvent) {
        var abandoned = false
        for sink in eventSinks.values where !sink.yield(event) { abandoned = true }
        // A consumer that let its stream go is forgotten here rather than by a task of its own.
        if abandoned { eventSinks = eventSinks.filter { !$0.value.isAbandoned } }
    }

    /// Whether any `events` stream still has a consumer (abandoned ones are forgotten first).
    var hasEventSinks: Bool {
        if eventSinks.values.contains(where: \.isAbandoned) { eventSinks = eventSinks.filter { !$0.value.isAbandoned } }
        return !eventSinks.isEmpty
    }

    /// A new `PeripheralManager.events` stream: every event from now on, unbounded, in order;
    /// already ended when the host has closed or failed.
    func events(_ host: isolated HostController) -> PeripheralManagerEventStream {
        let queue = StreamQueue<PeripheralManagerEvent>(limit: Int.max)
        if host.failure != nil {
            queue.finish()
        } else {
            eventSinks[host.makeToken()] = queue
        }
        return PeripheralManagerEventStream(queue)
    }

    /// The host closed or failed (after its links' last events): every `events` stream ends
    /// once its consumer has read what came before.
    func finishEvents() {
        for sink in eventSinks.values { sink.finish() }
        eventSinks = [:]
    }
}

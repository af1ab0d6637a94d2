import BLERuntime
import BLEHCI
import BLEHost
import BLEWire

/// Our GATT server: the attribute database, each link's `ATTServer`, the dynamic reads and
/// writes waiting on the application, notifications and indications with their bounded queues,
/// and the peripheral manager's event streams. Isolated to the host actor that owns it, which
/// it knows only as a `GATTServerDriver`. One concern per file: here the database, incoming requests and the application's answers, and
/// the events; `+Updates` notifications and indications; `+Enhanced` the Enhanced ATT bearers'
/// servers; `GATTServerChangeTracking` robust caching across connections.
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
    private var eventSinks: [UInt64: SingleConsumerQueue<PeripheralManagerEvent>] = [:]
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
    func addService(_ definition: GATTServiceDefinition, _ host: isolated some GATTServerDriver) throws -> GATTServiceHandles {
        let handles = try database.add(definition)
        announceDatabaseChange(host)
        return handles
    }

    func removeService(_ service: GATTServiceHandles, _ host: isolated some GATTServerDriver) throws {
        try database.remove(serviceStartingAt: service.range.lowerBound)
        // The client's CCCDs and every bearer's prepare queue (each Enhanced ATT bearer has its own).
        for handle in host.linkHandles {
            host.withLink(handle) { link in
                link.server.forgetHandles(in: service.range)
                for cid in link.enhancedServers.keys.sorted() { link.enhancedServers[cid]?.forgetHandles(in: service.range) }
            }
        }
        readHandlers = readHandlers.filter { !service.range.contains($0.key) }
        writeHandlers = writeHandlers.filter { !service.range.contains($0.key) }
        announceDatabaseChange(host)
    }

    func announceDatabaseChange(_ host: isolated some GATTServerDriver) {
        guard let range = database.serviceChangedRange else { return }
        database.serviceChangedRange = nil
        databaseChangedForAllClients(host)
        let scHandle = database.serviceChangedHandle
        let value = [UInt8(range.lowerBound & 0xFF), UInt8(range.lowerBound >> 8), UInt8(range.upperBound & 0xFF), UInt8(range.upperBound >> 8)]
        let t = host.now
        for handle in host.linkHandles {
            guard let link = host.link(handle),
                  link.server.deliverableSubscription(valueHandle: scHandle, database: database, security: link.security) & 0x0002 != 0 else { continue }
            let id = host.makeToken()
            host.withLink(handle) {
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
    func receive(_ payload: [UInt8], handle: UInt16, _ host: isolated some GATTServerDriver) {
        guard let central = host.readLink(handle, { $0.central }) else { return }
        if hasEventSinks, let first = payload.first, ATTOpcode(rawValue: first).kind != .confirmation {
            emit(.request(central, opcode: ATTOpcode(rawValue: first), handle: Self.firstHandle(of: payload)))
        }
        if payload.first == ATTOpcode.signedWriteCommand.rawValue {
            receiveSignedWrite(payload, handle: handle, bearer: .unenhanced, host)
            return
        }
        let t = host.now
        let actions = host.withLink(handle) { $0.server.receive(payload, database: &database, security: $0.security, now: t) } ?? []
        perform(actions, handle: handle, host)
    }

    /// A Signed Write Command (Vol 3 Part G §4.9.2): checked against the client's bond, its
    /// SignCounter stored with the bond, then applied. A write whose counter cannot be stored
    /// is dropped (a command gets no answer, Vol 3 Part F §3.4.5.4), so no counter ever
    /// takes effect without being on record.
    func receiveSignedWrite(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID, _ host: isolated some GATTServerDriver) {
        // Read through the table, never a Link copy kept across `withLink` (it would copy the
        // server's queues).
        guard let verdict = host.link(handle).map({ link in
            (link.peer, link.server.verifySignedWrite(pdu, signingKey: host.peerSigningKey(from: link.peer),
                                                      database: database, security: link.security))
        }) else { return }
        let (peer, result) = verdict
        switch result {
        case let .failure(why):
            host.log("signed write from \(peer) ignored: \(why)")
        case let .success(write):
            guard host.acceptPeerSignCounter(write.counter, from: peer) else {
                host.log("signed write from \(peer) ignored: its SignCounter \(write.counter) could not be stored")
                return
            }
            let t = host.now
            let actions = host.withLink(handle) { link in
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
    func perform(_ actions: [ServerAction], handle: UInt16, bearer: ATTBearerID = .unenhanced, _ host: isolated some GATTServerDriver) {
        guard let central = host.readLink(handle, { $0.central }) else { return }
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
                host.withLink(handle) {
                    _ = $0.bearer.peerExchangedMTU(clientMTU: mtu, serverMTU: mtu)
                    $0.publish()
                }
                emit(.mtuChanged(central, mtu: mtu))
            case .closeBearer:
                guard case let .enhanced(cid) = bearer else {
                    host.disconnectInBackground(handle: handle, "closing a timed-out ATT bearer")
                    continue
                }
                // An Enhanced ATT bearer that timed out is closed alone (Vol 3 Part F §3.3.3).
                host.closeATTBearer(handle: handle, cid: cid)
            }
        }
        pumpNotifications(handle: handle, host)
        host.rescheduleTimer()
    }

    /// Answers a dynamic read the application was asked for.
    func respond(toRead token: UInt64, with result: Result<[UInt8], ATTErrorCode>, _ host: isolated some GATTServerDriver) {
        answer(token, .read, host) { server, id, database, security, now in
            server.completeRead(id: id, result: result, database: &database, security: security, now: now)
        }
    }

    /// Answers a dynamic write the application was asked for.
    func respond(toWrite token: UInt64, with result: Result<Void, ATTErrorCode>, _ host: isolated some GATTServerDriver) {
        answer(token, .write, host) { server, id, database, security, now in
            server.completeWrite(id: id, result: result, database: &database, security: security, now: now)
        }
    }

    /// Keeps a request for the application under a new host-wide token, with its deadline.
    private func pend(_ kind: PendingRequest.Kind, serverID: UInt64, handle: UInt16, bearer: ATTBearerID, _ host: isolated some GATTServerDriver) -> UInt64 {
        let token = host.makeToken()
        pending[token] = PendingRequest(kind: kind, linkHandle: handle, bearer: bearer, serverID: serverID,
                                        deadline: host.now + host.configuration.applicationResponseTimeout)
        return token
    }

    /// Ends the pending request `token` of `kind` (once) by having its link's server complete it,
    /// with the link's security as it is now for the requests held meanwhile.
    private func answer(_ token: UInt64, _ kind: PendingRequest.Kind, _ host: isolated some GATTServerDriver,
                        _ complete: (inout ATTServer, UInt64, inout GATTServerDatabase, LinkSecurity, Duration) -> [ServerAction]) {
        guard let request = pending[token], request.kind == kind else { return }
        pending[token] = nil
        let now = host.now
        // The bearer may have closed meanwhile: then nobody waits for the answer.
        guard let actions = host.withLink(request.linkHandle, { link in
            let security = link.security
            return link.withServer(request.bearer) { complete(&$0, request.serverID, &database, security, now) }
        }) ?? nil else { return }
        perform(actions, handle: request.linkHandle, bearer: request.bearer, host)
    }

    /// Requests the application did not answer in time get Unlikely Error.
    func expire(now: Duration, _ host: isolated some GATTServerDriver) {
        for (token, request) in pending.sorted(by: { $0.key < $1.key }) where request.deadline <= now {
            host.log("the application did not answer a dynamic \(request.kind) in time: Unlikely Error")
            switch request.kind {
            case .read: respond(toRead: token, with: .failure(.unlikelyError), host)
            case .write: respond(toWrite: token, with: .failure(.unlikelyError), host)
            }
        }
    }

    /// The link is gone: its pending requests and indications are dropped, writers waiting for
    /// room try again, and the application hears of the disconnect.
    func linkClosed(_ link: Link, reason: HCIStatus, _ host: isolated some GATTServerDriver) {
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
        for sink in eventSinks.values where !sink.push(event) { abandoned = true }
        // A consumer that let its stream go is forgotten here rather than by a task of its own.
        if abandoned { eventSinks = eventSinks.filter { !$0.value.isEnded } }
    }

    /// Whether any `events` stream still has a consumer (abandoned ones are forgotten first).
    var hasEventSinks: Bool {
        if eventSinks.values.contains(where: \.isEnded) { eventSinks = eventSinks.filter { !$0.value.isEnded } }
        return !eventSinks.isEmpty
    }

    /// A new `PeripheralManager.events` stream: every event from now on, unbounded, in order;
    /// already ended when the host has closed or failed.
    func events(_ host: isolated some GATTServerDriver) -> PeripheralManagerEventStream {
        let queue = SingleConsumerQueue<PeripheralManagerEvent>(limit: .max, overflow: .dropNewest, cancellation: .abandonsQueue)
        if host.failure != nil {
            queue.close()
        } else {
            eventSinks[host.makeToken()] = queue
        }
        return PeripheralManagerEventStream(queue)
    }

    /// The host closed or failed (after its links' last events): every `events` stream ends
    /// once its consumer has read what came before.
    func finishEvents() {
        for sink in eventSinks.values { sink.close() }
        eventSinks = [:]
    }
}

/// What the GATT server needs from the host beyond `HostServices`: itself (for its own tasks);
/// the link table (each link's ATT servers live in it); sending ATT PDUs and the queues behind
/// them (ACL credits, an Enhanced ATT channel's SDUs), which pace notifications; ending a link
/// or an Enhanced ATT bearer whose transaction timed out (Vol 3 Part F §3.3.3); and of the
/// Security Manager part, a client's bond (robust caching, its subscriptions) and the signing
/// key and counter of Signed Write Commands (Vol 3 Part H §2.4.5).
protocol GATTServerDriver: LinkTableAccess {
    var server: GATTServerSessions { get }
    nonisolated var clock: any BLEClock { get }
    func makeToken() -> UInt64
    /// Sends `pdu` on the link's bearer; false when the link or bearer is gone.
    @discardableResult
    func sendATT(_ pdu: [UInt8], handle: UInt16, bearer: ATTBearerID) -> Bool
    /// SDUs waiting for credits on an Enhanced ATT bearer (0 for the unenhanced one).
    func queuedATTSDUs(handle: UInt16, bearer: ATTBearerID) -> Int
    /// Whole PDUs of the link waiting for ACL credits.
    func queuedACLPDUs(handle: UInt16) -> Int
    /// The ACL flow controller and the packet sender, for the notification path's zero-copy drain.
    func withACLFlow<R>(_ body: (inout ACLFlowController, ([UInt8]) -> Void) -> R) -> R
    func disconnectInBackground(handle: UInt16, _ why: String)
    func closeATTBearer(handle: UInt16, cid: UInt16)
    func bond(for peer: DeviceAddress) -> Bond?
    /// Stores `bond`; false when the store refused it.
    @discardableResult
    func store(_ bond: Bond, replacing: Bool) -> Bool
    func peerSigningKey(from peer: DeviceAddress) -> ATTPeerSigningKey?
    /// Whether a Signed Write Command's counter is new for `peer` (and records it).
    func acceptPeerSignCounter(_ counter: UInt32, from peer: DeviceAddress) -> Bool
}

import BLEHCI
import BLEHost
import BLEWire

/// The host's LE credit-based channels (Core spec Vol 3 Part A §4.22–§4.24, §10.2) on every
/// link: the listeners' streams of incoming channels, the callers waiting for a channel to open,
/// each open channel's received SDUs (bounded by the credits we grant, see `CreditBasedChannel`)
/// with the reader waiting on them, and the senders waiting for credits. The protocol itself is
/// in `L2CAPRouter` / `LESignalingChannel` (BLEHost). Isolated to the host actor that owns it.
final class L2CAPChannelSessions {
    struct Key: Hashable {
        let handle: UInt16
        let cid: UInt16
    }

    /// One open channel as the host keeps it.
    struct Channel {
        let id: UInt64
        let linkID: UInt64
        var inbox: [[UInt8]] = []
        var inboxStart = 0
        var reader: (token: UInt64, continuation: CheckedContinuation<[UInt8]?, any Error>)?
        /// Why the channel ended (nil: it is open). `.success` is a clean close.
        var end: Result<Void, BLEError>?
        var senders = ContinuationTable<Void>()
    }

    private struct Listener {
        let token: UInt64
        let continuation: AsyncStream<LECreditBasedChannel>.Continuation
    }

    private(set) var channels: [Key: Channel] = [:]
    /// Ended channels keep their end until the application has read it (then dropped).
    private(set) var keysByID: [UInt64: Key] = [:]
    private var listeners: [UInt16: Listener] = [:]
    private var connectWaiters = ContinuationTable<LECreditBasedChannel>()
    private var connectHandles: [UInt64: UInt16] = [:]
    /// Callers of an enhanced open or a reconfiguration (`L2CAPChannelSessions+Enhanced.swift`),
    /// and the link each waits on.
    var enhancedWaiters = ContinuationTable<[LECreditBasedChannel]>()
    var reconfigureWaiters = ContinuationTable<Void>()
    var enhancedHandles: [UInt64: UInt16] = [:]
    /// Open Enhanced ATT bearers (SPSM 0x0027, `L2CAPChannelSessions+ATT.swift`): channels that
    /// carry ATT for the GATT parts, not the application's.
    var attBearers: Set<Key> = []
    /// Callers of `openATTBearers`, and the link each waits on.
    var attOpenWaiters = ContinuationTable<[ATTBearerID]>()
    var attOpenHandles: [UInt64: UInt16] = [:]
    /// Credits of Enhanced ATT bearers held back until what answered their SDU has left: per
    /// bearer, for each SDU whose credit is held, how many queued SDUs must still go out first.
    var attHeldCredits: [Key: [Int]] = [:]
    /// How many Enhanced ATT bearers were announced to the GATT roles so far (diagnostics).
    var attBearersAnnounced = 0
    /// Bearers that arrived for a cancelled `openATTBearers` and are being closed unannounced.
    var attUnannounced: Set<Key> = []

    // MARK: - Listening

    /// Starts accepting channels on `psm` (1...255) with these parameters and security; the
    /// channels arrive on the returned stream until it is finished or its consumer goes away.
    func listen(psm: UInt16, listener: CreditBasedListener, _ host: isolated some L2CAPDriver) throws -> (UInt64, AsyncStream<LECreditBasedChannel>) {
        if let failure = host.failure { throw failure }
        guard (0x0001...0x00FF).contains(psm) else { throw BLEError.invalidArgument("PSM \(psm) is outside 0x0001...0x00FF") }
        if psm == ATTBearerID.enhancedATTPSM && host.configuration.offersEnhancedATT {
            throw BLEError.busy("PSM 0x0027 is Enhanced ATT's: the host accepts its channels as ATT bearers (offersEnhancedATT)")
        }
        guard listeners[psm] == nil else { throw BLEError.busy("PSM \(psm) already has a listener") }
        let token = host.makeToken()
        // Unbounded, but a link has at most 64 dynamic CIDs: the stream can never hold more
        // channels than that per link.
        let (stream, continuation) = AsyncStream<LECreditBasedChannel>.makeStream(bufferingPolicy: .unbounded)
        let executor = host.clock.taskExecutor
        continuation.onTermination = { [weak host] _ in
            guard let host else { return }
            Task(executorPreference: executor) { await host.run { $0.l2cap.stopListening(psm: psm, token: token, $0) } }
        }
        listeners[psm] = Listener(token: token, continuation: continuation)
        host.router.listeners[psm] = listener
        return (token, stream)
    }

    /// Stops the listener `token` on `psm`; open channels stay open.
    func stopListening(psm: UInt16, token: UInt64, _ host: isolated some L2CAPDriver) {
        guard let l = listeners[psm], l.token == token else { return }
        listeners[psm] = nil
        host.router.listeners[psm] = nil
        l.continuation.finish()
    }

    // MARK: - Opening

    /// Opens a channel to the peer of `linkID` on `psm` and waits for the answer (or the 30 s
    /// signaling timeout).
    func open(linkID: UInt64, psm: UInt16, parameters: CreditBasedChannelParameters, _ host: isolated some L2CAPDriver) async throws -> LECreditBasedChannel {
        if let failure = host.failure { throw failure }
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        guard (0x0001...0x00FF).contains(psm) else { throw BLEError.invalidArgument("PSM \(psm) is outside 0x0001...0x00FF") }
        guard parameters.isValid, parameters.initialCredits > 0 else {
            throw BLEError.invalidArgument("MTU \(parameters.mtu) (≥ 23), MPS \(parameters.mps) (23...65533), credits \(parameters.initialCredits) (≥ 1)")
        }
        let token = host.makeToken()
        // Cancelling gives up waiting; a channel the peer opens after that is closed again
        // (`.connected` with nobody waiting).
        // The channel is made when the response arrives (`.connected`), not when this task runs
        // again: what the peer sends right after its response must find it.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<LECreditBasedChannel, any Error>) in
                guard let actions = host.router.connect(handle: handle, spsm: psm, parameters: parameters, token: token, now: host.now) else {
                    c.resume(throwing: BLEError.l2cap(.refused(.noResourcesAvailable)))
                    return
                }
                connectWaiters.insert(token, c)
                connectHandles[token] = handle
                host.performSignaling(actions, handle: handle)
                host.rescheduleTimer()
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.l2cap.cancelOpen(token: token) } }
        }
    }

    private func cancelOpen(token: UInt64) {
        connectHandles[token] = nil
        connectWaiters.resume(token, with: .failure(CancellationError()))
    }

    func makeChannel(_ info: CreditBasedChannelInfo, handle: UInt16, linkID: UInt64, _ host: isolated some L2CAPDriver) -> LECreditBasedChannel {
        let id = host.makeToken()
        let key = Key(handle: handle, cid: info.localCID)
        channels[key] = Channel(id: id, linkID: linkID)
        keysByID[id] = key
        let peer = host.link(handle)?.peer ?? DeviceAddress(BDAddress(rawValue: 0), type: .public)
        return host.makeChannel(id: id, info: info, peer: peer)
    }

    // MARK: - Events from the router

    /// Acts on what the router reported for `handle`'s channels.
    func handle(_ event: CreditBasedChannelEvent, handle: UInt16, _ host: isolated some L2CAPDriver) {
        if routeATT(event, handle: handle, host) { return }
        switch event {
        case let .opened(info):
            guard let linkID = host.link(handle)?.id else { return }
            let channel = makeChannel(info, handle: handle, linkID: linkID, host)
            guard let listener = listeners[info.spsm] else {
                // The listener went away after the router accepted: close the channel again.
                close(id: channel.id, host)
                return
            }
            listener.continuation.yield(channel)
        case let .connected(token, info):
            connectHandles[token] = nil
            guard let linkID = host.link(handle)?.id else {
                connectWaiters.resume(token, with: .failure(BLEError.notConnected))
                return
            }
            let channel = makeChannel(info, handle: handle, linkID: linkID, host)
            if !connectWaiters.resume(token, with: .success(channel)) {
                // Nobody waits any more: close the channel we were given.
                close(id: channel.id, host)
            }
        case let .connectFailed(token, error):
            connectHandles[token] = nil
            connectWaiters.resume(token, with: .failure(BLEError.l2cap(error)))
            if enhancedHandles[token] != nil { handleEnhanced(event, handle: handle, host) }
        case let .sdu(cid, sdu):
            let key = Key(handle: handle, cid: cid)
            guard channels[key] != nil else { return }
            if let reader = channels[key]!.reader {
                channels[key]!.reader = nil
                reader.continuation.resume(returning: sdu)
                consumed(key, host)
            } else {
                channels[key]!.inbox.append(sdu)
            }
        case let .sent(cid, tokens):
            let key = Key(handle: handle, cid: cid)
            for t in tokens { channels[key]?.senders.resume(t, with: .success(())) }
        case let .closed(cid, error, _):
            end(Key(handle: handle, cid: cid), error.map { .failure(BLEError.l2cap($0)) } ?? .success(()))
        case .enhancedConnected, .reconfigured, .reconfigureFailed, .peerReconfigured:
            handleEnhanced(event, handle: handle, host)
        }
    }

    /// Ends a channel: senders fail, the reader gets the end once the inbox is read.
    private func end(_ key: Key, _ result: Result<Void, BLEError>) {
        guard channels[key] != nil, channels[key]!.end == nil else { return }
        channels[key]!.end = result
        let failure: BLEError
        switch result {
        case .success: failure = .l2cap(.closed)
        case let .failure(e): failure = e
        }
        channels[key]!.senders.resumeAll(with: .failure(failure))
        // The key may be reused by a new channel now; the ended one lives on under its id only,
        // until its reader has seen the end.
        let channel = channels.removeValue(forKey: key)!
        keysByID[channel.id] = nil
        if let reader = channel.reader {
            reader.continuation.resume(with: result.map { nil }.mapError { $0 as any Error })
        } else {
            ended[channel.id] = channel
        }
    }

    /// Channels that ended, kept by id until their SDUs and end have been read.
    private var ended: [UInt64: Channel] = [:]

    private func consumed(_ key: Key, _ host: isolated some L2CAPDriver) {
        host.performSignaling(host.router.consumed(handle: key.handle, cid: key.cid), handle: key.handle)
    }

    // MARK: - The application's side of a channel

    /// The next SDU of channel `id`, waiting for one; nil once the channel closed cleanly.
    func receive(id: UInt64, _ host: isolated some L2CAPDriver) async throws -> [UInt8]? {
        if let key = keysByID[id], channels[key] != nil {
            if let sdu = popInbox(&channels[key]!) {
                consumed(key, host)
                return sdu
            }
            guard channels[key]!.reader == nil else { throw BLEError.busy("another task is reading this channel") }
            let token = host.makeToken()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<[UInt8]?, any Error>) in
                    channels[key]!.reader = (token, c)
                }
            } onCancel: {
                Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.l2cap.cancelRead(key: key, token: token) } }
            }
        }
        guard var channel = ended[id] else { return nil }
        if let sdu = popInbox(&channel) {
            ended[id] = channel
            return sdu
        }
        // Report the end once; later reads see a finished sequence.
        ended[id] = nil
        if case let .failure(e) = channel.end { throw e }
        return nil
    }

    private func cancelRead(key: Key, token: UInt64) {
        guard let reader = channels[key]?.reader, reader.token == token else { return }
        channels[key]!.reader = nil
        reader.continuation.resume(throwing: CancellationError())
    }

    private func popInbox(_ channel: inout Channel) -> [UInt8]? {
        guard channel.inboxStart < channel.inbox.count else { return nil }
        let sdu = channel.inbox[channel.inboxStart]
        channel.inbox[channel.inboxStart] = []
        channel.inboxStart += 1
        if channel.inboxStart == channel.inbox.count {
            channel.inbox.removeAll(keepingCapacity: true)
            channel.inboxStart = 0
        }
        return sdu
    }

    /// Sends one SDU on channel `id`, waiting until the peer's credits have let all of it out.
    /// Cancelling the wait throws CancellationError at once and withdraws the SDU if none of it
    /// has gone out; one already started still goes out whole (K-frames of an SDU cannot be
    /// cut short without breaking the peer's reassembly, Vol 3 Part A §3.4.3).
    func send(_ sdu: [UInt8], id: UInt64, remoteMTU: Int, _ host: isolated some L2CAPDriver) async throws {
        // An enhanced channel's peer may have raised its MTU since the channel opened (§4.27).
        let remoteMTU = keysByID[id].flatMap { host.router.channel(handle: $0.handle, cid: $0.cid) }.map { Int($0.remote.mtu) } ?? remoteMTU
        guard sdu.count <= remoteMTU else { throw BLEError.invalidArgument("an SDU of \(sdu.count) bytes exceeds the peer's MTU \(remoteMTU)") }
        guard let key = keysByID[id], channels[key] != nil else {
            if case let .failure(e)? = ended[id]?.end { throw e }
            throw BLEError.l2cap(.closed)
        }
        let token = host.makeToken()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<Void, any Error>) in
                guard channels[key] != nil, let actions = host.router.send(sdu, handle: key.handle, cid: key.cid, token: token) else {
                    c.resume(throwing: BLEError.l2cap(.closed))
                    return
                }
                channels[key]?.senders.insert(token, c)
                host.performSignaling(actions, handle: key.handle)
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.l2cap.cancelSend(key: key, token: token, $0) } }
        }
    }

    private func cancelSend(key: Key, token: UInt64, _ host: isolated some L2CAPDriver) {
        guard channels[key] != nil else { return }
        _ = host.router.withdraw(handle: key.handle, cid: key.cid, token: token)
        channels[key]?.senders.resume(token, with: .failure(CancellationError()))
    }

    /// Closes channel `id` (Disconnection Request, Vol 3 Part A §4.6). SDUs already received
    /// can still be read; then the sequence ends.
    func close(id: UInt64, _ host: isolated some L2CAPDriver) {
        guard let key = keysByID[id] else { return }
        host.performSignaling(host.router.disconnect(handle: key.handle, cid: key.cid, now: host.now), handle: key.handle)
        host.rescheduleTimer()
    }

    /// The channel is gone from the application (its object was released): close it.
    func released(id: UInt64, _ host: isolated some L2CAPDriver) {
        close(id: id, host)
        ended[id] = nil
    }

    // MARK: - Link and host lifetime

    /// The link went down: its channels end with `error`, its pending opens fail.
    func linkClosed(handle: UInt16, error: BLEError) {
        attLinkClosed(handle: handle, error: error)
        for key in channels.keys.filter({ $0.handle == handle }).sorted(by: { $0.cid < $1.cid }) {
            end(key, .failure(error))
        }
        for (token, h) in connectHandles where h == handle {
            connectHandles[token] = nil
            connectWaiters.resume(token, with: .failure(error))
        }
        for (token, h) in enhancedHandles.sorted(by: { $0.key < $1.key }) where h == handle {
            enhancedHandles[token] = nil
            enhancedWaiters.resume(token, with: .failure(error))
            reconfigureWaiters.resume(token, with: .failure(error))
        }
    }

    /// The host failed or closed: listeners finish.
    func fail(_ error: BLEError) {
        for l in listeners.values { l.continuation.finish() }
        listeners = [:]
    }
}

/// What the L2CAP channel sessions need from the host beyond `HostServices`: itself (for its own
/// tasks); the L2CAP router (the sans-IO signaling and channel machines) and the link table; the
/// signaling actions the router returns carried out on a link; the application's channel object
/// made for a channel; and, for Enhanced ATT bearers (Vol 3 Part G §5.3), the driver's routing
/// of a bearer opened, closed, with a new MTU or with room again, and of the ATT PDUs that arrive
/// on one.
protocol L2CAPDriver: LinkTableAccess {
    var l2cap: L2CAPChannelSessions { get }
    nonisolated var clock: any BLEClock { get }
    var router: L2CAPRouter { get set }
    func makeToken() -> UInt64
    /// Carries out what a link's L2CAP signaling asked for (PDUs to send, channel events).
    func performSignaling(_ actions: [L2CAPControlAction], handle: UInt16)
    /// The application's object for a channel that opened.
    func makeChannel(id: UInt64, info: CreditBasedChannelInfo, peer: DeviceAddress) -> LECreditBasedChannel
    func enhancedATTBearerOpened(handle: UInt16, cid: UInt16, mtu: Int, openedByPeer: Bool)
    func enhancedATTBearerClosed(handle: UInt16, cid: UInt16, error: BLEError)
    func enhancedATTBearerSent(handle: UInt16, cid: UInt16)
    func enhancedATTBearerMTUChanged(handle: UInt16, cid: UInt16, mtu: Int)
    func receiveATT(_ payload: ArraySlice<UInt8>, handle: UInt16, bearer: ATTBearerID)
}

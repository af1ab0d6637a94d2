import BLEWire

/// The GATT client's ATT bearers on one link, sans-IO: the unenhanced bearer (fixed channel
/// 0x0004) and any Enhanced ATT bearers (L2CAP credit-based channels on SPSM 0x0027, Core spec
/// Vol 3 Part G §5.3, Part F §3.2.11), each an `ATTClientBearer` with its own one outstanding
/// request (Part F §3.3.2).
///
/// Scheduling: a procedure waits FIFO in the set until a bearer is free (no request outstanding,
/// nothing queued), then runs to its end on that bearer, so a multi-request procedure keeps its
/// bearer and independent procedures run in parallel on different ones. The unenhanced bearer
/// is preferred, then the enhanced ones in the order they opened. Exchange MTU goes only on the
/// unenhanced bearer (Part F §3.4.2: an enhanced bearer's MTU is its channel's); a caller may
/// pin any procedure to one bearer.
///
/// Closing: a transaction timeout (§3.3.3) on an enhanced bearer fails its procedure with
/// `.timeout` and asks (`.closeBearer`) to close only that channel; `remove` (the peer closed
/// it) fails its in-flight procedure with `.bearerClosed`. Either way the waiting procedures
/// stay in the set and run on the other bearers. A waiting procedure with no open bearer left
/// that could run it fails with the error that closed the last one.
///
/// Notifications, indications and Multiple Handle Value Notifications are taken on every
/// bearer and reported in the order each bearer received them; an indication's confirmation
/// is a `.send` on the bearer it came on (§3.4.7.3).
///
/// A change of the server's database (`serverDatabaseChanged`: a Service Changed indication,
/// Vol 3 Part G §7.1, on whichever bearer it came) reaches the procedure running on every
/// bearer and every waiting one: the server's database is one for all of the client's bearers.
///
/// Not generic over the bearer id: a generic type of this module used from the host module
/// ran unspecialised there, every call paying for type metadata look-ups.
///
/// Invariant, after every call: the set is settled. No waiting procedure has a free bearer it
/// may use, and none waits that no open bearer could run. Only a change of some bearer's
/// request state (a response, a cancel, a submit, a bearer opening, closing or timing out)
/// can break it, which is why a Handle Value Notification or Indication, which changes none,
/// is taken without scheduling (`receive`).
public struct ATTClientBearerSet: Sendable {
    /// The action type this set returns.
    public typealias Action = ATTBearerSetAction
    /// The list of actions one call returns.
    public typealias Actions = ATTBearerSetActions

    private struct Waiting: Sendable {
        var id: UInt64
        var procedure: AnyGATTProcedure
        var pinned: ATTBearerID?
    }

    private struct Enhanced: Sendable {
        /// Our local CID of the bearer's channel.
        var cid: UInt16
        var bearer: ATTClientBearer
    }

    /// Stored apart from the enhanced ones so the busiest path (notifications on the one bearer
    /// most links have) reaches it without a search.
    private var first: ATTClientBearer
    /// Open enhanced bearers, oldest first: the preference order after the unenhanced one.
    private var enhanced: [Enhanced] = []
    private var waiting: [Waiting] = []
    /// Procedures handed to a bearer and not yet complete, with that bearer.
    private var running: [UInt64: ATTBearerID] = [:]

    /// A set with only the unenhanced bearer.
    public init(unenhanced: ATTClientBearer) {
        first = unenhanced
        // Stored, so known from the start: the bearer may come with a request outstanding.
        nextDeadline = unenhanced.nextDeadline
    }

    private var order: [ATTBearerID] { [.unenhanced] + enhanced.map { .enhanced(cid: $0.cid) } }

    private func bearer(_ id: ATTBearerID) -> ATTClientBearer? {
        switch id {
        case .unenhanced: return first
        case let .enhanced(cid): return enhanced.first { $0.cid == cid }?.bearer
        }
    }

    private func enhancedIndex(_ id: ATTBearerID) -> Int? {
        guard case let .enhanced(cid) = id else { return nil }
        return enhanced.firstIndex { $0.cid == cid }
    }

    /// Runs `body` on the bearer in place (no copy of its queues); nil when it is not open.
    private mutating func withBearer<R>(_ id: ATTBearerID, _ body: (inout ATTClientBearer) -> R) -> R? {
        if case .unenhanced = id { return body(&first) }
        guard let i = enhancedIndex(id) else { return nil }
        return body(&enhanced[i].bearer)
    }

    /// Whether the bearer `id` is in the set and not closed.
    private func isOpen(_ id: ATTBearerID) -> Bool {
        switch id {
        case .unenhanced: return !first.isClosed
        case let .enhanced(cid):
            for e in enhanced where e.cid == cid { return !e.bearer.isClosed }
            return false
        }
    }

    // MARK: Reading

    /// The unenhanced bearer: its MTU is the link's, and commands (Write Without Response, Signed
    /// Write) go on it. Set it only to send commands or record an MTU the server agreed (nothing
    /// that changes its request state: see the invariant above).
    public var unenhanced: ATTClientBearer {
        get { first }
        _modify {
            defer { refreshDeadline() }
            yield &first
        }
    }

    /// The bearer with this id, while it is open.
    public subscript(bearer id: ATTBearerID) -> ATTClientBearer? { bearer(id) }

    /// The ids of the open bearers, the unenhanced one first.
    public var bearerIDs: [ATTBearerID] { order }

    /// How many enhanced bearers are open.
    public var enhancedCount: Int { enhanced.count }

    /// Procedures waiting for a free bearer.
    public var waitingCount: Int { waiting.count }

    /// Which bearer a submitted procedure runs on; nil while it waits or once it completed.
    public func bearer(running id: UInt64) -> ATTBearerID? { running[id] }

    /// The earliest transaction deadline of any bearer. Stored, and recomputed after every call
    /// that can change a bearer's request state: the host asks it of every link after every
    /// batch of frames, and a computed property of this module was read from a copy of the set.
    public private(set) var nextDeadline: Duration?

    private mutating func refreshDeadline() {
        var next = first.nextDeadline
        for e in enhanced {
            guard let d = e.bearer.nextDeadline else { continue }
            next = next.map { min($0, d) } ?? d
        }
        nextDeadline = next
    }

    // MARK: Bearers opening and closing

    /// An enhanced bearer opened (its ATT_MTU is the smaller of the two channel MTUs, Part F
    /// §3.2.8): waiting procedures may start on it at once. An id already open, the unenhanced
    /// id, or a closed bearer is ignored.
    public mutating func add(_ id: ATTBearerID, bearer: ATTClientBearer, now: Duration) -> Actions {
        defer { refreshDeadline() }
        guard case let .enhanced(cid) = id, self.bearer(id) == nil, !bearer.isClosed else { return [] }
        enhanced.append(Enhanced(cid: cid, bearer: bearer))
        return dispatch(now: now)
    }

    /// The peer (or the owner) closed an enhanced bearer: its in-flight procedure fails with
    /// `.bearerClosed`, the waiting ones move to the other bearers. The unenhanced bearer is
    /// not removed this way (use `close()` when the link goes).
    public mutating func remove(_ id: ATTBearerID, now: Duration) -> Actions {
        defer { refreshDeadline() }
        guard let i = enhancedIndex(id) else { return [] }
        var bearer = enhanced.remove(at: i).bearer
        var actions = Actions()
        actions.append(bearer.close(), on: id)
        return settle(actions, now: now)
    }

    /// The link is gone: every procedure on every bearer, and every waiting one, fails with
    /// `.bearerClosed`.
    public mutating func close() -> Actions {
        defer { refreshDeadline() }
        var actions = Actions()
        actions.append(first.close(), on: .unenhanced)
        for var e in enhanced { actions.append(e.bearer.close(), on: .enhanced(cid: e.cid)) }
        enhanced = []
        running = [:]
        actions += failStranded(.bearerClosed)
        return actions
    }

    /// An enhanced bearer's channel was reconfigured (Vol 3 Part A §4.27; its MTU never shrinks):
    /// its ATT_MTU is now `mtu`, for the procedures that start on it from now on.
    public mutating func bearerMTUChanged(_ mtu: Int, on id: ATTBearerID) {
        defer { refreshDeadline() }
        guard let i = enhancedIndex(id) else { return }
        enhanced[i].bearer.peerExchangedMTU(clientMTU: mtu, serverMTU: mtu)
    }

    // MARK: Procedures

    /// Queues a procedure; it starts at once on a free bearer (on `pinned` only, when given).
    /// Every `id` gets exactly one `.complete`. Ids should be unique among unfinished procedures.
    public mutating func submit<P: GATTProcedure>(_ procedure: P, id: UInt64, pinnedTo pinned: ATTBearerID? = nil, now: Duration) -> Actions {
        defer { refreshDeadline() }
        let procedure = AnyGATTProcedure(procedure)
        let pin = procedure.isMTUExchange ? .unenhanced : pinned
        waiting.append(Waiting(id: id, procedure: procedure, pinned: pin))
        return failStranded(.bearerClosed) + dispatch(now: now)
    }

    /// Cancels a procedure: a waiting one is removed, a running one is cancelled on its bearer
    /// (`ATTClientBearer.cancel`: it keeps that bearer until its request is answered). Either way
    /// `.complete(id, .failure(.cancelled))` is reported now.
    public mutating func cancel(id: UInt64, now: Duration) -> Actions {
        defer { refreshDeadline() }
        if let index = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: index)
            return Actions(Action(bearer: .unenhanced, action: .complete(id: id, .failure(.cancelled))))
        }
        guard let on = running[id], let cancelled = withBearer(on, { $0.cancel(id: id) }) else { return [] }
        var actions = Actions()
        actions.append(cancelled, on: on)
        return settle(actions, now: now)
    }

    // MARK: The server's database changing

    /// The server's database changed in `range` (the owner recognised a Service Changed
    /// indication, Vol 3 Part G §7.1, on any bearer): every bearer's running procedure and every
    /// waiting one is told (`ATTClientBearer.serverDatabaseChanged`). A running procedure whose
    /// answers are `.untrusted` ends with `.databaseChanged` when its request is answered; a
    /// waiting one ends now, having sent nothing.
    public mutating func serverDatabaseChanged(_ range: ClosedRange<UInt16>, now: Duration) -> Actions {
        defer { refreshDeadline() }
        var actions = Actions()
        actions.append(first.serverDatabaseChanged(range), on: .unenhanced)
        for i in enhanced.indices {
            actions.append(enhanced[i].bearer.serverDatabaseChanged(range), on: .enhanced(cid: enhanced[i].cid))
        }
        var kept: [Waiting] = []
        for var w in waiting {
            if w.procedure.serverDatabaseChanged(in: range, requestOutstanding: false) == .untrusted {
                actions.append(Action(bearer: w.pinned ?? .unenhanced, action: .complete(id: w.id, .failure(.databaseChanged(range)))))
            } else {
                kept.append(w)
            }
        }
        waiting = kept
        return settle(actions, now: now)
    }

    // MARK: Receiving and time

    /// One ATT PDU from the peer on bearer `id` (a response, notification or indication; a
    /// request comes back as `.peerRequest` for the local server). A PDU for a bearer that is
    /// not open is dropped.
    public mutating func receive(_ bytes: [UInt8], on id: ATTBearerID, now: Duration) -> Actions {
        receive(bytes[...], on: id, now: now)
    }

    /// `receive(_:on:now:)` for a PDU read where it lies (the payload of the L2CAP frame it
    /// came in). A Handle Value Notification or Indication (the PDU a server sends per update,
    /// Vol 3 Part F §3.4.7.1, §3.4.7.2) answers no request and frees no bearer, so it is taken
    /// here without scheduling (see the type's invariant): one action, or the indication and
    /// its confirmation, and no array. Everything else goes to the bearer and is settled.
    public mutating func receive(_ bytes: ArraySlice<UInt8>, on id: ATTBearerID, now: Duration) -> Actions {
        if let actions = update(bytes, on: id) { return actions }
        return receiveScheduled(bytes, on: id, now: now)
    }

    /// What `receive` returns for a Handle Value Notification or Indication on bearer `id`,
    /// which leaves the set as it is (see the type's invariant): the update, and for an
    /// indication its confirmation on the same bearer (Vol 3 Part F §3.4.7.3); [] when that
    /// bearer is not open. Nil for every other PDU, which must go to `receive`. For an owner
    /// that can read the set in place and change it only when it must.
    public func update(_ bytes: ArraySlice<UInt8>, on id: ATTBearerID) -> Actions? {
        guard let update = ATTClientBearer.update(in: bytes) else { return nil }
        guard isOpen(id) else { return [] }
        // A notification's list is built in place and returned as it is, not copied from a var.
        guard case .indication = update else { return Actions(Action(bearer: id, action: update)) }
        var actions = Actions(Action(bearer: id, action: update))
        actions.append(Action(bearer: id, action: .send(ATTClientBearer.confirmationPDU)))
        return actions
    }

    /// `receive` through the bearer and the scheduler, whatever the PDU: the path every PDU took
    /// before the update fast path, kept apart so tests can check the two agree.
    mutating func receiveScheduled(_ bytes: ArraySlice<UInt8>, on id: ATTBearerID, now: Duration) -> Actions {
        defer { refreshDeadline() }
        guard let received = withBearer(id, { $0.receive(bytes, now: now) }) else { return [] }
        // Nothing happened and nobody waits (a dropped PDU): skip the bookkeeping. A cancelled
        // procedure's answer frees its bearer silently, so with waiters it must go on.
        guard !received.isEmpty || !waiting.isEmpty else { return [] }
        var actions = Actions()
        actions.append(received, on: id)
        return settle(actions, now: now)
    }

    /// Fires every bearer's transaction timeout that `now` has reached (Part F §3.3.3). A timed
    /// out enhanced bearer leaves the set (`.closeBearer` asks to close its channel); the
    /// unenhanced one stays, closed, and its `.closeBearer` asks to disconnect the link.
    public mutating func expire(now: Duration) -> Actions {
        defer { refreshDeadline() }
        var actions = Actions()
        actions.append(first.expire(now: now), on: .unenhanced)
        var open: [Enhanced] = []
        for var e in enhanced {
            let fired = e.bearer.expire(now: now)
            if fired.isEmpty { open.append(e) } else { actions.append(fired, on: .enhanced(cid: e.cid)) }
        }
        if open.count != enhanced.count { enhanced = open }
        guard !actions.isEmpty else { return [] }
        return settle(actions, now: now, strandedError: .timeout)
    }

    // MARK: Scheduling

    /// Forgets completed procedures, then starts waiting ones on bearers that became free.
    private mutating func settle(_ actions: Actions, now: Duration, strandedError: GATTError = .bearerClosed) -> Actions {
        forgetCompleted(actions)
        var out = actions
        guard !waiting.isEmpty else { return out }
        out += failStranded(strandedError)
        out += dispatch(now: now)
        return out
    }

    private mutating func forgetCompleted(_ actions: Actions) {
        for a in actions {
            if case let .complete(id, _) = a.action { running[id] = nil }
        }
    }

    private static func isFree(_ b: ATTClientBearer) -> Bool {
        !b.isClosed && !b.hasOutstandingRequest && b.queuedCount == 0
    }

    private func isFree(_ id: ATTBearerID) -> Bool {
        bearer(id).map(Self.isFree) ?? false
    }

    /// The first free bearer in preference order.
    private var firstFree: ATTBearerID? {
        if Self.isFree(first) { return .unenhanced }
        return enhanced.first { Self.isFree($0.bearer) }.map { .enhanced(cid: $0.cid) }
    }

    private func canEverRun(_ w: Waiting) -> Bool {
        if let pin = w.pinned { return isOpen(pin) }
        return !first.isClosed || enhanced.contains { !$0.bearer.isClosed }
    }

    /// Waiting procedures that no open bearer could run fail with `error`.
    private mutating func failStranded(_ error: GATTError) -> Actions {
        guard !waiting.isEmpty else { return [] }
        var actions = Actions()
        var keep: [Waiting] = []
        for w in waiting {
            if canEverRun(w) {
                keep.append(w)
            } else {
                actions.append(Action(bearer: w.pinned ?? .unenhanced, action: .complete(id: w.id, .failure(error))))
            }
        }
        if !actions.isEmpty { waiting = keep }
        return actions
    }

    /// Starts waiting procedures, in order, each on the first free bearer it may use. A
    /// procedure that finishes without a request (`start()` ends it) frees its bearer again at
    /// once, so the loop goes on until no waiting procedure has a free bearer.
    private mutating func dispatch(now: Duration) -> Actions {
        var actions = Actions()
        var progress = !waiting.isEmpty
        while progress {
            progress = false
            for (index, w) in waiting.enumerated() {
                let target: ATTBearerID?
                if let pin = w.pinned {
                    target = isFree(pin) ? pin : nil
                } else {
                    target = firstFree
                }
                guard let target else { continue }
                waiting.remove(at: index)
                running[w.id] = target
                var started = Actions()
                started.append(withBearer(target, { $0.submit(w.procedure, id: w.id, now: now) }) ?? [], on: target)
                forgetCompleted(started)
                actions += started
                progress = true
                break
            }
        }
        return actions
    }
}

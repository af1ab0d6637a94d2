import BLEWire

/// One action of an `ATTClientBearerSet`: what one of its bearers asks the owner to do.
public struct ATTBearerSetAction<BearerID: Hashable & Sendable>: Hashable, Sendable {
    /// The bearer the action belongs to: `.send` goes out on it, `.closeBearer` closes it.
    public var bearer: BearerID
    /// What to do, as `ATTClientBearer` reports it.
    public var action: BearerAction

    /// Pairs an action with its bearer.
    public init(bearer: BearerID, action: BearerAction) {
        self.bearer = bearer
        self.action = action
    }
}

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
public struct ATTClientBearerSet<BearerID: Hashable & Sendable>: Sendable {
    /// The action type this set returns.
    public typealias Action = ATTBearerSetAction<BearerID>

    private struct Waiting: Sendable {
        var id: UInt64
        var procedure: AnyGATTProcedure
        var pinned: BearerID?
    }

    /// The unenhanced bearer's id (its bearer is never removed, only closed with the link).
    public let unenhancedID: BearerID
    /// Stored apart from the enhanced ones so the busiest path (notifications on the one bearer
    /// most links have) reaches it without a search.
    private var first: ATTClientBearer
    /// Open enhanced bearers, oldest first: the preference order after the unenhanced one.
    private var enhanced: [(id: BearerID, bearer: ATTClientBearer)] = []
    private var waiting: [Waiting] = []
    /// Procedures handed to a bearer and not yet complete, with that bearer.
    private var running: [UInt64: BearerID] = [:]

    /// A set with only the unenhanced bearer.
    public init(unenhancedID: BearerID, unenhanced: ATTClientBearer) {
        self.unenhancedID = unenhancedID
        first = unenhanced
    }

    private var order: [BearerID] { [unenhancedID] + enhanced.map(\.id) }

    private func bearer(_ id: BearerID) -> ATTClientBearer? {
        if id == unenhancedID { return first }
        return enhanced.first { $0.id == id }?.bearer
    }

    /// Runs `body` on the bearer in place (no copy of its queues); nil when it is not open.
    private mutating func withBearer<R>(_ id: BearerID, _ body: (inout ATTClientBearer) -> R) -> R? {
        if id == unenhancedID { return body(&first) }
        guard let i = enhanced.firstIndex(where: { $0.id == id }) else { return nil }
        return body(&enhanced[i].bearer)
    }

    // MARK: Reading

    /// The unenhanced bearer: its MTU is the link's, and commands (Write Without Response, Signed
    /// Write) go on it. Set it only to send commands or record an MTU the server agreed.
    public var unenhanced: ATTClientBearer {
        get { first }
        _modify { yield &first }
    }

    /// The bearer with this id, while it is open.
    public subscript(bearer id: BearerID) -> ATTClientBearer? { bearer(id) }

    /// The ids of the open bearers, the unenhanced one first.
    public var bearerIDs: [BearerID] { order }

    /// How many enhanced bearers are open.
    public var enhancedCount: Int { enhanced.count }

    /// Procedures waiting for a free bearer.
    public var waitingCount: Int { waiting.count }

    /// Which bearer a submitted procedure runs on; nil while it waits or once it completed.
    public func bearer(running id: UInt64) -> BearerID? { running[id] }

    /// The earliest transaction deadline of any bearer.
    public var nextDeadline: Duration? {
        var next = first.nextDeadline
        for e in enhanced {
            guard let d = e.bearer.nextDeadline else { continue }
            next = next.map { min($0, d) } ?? d
        }
        return next
    }

    // MARK: Bearers opening and closing

    /// An enhanced bearer opened (its ATT_MTU is the smaller of the two channel MTUs, Part F
    /// §3.2.8): waiting procedures may start on it at once. An id already open is ignored.
    public mutating func add(_ id: BearerID, bearer: ATTClientBearer, now: Duration) -> [Action] {
        guard self.bearer(id) == nil, !bearer.isClosed else { return [] }
        enhanced.append((id, bearer))
        return dispatch(now: now)
    }

    /// The peer (or the owner) closed an enhanced bearer: its in-flight procedure fails with
    /// `.bearerClosed`, the waiting ones move to the other bearers. The unenhanced bearer is
    /// not removed this way (use `close()` when the link goes).
    public mutating func remove(_ id: BearerID, now: Duration) -> [Action] {
        guard id != unenhancedID, let i = enhanced.firstIndex(where: { $0.id == id }) else { return [] }
        var bearer = enhanced.remove(at: i).bearer
        return settle(tag(bearer.close(), id), now: now)
    }

    /// The link is gone: every procedure on every bearer, and every waiting one, fails with
    /// `.bearerClosed`.
    public mutating func close() -> [Action] {
        var actions = tag(first.close(), unenhancedID)
        for var e in enhanced { actions += tag(e.bearer.close(), e.id) }
        enhanced = []
        running = [:]
        actions += failStranded(.bearerClosed)
        return actions
    }

    /// An enhanced bearer's channel was reconfigured (Vol 3 Part A §4.27; its MTU never shrinks):
    /// its ATT_MTU is now `mtu`, for the procedures that start on it from now on.
    public mutating func bearerMTUChanged(_ mtu: Int, on id: BearerID) {
        guard id != unenhancedID else { return }
        _ = withBearer(id) { $0.peerExchangedMTU(clientMTU: mtu, serverMTU: mtu) }
    }

    // MARK: Procedures

    /// Queues a procedure; it starts at once on a free bearer (on `pinned` only, when given).
    /// Every `id` gets exactly one `.complete`. Ids should be unique among unfinished procedures.
    public mutating func submit<P: GATTProcedure>(_ procedure: P, id: UInt64, pinnedTo pinned: BearerID? = nil, now: Duration) -> [Action] {
        let procedure = AnyGATTProcedure(procedure)
        let pin = procedure.isMTUExchange ? unenhancedID : pinned
        waiting.append(Waiting(id: id, procedure: procedure, pinned: pin))
        return failStranded(.bearerClosed) + dispatch(now: now)
    }

    /// Cancels a procedure: a waiting one is removed, a running one is cancelled on its bearer
    /// (`ATTClientBearer.cancel`: it keeps that bearer until its request is answered). Either way
    /// `.complete(id, .failure(.cancelled))` is reported now.
    public mutating func cancel(id: UInt64, now: Duration) -> [Action] {
        if let index = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: index)
            return [Action(bearer: unenhancedID, action: .complete(id: id, .failure(.cancelled)))]
        }
        guard let on = running[id], let actions = withBearer(on, { $0.cancel(id: id) }) else { return [] }
        return settle(tag(actions, on), now: now)
    }

    // MARK: Receiving and time

    /// One ATT PDU from the peer on bearer `id` (a response, notification or indication; a
    /// request comes back as `.peerRequest` for the local server). A PDU for a bearer that is
    /// not open is dropped.
    public mutating func receive(_ bytes: [UInt8], on id: BearerID, now: Duration) -> [Action] {
        guard let actions = withBearer(id, { $0.receive(bytes, now: now) }) else { return [] }
        // Nothing happened and nobody waits (a dropped PDU): skip the bookkeeping. A cancelled
        // procedure's answer frees its bearer silently, so with waiters it must go on.
        guard !actions.isEmpty || !waiting.isEmpty else { return [] }
        return settle(tag(actions, id), now: now)
    }

    /// Fires every bearer's transaction timeout that `now` has reached (Part F §3.3.3). A timed
    /// out enhanced bearer leaves the set (`.closeBearer` asks to close its channel); the
    /// unenhanced one stays, closed, and its `.closeBearer` asks to disconnect the link.
    public mutating func expire(now: Duration) -> [Action] {
        var actions = tag(first.expire(now: now), unenhancedID)
        var open: [(id: BearerID, bearer: ATTClientBearer)] = []
        for var e in enhanced {
            let fired = e.bearer.expire(now: now)
            if fired.isEmpty { open.append(e) } else { actions += tag(fired, e.id) }
        }
        if open.count != enhanced.count { enhanced = open }
        guard !actions.isEmpty else { return [] }
        return settle(actions, now: now, strandedError: .timeout)
    }

    // MARK: Scheduling

    private func tag(_ actions: [BearerAction], _ id: BearerID) -> [Action] {
        actions.map { Action(bearer: id, action: $0) }
    }

    /// Forgets completed procedures, then starts waiting ones on bearers that became free.
    private mutating func settle(_ actions: [Action], now: Duration, strandedError: GATTError = .bearerClosed) -> [Action] {
        forgetCompleted(actions)
        // Without copies on the common path (a notification, nothing stranded or started).
        var out = actions
        let stranded = failStranded(strandedError)
        if !stranded.isEmpty { out += stranded }
        let started = dispatch(now: now)
        if !started.isEmpty { out += started }
        return out
    }

    private mutating func forgetCompleted(_ actions: [Action]) {
        for a in actions {
            if case let .complete(id, _) = a.action { running[id] = nil }
        }
    }

    private static func isFree(_ b: ATTClientBearer) -> Bool {
        !b.isClosed && !b.hasOutstandingRequest && b.queuedCount == 0
    }

    private func isFree(_ id: BearerID) -> Bool {
        bearer(id).map(Self.isFree) ?? false
    }

    /// The first free bearer in preference order.
    private var firstFree: BearerID? {
        if Self.isFree(first) { return unenhancedID }
        return enhanced.first { Self.isFree($0.bearer) }?.id
    }

    private func canEverRun(_ w: Waiting) -> Bool {
        if let pin = w.pinned { return bearer(pin).map { !$0.isClosed } ?? false }
        return !first.isClosed || enhanced.contains { !$0.bearer.isClosed }
    }

    /// Waiting procedures that no open bearer could run fail with `error`.
    private mutating func failStranded(_ error: GATTError) -> [Action] {
        guard !waiting.isEmpty else { return [] }
        var actions: [Action] = []
        var keep: [Waiting] = []
        for w in waiting {
            if canEverRun(w) {
                keep.append(w)
            } else {
                actions.append(Action(bearer: w.pinned ?? unenhancedID, action: .complete(id: w.id, .failure(error))))
            }
        }
        if !actions.isEmpty { waiting = keep }
        return actions
    }

    /// Starts waiting procedures, in order, each on the first free bearer it may use. A
    /// procedure that finishes without a request (`start()` ends it) frees its bearer again at
    /// once, so the loop goes on until no waiting procedure has a free bearer.
    private mutating func dispatch(now: Duration) -> [Action] {
        var actions: [Action] = []
        var progress = !waiting.isEmpty
        while progress {
            progress = false
            for (index, w) in waiting.enumerated() {
                let target: BearerID?
                if let pin = w.pinned {
                    target = isFree(pin) ? pin : nil
                } else {
                    target = firstFree
                }
                guard let target else { continue }
                waiting.remove(at: index)
                running[w.id] = target
                let started = tag(withBearer(target, { $0.submit(w.procedure, id: w.id, now: now) }) ?? [], target)
                forgetCompleted(started)
                actions += started
                progress = true
                break
            }
        }
        return actions
    }
}

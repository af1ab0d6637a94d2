import BLEHCI
import BLEHost
import BLEWire

// Notifications and indications of the host's GATT server (Core spec Vol 3 Part G §4.10, §4.11;
// Vol 3 Part F §3.4.7): `updateValue` queues a value to every subscribed central whose link may
// read it, all or nothing; `pumpNotifications` moves what the links' servers queued into the ACL
// flow controller, a couple of PDUs per link at a time, so the servers' bounded queues are where
// backpressure shows. The notification hot path: measured by `ble-bench raw`.
extension GATTServerSessions {
    /// Moves queued notifications and indications from a link's server into ACL, keeping only a
    /// couple of PDUs waiting for controller credits so the server's bounded queue is where
    /// backpressure shows (and "queue full" means something).
    ///
    /// The whole drain is one in-place access to the link (`withLink`, `drain`); what it leaves
    /// to do is `finishPump`.
    func pumpNotifications(handle: UInt16, _ host: isolated some GATTServerDriver) {
        let now = host.now
        guard let drained = host.withLink(handle, { Self.drain(&$0, handle: handle, now: now, host) }) else { return }
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
    @inline(__always)
    static func drain(_ link: inout Link, handle: UInt16, now: Duration, _ host: isolated some GATTServerDriver) -> Drained {
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
    func finishPump(_ drained: Drained, handle: UInt16, _ host: isolated some GATTServerDriver) {
        // Notifications move no deadline, so they leave the timer alone.
        if drained.indicationSent { host.rescheduleTimer() }
        if !drained.events.isEmpty {
            perform(drained.events, handle: handle, host)
            if host.readLink(handle, { !$0.enhancedServers.isEmpty }) == true { pumpEnhancedBearers(handle: handle, host) }
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
    func updateValue(_ value: [UInt8], valueHandle: UInt16, centrals: Set<UInt64>?, _ host: isolated some GATTServerDriver) -> UpdateValueResult {
        // Each link is reached in place (`withLink`): `read` copies the link when its body calls
        // out of this module (the table lives in a class, which the callee could reach), and a
        // copy alive while a link mutates would copy its server's queues. Each link's update goes
        // on one of its bearers (`Link.updateBearer`): the unenhanced one unless Enhanced ATT
        // bearers are open.
        let handles = host.linkHandles
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
                      _ host: isolated some GATTServerDriver) -> (result: UpdateResult?, drained: Drained) {
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
                             queued: inout Int, _ host: isolated some GATTServerDriver) {
        if case .queued = result {
            queued += 1
            if !target.notifies { indications[id] = IndicationWaiter(valueHandle: valueHandle, linkHandle: target.handle) }
        }
        finishPump(drained, handle: target.handle, host)
    }

    /// `updateValue` on a host with one link, in one access to it: with a single target, "all or
    /// nothing" is that link's own room, so the check, the queueing and the drain need not be
    /// apart (`updateLinks` gives the same result). nil: the queue is full.
    /// What `updateOneLink` did on the link.
    private enum OneLinkOutcome { case notTargeted, full, queued(UpdateTarget, UpdateResult?, Drained, UInt64) }

    private func updateOneLink(_ handle: UInt16, _ update: Update, _ host: isolated some GATTServerDriver) -> Int? {
        let now = host.now
        let outcome: OneLinkOutcome = host.withLink(handle) { link -> OneLinkOutcome in
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
    private func updateLinks(_ handles: [UInt16], _ update: Update, _ host: isolated some GATTServerDriver) -> Int? {
        var targets = UpdateTargets()
        var full = false
        for handle in handles {
            guard let (target, roomy) = host.withLink(handle, { Self.target(&$0, handle: handle, update) }) ?? nil else { continue }
            targets.append(target)
            if !roomy { full = true }
        }
        if full {
            // Nothing is queued anywhere; the full ones send the ready signal once they drain.
            targets.forEach { t in host.withLink(t.handle) { $0.withServer(t.bearer) { $0.signalReadyWhenRoom() } } }
            return nil
        }
        let now = host.now
        var queued = 0
        targets.forEach { target in
            let id = target.notifies ? 0 : host.makeToken()
            // nil: the link is gone (nothing to pump).
            guard let (result, drained) = host.withLink(target.handle, { Self.queue(&$0, target, update, id: id, now: now, host) })
            else { return }
            finishQueue(target, result, drained, id: id, valueHandle: update.valueHandle, queued: &queued, host)
        }
        return queued
    }

    /// `updateValue` that waits for room instead of reporting a full queue. The check and the
    /// wait happen with no suspension between them, so a ready signal cannot slip past;
    /// cancelling the task ends the wait. The value is made at each attempt, right before it is
    /// queued.
    // Inlined into its caller, where the host is already this function's isolation: called
    // through the generic driver, an async function hops to it at entry (a task switch per
    // notification) unless the specialised body is inlined.
    @inline(__always)
    func updateValueWaiting(valueHandle: UInt16, centrals: Set<UInt64>?, _ makeValue: @Sendable () -> [UInt8],
                            _ host: isolated some GATTServerDriver) async throws -> Int {
        while true {
            try Task.checkCancellation()
            if case let .queued(n) = updateValue(makeValue(), valueHandle: valueHandle, centrals: centrals, host) { return n }
            try await waitForRoom(host)
        }
    }

    /// Waits until some link's server reports room again, a link closes, or the task is cancelled.
    private func waitForRoom(_ host: isolated some GATTServerDriver) async throws {
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
}

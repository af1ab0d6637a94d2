import BLEWire

// Server-initiated PDUs: Handle Value Notification and Indication (Core spec Vol 3 Part F
// §3.4.7), their per-connection bounded queue, and the indication transaction timer (§3.3.3).
//
// The queue holds encoded PDUs; the owner pops them with `nextOutgoing()` whenever the link can
// take one (ACL credits), so a slow link fills the queue instead of memory. Notifications may
// overtake an indication that waits for the previous one's confirmation (§3.3.2: notification
// flow is independent of indications); each kind keeps its own order.
extension ATTServer {
    /// The CCCD bits of `valueHandle` that may be served on this link now: the client's
    /// configuration, or 0 when the link's current `security` does not pass the value's read
    /// requirements (encryption, authentication, key size, authorization). No one gets by
    /// notification or indication what they could not read: a CCCD restored from a bond before
    /// the link is encrypted again, or written while the peer was authorized, counts as not
    /// subscribed until the link meets the value's requirements again (Vol 3 Part G §3.3.3.3
    /// leaves the CCCD's own permissions to the profile; Vol 3 Part C §10.3.1, §10.5).
    public func deliverableSubscription(valueHandle: UInt16, database: GATTServerDatabase, security: LinkSecurity) -> UInt16 {
        let bits = cccd(valueHandle: valueHandle)
        // The permissions read where they lie: `attribute(at:)` would copy the attribute (and
        // retain its value) on every update.
        guard bits != 0, let permissions = database.permissions(at: valueHandle),
              Self.readSecurityError(permissions: permissions, security) == nil else { return 0 }
        return bits
    }

    /// Queues a notification of `value` (cut to ATT_MTU − 3, §3.4.7.1) if the client enabled
    /// notifications in this characteristic's CCCD and the link's current `security` lets it
    /// read the value (`deliverableSubscription`); otherwise `.notSubscribed`.
    public mutating func notify(valueHandle: UInt16, value: [UInt8], database: GATTServerDatabase, security: LinkSecurity) -> UpdateResult {
        guard !isClosed else { return .notSubscribed }
        guard deliverableSubscription(valueHandle: valueHandle, database: database, security: security) & 0x0001 != 0 else { return .notSubscribed }
        guard outgoing.count < notificationQueueLimit else {
            readyPending = true
            return .queueFull
        }
        outgoing.append(.notification(Self.updatePDU(ATTOpcode.handleValueNotification.rawValue, valueHandle, value, mtu: mtu)))
        return .queued
    }

    /// Queues an indication of `value` (cut to ATT_MTU − 3, §3.4.7.2) if the client enabled
    /// indications and the link's current `security` lets it read the value
    /// (`deliverableSubscription`); otherwise `.notSubscribed`. Only one indication is
    /// outstanding at a time: the next leaves the queue after the confirmation. `id` comes back
    /// in `.indicationConfirmed` or `.indicationTimedOut`.
    public mutating func indicate(valueHandle: UInt16, value: [UInt8], id: UInt64, now: Duration,
                                  database: GATTServerDatabase, security: LinkSecurity) -> UpdateResult {
        clock = max(clock, now)
        guard !isClosed else { return .notSubscribed }
        guard deliverableSubscription(valueHandle: valueHandle, database: database, security: security) & 0x0002 != 0 else { return .notSubscribed }
        guard outgoing.count < notificationQueueLimit else {
            readyPending = true
            return .queueFull
        }
        outgoing.append(.indication(id: id, pdu: Self.updatePDU(ATTOpcode.handleValueIndication.rawValue, valueHandle, value, mtu: mtu)))
        if valueHandle == database.serviceChangedHandle { client.serviceChangedIndicationID = id }
        return .queued
    }

    /// True when `nextOutgoing()` would return a PDU.
    public var hasOutgoing: Bool {
        !isClosed && outgoing.contains { item in
            if case .indication = item { return outstandingIndication == nil }
            return true
        }
    }

    /// The number of notifications and indications waiting.
    public var queuedUpdates: Int { outgoing.count }

    /// Whether one more notification or indication fits the bounded queue. When it does not,
    /// the caller may `signalReadyWhenRoom()` to hear `.readyToUpdate` once the queue drains
    /// (an owner updating several connections all-or-nothing checks every one first).
    public var hasRoomForUpdate: Bool { outgoing.count < notificationQueueLimit }

    /// How far a full queue drains before `.readyToUpdate`: half of it (at least one slot
    /// free). The sender then refills many slots per ready signal, not one slot per signal
    /// and wake-up, and the queue never runs dry while it waits (a signal per freed slot cost
    /// a task switch per notification).
    public var readyThreshold: Int { notificationQueueLimit / 2 }

    /// Asks for `.readyToUpdate` once the queue has room again (as a refused update does).
    public mutating func signalReadyWhenRoom() {
        if !hasRoomForUpdate { readyPending = true }
    }

    /// The next notification or indication to send, nil when nothing can go now. An indication's
    /// timer starts here, at the latest time the server has seen; use `nextOutgoing(now:)` to give
    /// the time exactly. When the queue was full and has drained to `readyThreshold`,
    /// `.readyToUpdate` waits in `takeEvents()`.
    public mutating func nextOutgoing() -> [UInt8]? {
        nextOutgoing(now: clock)
    }

    /// `nextOutgoing()` with the current time, which starts an indication's timer (§3.3.3: the
    /// transaction starts when the indication is sent).
    public mutating func nextOutgoing(now: Duration) -> [UInt8]? {
        clock = max(clock, now)
        guard !isClosed else { return nil }
        guard let index = outgoing.firstIndex(where: { item in
            if case .indication = item { return outstandingIndication == nil }
            return true
        }) else { return nil }
        let item = outgoing.remove(at: index)
        if readyPending && outgoing.count <= readyThreshold {
            readyPending = false
            events.append(.readyToUpdate)
        }
        switch item {
        case let .notification(pdu):
            return pdu
        case let .indication(id, pdu):
            outstandingIndication = (id, clock + indicationTimeout)
            return pdu
        }
    }

    /// When `expire(now:)` must next be called: the outstanding indication's deadline.
    public var nextDeadline: Duration? {
        isClosed ? nil : outstandingIndication?.deadline
    }

    /// Fires the indication timer. On timeout the transaction has failed and the bearer is dead
    /// (§3.3.3): the outstanding indication and every queued one time out, the queue is dropped,
    /// and the owner is told to close the bearer.
    public mutating func expire(now: Duration) -> [ServerAction] {
        clock = max(clock, now)
        var actions = takeEvents()
        guard !isClosed, let outstanding = outstandingIndication, outstanding.deadline <= now else { return actions }
        close(timingOutIndicationsInto: &actions)
        actions.append(.closeBearer)
        return actions
    }

    /// Ends the bearer's server: the outstanding indication and every queued one time out (in
    /// that order, into `actions`), the queues and held requests are dropped, and it is closed.
    mutating func close(timingOutIndicationsInto actions: inout [ServerAction]) {
        if let outstanding = outstandingIndication { actions.append(.indicationTimedOut(id: outstanding.id)) }
        for case let .indication(id, _) in outgoing { actions.append(.indicationTimedOut(id: id)) }
        outstandingIndication = nil
        outgoing.removeAll()
        pending = nil
        deferred.removeAll()
        prepareQueue.removeAll()
        preparedForRemovedService = nil
        isClosed = true
    }

    /// The room an update PDU's array keeps beyond its bytes: the L2CAP basic header (Vol 3
    /// Part A §3.1) and the HCI ACL header (Vol 4 Part E §5.4.2) in front of a PDU that fits
    /// one controller buffer, so the flow controller frames it in its own array rather than
    /// copying it into a new one. The PDU's bytes are the same either way.
    static let framingHeadroom = 8

    /// A Handle Value Notification or Indication PDU (opcode, handle, value cut to ATT_MTU − 3;
    /// §3.4.7.1, §3.4.7.2) written in one allocation, with the value copied once: the same bytes
    /// `ATTPDU.encode` gives, made on every update.
    static func updatePDU(_ opcode: UInt8, _ handle: UInt16, _ value: [UInt8], mtu: Int) -> [UInt8] {
        let n = max(0, min(value.count, mtu - 3))
        // `reserveCapacity` and `append`, which are specialised here, not
        // `init(unsafeUninitializedCapacity:)`, whose allocation runs unspecialised in the
        // standard library and looks the array's storage type up on every call.
        var pdu: [UInt8] = []
        pdu.reserveCapacity(framingHeadroom + 3 + n)
        pdu.append(opcode)
        pdu.append(UInt8(handle & 0xFF))
        pdu.append(UInt8(handle >> 8))
        pdu.append(contentsOf: value[0..<n])
        return pdu
    }
}

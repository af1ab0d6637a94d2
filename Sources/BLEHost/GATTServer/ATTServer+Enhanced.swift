import BLEWire

/// What an ATT server keeps per client rather than per bearer (Core spec Vol 3 Part F §3.2.11,
/// Vol 3 Part G §5.3): a client that talks over several bearers of one link (the unenhanced one
/// and its Enhanced ATT bearers) is one client. Its CCCDs (Vol 3 Part G §3.3.3.3), Client
/// Supported Features (§7.2) and change awareness (§2.5.2.1) are the same on every bearer: a
/// CCCD written on one bearer enables notifications on all of them.
public struct ATTClientState: Sendable, Hashable {
    /// CCCD values by characteristic value handle.
    var configurations: [UInt16: UInt16] = [:]
    /// Client Supported Features octets (Vol 3 Part G §7.2).
    var features: [UInt8] = []
    /// What the client itself wrote to them on this connection (the rest came with its bond):
    /// the kept octet, nil before any write. One octet, not an array, so copying the client's
    /// state costs nothing more.
    var featuresWritten: UInt8?
    /// Robust caching state (Vol 3 Part G §2.5.2.1, ATTServer+ChangeAwareness.swift).
    var changeAware = true
    var outOfSyncSent = false
    var hashReadWhileUnaware = false
    var serviceChangedIndicationID: UInt64?
    /// The client has Enhanced ATT bearers open besides the unenhanced one (§2.5.2.1's "next
    /// request" rule then no longer applies).
    var enhancedBearersOpen = false
    /// A bonded client's kept state was restored on this connection (`restoreBondedState`).
    var bondedStateRestored = false
    /// Its CCCDs were restored on this connection (`restoreBondedSubscriptions`).
    var bondedSubscriptionsRestored = false

    /// A client the server knows nothing of yet: change-aware, no CCCDs, no features.
    public init() {}
}

// Enhanced ATT bearers on the server side (Vol 3 Part F §3.2.11): one `ATTServer` per bearer,
// with its own ATT_MTU (the L2CAP channel's, §3.2.8), request flow (§3.3.2: one request at a
// time per bearer), prepare queue and outstanding indication (§3.3.3), while the per-client
// state stays with the unenhanced bearer's server, which lends it for each call.
extension ATTServer {
    /// A server for one Enhanced ATT bearer whose ATT_MTU is `mtu` (the smaller of both sides'
    /// L2CAP MTU, §3.2.8; at least 64, Vol 3 Part A §4.25). Exchange MTU is refused on it (§3.4.2).
    /// Run it through `sharingClientState(with:)` of the link's unenhanced server. `openedByPeer`
    /// says whether the peer opened the bearer, which shows that its client runs EATT.
    public static func enhancedBearer(mtu: Int, openedByPeer: Bool = true, prepareQueueLimit: Int = 128, notificationQueueLimit: Int = 32,
                                      indicationTimeout: Duration = .seconds(30)) -> ATTServer {
        var server = ATTServer(preferredMTU: mtu, prepareQueueLimit: prepareQueueLimit, notificationQueueLimit: notificationQueueLimit,
                               indicationTimeout: indicationTimeout)
        server.isEnhanced = true
        server.isOpenedByPeer = openedByPeer
        server.mtu = min(max(mtu, Self.defaultMTU), 0xFFFF)
        return server
    }

    /// Runs `body` on `bearer`, another bearer's server of the same link, with this server's
    /// per-client state lent to it for the call: what `body` changes of CCCDs, Client Supported
    /// Features or change awareness is this server's afterwards. Moves the state, never copies it.
    public mutating func sharingClientState<R>(with bearer: inout ATTServer, _ body: (inout ATTServer) throws -> R) rethrows -> R {
        swap(&client, &bearer.client)
        defer { swap(&client, &bearer.client) }
        return try body(&bearer)
    }

    /// The bearer's L2CAP channel was reconfigured (Vol 3 Part A §4.27): its ATT_MTU follows the
    /// channel's MTU, which may only grow. Updates already queued keep their length.
    public mutating func enhancedMTUChanged(to newMTU: Int) {
        guard isEnhanced, newMTU > mtu else { return }
        mtu = min(newMTU, 0xFFFF)
    }

    /// Client Supported Features bit 1 (Vol 3 Part G §7.2): the client supports Enhanced ATT.
    public var clientSupportsEnhancedATT: Bool { (client.features.first ?? 0) & 0x02 != 0 }

    /// Whether updates may go on this bearer: the unenhanced one always; an Enhanced ATT bearer
    /// when the peer opened it or the client said it supports EATT (Client Supported Features
    /// bit 1, Vol 3 Part G §7.2, in `clientState`). A bearer only our own client opened to a
    /// peer whose client never said so is left to requests: that client may not listen there.
    public func carriesUpdates(clientState: ATTServer) -> Bool {
        !isEnhanced || isOpenedByPeer || clientState.clientSupportsEnhancedATT
    }

    /// Client Supported Features bit 2 (Vol 3 Part G §7.2): the client takes Multiple Handle
    /// Value Notifications (Vol 3 Part F §3.4.7.4).
    public var multipleNotificationsEnabled: Bool { (client.features.first ?? 0) & 0x04 != 0 }

    /// Whether an indication is outstanding or queued on this bearer: a new one sent here would
    /// wait for the confirmation (§3.3.2, one indication at a time per bearer).
    public var hasIndicationInFlight: Bool {
        outstandingIndication != nil || outgoing.contains { if case .indication = $0 { return true } else { return false } }
    }

    /// Queues notifications of several values at once, those the client enabled notifications
    /// for and may read (`deliverableSubscription`), the rest left out. To a client that set
    /// Client Supported Features bit 2 they go as Multiple Handle Value Notifications (§3.4.7.4),
    /// as many tuples per PDU as ATT_MTU − 1 octets hold; a PDU that would carry one tuple is an
    /// ordinary notification of the value (cut to ATT_MTU − 3, as §3.4.7.1 allows). To any other client
    /// each value is one Handle Value Notification (§3.4.7.1). All or nothing: when the PDUs do
    /// not all fit the queue, none is queued (`.queueFull`, `.readyToUpdate` follows).
    /// `.notSubscribed` when none of the values is deliverable.
    public mutating func notifyMultiple(_ values: [(handle: UInt16, value: [UInt8])], database: GATTServerDatabase,
                                        security: LinkSecurity) -> UpdateResult {
        guard !isClosed else { return .notSubscribed }
        let wanted = values.filter { deliverableSubscription(valueHandle: $0.handle, database: database, security: security) & 0x0001 != 0 }
        guard !wanted.isEmpty else { return .notSubscribed }
        let pdus = multipleNotificationsEnabled ? Self.multipleNotificationPDUs(wanted, mtu: mtu)
            : wanted.map { Self.updatePDU(ATTOpcode.handleValueNotification.rawValue, $0.handle, $0.value, mtu: mtu) }
        guard outgoing.count + pdus.count <= notificationQueueLimit else {
            readyPending = true
            return .queueFull
        }
        for pdu in pdus { outgoing.append(.notification(pdu)) }
        return .queued
    }

    /// The handle–length–value tuples of `values` packed into Multiple Handle Value Notification
    /// PDUs of at most `mtu` octets (§3.4.7.4, a tuple's value cut to ATT_MTU − 5); a PDU left with
    /// one tuple becomes a Handle Value Notification (§3.4.7.1) of the whole value, cut only to
    /// ATT_MTU − 3 as any notification.
    static func multipleNotificationPDUs(_ values: [(handle: UInt16, value: [UInt8])], mtu: Int) -> [[UInt8]] {
        var pdus: [[UInt8]] = []
        var current: [(handle: UInt16, value: [UInt8])] = []
        var used = 1
        let room = max(0, mtu - 5)
        func flush() {
            guard !current.isEmpty else { return }
            if current.count == 1 {
                pdus.append(updatePDU(ATTOpcode.handleValueNotification.rawValue, current[0].handle, current[0].value, mtu: mtu))
            } else {
                var w = ByteWriter()
                w.u8(ATTOpcode.multipleHandleValueNotification.rawValue)
                for t in current {
                    let cut = t.value.prefix(room)
                    w.u16(t.handle)
                    w.u16(UInt16(cut.count))
                    w.append(Array(cut))
                }
                pdus.append(w.bytes)
            }
            current = []
            used = 1
        }
        for v in values {
            let length = min(v.value.count, room)
            if used + 4 + length > mtu { flush() }
            current.append(v)
            used += 4 + length
        }
        flush()
        return pdus
    }

    /// The bearer's channel closed (Vol 3 Part F §3.2.11): only its own work ends. The request
    /// waiting on the application is dropped, the outstanding and queued indications are
    /// reported timed out (`.indicationTimedOut`, nobody will confirm them), queued notifications
    /// are dropped, and the server answers nothing more. An update refused for want of room here
    /// gets its `.readyToUpdate` now: the queue is gone and later updates go on other bearers.
    public mutating func bearerClosed() -> [ServerAction] {
        var actions = takeEvents()
        guard !isClosed else { return actions }
        if readyPending {
            readyPending = false
            actions.append(.readyToUpdate)
        }
        close(timingOutIndicationsInto: &actions)
        return actions
    }
}

import BLEWire

/// The Attribute Protocol server of one ATT bearer, sans-IO. Core spec Vol 3 Part F §3 (the
/// protocol) serving Vol 3 Part G's GATT procedures. A link's unenhanced bearer has one, and
/// so has each of its Enhanced ATT bearers (`enhancedBearer(mtu:)`, ATTServer+Enhanced.swift).
///
/// The owner (the host actor) feeds it every request, command and confirmation the client
/// sends, with the shared `GATTServerDatabase`, the link's current security and the time, and
/// carries out the returned `ServerAction`s. Per-bearer state lives here: ATT_MTU, the request
/// in progress, the prepare queue, the bounded queue of notifications and indications and the
/// outstanding indication. Per-client state (CCCDs, Client Supported Features, change awareness,
/// `ATTClientState`) lives here too, in the unenhanced bearer's server, which lends it to the
/// link's Enhanced ATT bearers' servers for each call (`sharingClientState`).
///
/// Requests are answered one at a time (§3.3.2): when a request needs the application (a
/// dynamic value), the server emits `.read`/`.write` and answers when the owner calls
/// `completeRead`/`completeWrite`; a request that arrives meanwhile (a client breaking §3.3.2)
/// is held and answered afterwards. Commands and confirmations are handled at once.
public struct ATTServer: Sendable {
    /// The default ATT_MTU of an LE bearer, Vol 3 Part F §3.2.8.
    public static let defaultMTU = 23

    /// The Server Rx MTU sent in the Exchange MTU Response.
    public let preferredMTU: Int
    /// How many Prepare Write Requests the queue holds before Prepare Queue Full (§3.4.6.1).
    public let prepareQueueLimit: Int
    /// How many notifications and indications may wait in `nextOutgoing`'s queue.
    public let notificationQueueLimit: Int
    /// How long an indication may wait for its confirmation (§3.3.3: 30 s).
    public let indicationTimeout: Duration

    /// The current ATT_MTU. Set by the client's Exchange MTU Request; the owner may also set it
    /// when the local client exchanged MTU on this bearer (§3.4.2.2: one exchange serves both
    /// directions).
    public var mtu: Int
    /// True once the client sent an Exchange MTU Request.
    public internal(set) var mtuExchanged = false
    /// True after an indication timed out: the bearer is dead (§3.3.3) and the server answers
    /// nothing more.
    public internal(set) var isClosed = false
    /// True for the server of an Enhanced ATT bearer (`enhancedBearer(mtu:)`, §3.2.11): its
    /// ATT_MTU is the channel's, and Exchange MTU is refused (§3.4.2).
    public internal(set) var isEnhanced = false
    /// For an Enhanced ATT bearer: whether the peer opened it (so its client runs EATT), rather
    /// than our own client (`enhancedBearer(mtu:openedByPeer:)`).
    public internal(set) var isOpenedByPeer = false
    /// The handle of the first prepared write dropped with its service (`forgetHandles`): the
    /// next Execute Write fails with Invalid Handle there and writes nothing, as it would had
    /// the queue been executed with the service gone (§3.4.6.3: the queue is all or nothing).
    /// (Beside the flags above, where it takes no room of its own.)
    var preparedForRemovedService: UInt16?

    /// What belongs to the client rather than to this bearer: CCCDs, Client Supported Features,
    /// change awareness. Shared by every bearer of the link (`sharingClientState`).
    var client = ATTClientState()
    /// Prepared writes in arrival order (§3.4.6).
    var prepareQueue: [PreparedWrite] = []
    /// Notifications and indications waiting for `nextOutgoing`.
    var outgoing: [Outgoing] = []
    /// The indication sent and not yet confirmed.
    var outstandingIndication: (id: UInt64, deadline: Duration)?
    /// `.queueFull` was returned; emit `.readyToUpdate` once there is room.
    var readyPending = false
    /// Actions produced outside a call that returns actions (`.readyToUpdate` from
    /// `nextOutgoing`), delivered by `takeEvents` or the next call that returns actions.
    var events: [ServerAction] = []
    /// The request waiting for the application.
    var pending: PendingRequest?
    /// Requests received while `pending` was set.
    var deferred: [[UInt8]] = []
    var nextID: UInt64 = 1
    /// The latest time seen, for the indication timer started by `nextOutgoing()`.
    var clock: Duration = .zero

    static let deferredLimit = 4

    struct PreparedWrite: Hashable, Sendable {
        var handle: UInt16
        var offset: Int
        var value: [UInt8]
    }

    enum Outgoing: Sendable {
        case notification([UInt8])
        case indication(id: UInt64, pdu: [UInt8])
    }

    public init(preferredMTU: Int = 517, prepareQueueLimit: Int = 128, notificationQueueLimit: Int = 32,
                indicationTimeout: Duration = .seconds(30)) {
        self.preferredMTU = min(max(preferredMTU, Self.defaultMTU), 0xFFFF)
        self.prepareQueueLimit = max(prepareQueueLimit, 1)
        self.notificationQueueLimit = max(notificationQueueLimit, 1)
        self.indicationTimeout = indicationTimeout
        self.mtu = Self.defaultMTU
    }

    // MARK: Receiving

    /// Handles one PDU from the client: a request (answered with exactly one `.send`, now or
    /// after the application answers), a command (never answered, §3.3), or a Handle Value
    /// Confirmation. PDUs of the client role (responses, notifications, indications) are not
    /// the server's and are ignored.
    public mutating func receive(_ pdu: [UInt8], database: inout GATTServerDatabase, security: LinkSecurity,
                                 now: Duration) -> [ServerAction] {
        clock = max(clock, now)
        var actions = takeEvents()
        guard !isClosed, let first = pdu.first else { return actions }
        let opcode = ATTOpcode(first)
        if opcode == .handleValueConfirmation {
            actions += receiveConfirmation(pdu)
            return actions
        }
        if opcode.isCommand {
            if let refused = changeAwarenessVerdict(pdu, database: database) { return actions + refused }
            actions += receiveCommand(pdu, database: &database, security: security)
            return actions
        }
        switch opcode.kind {
        case .response, .notification, .indication, .confirmation, .command:
            return actions
        case .request, .unknown:
            break
        }
        if pending != nil {
            if deferred.count < Self.deferredLimit { deferred.append(pdu) }
            return actions
        }
        actions += serveRequest(pdu, database: &database, security: security)
        actions += drainDeferred(database: &database, security: security)
        return actions
    }

    /// Serves one request now: first the robust-caching verdict (§2.5.2.1), then the request
    /// itself, both judged by the link and the database as they are at this moment, so a request
    /// held meanwhile is judged as if it had just arrived.
    mutating func serveRequest(_ bytes: [UInt8], database: inout GATTServerDatabase,
                               security: LinkSecurity, held: Bool = false) -> [ServerAction] {
        if let refused = changeAwarenessVerdict(bytes, database: database, held: held) { return refused }
        return handleRequest(bytes, database: &database, security: security)
    }

    /// Decodes and answers one request. Malformed → Invalid PDU, unknown → Request Not
    /// Supported, both with handle 0x0000 (§3.3).
    mutating func handleRequest(_ bytes: [UInt8], database: inout GATTServerDatabase,
                                security: LinkSecurity) -> [ServerAction] {
        guard let first = bytes.first else { return [] }
        let opcode = ATTOpcode(first)
        let request: ATTPDU
        do {
            request = try ATTPDU.decode(bytes)
        } catch {
            return [Self.error(opcode, 0, opcode.kind == .request ? .invalidPDU : .requestNotSupported)]
        }
        switch request {
        case let .exchangeMTURequest(clientMTU):
            // §3.4.2: not used on an Enhanced ATT bearer, whose ATT_MTU the L2CAP channel sets.
            if isEnhanced { return [Self.error(opcode, 0, .requestNotSupported)] }
            return exchangeMTU(clientMTU: Int(clientMTU))
        case .writeRequest, .prepareWriteRequest, .executeWriteRequest:
            return handleWriteRequest(request, database: &database, security: security)
        case .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest, .readRequest, .readBlobRequest,
             .readMultipleRequest, .readMultipleVariableRequest, .readByGroupTypeRequest:
            return startRead(PendingRequest(request: request, security: security), database: database)
        default:
            return [Self.error(opcode, 0, .requestNotSupported)]
        }
    }

    /// Requests held while the application answered an earlier one, answered in order until one
    /// needs the application again.
    mutating func drainDeferred(database: inout GATTServerDatabase, security: LinkSecurity) -> [ServerAction] {
        var actions: [ServerAction] = []
        while pending == nil, !isClosed, !deferred.isEmpty {
            let next = deferred.removeFirst()
            actions += serveRequest(next, database: &database, security: security, held: true)
        }
        return actions
    }

    /// §3.4.2: answer with our Rx MTU; ATT_MTU becomes the smaller of the two, or stays the
    /// default if the client's is below it. §3.4.2.1 allows one exchange per connection: a
    /// repeated request is still answered but does not change ATT_MTU again (updates already
    /// queued were cut to the current one).
    mutating func exchangeMTU(clientMTU: Int) -> [ServerAction] {
        var actions: [ServerAction] = [.send(ATTPDU.exchangeMTUResponse(serverMTU: UInt16(preferredMTU)).encode())]
        guard !mtuExchanged else { return actions }
        mtuExchanged = true
        let negotiated = clientMTU < Self.defaultMTU ? Self.defaultMTU : min(clientMTU, preferredMTU)
        if negotiated != mtu {
            mtu = negotiated
            actions.append(.mtuChanged(negotiated))
        }
        return actions
    }

    mutating func receiveConfirmation(_ pdu: [UInt8]) -> [ServerAction] {
        guard pdu.count == 1, let outstanding = outstandingIndication else { return [] }
        outstandingIndication = nil
        confirmed(indication: outstanding.id)
        return [.indicationConfirmed(id: outstanding.id)]
    }

    static func error(_ opcode: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> ServerAction {
        .send(ATTPDU.errorResponse(requestOpcode: opcode, handle: handle, code: code).encode())
    }

    mutating func makeID() -> UInt64 {
        defer { nextID &+= 1 }
        return nextID
    }

    // MARK: Per-connection state

    /// This connection's Client Characteristic Configuration for the characteristic whose value
    /// is at `valueHandle` (0 when never written).
    public func cccd(valueHandle: UInt16) -> UInt16 {
        client.configurations[valueHandle] ?? 0
    }

    /// Every non-zero CCCD by value handle, for keeping them with a bond (Vol 3 Part G
    /// §3.3.3.3: configurations of bonded clients persist across connections).
    public var subscriptions: [UInt16: UInt16] { client.configurations.filter { $0.value != 0 } }

    /// Restores CCCDs saved from an earlier connection of the same bonded client.
    public mutating func restoreSubscriptions(_ values: [UInt16: UInt16]) {
        for (handle, value) in values { client.configurations[handle] = value & 0x0003 }
    }

    /// This connection's Client Supported Features value (Vol 3 Part G §7.2).
    public var clientSupportedFeatures: [UInt8] { client.features }

    /// Forgets per-connection state tied to handles of a removed service: its CCCDs and any
    /// prepared writes for it. Call after `GATTServerDatabase.remove`, before handles are reused.
    public mutating func forgetHandles(in range: ClosedRange<UInt16>) {
        client.configurations = client.configurations.filter { !range.contains($0.key) }
        if preparedForRemovedService == nil, let lost = prepareQueue.first(where: { range.contains($0.handle) }) {
            preparedForRemovedService = lost.handle
        }
        prepareQueue.removeAll { range.contains($0.handle) }
        // An Execute Write waiting for the application ends at the first run left for the
        // removed service: it must not be written into one added at the same handles.
        if case let .execute(id, handle, remaining, _)? = pending?.awaiting,
           let cut = remaining.firstIndex(where: { range.contains($0.handle) }) {
            pending?.awaiting = .execute(id: id, handle: handle, remaining: Array(remaining[..<cut]), removed: remaining[cut].handle)
        }
    }

    /// Actions produced by `nextOutgoing()` (`.readyToUpdate`) since the last call that returned
    /// actions. Call after draining the update queue.
    public mutating func takeEvents() -> [ServerAction] {
        defer { events.removeAll() }
        return events
    }
}

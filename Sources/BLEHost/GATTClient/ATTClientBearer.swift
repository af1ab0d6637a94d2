import BLEWire

/// What the owner of an `ATTClientBearer` must do after each call, in order.
public enum BearerAction: Hashable, Sendable {
    /// Send this ATT PDU on the bearer's L2CAP channel (fixed channel 0x0004 on LE).
    case send([UInt8])
    /// The procedure submitted with `id` ended (exactly once per submitted id). Boxed
    /// (`indirect`): its payload is by far the largest, and inline it made every action, a
    /// notification's too, that large to copy and destroy on the way to the owner.
    indirect case complete(id: UInt64, Result<GATTOutput, GATTError>)
    /// A Handle Value Notification (or one value of a Multiple Handle Value Notification),
    /// Core spec Vol 3 Part F §3.4.7.1 / §3.4.7.4.
    case notification(handle: UInt16, value: [UInt8])
    /// A Handle Value Indication (§3.4.7.2). The bearer emits the Handle Value Confirmation
    /// `.send` right after this action, so the owner only delivers the value.
    ///
    /// Service Changed (Vol 3 Part G §7.1) arrives this way: the owner, which knows the
    /// Service Changed characteristic's value handle from discovery, decodes the value with
    /// `GATTServiceChanged.affectedRange` and invalidates its cached services in that range.
    case indication(handle: UInt16, value: [UInt8])
    /// The ATT_MTU changed (Exchange MTU finished, or `peerExchangedMTU` was called).
    case mtuChanged(Int)
    /// A PDU for the local GATT server role: a request, a command or a Handle Value
    /// Confirmation from the peer acting as client. Hand it to the server.
    case peerRequest([UInt8])
    /// The bearer is dead and the owner must disconnect the link (Vol 3 Part F §3.3.3: after a
    /// transaction timeout no more ATT PDUs may be sent on it).
    case closeBearer(ATTBearerCloseReason)
}

public enum ATTBearerCloseReason: Hashable, Sendable, CustomStringConvertible {
    /// A request went unanswered for 30 s (Vol 3 Part F §3.3.3).
    case transactionTimeout

    public var description: String {
        switch self {
        case .transactionTimeout: return "ATT transaction timeout"
        }
    }
}

/// The client role of one ATT bearer, sans-IO: bytes, procedures and the time go in, actions
/// come out. One per connection (per bearer, with EATT).
///
/// - One outstanding request (Core spec Vol 3 Part F §3.3.2): procedures queue FIFO and each
///   runs to its end before the next starts; its requests go out one at a time.
/// - Transaction timeout (§3.3.3): each request must be answered within `transactionTimeout`
///   (30 s). `nextDeadline` says when to call `expire(now:)`; if it fires, every procedure fails
///   with `.timeout`, the bearer refuses everything after, and `.closeBearer` tells the owner to
///   disconnect.
/// - Commands (Write Without Response) take no request slot and go out at once.
/// - Notifications and indications are delivered whatever is outstanding; indications are
///   confirmed at once (§3.4.7.3).
/// - A malformed PDU from the server is dropped, unless it answers our request, in which case
///   the procedure fails with `.malformedResponse`. An answer for another request (including an
///   Error Response naming another opcode) fails it with `.unexpectedResponse`.
/// - A change of the server's database (`serverDatabaseChanged`, which the owner calls for a
///   Service Changed indication, Vol 3 Part G §7.1) reaches every procedure not finished: one
///   whose answers it makes `.untrusted` ends with `.databaseChanged` instead of its output once
///   its outstanding request is answered, or at once if it has not started.
public struct ATTClientBearer: Sendable {
    /// Vol 3 Part F §3.3.3.
    public static let defaultTransactionTimeout: Duration = .seconds(30)

    /// How long a request may go unanswered; 30 s per the spec, shorter only in tests.
    public let transactionTimeout: Duration

    /// The current ATT_MTU (Vol 3 Part F §3.2.8): 23 until an MTU exchange.
    public private(set) var mtu: Int
    /// True after `close()` or a transaction timeout.
    public private(set) var isClosed = false

    private struct InFlight: Sendable {
        var id: UInt64
        var procedure: AnyGATTProcedure
        var request: ATTOpcode
        var deadline: Duration
        /// The caller cancelled; the answer is swallowed.
        var cancelled = false
        /// The outstanding request is the cancelled (or untrusted) procedure's clean-up request.
        var cleaningUp = false
        /// The server's database changed in this range (the union, if it changed more than once)
        /// while the procedure ran, and its answers are not trusted: the next answer ends it
        /// with `.databaseChanged`, after its clean-up request if it has one.
        var untrustedSince: ClosedRange<UInt16>?
    }

    private var inFlight: InFlight? {
        didSet { requestDeadline = inFlight?.deadline }
    }
    /// `inFlight`'s deadline, kept beside it: `nextDeadline` is asked after every batch of
    /// frames the host receives, and reading it through the optional copied the procedure.
    private var requestDeadline: Duration?
    private var queue: [(id: UInt64, procedure: AnyGATTProcedure)] = []
    private var mtuExchangeSubmitted = false

    public init(mtu: Int = ExchangeMTUProcedure.minimumMTU,
                transactionTimeout: Duration = ATTClientBearer.defaultTransactionTimeout) {
        self.mtu = max(ExchangeMTUProcedure.minimumMTU, mtu)
        self.transactionTimeout = transactionTimeout
    }

    /// When `expire(now:)` must be called: the outstanding request's deadline, nil if none.
    public var nextDeadline: Duration? { isClosed ? nil : requestDeadline }

    /// A request is outstanding.
    public var hasOutstandingRequest: Bool { inFlight != nil }

    /// Procedures waiting for the request slot.
    public var queuedCount: Int { queue.count }

    /// The longest value one write can carry: ATT_MTU − 3 for Write Without Response (one Write
    /// Command, Vol 3 Part F §3.4.5.3); with response, the 512-octet attribute maximum
    /// (§3.2.9), since longer-than-one-PDU values go as a long write.
    public func maximumWriteValueLength(withoutResponse: Bool) -> Int {
        withoutResponse ? mtu - 3 : attMaximumAttributeValueLength
    }

    // MARK: Submitting

    /// Queues a procedure; it starts at once if no request is outstanding. Every `id` gets
    /// exactly one `.complete`. Ids should be unique among unfinished procedures.
    public mutating func submit<P: GATTProcedure>(_ procedure: P, id: UInt64, now: Duration) -> [BearerAction] {
        guard !isClosed else { return [.complete(id: id, .failure(.bearerClosed))] }
        let procedure = AnyGATTProcedure(procedure)
        if procedure.isMTUExchange {
            // Vol 3 Part F §3.4.2.1: the client sends Exchange MTU at most once per connection.
            guard !mtuExchangeSubmitted else {
                return [.complete(id: id, .failure(.invalidArgument("Exchange MTU may be sent only once per connection")))]
            }
            mtuExchangeSubmitted = true
        }
        queue.append((id, procedure))
        return startQueued(now: now)
    }

    /// Sends a command (a Write Command, or a Signed Write Command the caller signed) at once,
    /// ahead of any queued procedure: commands have no response, so they do not wait for the
    /// request slot (Vol 3 Part F §3.3.2); only the send order is kept.
    ///
    /// Sends nothing if the bearer is closed (§3.3.3), if `pdu` is not a command, or if it is
    /// longer than ATT_MTU; `writeWithoutResponse(handle:value:)` checks and says why.
    public mutating func sendCommand(_ pdu: ATTPDU) -> [BearerAction] {
        (try? checkedCommand(pdu)) ?? []
    }

    /// Write Without Response, Vol 3 Part G §4.9.1: sends a Write Command, or throws
    /// `.bearerClosed` / `.invalidArgument` (value longer than ATT_MTU − 3). Finished once the
    /// send action is performed.
    public mutating func writeWithoutResponse(handle: UInt16, value: [UInt8]) throws(GATTError) -> [BearerAction] {
        try checkedCommand(WriteWithoutResponse.pdu(handle: handle, value: value, mtu: mtu))
    }

    /// Signed Write Without Response, Vol 3 Part G §4.9.2: sends a Signed Write Command signed
    /// with `key` and `counter` (see `SignedWriteWithoutResponse`), or throws `.bearerClosed` /
    /// `.invalidArgument` (value longer than ATT_MTU − 15, a key that is not 16 octets). The
    /// caller has used up `counter` either way.
    public mutating func signedWriteWithoutResponse(handle: UInt16, value: [UInt8], key: [UInt8], counter: UInt32) throws(GATTError) -> [BearerAction] {
        guard !isClosed else { throw .bearerClosed }
        return try checkedCommand(SignedWriteWithoutResponse.pdu(handle: handle, value: value, mtu: mtu, key: key, counter: counter))
    }

    private func checkedCommand(_ pdu: ATTPDU) throws(GATTError) -> [BearerAction] {
        guard !isClosed else { throw .bearerClosed }
        guard pdu.opcode.kind == .command else {
            throw .invalidArgument("\(pdu.opcode) is not a command")
        }
        let bytes = pdu.encode()
        guard bytes.count <= mtu else {
            throw .invalidArgument("\(pdu.opcode) of \(bytes.count) octets exceeds ATT_MTU \(mtu)")
        }
        return [.send(bytes)]
    }

    /// Records the ATT_MTU the local server agreed when it answered the peer's Exchange MTU
    /// Request: min(client Rx MTU, server Rx MTU), at least 23. The MTU belongs to the bearer,
    /// whichever side asked (Vol 3 Part F §3.4.2.2).
    @discardableResult
    public mutating func peerExchangedMTU(clientMTU: Int, serverMTU: Int) -> [BearerAction] {
        let value = max(ExchangeMTUProcedure.minimumMTU, min(clientMTU, serverMTU))
        guard value != mtu, !isClosed else { return [] }
        mtu = value
        return [.mtuChanged(value)]
    }

    // MARK: Cancelling and closing

    /// Cancels a procedure. A queued one is removed; an outstanding one keeps the request slot
    /// until its request is answered (ATT cannot abort a request), then the answer is dropped —
    /// after a clean-up request if the procedure needs one (a long write sends Execute Write
    /// cancel). Either way `.complete(id, .failure(.cancelled))` is reported now.
    public mutating func cancel(id: UInt64) -> [BearerAction] {
        if let index = queue.firstIndex(where: { $0.id == id }) {
            queue.remove(at: index)
            return [.complete(id: id, .failure(.cancelled))]
        }
        if var current = inFlight, current.id == id, !current.cancelled {
            current.cancelled = true
            inFlight = current
            return [.complete(id: id, .failure(.cancelled))]
        }
        return []
    }

    // MARK: The server's database changing

    /// The server's database changed in `range`: the owner recognised a Service Changed
    /// indication (Vol 3 Part G §7.1) and the bearer was told right after confirming it, before
    /// any later answer. Each procedure not finished says what that means to it
    /// (`GATTProcedure.serverDatabaseChanged`): the running one, if `.untrusted`, ends with
    /// `.databaseChanged` once its outstanding request is answered (whatever the answer: it may
    /// come from what is now another attribute), after a clean-up request if it needs one (a
    /// long write cancels its queued writes); a queued one that is `.untrusted` ends now, having
    /// sent nothing, so a write the caller aimed at the old layout never goes out.
    public mutating func serverDatabaseChanged(_ range: ClosedRange<UInt16>) -> [BearerAction] {
        guard !isClosed else { return [] }
        if var current = inFlight, !current.cancelled {
            if let earlier = current.untrustedSince {
                current.untrustedSince = min(earlier.lowerBound, range.lowerBound)...max(earlier.upperBound, range.upperBound)
            } else if current.procedure.serverDatabaseChanged(in: range, requestOutstanding: true) == .untrusted {
                current.untrustedSince = range
            }
            inFlight = current
        }
        guard !queue.isEmpty else { return [] }
        var actions: [BearerAction] = []
        var kept: [(id: UInt64, procedure: AnyGATTProcedure)] = []
        for var waiting in queue {
            if waiting.procedure.serverDatabaseChanged(in: range, requestOutstanding: false) == .untrusted {
                actions.append(.complete(id: waiting.id, .failure(.databaseChanged(range))))
            } else {
                kept.append(waiting)
            }
        }
        queue = kept
        return actions
    }

    /// The link is gone: every procedure fails with `.bearerClosed`.
    public mutating func close() -> [BearerAction] {
        guard !isClosed else { return [] }
        return failAll(.bearerClosed)
    }

    /// Fires the transaction timeout if `now` has reached `nextDeadline`.
    public mutating func expire(now: Duration) -> [BearerAction] {
        guard !isClosed, let current = inFlight, now >= current.deadline else { return [] }
        return failAll(.timeout) + [.closeBearer(.transactionTimeout)]
    }

    private mutating func failAll(_ error: GATTError) -> [BearerAction] {
        isClosed = true
        var actions: [BearerAction] = []
        if let current = inFlight, !current.cancelled {
            actions.append(.complete(id: current.id, .failure(error)))
        }
        inFlight = nil
        actions += queue.map { .complete(id: $0.id, .failure(error)) }
        queue = []
        return actions
    }

    // MARK: Receiving

    /// One ATT PDU from the peer.
    public mutating func receive(_ bytes: [UInt8], now: Duration) -> [BearerAction] {
        receive(bytes[...], now: now)
    }

    /// One ATT PDU from the peer, read where it lies (the L2CAP payload of the ACL packet it
    /// came in): only a notification's or indication's value is copied out.
    public mutating func receive(_ bytes: ArraySlice<UInt8>, now: Duration) -> [BearerAction] {
        guard !isClosed, let first = bytes.first else { return [] }
        if let update = Self.update(in: bytes) {
            guard case .indication = update else { return [update] }
            return [update, .send(Self.confirmationPDU)]
        }
        let opcode = ATTOpcode(first)
        switch opcode.kind {
        case .notification:
            switch try? ATTPDU.decode(Array(bytes)) {
            case let .multipleHandleValueNotification(tuples)?:
                return tuples.map { .notification(handle: $0.handle, value: $0.value) }
            default:
                return []
            }
        case .indication:
            return []
        case .request, .command, .confirmation:
            return [.peerRequest(Array(bytes))]
        case .unknown:
            // §3.4.1.1: an unknown request gets Request Not Supported from the server; §3.3: an
            // unknown command is ignored.
            return opcode.isCommand ? [] : [.peerRequest(Array(bytes))]
        case .response:
            return receiveAnswer(Array(bytes), now: now)
        }
    }

    /// The Handle Value Confirmation (Vol 3 Part F §3.4.7.3), the same bytes every time.
    static let confirmationPDU: [UInt8] = ATTPDU.handleValueConfirmation.encode()

    /// A Handle Value Notification (§3.4.7.1) or Indication (§3.4.7.2) read in place: the handle,
    /// then the value to the end. Nil for any other PDU, or one too short for its handle (which
    /// `ATTPDU.decode` refuses too). The one a server sends per update; it changes nothing in
    /// the bearer (no request is answered), so `ATTClientBearerSet` takes it without scheduling.
    static func update(in bytes: ArraySlice<UInt8>) -> BearerAction? {
        let s = bytes.startIndex
        guard bytes.count >= 3 else { return nil }
        let opcode = bytes[s]
        guard opcode == ATTOpcode.handleValueNotification.rawValue || opcode == ATTOpcode.handleValueIndication.rawValue else {
            return nil
        }
        let handle = UInt16(bytes[s + 1]) | UInt16(bytes[s + 2]) << 8
        let value = Array(bytes[(s + 3)...])
        return opcode == ATTOpcode.handleValueNotification.rawValue
            ? .notification(handle: handle, value: value)
            : .indication(handle: handle, value: value)
    }

    private mutating func receiveAnswer(_ bytes: [UInt8], now: Duration) -> [BearerAction] {
        // A response with no request outstanding is not ours to act on (§3.3.2).
        guard var current = inFlight else { return [] }
        let answer = check(bytes, answering: current.request)

        if current.cancelled || current.untrustedSince != nil {
            if !current.cleaningUp, let cleanup = current.procedure.cleanupAfterCancel() {
                current.cleaningUp = true
                let actions = send(cleanup, for: current, now: now)
                return inFlight == nil ? actions + startQueued(now: now) : actions
            }
            inFlight = nil
            guard !current.cancelled, let changed = current.untrustedSince else { return startQueued(now: now) }
            // Whatever the answer says, it answers a request about the database before the change.
            return [.complete(id: current.id, .failure(.databaseChanged(changed)))] + startQueued(now: now)
        }

        let step: ProcedureStep<GATTOutput>
        switch answer {
        case let .success(pdu): step = current.procedure.receive(pdu)
        case let .failure(error): step = current.procedure.answerFailed(error)
        }
        var actions = apply(step, for: current, now: now)
        if inFlight == nil { actions += startQueued(now: now) }
        return actions
    }

    /// Decodes an answer and checks it answers `request` (Vol 3 Part F §3.3.2, §3.4.1.1).
    private func check(_ bytes: [UInt8], answering request: ATTOpcode) -> Result<ATTPDU, GATTError> {
        let expected = request.responseOpcode ?? .errorResponse
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU.decode(bytes)
        } catch {
            return .failure(.malformedResponse(error))
        }
        if case let .errorResponse(failed, _, _) = pdu {
            return failed == request ? .success(pdu) : .failure(.unexpectedResponse(expected: expected, got: .errorResponse))
        }
        return pdu.opcode == expected ? .success(pdu) : .failure(.unexpectedResponse(expected: expected, got: pdu.opcode))
    }

    // MARK: Running procedures

    private mutating func startQueued(now: Duration) -> [BearerAction] {
        var actions: [BearerAction] = []
        while inFlight == nil, !queue.isEmpty {
            let (id, procedure) = queue.removeFirst()
            var started = InFlight(id: id, procedure: procedure, request: .errorResponse, deadline: now)
            started.procedure.mtu = mtu
            let step = started.procedure.start()
            actions += apply(step, for: started, now: now)
        }
        return actions
    }

    /// Carries out a procedure's step; leaves `inFlight` set only if a request went out.
    private mutating func apply(_ step: ProcedureStep<GATTOutput>, for current: InFlight, now: Duration) -> [BearerAction] {
        switch step {
        case let .send(pdu):
            return send(pdu, for: current, now: now)
        case let .done(output):
            inFlight = nil
            var actions: [BearerAction] = []
            if case let .mtu(newMTU) = output, newMTU != mtu {
                mtu = newMTU
                actions.append(.mtuChanged(newMTU))
            }
            actions.append(.complete(id: current.id, .success(output)))
            return actions
        case let .failed(error):
            inFlight = nil
            return [.complete(id: current.id, .failure(error))]
        }
    }

    private mutating func send(_ pdu: ATTPDU, for current: InFlight, now: Duration) -> [BearerAction] {
        let bytes = pdu.encode()
        var problem: String?
        if pdu.opcode.kind != .request {
            problem = "\(current.procedure.name) tried to send \(pdu.opcode), which is not a request"
        } else if bytes.count > mtu {
            problem = "\(pdu.opcode) of \(bytes.count) octets exceeds ATT_MTU \(mtu)"
        }
        if let problem {
            inFlight = nil
            if current.cancelled { return [] }
            let error = current.untrustedSince.map(GATTError.databaseChanged) ?? .invalidArgument(problem)
            return [.complete(id: current.id, .failure(error))]
        }
        var next = current
        next.request = pdu.opcode
        next.deadline = now + transactionTimeout
        inFlight = next
        return [.send(bytes)]
    }
}

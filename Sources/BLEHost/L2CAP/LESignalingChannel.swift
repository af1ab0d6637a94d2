import BLEWire

/// What the LE signaling channel asks its owner to do.
public enum SignalingAction: Sendable, Hashable {
    /// Send this C-frame payload on CID 0x0005.
    case send([UInt8])
    /// Central: the peer's Connection Parameter Update Request was accepted (the accepting
    /// response is the `.send` just before this); issue HCI LE Connection Update with these values.
    case updateConnectionParameters(LESignalingCommand.ConnectionParameters, identifier: UInt8)
    /// Peripheral: the central answered our Connection Parameter Update Request. A Command Reject
    /// of it (a central that does not support the procedure) reads as not accepted.
    case connectionParameterUpdateResult(accepted: Bool)
    /// Send this K-frame payload on the peer's dynamic channel `cid` (Vol 3 Part A §3.4.3).
    case frame(cid: UInt16, [UInt8])
    /// Something happened on a credit-based channel of the link.
    case channel(CreditBasedChannelEvent)
}

/// Our side of the LE signaling channel, for either role. Sans-IO: the owner hands in each C-frame
/// payload received on CID 0x0005 and performs the returned actions. Core spec Vol 3 Part A §4.
///
/// Handled: connection parameter updates in both directions (§4.20, §4.21) and LE credit-based
/// channels (§4.6, §4.7, §4.22–§4.24; `LESignalingChannel+CreditBased.swift`) and enhanced credit-based
/// channels (§4.25–§4.28; `LESignalingChannel+Enhanced.swift`): a request on an SPSM nobody
/// listens on is refused with "SPSM not supported", a Disconnection Request for a CID that is
/// not open gets Command Reject "invalid CID". Anything unknown, or a command the role must not receive, gets Command Reject "command
/// not understood" (§4.1) with the command's identifier; responses and rejects that do not answer
/// a request of ours are dropped, never answered, so two stacks cannot reject each other forever.
public struct LESignalingChannel: Sendable {
    public enum Role: Sendable, Hashable {
        case central, peripheral
    }

    /// Our MTU_sig: the largest C-frame payload we accept. 23 is the LE minimum (Vol 3 Part A §4)
    /// and holds every command this stack understands; a larger frame gets Command Reject
    /// "signaling MTU exceeded".
    public var signalingMTU: UInt16 = 23

    /// Central: whether valid Connection Parameter Update Requests are accepted. When false every
    /// request is answered "rejected" (for a host that manages the parameters itself).
    public var acceptsConnectionParameterUpdates = true

    /// The identifier of our outstanding Connection Parameter Update Request, if any. The owner
    /// runs the response timer (RTX, Vol 3 Part A §6.2.1) and calls `cancelPendingRequest()` when
    /// it fires.
    public private(set) var pendingParameterUpdateIdentifier: UInt8?

    private var lastIdentifier: UInt8 = 0
    var creditBased = CreditBasedChannelSet()

    public init() {}

    /// The next identifier for a request of ours: 1...255 and around, never 0, which is illegal,
    /// and never one a request of ours still waits under (Vol 3 Part A §4: a response is matched
    /// to its request by identifier). Flow Control Credits take identifiers too, so a busy
    /// channel goes round all 255 well within a request's 30 s.
    public mutating func nextIdentifier() -> UInt8 {
        // At most 64 connects, their disconnects and one parameter update wait: a free one exists.
        for _ in 0..<Int(UInt8.max) {
            lastIdentifier = lastIdentifier == UInt8.max ? 1 : lastIdentifier + 1
            if !isPending(lastIdentifier) { break }
        }
        return lastIdentifier
    }

    private func isPending(_ id: UInt8) -> Bool {
        id == pendingParameterUpdateIdentifier || creditBased.connects[id] != nil || creditBased.disconnects[id] != nil
            || creditBased.enhancedConnects[id] != nil || creditBased.reconfigures[id] != nil
    }

    /// Forget the outstanding request, e.g. when its response timer expires.
    public mutating func cancelPendingRequest() {
        pendingParameterUpdateIdentifier = nil
    }

    /// Peripheral: asks the central for new parameters (§4.20). Returns the C-frame payload to
    /// send; the answer arrives as `.connectionParameterUpdateResult`. A new request replaces an
    /// outstanding one (only the newest response is reported).
    public mutating func requestConnectionParameterUpdate(_ parameters: LESignalingCommand.ConnectionParameters) -> [UInt8] {
        let id = nextIdentifier()
        pendingParameterUpdateIdentifier = id
        return LESignalingCommand.connectionParameterUpdateRequest(identifier: id, parameters).encode()
    }

    /// Handles one C-frame payload received on the LE signaling channel.
    /// `context` holds the listeners and the link's security, for credit-based connection requests.
    public mutating func receive(_ payload: [UInt8], role: Role, context: CreditBasedContext = CreditBasedContext()) -> [SignalingAction] {
        // The header, as far as it is there: a reject needs the identifier.
        let code = payload.first
        let identifier = payload.count >= 2 ? payload[1] : 0
        let isReplyCode = code.map(Self.replyCodes.contains) ?? true

        if payload.count > Int(signalingMTU) {
            guard !isReplyCode, identifier != 0 else { return [] }
            return [Self.reject(identifier, .signalingMTUExceeded(actualMTU: signalingMTU))]
        }
        let command: LESignalingCommand
        do {
            command = try LESignalingCommand(pdu: payload)
        } catch {
            // Malformed: reject a request we can name; never answer a malformed reply.
            guard !isReplyCode, identifier != 0 else { return [] }
            return [Self.reject(identifier, .notUnderstood)]
        }
        // Identifier 0 is illegal (§4): there is nothing to answer it with.
        guard identifier != 0 else { return [] }

        if let actions = receiveCreditBased(command, context: context) { return actions }
        switch command {
        case let .commandReject(id, _):
            guard role == .peripheral, id == pendingParameterUpdateIdentifier else { return [] }
            pendingParameterUpdateIdentifier = nil
            return [.connectionParameterUpdateResult(accepted: false)]

        case let .connectionParameterUpdateResponse(id, result):
            guard role == .peripheral, id == pendingParameterUpdateIdentifier else { return [] }
            pendingParameterUpdateIdentifier = nil
            return [.connectionParameterUpdateResult(accepted: result == .accepted)]

        case let .connectionParameterUpdateRequest(id, parameters):
            // Only a central takes this request; a peripheral "shall" reject it. §4.20.
            guard role == .central else { return [Self.reject(id, .notUnderstood)] }
            guard acceptsConnectionParameterUpdates, parameters.isValid else {
                return [.send(LESignalingCommand.connectionParameterUpdateResponse(identifier: id, result: .rejected).encode())]
            }
            // The response goes first, then the link-layer procedure. §4.20.
            return [
                .send(LESignalingCommand.connectionParameterUpdateResponse(identifier: id, result: .accepted).encode()),
                .updateConnectionParameters(parameters, identifier: id),
            ]

        case let .disconnectionRequest(id, destination, source):
            // No credit-based channel is ever open here. §4.6: unknown destination CID.
            return [Self.reject(id, .invalidCID(localCID: destination, remoteCID: source))]

        case .disconnectionResponse, .leCreditBasedConnectionResponse, .creditBasedConnectionResponse,
             .flowControlCredit, .leCreditBasedConnectionRequest, .creditBasedConnectionRequest,
             .creditBasedReconfigureRequest, .creditBasedReconfigureResponse:
            // The credit-based handlers answer these (+CreditBased, +Enhanced).
            return []

        case let .unknown(code, id, _):
            if Self.replyCodes.contains(code) { return [] }
            return [Self.reject(id, .notUnderstood)]
        }
    }

    /// Codes of responses and rejects: unsolicited ones are dropped, never rejected.
    static let replyCodes: Set<UInt8> = [
        LESignalingCommand.Code.commandReject, LESignalingCommand.Code.disconnectionResponse,
        LESignalingCommand.Code.connectionParameterUpdateResponse, LESignalingCommand.Code.leCreditBasedConnectionResponse,
        LESignalingCommand.Code.creditBasedConnectionResponse, LESignalingCommand.Code.creditBasedReconfigureResponse,
    ]

    private static func reject(_ identifier: UInt8, _ reason: LESignalingCommand.RejectReason) -> SignalingAction {
        .send(LESignalingCommand.commandReject(identifier: identifier, reason: reason).encode())
    }
}

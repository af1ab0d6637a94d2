import BLEWire
import BLEHost

/// Fuzz targets for L2CAP: the basic frame (Core spec Vol 3 Part A §3.1), the LE signaling
/// commands (§4) and the `LESignalingChannel` state machine that answers them.
enum L2CAPFuzzTargets {
    // MARK: Frames and signaling commands

    /// The input as an L2CAP frame and as a signaling C-frame payload. Both codecs keep every
    /// byte (lengths must match exactly, unknown codes and reasons are preserved), so anything
    /// that decodes must re-encode to exactly the input.
    static func l2capSignaling(_ data: [UInt8]) {
        if let frame = try? L2CAPFrame(bytes: data) {
            FuzzCheck.require(frame.encode() == data, "L2CAP frame round trip: \(fuzzHex(data)) → \(fuzzHex(frame.encode()))")
            FuzzCheck.require(L2CAPFrame.pduLength(prefix: data) == data.count, "L2CAPFrame.pduLength disagrees with the decoded frame")
            FuzzCheck.require(!frame.description.isEmpty, "empty L2CAP frame description")
            if frame.channelID == L2CAPChannel.leSignaling { checkSignalingCommand(frame.payload) }
        } else if data.count >= 4, let declared = L2CAPFrame.pduLength(prefix: data) {
            FuzzCheck.require(declared != data.count, "L2CAPFrame rejected a frame whose length field matches: \(fuzzHex(data))")
        }
        checkSignalingCommand(data)
    }

    static func checkSignalingCommand(_ payload: [UInt8]) {
        guard let command = try? LESignalingCommand(pdu: payload) else { return }
        FuzzCheck.require(command.encode() == payload,
                          "LE signaling round trip: \(fuzzHex(payload)) → \(fuzzHex(command.encode())) (\(command))")
        FuzzCheck.require(command.code == payload[0] && command.identifier == payload[1],
                          "LE signaling code/identifier differ from the header of \(fuzzHex(payload))")
        if case let .connectionParameterUpdateRequest(_, parameters) = command {
            FuzzCheck.require(!parameters.description.isEmpty, "empty connection parameters description")
        }
    }

    // MARK: The LE signaling channel

    /// `LESignalingChannel` in either role fed arbitrary and well-formed-looking C-frames, with
    /// our own parameter update requests interleaved. It must never trap, and:
    /// - every C-frame it sends decodes, is a response or Command Reject carrying the
    ///   identifier of the command it answers, fits the LE minimum MTU_sig (23), and it sends at
    ///   most one per received C-frame;
    /// - it never answers a response/reject code or identifier 0 (§4: no reject loops);
    /// - a central accepts only valid parameters, answering "accepted" just before asking for the
    ///   update, and a peripheral reports a result only for its outstanding request, once.
    static func leSignalingChannel(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var channel = LESignalingChannel()
        let role: LESignalingChannel.Role = input.bool() ? .central : .peripheral
        let setup = input.u8()
        channel.acceptsConnectionParameterUpdates = setup & 1 == 0
        if setup & 2 != 0 { channel.signalingMTU = 23 + UInt16(setup >> 2) }
        var steps = 0

        while !input.isAtEnd, steps < 128 {
            steps += 1
            let payload: [UInt8]
            switch input.u8() % 8 {
            case 0, 1:
                payload = input.chunk()
            case 2, 3:
                // A header with a correct length field, so the fuzzer reaches the command bodies.
                let code = input.u8()
                let identifier = input.u8()
                let body = input.take(Int(input.u8() % 24))
                payload = [code, identifier, UInt8(body.count), 0] + body
            case 4:
                // A response naming our outstanding request (or a random one).
                let identifier = input.bool() ? (channel.pendingParameterUpdateIdentifier ?? input.u8()) : input.u8()
                if input.bool() {
                    payload = LESignalingCommand.connectionParameterUpdateResponse(
                        identifier: identifier, result: .init(rawValue: UInt16(input.u8() & 1))).encode()
                } else {
                    payload = LESignalingCommand.commandReject(identifier: identifier, reason: .notUnderstood).encode()
                }
            case 5:
                let p = LESignalingCommand.ConnectionParameters(
                    intervalMin: input.u16() % 3300, intervalMax: input.u16() % 3300, latency: input.u16() % 600, timeout: input.u16() % 3300)
                payload = LESignalingCommand.connectionParameterUpdateRequest(identifier: input.u8(), p).encode()
            case 6:
                let p = LESignalingCommand.ConnectionParameters(
                    intervalMin: input.u16(), intervalMax: input.u16(), latency: input.u16(), timeout: input.u16())
                let request = channel.requestConnectionParameterUpdate(p)
                let pending = channel.pendingParameterUpdateIdentifier
                FuzzCheck.require(pending != nil && pending != 0, "request did not leave a non-zero pending identifier")
                FuzzCheck.require((try? LESignalingCommand(pdu: request)) == .connectionParameterUpdateRequest(identifier: pending ?? 0, p),
                                  "our Connection Parameter Update Request does not decode to what was asked")
                continue
            default:
                channel.cancelPendingRequest()
                FuzzCheck.require(channel.pendingParameterUpdateIdentifier == nil, "cancelPendingRequest left a pending identifier")
                continue
            }
            receive(&channel, payload, role: role)
        }
    }

    private static func receive(_ channel: inout LESignalingChannel, _ payload: [UInt8], role: LESignalingChannel.Role) {
        let pendingBefore = channel.pendingParameterUpdateIdentifier
        let actions = channel.receive(payload, role: role)
        let code = payload.first
        let identifier = payload.count >= 2 ? payload[1] : 0
        let incoming = try? LESignalingCommand(pdu: payload)
        let replyCodes: Set<UInt8> = [0x01, 0x07, 0x13, 0x15, 0x18, 0x1A]
        let context = "\(role) received \(fuzzHex(payload))"

        let sends = actions.compactMap { action -> [UInt8]? in
            if case let .send(bytes) = action { return bytes }
            return nil
        }
        FuzzCheck.require(sends.count <= 1, "\(context): \(sends.count) C-frames sent for one")
        if identifier == 0 || code.map(replyCodes.contains) ?? true {
            FuzzCheck.require(sends.isEmpty, "\(context): answered a reply code or identifier 0 with \(sends.map { fuzzHex($0) })")
        }
        for bytes in sends {
            FuzzCheck.require(bytes.count <= 23, "\(context): sent \(bytes.count) bytes, over the LE minimum MTU_sig")
            guard let response = try? LESignalingCommand(pdu: bytes) else {
                FuzzCheck.fail("\(context): sent a C-frame that does not decode: \(fuzzHex(bytes))")
                continue
            }
            FuzzCheck.require(response.identifier == identifier, "\(context): answered with identifier \(response.identifier)")
            FuzzCheck.require(replyCodes.contains(response.code), "\(context): sent a non-reply code 0x\(response.code)")
            if case .commandReject(_, .signalingMTUExceeded) = response {
                FuzzCheck.require(payload.count > Int(channel.signalingMTU), "\(context): MTU exceeded for a frame within MTU_sig")
            }
        }

        for (index, action) in actions.enumerated() {
            switch action {
            case .send:
                break
            case let .updateConnectionParameters(parameters, id):
                FuzzCheck.require(role == .central, "\(context): a peripheral was told to update the connection")
                FuzzCheck.require(parameters.isValid && channel.acceptsConnectionParameterUpdates, "\(context): accepted \(parameters)")
                FuzzCheck.require(incoming == .connectionParameterUpdateRequest(identifier: id, parameters),
                                  "\(context): update does not carry the requested parameters")
                let accepted = LESignalingCommand.connectionParameterUpdateResponse(identifier: id, result: .accepted).encode()
                FuzzCheck.require(index > 0 && actions[index - 1] == .send(accepted), "\(context): update not preceded by the accepting response")
            case .connectionParameterUpdateResult:
                FuzzCheck.require(role == .peripheral, "\(context): a central got a parameter update result")
                FuzzCheck.require(pendingBefore != nil && pendingBefore == identifier, "\(context): result without a matching pending request")
                FuzzCheck.require(channel.pendingParameterUpdateIdentifier == nil, "\(context): request still pending after its result")
            case .frame, .channel:
                // Nothing listens and nothing was opened: no credit-based channel can exist.
                FuzzCheck.fail("\(context): credit-based channel action \(action) with no listener")
            }
        }
        if channel.pendingParameterUpdateIdentifier != pendingBefore {
            FuzzCheck.require(actions.contains { if case .connectionParameterUpdateResult = $0 { return true } else { return false } },
                              "\(context): pending request dropped without a result")
        }
    }
}

/// Fuzz target for the Security Manager's PDU codec (Core spec Vol 3 Part H §3): any bytes give a
/// PDU or a typed error, and what decodes re-encodes to bytes that decode to the same PDU.
enum SMPFuzzTargets {
    static func smpPDU(_ data: [UInt8]) {
        guard let pdu = try? SMPPDU.decode(data) else { return }
        let again = try? SMPPDU.decode(pdu.encode())
        FuzzCheck.require(again == pdu, "SMP round trip: \(fuzzHex(data)) → \(pdu) → \(fuzzHex(pdu.encode()))")
        if case .unknown = pdu {} else {
            FuzzCheck.require(pdu.encode().count == data.count, "SMP \(pdu.code) re-encoded to another length")
        }
    }
}

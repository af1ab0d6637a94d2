import BLEWire
import BLEHost

/// Fuzz targets for the Attribute Protocol codec (Core spec Vol 3 Part F §3.3–§3.4) and the
/// client bearer with its GATT procedures (Vol 3 Part F §3.3.2–§3.3.3, Vol 3 Part G §4).
enum ATTFuzzTargets {
    // MARK: PDU codec

    /// Any PDU that decodes re-encodes to bytes that decode to the same PDU, and that encoding
    /// is a fixed point. It is the input itself except where the codec normalises a UUID: a
    /// 128-bit UUID on the Bluetooth base (which ATT sends as 16 bits, §3.2.1) in Find
    /// Information Response format 0x02 or a Read By (Group) Type Request.
    static func attPDU(_ data: [UInt8]) {
        guard let pdu = try? ATTPDU.decode(data) else { return }
        FuzzCheck.require(pdu.opcode == ATTOpcode(data[0]), "ATT decoded opcode \(pdu.opcode) from 0x\(data[0])")
        let encoded = pdu.encode()
        switch Result(catching: { () throws(WireError) in try ATTPDU.decode(encoded) }) {
        case let .success(again):
            FuzzCheck.require(again == pdu, "ATT round trip changed \(pdu) into \(again); input \(fuzzHex(data))")
            FuzzCheck.require(again.encode() == encoded, "ATT encoding not stable for \(fuzzHex(data))")
        case let .failure(error):
            FuzzCheck.fail("re-encoded ATT PDU does not decode (\(error)): input \(fuzzHex(data)) encoded \(fuzzHex(encoded))")
        }
        if !normalisesUUID(pdu, data), !dropsCutLength(pdu, data, encoded) {
            FuzzCheck.require(encoded == data, "ATT PDU not re-encoded byte for byte: \(fuzzHex(data)) → \(fuzzHex(encoded))")
        }
        FuzzCheck.require(!pdu.opcode.description.isEmpty, "empty ATT opcode description")
    }

    /// A Read Multiple Variable Length Response cut inside its last Length field (§3.4.4.12):
    /// the lone octet is dropped, so the encoding is one octet shorter.
    private static func dropsCutLength(_ pdu: ATTPDU, _ data: [UInt8], _ encoded: [UInt8]) -> Bool {
        guard case .readMultipleVariableResponse = pdu else { return false }
        return encoded.count + 1 == data.count && Array(data.prefix(encoded.count)) == encoded
    }

    private static func normalisesUUID(_ pdu: ATTPDU, _ data: [UInt8]) -> Bool {
        switch pdu {
        case let .findInformationResponse(entries):
            return data.count > 1 && data[1] == 0x02 && entries.allSatisfy { $0.uuid.uint16 != nil }
        case let .readByTypeRequest(_, _, uuid), let .readByGroupTypeRequest(_, _, uuid):
            return data.count == 21 && uuid.uint16 != nil
        default:
            return false
        }
    }

    // MARK: Client bearer

    /// A GATT client bearer with procedures queued on it, fed arbitrary PDUs, responses shaped
    /// after its outstanding request, notifications, cancellations, timeouts and MTU changes.
    /// Checked after every call (see `BearerHarness`), and at the end every submitted procedure
    /// must have completed exactly once.
    static func attClientBearer(_ data: [UInt8]) {
        var harness = BearerHarness(FuzzInput(data))
        harness.run()
    }
}

/// The state the bearer target keeps beside the bearer, to check it.
struct BearerHarness {
    var input: FuzzInput
    var bearer: ATTClientBearer
    var now: Duration = .zero
    var nextID: UInt64 = 1
    var submitted: [UInt64: Expectation] = [:]
    var completed: Set<UInt64> = []
    /// The last request the bearer sent, to shape answers after.
    var lastRequest: ATTPDU?
    var trackedMTU: Int

    /// What a procedure's successful output must satisfy.
    enum Expectation {
        case range(ClosedRange<UInt16>)
        case mtu(clientMTU: Int)
        case other
    }

    init(_ input: FuzzInput) {
        var input = input
        let mtus = [23, 27, 64, 185, 247, 517]
        let mtu = mtus[Int(input.u8()) % mtus.count]
        bearer = ATTClientBearer(mtu: mtu, transactionTimeout: .seconds(30))
        trackedMTU = bearer.mtu
        self.input = input
    }

    mutating func run() {
        var steps = 0
        while !input.isAtEnd, steps < 200 {
            steps += 1
            let op = input.u8()
            switch op % 12 {
            case 0, 1, 2:
                submitProcedure()
            case 3, 4, 5:
                guard let request = lastRequest, bearer.hasOutstandingRequest else {
                    receive(input.chunk())
                    continue
                }
                receive(answer(to: request))
            case 6:
                receive(input.chunk())
            case 7:
                let opcodes: [UInt8] = [0x1B, 0x1D, 0x23, 0x1E, 0x12, 0x52, 0xD2, 0x3F]
                receive([opcodes[Int(input.u8()) % opcodes.count]] + input.chunk())
            case 8:
                let id = UInt64(input.u8()) % nextID
                let wasOutstanding = bearer.hasOutstandingRequest
                absorb(bearer.cancel(id: id), call: "cancel(\(id))", wasOutstanding: wasOutstanding)
            case 9:
                now += .seconds(Int(input.u8() % 40))
                let wasOutstanding = bearer.hasOutstandingRequest
                absorb(bearer.expire(now: now), call: "expire", wasOutstanding: wasOutstanding, mayClose: true)
            case 10 where op & 0x80 != 0:
                signedWrite()
            case 10:
                let handle = input.u16()
                let value = input.chunk()
                let wasOutstanding = bearer.hasOutstandingRequest
                let wasClosed = bearer.isClosed
                if let actions = try? bearer.writeWithoutResponse(handle: handle, value: value) {
                    FuzzCheck.require(!wasClosed, "writeWithoutResponse succeeded on a closed bearer")
                    FuzzCheck.require(actions == [.send(ATTPDU.writeCommand(handle: handle, value: value).encode())],
                                      "writeWithoutResponse did not send exactly its Write Command")
                    absorb(actions, call: "writeWithoutResponse", wasOutstanding: wasOutstanding)
                } else {
                    FuzzCheck.require(wasClosed || value.count > bearer.mtu - 3,
                                      "writeWithoutResponse of \(value.count) octets refused at ATT_MTU \(bearer.mtu)")
                }
            default:
                if op & 0xF0 == 0 {
                    let wasOutstanding = bearer.hasOutstandingRequest
                    absorb(bearer.close(), call: "close", wasOutstanding: wasOutstanding)
                } else {
                    let wasOutstanding = bearer.hasOutstandingRequest
                    let client = Int(input.u16()), server = Int(input.u16())
                    absorb(bearer.peerExchangedMTU(clientMTU: client, serverMTU: server), call: "peerExchangedMTU",
                           wasOutstanding: wasOutstanding)
                }
            }
        }
        // The link goes down: whatever is still pending must end now, and then every id has
        // ended exactly once.
        let wasOutstanding = bearer.hasOutstandingRequest
        absorb(bearer.close(), call: "final close", wasOutstanding: wasOutstanding)
        let missing = Set(submitted.keys).subtracting(completed)
        FuzzCheck.require(missing.isEmpty, "procedures \(missing.sorted()) never completed")
        FuzzCheck.require(!bearer.hasOutstandingRequest && bearer.queuedCount == 0, "closed bearer still holds procedures")
    }

    /// A Signed Write Command (Vol 3 Part G §4.9.2) with an arbitrary key and counter: sent only
    /// when it fits ATT_MTU, and then exactly the command whose signature checks out.
    mutating func signedWrite() {
        let handle = input.u16()
        let value = input.chunk()
        let key = input.bool() ? input.take(16) : input.take(Int(input.u8() % 20))
        let counter = UInt32(input.u16()) << 16 | UInt32(input.u16())
        let wasOutstanding = bearer.hasOutstandingRequest
        let wasClosed = bearer.isClosed
        if let actions = try? bearer.signedWriteWithoutResponse(handle: handle, value: value, key: key, counter: counter) {
            FuzzCheck.require(!wasClosed, "signedWriteWithoutResponse succeeded on a closed bearer")
            guard actions.count == 1, case let .send(bytes) = actions[0],
                  case let .signedWriteCommand(h, v, signature)? = try? ATTPDU.decode(bytes) else {
                return FuzzCheck.fail("signedWriteWithoutResponse did not send one Signed Write Command: \(actions)")
            }
            FuzzCheck.require(h == handle && v == value, "the signed write names another handle or value")
            FuzzCheck.require(ATTSignature.counter(of: signature) == counter, "the signature carries another counter")
            FuzzCheck.require(ATTSignature.isValid(signature, of: Array(bytes.dropLast(ATTSignature.length)), key: key),
                              "the signed write's own signature does not verify")
            absorb(actions, call: "signedWriteWithoutResponse", wasOutstanding: wasOutstanding)
        } else {
            FuzzCheck.require(wasClosed || value.count > SignedWriteWithoutResponse.maximumValueLength(mtu: bearer.mtu) || key.count != 16,
                              "signedWriteWithoutResponse of \(value.count) octets refused at ATT_MTU \(bearer.mtu)")
        }
    }

    // MARK: Submitting

    mutating func submitProcedure() {
        let id = nextID
        nextID += 1
        let kind = input.u8() % 15
        let range = handleRange()
        let expectation: Expectation
        let wasOutstanding = bearer.hasOutstandingRequest
        let actions: [BearerAction]
        switch kind {
        case 0:
            let clientMTU = Int(input.u16() % 600)
            expectation = .mtu(clientMTU: clientMTU)
            actions = bearer.submit(ExchangeMTUProcedure(clientMTU: clientMTU), id: id, now: now)
        case 1:
            expectation = .range(range)
            actions = bearer.submit(DiscoverAllPrimaryServicesProcedure(range: range), id: id, now: now)
        case 2:
            expectation = .range(range)
            actions = bearer.submit(DiscoverPrimaryServiceByUUIDProcedure(uuid: uuid(), range: range), id: id, now: now)
        case 3:
            expectation = .range(range)
            actions = bearer.submit(FindIncludedServicesProcedure(range: range), id: id, now: now)
        case 4:
            expectation = .range(range)
            let filter: BluetoothUUID? = input.bool() ? uuid() : nil
            actions = bearer.submit(DiscoverCharacteristicsProcedure(range: range, uuid: filter), id: id, now: now)
        case 5:
            expectation = .range(range)
            actions = bearer.submit(DiscoverDescriptorsProcedure(range: range), id: id, now: now)
        case 6:
            expectation = .other
            actions = bearer.submit(ReadProcedure(handle: input.u16()), id: id, now: now)
        case 7:
            expectation = .other
            let offset: UInt16 = input.bool() ? 0 : input.u16() % 600
            actions = bearer.submit(ReadLongProcedure(handle: input.u16(), offset: offset), id: id, now: now)
        case 8:
            expectation = .range(range)
            actions = bearer.submit(ReadByUUIDProcedure(uuid: uuid(), range: range), id: id, now: now)
        case 9:
            expectation = .other
            actions = bearer.submit(ReadMultipleProcedure(handles: handles()), id: id, now: now)
        case 10:
            expectation = .other
            actions = bearer.submit(ReadMultipleVariableProcedure(handles: handles()), id: id, now: now)
        case 11:
            expectation = .other
            actions = bearer.submit(WriteProcedure(handle: input.u16(), value: input.chunk()), id: id, now: now)
        case 12:
            expectation = .other
            let offset: UInt16 = input.bool() ? 0 : input.u16() % 600
            actions = bearer.submit(LongWriteProcedure(handle: input.u16(), value: input.longChunk(maximum: 600), offset: offset),
                                    id: id, now: now)
        case 14:
            expectation = .other
            actions = bearer.submit(ReadValuesProcedure(handles: handles(), fallback: input.bool()), id: id, now: now)
        default:
            expectation = .other
            var writes: [ATTHandleValue] = []
            for _ in 0..<Int(input.u8() % 4) { writes.append(ATTHandleValue(handle: input.u16(), value: input.chunk())) }
            actions = bearer.submit(ReliableWriteProcedure(writes), id: id, now: now)
        }
        submitted[id] = expectation
        absorb(actions, call: "submit(\(kind))", wasOutstanding: wasOutstanding)
    }

    mutating func handleRange() -> ClosedRange<UInt16> {
        let a = input.u16(), b = input.u16()
        if input.bool() { return 0x0001...0xFFFF }
        return min(a, b)...max(a, b)
    }

    mutating func uuid() -> BluetoothUUID {
        if input.bool() { return BluetoothUUID(input.u16()) }
        return (try? BluetoothUUID(littleEndian: input.take(16))) ?? BluetoothUUID(0x180D)
    }

    mutating func handles() -> [UInt16] {
        (0..<Int(input.u8() % 6)).map { _ in input.u16() }
    }

    // MARK: Answers shaped after the outstanding request

    /// An answer to `request`: an Error Response for it, its response opcode with arbitrary
    /// parameters, or a response built from fields near the request's (handles from its range,
    /// echoes of a Prepare Write), so that procedures get past their first answer.
    mutating func answer(to request: ATTPDU) -> [UInt8] {
        let opcode = request.opcode
        switch input.u8() % 5 {
        case 0:
            let code: UInt8 = input.bool() ? 0x0A : input.u8()
            return ATTPDU.errorResponse(requestOpcode: opcode, handle: input.u16(), code: ATTErrorCode(code)).encode()
        case 1:
            return [(opcode.responseOpcode ?? .errorResponse).rawValue] + input.chunk()
        default:
            return structuredAnswer(to: request)
        }
    }

    mutating func structuredAnswer(to request: ATTPDU) -> [UInt8] {
        let mtu = bearer.mtu
        switch request {
        case .exchangeMTURequest:
            return ATTPDU.exchangeMTUResponse(serverMTU: input.u16()).encode()
        case let .readByGroupTypeRequest(start, _, _):
            var handle = start
            var entries: [ATTGroupData] = []
            let wide = input.bool()
            for _ in 0..<(1 + Int(input.u8() % 4)) {
                handle = step(handle, by: Int(input.u8() % 8))
                let end = input.bool() ? 0xFFFF : step(handle, by: Int(input.u8() % 32))
                entries.append(ATTGroupData(handle: handle, endGroupHandle: end, value: wide ? input.take(16) : input.take(2)))
                handle = step(end, by: 1)
            }
            return ATTPDU.readByGroupTypeResponse(entries).encode()
        case let .readByTypeRequest(start, _, type):
            var handle = start
            var pairs: [ATTHandleValue] = []
            let length = Int(input.u8() % 24)
            for _ in 0..<(1 + Int(input.u8() % 4)) {
                handle = step(handle, by: Int(input.u8() % 8))
                let value: [UInt8]
                if type == GATTUUID.characteristic {
                    let valueHandle = step(handle, by: 1)
                    value = [input.u8(), UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + (input.bool() ? input.take(2) : input.take(16))
                } else if type == GATTUUID.include {
                    value = input.take(input.bool() ? 6 : 4)
                } else {
                    value = input.take(length)
                }
                pairs.append(ATTHandleValue(handle: handle, value: value))
                handle = step(handle, by: 1)
            }
            return ATTPDU.readByTypeResponse(pairs).encode()
        case let .findInformationRequest(start, _):
            var handle = start
            var entries: [ATTHandleUUID] = []
            for _ in 0..<(1 + Int(input.u8() % 4)) {
                handle = step(handle, by: Int(input.u8() % 4))
                entries.append(ATTHandleUUID(handle: handle, uuid: uuid()))
                handle = step(handle, by: 1)
            }
            return ATTPDU.findInformationResponse(entries).encode()
        case let .findByTypeValueRequest(start, _, _, _):
            var handle = start
            var ranges: [ATTHandleRange] = []
            for _ in 0..<(1 + Int(input.u8() % 4)) {
                handle = step(handle, by: Int(input.u8() % 8))
                let end = input.bool() ? 0xFFFF : step(handle, by: Int(input.u8() % 32))
                ranges.append(ATTHandleRange(foundHandle: handle, groupEndHandle: end))
                handle = step(end, by: 1)
            }
            return ATTPDU.findByTypeValueResponse(ranges).encode()
        case .readRequest:
            return ATTPDU.readResponse(value: input.take(input.bool() ? mtu - 1 : Int(input.u8()) % mtu)).encode()
        case .readBlobRequest:
            return ATTPDU.readBlobResponse(value: input.take(input.bool() ? mtu - 1 : Int(input.u8()) % mtu)).encode()
        case .readMultipleRequest:
            return ATTPDU.readMultipleResponse(values: input.chunk()).encode()
        case let .readMultipleVariableRequest(handles):
            let count = max(1, handles.count + Int(input.u8() % 3) - 1)
            return ATTPDU.readMultipleVariableResponse((0..<count).map { _ in ATTLengthValue(value: input.take(Int(input.u8() % 8))) }).encode()
        case .writeRequest:
            return ATTPDU.writeResponse.encode()
        case let .prepareWriteRequest(handle, offset, value):
            if input.u8() & 3 != 0 { return ATTPDU.prepareWriteResponse(handle: handle, offset: offset, value: value).encode() }
            return ATTPDU.prepareWriteResponse(handle: handle, offset: offset, value: input.chunk()).encode()
        case .executeWriteRequest:
            return ATTPDU.executeWriteResponse.encode()
        default:
            return [(request.opcode.responseOpcode ?? .errorResponse).rawValue] + input.chunk()
        }
    }

    private func step(_ handle: UInt16, by delta: Int) -> UInt16 {
        UInt16(min(Int(UInt16.max), Int(handle) + delta))
    }

    // MARK: Checking

    mutating func receive(_ bytes: [UInt8]) {
        now += .milliseconds(10)
        let wasOutstanding = bearer.hasOutstandingRequest
        let kind = bytes.first.map { ATTOpcode($0).kind }
        let actions = bearer.receive(bytes, now: now)
        absorb(actions, call: "receive(\(fuzzHex(bytes)))", wasOutstanding: wasOutstanding, received: bytes, receivedKind: kind)
    }

    /// Checks one call's actions and the bearer's state after it.
    mutating func absorb(_ actions: [BearerAction], call: String, wasOutstanding: Bool,
                         received: [UInt8]? = nil, receivedKind: ATTOpcode.Kind? = nil, mayClose: Bool = false) {
        var requestsSent = 0
        for (index, action) in actions.enumerated() {
            switch action {
            case let .send(bytes):
                guard let pdu = try? ATTPDU.decode(bytes) else {
                    FuzzCheck.fail("\(call): sent a PDU that does not decode: \(fuzzHex(bytes))")
                    continue
                }
                FuzzCheck.require(bytes.count <= trackedMTU, "\(call): sent \(bytes.count) octets over ATT_MTU \(trackedMTU)")
                switch pdu.opcode.kind {
                case .request:
                    requestsSent += 1
                    lastRequest = pdu
                case .command, .confirmation:
                    break
                default:
                    FuzzCheck.fail("\(call): the client sent \(pdu.opcode)")
                }
            case let .complete(id, result):
                FuzzCheck.require(submitted[id] != nil, "\(call): completed id \(id), never submitted")
                FuzzCheck.require(!completed.contains(id), "\(call): id \(id) completed twice")
                completed.insert(id)
                if case let .success(output) = result, let expectation = submitted[id] {
                    check(output, expectation, call: call)
                }
            case let .notification(handle, value):
                FuzzCheck.require(receivedKind == .notification, "\(call): notification 0x\(handle) from a non-notification")
                _ = value
            case .indication:
                FuzzCheck.require(receivedKind == .indication, "\(call): indication from a non-indication")
                FuzzCheck.require(index + 1 < actions.count && actions[index + 1] == .send([ATTOpcode.handleValueConfirmation.rawValue]),
                                  "\(call): indication not followed by its confirmation")
            case let .mtuChanged(value):
                FuzzCheck.require(value >= ExchangeMTUProcedure.minimumMTU, "\(call): ATT_MTU changed to \(value)")
                trackedMTU = value
            case let .peerRequest(bytes):
                FuzzCheck.require(bytes == received, "\(call): peer request is not the received PDU")
                let kind = bytes.first.map { ATTOpcode($0).kind }
                FuzzCheck.require(kind == .request || kind == .command || kind == .confirmation || kind == .unknown,
                                  "\(call): a server→client PDU went to the server role")
            case .closeBearer:
                FuzzCheck.require(mayClose, "\(call): asked to close the bearer")
            }
        }
        FuzzCheck.require(requestsSent <= 1, "\(call): \(requestsSent) requests sent in one call")
        if requestsSent == 1 && wasOutstanding {
            FuzzCheck.require(receivedKind == .response, "\(call): a second request went out while one was outstanding")
        }
        FuzzCheck.require(bearer.hasOutstandingRequest || bearer.queuedCount == 0,
                          "\(call): \(bearer.queuedCount) procedures queued with the request slot free")
        FuzzCheck.require((bearer.nextDeadline != nil) == (bearer.hasOutstandingRequest && !bearer.isClosed),
                          "\(call): deadline \(String(describing: bearer.nextDeadline)) with outstanding=\(bearer.hasOutstandingRequest)")
        FuzzCheck.require(bearer.mtu == trackedMTU, "\(call): bearer MTU \(bearer.mtu), reported \(trackedMTU)")
    }

    /// What a successful output must satisfy, given what the procedure was asked for.
    func check(_ output: GATTOutput, _ expectation: Expectation, call: String) {
        switch (output, expectation) {
        case let (.mtu(value), .mtu(clientMTU)):
            FuzzCheck.require(value >= 23 && value <= max(23, clientMTU), "\(call): MTU \(value) for a client MTU of \(clientMTU)")
        case let (.services(services), .range(range)):
            var previous: UInt16?
            for s in services {
                FuzzCheck.require(range.contains(s.handleRange.lowerBound), "\(call): service \(s) outside \(range)")
                if let previous { FuzzCheck.require(s.handleRange.lowerBound > previous, "\(call): services out of order") }
                previous = s.handleRange.upperBound
            }
        case let (.includedServices(included), .range(range)):
            for s in included {
                FuzzCheck.require(range.contains(s.declarationHandle), "\(call): include at 0x\(s.declarationHandle) outside \(range)")
            }
        case let (.characteristics(characteristics), .range(range)):
            for c in characteristics {
                FuzzCheck.require(range.contains(c.declarationHandle) && c.declarationHandle <= c.endHandle
                                  && c.endHandle <= range.upperBound,
                                  "\(call): characteristic \(c) outside \(range)")
            }
        case let (.descriptors(descriptors), .range(range)):
            for d in descriptors {
                FuzzCheck.require(range.contains(d.handle), "\(call): descriptor 0x\(d.handle) outside \(range)")
            }
        case let (.handleValues(values), .range(range)):
            for v in values {
                FuzzCheck.require(range.contains(v.handle), "\(call): value at 0x\(v.handle) outside \(range)")
            }
        case (.mtu, _), (_, .mtu):
            FuzzCheck.fail("\(call): output \(output) does not match the procedure")
        default:
            break
        }
    }
}

/// The server's verification of Signed Write Commands (Core spec Vol 3 Part F §3.4.5.4,
/// Vol 3 Part C §10.4.2): arbitrary PDUs, and correctly signed ones, as they are or with one
/// bit flipped, against a database and a client's signing state taken from the input.
enum ATTSignedWriteFuzzTarget {
    /// The client's CSRK in every run.
    static let key: [UInt8] = Array(1...16)

    /// Input: flags (encrypted link, authenticated CSRK, a last counter or none, signing key
    /// present), the last counter, then a mode: 0 an arbitrary PDU; 1 a signed write built from
    /// a handle choice, a value and a counter; 2 the same with one bit flipped. Checked: never a
    /// trap; anything accepted decodes as a Signed Write Command to an attribute that takes it,
    /// over an unencrypted link, verifies under the key and carries a counter above the last;
    /// a built write that should pass does, a flipped one never does; applying it never sends a
    /// PDU and leaves a stored value equal to what was written.
    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        var database = GATTServerDatabase(deviceName: "F", appearance: 0)
        guard let service = try? database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xF00D), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xF001), properties: [.read, .authenticatedSignedWrites],
                                         permissions: [.read, .writeSigned], value: [0], maximumLength: 20),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xF002), properties: [.authenticatedSignedWrites],
                                         permissions: [.writeSigned, .writeAuthenticated], value: [0]),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xF003), properties: [.authenticatedSignedWrites],
                                         permissions: [.writeSigned], value: nil, maximumLength: 8),
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xF004), properties: [.writeWithoutResponse], permissions: [.write], value: [0]),
        ])) else { return FuzzCheck.fail("the fixture database did not build") }
        let handles = service.characteristics.map(\.valueHandle)
        let flags = input.u8()
        let security = LinkSecurity(encrypted: flags & 1 != 0, hasLongTermKey: true)
        let last: UInt32? = flags & 4 != 0 ? UInt32(input.u16()) << 16 | UInt32(input.u16()) : nil
        let signer: ATTPeerSigningKey? = flags & 8 != 0 ? nil
            : ATTPeerSigningKey(key: key, lastCounter: last, authenticated: flags & 2 != 0, keySize: 16)
        let mode = input.u8() % 3
        let pdu: [UInt8]
        var shouldPass = false
        var built: (handle: UInt16, value: [UInt8], counter: UInt32)?
        if mode == 0 {
            pdu = input.rest()
        } else {
            let choice = Int(input.u8())
            let handle = choice < 200 ? handles[choice % handles.count] : input.u16()
            let value = input.chunk()
            let counter = UInt32(input.u16()) << 16 | UInt32(input.u16())
            guard var signed = try? SignedWriteWithoutResponse.pdu(handle: handle, value: value, mtu: 300, key: key, counter: counter).encode() else {
                return FuzzCheck.require(value.count > 285, "a \(value.count)-octet signed write did not build")
            }
            built = (handle, value, counter)
            if mode == 2 {
                let bit = Int(input.u16()) % (signed.count * 8)
                signed[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            } else {
                let takes: Bool
                switch handles.firstIndex(of: handle) {
                case 0?: takes = value.count <= 20
                case 1?: takes = flags & 2 != 0
                case 2?: takes = value.count <= 8
                default: takes = false
                }
                shouldPass = takes && !security.encrypted && signer != nil && (last.map { counter > $0 } ?? true)
            }
            pdu = signed
        }
        var server = ATTServer()
        let result = server.verifySignedWrite(pdu, signingKey: signer, database: database, security: security)
        if shouldPass {
            FuzzCheck.require((try? result.get()) != nil, "a good signed write was refused: \(result), input \(fuzzHex(data))")
        }
        if mode == 2, case .success = result {
            FuzzCheck.fail("a signed write with a flipped bit was accepted: \(fuzzHex(pdu))")
        }
        guard case let .success(write) = result else { return }
        guard case let .signedWriteCommand(handle, value, signature)? = try? ATTPDU.decode(pdu) else {
            return FuzzCheck.fail("accepted something that is not a Signed Write Command: \(fuzzHex(pdu))")
        }
        FuzzCheck.require(write.handle == handle && write.value == value, "the verified write is not the PDU's")
        FuzzCheck.require(ATTSignature.isValid(signature, of: Array(pdu.dropLast(ATTSignature.length)), key: key), "accepted a bad MAC")
        FuzzCheck.require(ATTSignature.counter(of: signature) == write.counter, "the verified counter is not the signature's")
        FuzzCheck.require(last.map { write.counter > $0 } ?? true, "accepted counter \(write.counter) after \(String(describing: last))")
        FuzzCheck.require(!security.encrypted && signer != nil, "accepted on an encrypted link or without a key")
        FuzzCheck.require(handles.prefix(3).contains(handle), "accepted a write to 0x\(String(handle, radix: 16)), which takes no signed writes")
        if let built { FuzzCheck.require(built.handle == handle && built.value == value && built.counter == write.counter, "accepted a write other than built") }
        let actions = server.applySignedWrite(write, database: &database, security: security, now: .seconds(1))
        for action in actions {
            if case .send = action { FuzzCheck.fail("a signed write was answered: \(actions)") }
        }
        if handle == handles[0] {
            FuzzCheck.require(database.value(forHandle: handle) == value, "the stored value is not what was written")
        }
    }
}

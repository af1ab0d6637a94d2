import BLEWire

/// The largest attribute value ATT allows, Core spec Vol 3 Part F §3.2.9.
public let attMaximumAttributeValueLength = 512

extension ProcedureStep where Output == Void {
    /// The step after the answer to a Write Request (Vol 3 Part F §3.4.5.1-2): done on the Write
    /// Response, failed on an Error Response or any other PDU.
    static func answeringWriteRequest(_ pdu: ATTPDU) -> ProcedureStep<Void> {
        switch ATTAnswer(pdu, to: .writeRequest) {
        case let .invalid(error):
            return .failed(error)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .writeRequest))
        case .response:
            return .done(())
        }
    }
}

/// Write Characteristic Value (Core spec Vol 3 Part G §4.9.3) — also Write Characteristic
/// Descriptors (§4.12.3), e.g. a Client Characteristic Configuration descriptor (§3.3.3.3).
///
/// One Write Request; the value must fit in it (ATT_MTU − 3, Vol 3 Part F §3.4.5.1). Longer
/// values need `LongWriteProcedure`.
public struct WriteProcedure: GATTProcedure {
    public typealias Output = Void
    public var mtu: Int
    public let handle: UInt16
    public let value: [UInt8]

    public init(handle: UInt16, value: [UInt8], mtu: Int = 23) {
        self.handle = handle
        self.value = value
        self.mtu = mtu
    }

    /// Writes a Client Characteristic Configuration descriptor: `.notifications` (0x0001),
    /// `.indications` (0x0002) or `.off` (0x0000). Core spec Vol 3 Part G §4.12.3, §3.3.3.3.
    public static func clientConfiguration(descriptorHandle: UInt16, _ configuration: ClientCharacteristicConfiguration,
                                           mtu: Int = 23) -> WriteProcedure {
        WriteProcedure(handle: descriptorHandle, value: configuration.bytes, mtu: mtu)
    }

    public mutating func start() -> ProcedureStep<Void> {
        guard value.count <= mtu - 3 else {
            return .failed(.invalidArgument("\(value.count)-octet value exceeds ATT_MTU − 3 = \(mtu - 3); use a long write"))
        }
        return .send(.writeRequest(handle: handle, value: value))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Void> {
        .answeringWriteRequest(pdu)
    }

    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(CollectionOfOne(handle), changedIn: range)
    }

    public static func gattOutput(_ output: Void) -> GATTOutput { .none }
}

/// Write Without Response, Core spec Vol 3 Part G §4.9.1: a Write Command (Vol 3 Part F
/// §3.4.5.3). Not a procedure — a command has no response, so it does not take the request
/// slot; `ATTClientBearer.writeWithoutResponse` sends it at once, in order with everything else.
public enum WriteWithoutResponse {
    /// The command PDU, or `.invalidArgument` if the value exceeds ATT_MTU − 3.
    public static func pdu(handle: UInt16, value: [UInt8], mtu: Int) throws(GATTError) -> ATTPDU {
        guard value.count <= mtu - 3 else {
            throw .invalidArgument("\(value.count)-octet value exceeds ATT_MTU − 3 = \(mtu - 3) for a Write Command")
        }
        return .writeCommand(handle: handle, value: value)
    }
}

/// Signed Write Without Response, Core spec Vol 3 Part G §4.9.2: a Signed Write Command (Vol 3
/// Part F §3.4.5.4) whose Authentication Signature (`ATTSignature`, Vol 3 Part H §2.4.5) lets a
/// bonded server check who wrote without the link being encrypted. Like Write Without Response
/// it is a command, not a procedure; `ATTClientBearer.signedWriteWithoutResponse` sends it.
///
/// The caller supplies the CSRK it gave this server in pairing and the SignCounter to sign with,
/// and must never sign two writes with the same counter (the server refuses a counter it has
/// seen, Vol 3 Part C §10.4.2): it keeps the counter with the bond and increments it per write.
/// On a link that is already encrypted the client uses a plain Write Command instead (§4.9.2).
public enum SignedWriteWithoutResponse {
    /// The longest value one Signed Write Command carries: ATT_MTU − 15 (opcode, handle and the
    /// 12-octet signature, §4.9.2). A long value cannot be written signed.
    public static func maximumValueLength(mtu: Int) -> Int { mtu - 3 - ATTSignature.length }

    /// The command PDU, signed with `key` (the CSRK, least significant octet first) and
    /// `counter`; `.invalidArgument` if the value exceeds ATT_MTU − 15 or the key is not 16
    /// octets.
    public static func pdu(handle: UInt16, value: [UInt8], mtu: Int, key: [UInt8], counter: UInt32) throws(GATTError) -> ATTPDU {
        let limit = maximumValueLength(mtu: mtu)
        guard value.count <= limit else {
            throw .invalidArgument("\(value.count)-octet value exceeds ATT_MTU − 15 = \(limit) for a Signed Write Command")
        }
        var w = ByteWriter()
        w.u8(ATTOpcode.signedWriteCommand.rawValue)
        w.u16(handle)
        w.append(value)
        let signature: [UInt8]
        do {
            signature = try ATTSignature.sign(w.bytes, key: key, counter: counter)
        } catch {
            throw .invalidArgument("signing key: \(error)")
        }
        return .signedWriteCommand(handle: handle, value: value, signature: signature)
    }
}

/// Write Long Characteristic Values (Core spec Vol 3 Part G §4.9.4) — also Write Long
/// Characteristic Descriptors (§4.12.4).
///
/// Prepare Write Requests of ATT_MTU − 5 octets at increasing offsets, each response checked to
/// echo the handle, offset and value sent, then Execute Write (flags 0x01). On an Error Response,
/// a malformed answer or an echo mismatch the client sends Execute Write with flags 0x00 to drop
/// the server's queue and, once that is answered, fails with the original error
/// (`.reliableWriteEchoMismatch` for a mismatch).
public struct LongWriteProcedure: GATTProcedure {
    public typealias Output = Void
    public var mtu: Int
    private var engine: PreparedWriteEngine

    public init(handle: UInt16, value: [UInt8], offset: UInt16 = 0, mtu: Int = 23) {
        self.mtu = mtu
        self.engine = PreparedWriteEngine(writes: [(handle, offset, value)])
    }

    public mutating func start() -> ProcedureStep<Void> { engine.start(mtu: mtu) }
    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Void> { engine.receive(pdu) }
    public mutating func answerFailed(_ error: GATTError) -> ProcedureStep<Void> { engine.answerFailed(error) }
    public mutating func cleanupAfterCancel() -> ATTPDU? { engine.cleanupAfterCancel() }
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(engine.writes.map(\.handle), changedIn: range)
    }
    public static func gattOutput(_ output: Void) -> GATTOutput { .none }
}

/// Reliable Writes, Core spec Vol 3 Part G §4.9.5.
///
/// Prepares every value (split at ATT_MTU − 5 if needed), verifying each Prepare Write Response
/// echoes exactly what was sent, then Execute Write (flags 0x01) so the server applies all of
/// them together. An echo mismatch cancels (Execute Write flags 0x00) and fails with
/// `.reliableWriteEchoMismatch`; an Error Response cancels and fails with that error.
public struct ReliableWriteProcedure: GATTProcedure {
    public typealias Output = Void
    public var mtu: Int
    private var engine: PreparedWriteEngine

    public init(_ writes: [ATTHandleValue], mtu: Int = 23) {
        self.mtu = mtu
        self.engine = PreparedWriteEngine(writes: writes.map { ($0.handle, 0, $0.value) })
    }

    public init(writes: [(handle: UInt16, value: [UInt8])], mtu: Int = 23) {
        self.init(writes.map { ATTHandleValue(handle: $0.handle, value: $0.value) }, mtu: mtu)
    }

    public mutating func start() -> ProcedureStep<Void> { engine.start(mtu: mtu) }
    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Void> { engine.receive(pdu) }
    public mutating func answerFailed(_ error: GATTError) -> ProcedureStep<Void> { engine.answerFailed(error) }
    public mutating func cleanupAfterCancel() -> ATTPDU? { engine.cleanupAfterCancel() }
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(engine.writes.map(\.handle), changedIn: range)
    }
    public static func gattOutput(_ output: Void) -> GATTOutput { .none }
}

/// The queued-write machine shared by long and reliable writes (Vol 3 Part F §3.4.6).
struct PreparedWriteEngine: Sendable {
    struct Chunk: Sendable {
        var handle: UInt16
        var offset: UInt16
        var value: [UInt8]
    }

    enum Phase: Sendable {
        case idle
        case preparing(Int)
        case executing
        /// Execute Write (cancel) is outstanding; fail with this once it is answered.
        case cancelling(GATTError)
        /// Cancelled by the caller; nothing more to report.
        case abandoned
    }

    let writes: [(handle: UInt16, offset: UInt16, value: [UInt8])]
    private var chunks: [Chunk] = []
    private var phase = Phase.idle

    init(writes: [(handle: UInt16, offset: UInt16, value: [UInt8])]) {
        self.writes = writes
    }

    mutating func start(mtu: Int) -> ProcedureStep<Void> {
        guard !writes.isEmpty else { return .failed(.invalidArgument("no values to write")) }
        let size = mtu - 5
        guard size > 0 else { return .failed(.invalidArgument("ATT_MTU \(mtu) leaves no room for a Prepare Write value")) }
        chunks = []
        for w in writes {
            guard Int(w.offset) + w.value.count <= attMaximumAttributeValueLength else {
                return .failed(.invalidArgument("offset \(w.offset) + \(w.value.count) octets exceeds the 512-octet attribute maximum"))
            }
            if w.value.isEmpty {
                chunks.append(Chunk(handle: w.handle, offset: w.offset, value: []))
            }
            for start in stride(from: 0, to: w.value.count, by: size) {
                let end = min(start + size, w.value.count)
                chunks.append(Chunk(handle: w.handle, offset: w.offset + UInt16(start), value: Array(w.value[start..<end])))
            }
        }
        return prepare(0)
    }

    private mutating func prepare(_ index: Int) -> ProcedureStep<Void> {
        phase = .preparing(index)
        let c = chunks[index]
        return .send(.prepareWriteRequest(handle: c.handle, offset: c.offset, value: c.value))
    }

    private mutating func cancel(because error: GATTError) -> ProcedureStep<Void> {
        phase = .cancelling(error)
        return .send(.executeWriteRequest(flags: .cancel))
    }

    mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Void> {
        switch phase {
        case let .preparing(index):
            let sent = chunks[index]
            switch ATTAnswer(pdu, to: .prepareWriteRequest) {
            case let .invalid(error):
                return cancel(because: error)
            case let .error(code, handle):
                return cancel(because: .att(code: code, handle: handle, request: .prepareWriteRequest))
            case let .response(.prepareWriteResponse(handle, offset, value)):
                guard handle == sent.handle, offset == sent.offset, value == sent.value else {
                    return cancel(because: .reliableWriteEchoMismatch(handle: sent.handle))
                }
                if index + 1 < chunks.count { return prepare(index + 1) }
                phase = .executing
                return .send(.executeWriteRequest(flags: .write))
            case let .response(other):
                return cancel(because: .unexpected(other, for: .prepareWriteRequest))
            }
        case .executing:
            phase = .idle
            switch ATTAnswer(pdu, to: .executeWriteRequest) {
            case let .invalid(error):
                return .failed(error)
            case let .error(code, handle):
                return .failed(.att(code: code, handle: handle, request: .executeWriteRequest))
            case .response:
                return .done(())
            }
        case let .cancelling(error):
            // Whatever the server says to the cancel, the original error is what the caller needs.
            phase = .idle
            return .failed(error)
        case .idle, .abandoned:
            return .failed(.unexpected(pdu, for: .executeWriteRequest))
        }
    }

    mutating func answerFailed(_ error: GATTError) -> ProcedureStep<Void> {
        switch phase {
        case .preparing:
            return cancel(because: error)
        case let .cancelling(original):
            phase = .idle
            return .failed(original)
        default:
            phase = .idle
            return .failed(error)
        }
    }

    mutating func cleanupAfterCancel() -> ATTPDU? {
        guard case .preparing = phase else { return nil }
        phase = .abandoned
        return .executeWriteRequest(flags: .cancel)
    }
}

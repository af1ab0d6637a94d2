import BLEWire

/// What a procedure wants next: send a request and wait for its answer, or stop.
public enum ProcedureStep<Output> {
    /// Send this request; the next PDU `receive` sees is its answer.
    case send(ATTPDU)
    /// The procedure finished.
    case done(Output)
    /// The procedure failed; nothing more is sent for it.
    case failed(GATTError)

    public func map<T>(_ transform: (Output) -> T) -> ProcedureStep<T> {
        switch self {
        case let .send(pdu): return .send(pdu)
        case let .done(output): return .done(transform(output))
        case let .failed(error): return .failed(error)
        }
    }
}

extension ProcedureStep: Sendable where Output: Sendable {}
extension ProcedureStep: Equatable where Output: Equatable {}

/// A GATT client procedure (Core spec Vol 3 Part G §4.3–§4.12) as a sans-IO state machine.
///
/// The procedure never sees bytes or clocks: `start()` gives the first request, and each answer
/// (the response, or an Error Response for that request) goes to `receive`, which gives the next
/// request or the end. The bearer (`ATTClientBearer`) guarantees one outstanding request
/// (Vol 3 Part F §3.3.2), checks the answer's opcode, decodes it, and runs the 30 s timeout.
///
/// `start()` returns a step rather than a bare PDU so that a procedure can end without sending
/// anything (an empty descriptor range) or reject its arguments (a value too long for the MTU).
public protocol GATTProcedure: Sendable {
    associatedtype Output: Sendable

    /// The ATT_MTU requests are sized by (Vol 3 Part F §3.2.8). Given at init for standalone
    /// use; the bearer overwrites it with its current MTU right before `start()`, so a procedure
    /// queued behind an MTU exchange uses the new value.
    var mtu: Int { get set }

    mutating func start() -> ProcedureStep<Output>
    mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Output>

    /// Called by the bearer instead of `receive` when the caller cancelled the procedure while a
    /// request was outstanding (ATT cannot abort a request, Vol 3 Part F §3.3.2) and the answer
    /// to that request has arrived; likewise when a change of the server's database made its
    /// answers `.untrusted`. Return a final request that undoes server-side state — a queued
    /// long write returns Execute Write with flags 0x00 (§3.4.6.3) — or nil. Its answer is
    /// swallowed. Default: nil.
    mutating func cleanupAfterCancel() -> ATTPDU?

    /// Called by the bearer instead of `receive` when the answer to the outstanding request was
    /// malformed or was not an answer to it. Lets a procedure that left state on the server undo
    /// it (a long write sends Execute Write cancel, then fails with `error`). Default:
    /// `.failed(error)`.
    mutating func answerFailed(_ error: GATTError) -> ProcedureStep<Output>

    /// Called by the bearer when the server's database changed in `range` (a Service Changed
    /// indication, Vol 3 Part G §7.1) while the procedure was submitted and not finished:
    /// `requestOutstanding` when one of its requests waits for an answer, false when it has not
    /// started. Says whether its answers can still be used (see `GATTDatabaseChangeEffect`).
    /// Default: `.untrusted`, the safe answer for a procedure that cannot tell.
    mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect

    /// Wraps the output for the type-erased bearer.
    static func gattOutput(_ output: Output) -> GATTOutput
}

extension GATTProcedure {
    public mutating func cleanupAfterCancel() -> ATTPDU? { nil }
    public mutating func answerFailed(_ error: GATTError) -> ProcedureStep<Output> { .failed(error) }
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .untrusted
    }
}

/// What a change of the server's database (Core spec Vol 3 Part G §7.1: the handles from the
/// Service Changed value's start to its end may now name other attributes, or none) means to a
/// procedure that was running or waiting to run when the client learned of it.
public enum GATTDatabaseChangeEffect: Hashable, Sendable {
    /// Nothing it named lies in the range (attributes outside it keep their handles, §7.1), or
    /// its output does not depend on the database (Exchange MTU): it goes on as it is.
    case unaffected
    /// It takes the change into account itself and goes on: a discovery walks the changed part
    /// of its range again, dropping what it found there and the answer to a request that was
    /// outstanding (which may describe the database before or after the change).
    case coveredAgain
    /// What it named may be another attribute now: it is not started, or once its outstanding
    /// request is answered (after the clean-up `cleanupAfterCancel` asks for, such as Execute
    /// Write cancel for a long write) it ends with `.databaseChanged`, whatever the answer.
    case untrusted

    /// How many changes one procedure covers again (`.coveredAgain`) before its answers are
    /// `.untrusted`: each costs requests, and a server whose database keeps changing must not
    /// keep the client asking.
    public static let coverAgainLimit = 3

    /// `.untrusted` when any of `handles` lies in `range`, else `.unaffected`: the effect on a
    /// procedure that reads or writes those handles.
    public static func on<S: Sequence>(_ handles: S, changedIn range: ClosedRange<UInt16>) -> GATTDatabaseChangeEffect
        where S.Element == UInt16 {
        handles.contains { range.contains($0) } ? .untrusted : .unaffected
    }
}

/// The output of any procedure, as the bearer reports it.
public enum GATTOutput: Hashable, Sendable {
    case services([GATTService])
    case includedServices([GATTIncludedService])
    case characteristics([GATTCharacteristic])
    /// A targeted characteristic search (`FindCharacteristicProcedure`): what it saw and where.
    case characteristicSearch(GATTCharacteristicSearch)
    case descriptors([GATTDescriptor])
    /// Read, read long, read multiple (concatenated values).
    case value([UInt8])
    /// Read multiple variable length: one value per handle.
    case values([[UInt8]])
    /// Read using characteristic UUID.
    case handleValues([ATTHandleValue])
    /// Exchange MTU: the ATT_MTU now in effect.
    case mtu(Int)
    /// Writes.
    case none

    public var services: [GATTService]? { if case let .services(v) = self { return v } else { return nil } }
    public var includedServices: [GATTIncludedService]? { if case let .includedServices(v) = self { return v } else { return nil } }
    public var characteristics: [GATTCharacteristic]? { if case let .characteristics(v) = self { return v } else { return nil } }
    public var characteristicSearch: GATTCharacteristicSearch? { if case let .characteristicSearch(v) = self { return v } else { return nil } }
    public var descriptors: [GATTDescriptor]? { if case let .descriptors(v) = self { return v } else { return nil } }
    public var value: [UInt8]? { if case let .value(v) = self { return v } else { return nil } }
    public var values: [[UInt8]]? { if case let .values(v) = self { return v } else { return nil } }
    public var handleValues: [ATTHandleValue]? { if case let .handleValues(v) = self { return v } else { return nil } }
    public var mtu: Int? { if case let .mtu(v) = self { return v } else { return nil } }
}

/// Any procedure behind one type, so the bearer can queue them together.
public struct AnyGATTProcedure: GATTProcedure {
    public typealias Output = GATTOutput
    private var box: any ErasedGATTProcedure

    public init<P: GATTProcedure>(_ procedure: P) {
        if let already = procedure as? AnyGATTProcedure {
            self = already
        } else {
            box = ProcedureBox(base: procedure)
        }
    }

    public var mtu: Int {
        get { box.mtu }
        set { box.mtu = newValue }
    }

    /// The wrapped procedure's type name, for logs.
    public var name: String { box.name }

    /// True for `ExchangeMTUProcedure`, which the bearer allows once per connection (Vol 3 Part F
    /// §3.4.2.1).
    public var isMTUExchange: Bool { box.isMTUExchange }

    public mutating func start() -> ProcedureStep<GATTOutput> { box.start() }
    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<GATTOutput> { box.receive(pdu) }
    public mutating func cleanupAfterCancel() -> ATTPDU? { box.cleanupAfterCancel() }
    public mutating func answerFailed(_ error: GATTError) -> ProcedureStep<GATTOutput> { box.answerFailed(error) }
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        box.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }
    public static func gattOutput(_ output: GATTOutput) -> GATTOutput { output }
}

private protocol ErasedGATTProcedure: Sendable {
    var mtu: Int { get set }
    var name: String { get }
    var isMTUExchange: Bool { get }
    mutating func start() -> ProcedureStep<GATTOutput>
    mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<GATTOutput>
    mutating func cleanupAfterCancel() -> ATTPDU?
    mutating func answerFailed(_ error: GATTError) -> ProcedureStep<GATTOutput>
    mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect
}

private struct ProcedureBox<P: GATTProcedure>: ErasedGATTProcedure {
    var base: P
    var mtu: Int {
        get { base.mtu }
        set { base.mtu = newValue }
    }
    var name: String { String(describing: P.self) }
    var isMTUExchange: Bool { P.self == ExchangeMTUProcedure.self }
    mutating func start() -> ProcedureStep<GATTOutput> { base.start().map(P.gattOutput) }
    mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<GATTOutput> { base.receive(pdu).map(P.gattOutput) }
    mutating func cleanupAfterCancel() -> ATTPDU? { base.cleanupAfterCancel() }
    mutating func answerFailed(_ error: GATTError) -> ProcedureStep<GATTOutput> { base.answerFailed(error).map(P.gattOutput) }
    mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        base.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }
}

// MARK: - Shared pieces of the procedures

/// How the server answered one request.
enum ATTAnswer {
    /// The success response (its opcode already checked).
    case response(ATTPDU)
    /// An Error Response for this request.
    case error(ATTErrorCode, handle: UInt16)
    /// Not an answer to this request (Vol 3 Part F §3.3.2: a protocol error).
    case invalid(GATTError)

    init(_ pdu: ATTPDU, to request: ATTOpcode) {
        let expected = request.responseOpcode ?? .errorResponse
        switch pdu {
        case let .errorResponse(failed, handle, code):
            if failed == request {
                self = .error(code, handle: handle)
            } else {
                self = .invalid(.unexpectedResponse(expected: expected, got: .errorResponse))
            }
        default:
            self = pdu.opcode == expected ? .response(pdu) : .invalid(.unexpectedResponse(expected: expected, got: pdu.opcode))
        }
    }
}

extension GATTError {
    static func unexpected(_ pdu: ATTPDU, for request: ATTOpcode) -> GATTError {
        .unexpectedResponse(expected: request.responseOpcode ?? .errorResponse, got: pdu.opcode)
    }
}

extension BluetoothUUID {
    /// A UUID carried in an attribute value: 2 or 16 octets (Vol 3 Part F §3.2.1).
    static func attValue(_ bytes: [UInt8], _ context: String) -> Result<BluetoothUUID, GATTError> {
        guard bytes.count == 2 || bytes.count == 16, let uuid = try? BluetoothUUID(littleEndian: bytes) else {
            return .failure(.malformedResponse(.invalid("\(context): UUID of \(bytes.count) octets")))
        }
        return .success(uuid)
    }
}

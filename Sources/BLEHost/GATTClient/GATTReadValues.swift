import BLEWire

/// Reads several characteristic values whole, in as few requests as the server allows: one Read
/// Multiple Variable Length Request (Core spec Vol 3 Part G §4.8.5, Part F §3.4.4.11), then,
/// for a value the response cut short at ATT_MTU (its Length field says how long it is,
/// §3.4.4.12) or left out, Read Blob / Read requests as in Read Long (§4.8.3).
///
/// A server that answers Request Not Supported (it predates Core 5.2) gets one Read Long per
/// handle instead when `fallback` is true; otherwise that error is the result, so a caller can
/// tell the server lacks the request. One handle, or more than fit one request, read one by one
/// from the start. The output is one whole value per handle, in the order given.
///
/// No attribute value is longer than 512 octets (Vol 3 Part F §3.2.9): a value or a Length field
/// over that fails the procedure with `.protocolViolation`, as Read Long does, instead of being
/// returned or followed with Read Blob towards offset 65535.
public struct ReadValuesProcedure: GATTProcedure {
    public typealias Output = [[UInt8]]
    public var mtu: Int
    /// The value handles, in the order the values are returned.
    public let handles: [UInt16]
    /// Whether Request Not Supported turns into single reads.
    public let fallback: Bool
    /// True once the procedure reads handle by handle because the server refused the request.
    public private(set) var fellBack = false

    private var values: [[UInt8]?]
    /// The full length the server gave for a value it cut short (§3.4.4.12).
    private var expected: [Int: Int] = [:]
    /// The read completing value `index`, when one is outstanding.
    private var reading: (index: Int, read: ReadLongProcedure)?

    /// A procedure reading `handles` (two or more for the multiple request to be tried).
    public init(handles: [UInt16], fallback: Bool = true, mtu: Int = 23) {
        self.handles = handles
        self.fallback = fallback
        self.mtu = mtu
        values = Array(repeating: nil, count: handles.count)
    }

    public mutating func start() -> ProcedureStep<[[UInt8]]> {
        guard handles.count >= 2, 1 + 2 * handles.count <= mtu else { return next() }
        return .send(.readMultipleVariableRequest(handles: handles))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[[UInt8]]> {
        if var current = reading {
            let step = current.read.receive(pdu)
            reading = current
            switch step {
            case let .send(request):
                return .send(request)
            case let .failed(error):
                return .failed(error)
            case let .done(part):
                let index = current.index
                let whole = (values[index] ?? []) + part
                values[index] = whole
                if let length = expected[index], whole.count < length {
                    return .failed(.protocolViolation("value at 0x\(String(handles[index], radix: 16)) ended at \(whole.count) of \(length) octets"))
                }
                expected[index] = nil
                reading = nil
                return next()
            }
        }
        switch ATTAnswer(pdu, to: .readMultipleVariableRequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.requestNotSupported, _) where fallback:
            fellBack = true
            return next()
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readMultipleVariableRequest))
        case let .response(.readMultipleVariableResponse(tuples)):
            guard tuples.count <= handles.count else {
                return .failed(.protocolViolation("\(tuples.count) values for \(handles.count) handles"))
            }
            for (index, tuple) in tuples.enumerated() {
                let length = max(Int(tuple.length), tuple.value.count)
                guard length <= attMaximumAttributeValueLength else {
                    return .failed(.protocolViolation(
                        "\(length) octets of a value at 0x\(attHex16(handles[index])): attribute values are at most \(attMaximumAttributeValueLength) (Vol 3 Part F §3.2.9)"))
                }
                values[index] = tuple.value
                if Int(tuple.length) > tuple.value.count { expected[index] = Int(tuple.length) }
            }
            return next()
        case let .response(response):
            return .failed(.unexpected(response, for: .readMultipleVariableRequest))
        }
    }

    /// Starts the read of the first value still missing or cut short, or ends.
    private mutating func next() -> ProcedureStep<[[UInt8]]> {
        for index in handles.indices {
            let have = values[index]
            guard have == nil || expected[index] != nil else { continue }
            let offset = have?.count ?? 0
            // The response's values and Lengths are at most 512 (checked above), so this holds;
            // kept so that no offset past the attribute maximum is ever asked for.
            guard offset <= attMaximumAttributeValueLength else {
                return .failed(.protocolViolation("value at 0x\(attHex16(handles[index])) longer than \(attMaximumAttributeValueLength) octets (Vol 3 Part F §3.2.9)"))
            }
            var read = ReadLongProcedure(handle: handles[index], offset: UInt16(offset), mtu: mtu)
            let step = read.start()
            reading = (index, read)
            switch step {
            case let .send(request): return .send(request)
            case let .failed(error): return .failed(error)
            case .done: reading = nil // ReadLongProcedure always sends first
            }
        }
        return .done(values.map { $0 ?? [] })
    }

    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(handles, changedIn: range)
    }

    public static func gattOutput(_ output: [[UInt8]]) -> GATTOutput { .values(output) }
}

import BLEWire

/// Read Characteristic Value (Core spec Vol 3 Part G §4.8.1) — also Read Characteristic
/// Descriptor (§4.12.1), which is the same Read Request on a descriptor handle.
///
/// A value longer than ATT_MTU − 1 arrives truncated (Vol 3 Part F §3.4.4.4); use
/// `ReadLongProcedure` to get all of it.
public struct ReadProcedure: GATTProcedure {
    public typealias Output = [UInt8]
    public var mtu: Int
    public let handle: UInt16

    public init(handle: UInt16, mtu: Int = 23) {
        self.handle = handle
        self.mtu = mtu
    }

    public mutating func start() -> ProcedureStep<[UInt8]> { .send(.readRequest(handle: handle)) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[UInt8]> {
        switch ATTAnswer(pdu, to: .readRequest) {
        case let .invalid(error):
            return .failed(error)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readRequest))
        case let .response(response):
            guard case let .readResponse(value) = response else { return .failed(.unexpected(response, for: .readRequest)) }
            return .done(value)
        }
    }

    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(CollectionOfOne(handle), changedIn: range)
    }

    public static func gattOutput(_ output: [UInt8]) -> GATTOutput { .value(output) }
}

/// Read Long Characteristic Values (Core spec Vol 3 Part G §4.8.3) — also Read Long
/// Characteristic Descriptors (§4.12.2).
///
/// A Read Request (or a Read Blob at `offset` if one is given), then Read Blob Requests at the
/// accumulated length while each part comes back full (ATT_MTU − 1 octets, Vol 3 Part F
/// §3.4.4.4/§3.4.4.6). A short part ends it. So does a blob request answered with Attribute Not
/// Long or Invalid Offset: the value was exactly a multiple of ATT_MTU − 1 long and the client
/// asked at its end (servers differ in which error they use there, §3.4.4.5). Any error on the
/// first request fails the procedure.
///
/// No attribute value is longer than 512 octets (Vol 3 Part F §3.2.9): a value that reaches 512
/// ends the read without a Read Blob at its end, and a server that sends more (a full part that
/// carries the value past 512) fails it with `.protocolViolation`, after at most one Read and
/// 23 Read Blobs at ATT_MTU 23, instead of being read on towards the 65535 a Read Blob offset
/// can name.
public struct ReadLongProcedure: GATTProcedure {
    public typealias Output = [UInt8]
    public var mtu: Int
    public let handle: UInt16
    public let offset: UInt16
    private var value: [UInt8] = []
    private var outstanding: ATTOpcode = .readRequest

    public init(handle: UInt16, offset: UInt16 = 0, mtu: Int = 23) {
        self.handle = handle
        self.offset = offset
        self.mtu = mtu
    }

    private var nextOffset: Int { Int(offset) + value.count }

    public mutating func start() -> ProcedureStep<[UInt8]> {
        if offset == 0 {
            outstanding = .readRequest
            return .send(.readRequest(handle: handle))
        }
        outstanding = .readBlobRequest
        return .send(.readBlobRequest(handle: handle, offset: offset))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[UInt8]> {
        let request = outstanding
        switch ATTAnswer(pdu, to: request) {
        case let .invalid(error):
            return .failed(error)
        case .error(.attributeNotLong, _) where request == .readBlobRequest && !value.isEmpty,
             .error(.invalidOffset, _) where request == .readBlobRequest && !value.isEmpty:
            return .done(value)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: request))
        case let .response(.readResponse(part)), let .response(.readBlobResponse(part)):
            value += part
            guard nextOffset <= attMaximumAttributeValueLength else {
                return .failed(.protocolViolation(
                    "\(nextOffset) octets of a value at 0x\(attHex16(handle)): attribute values are at most \(attMaximumAttributeValueLength) (Vol 3 Part F §3.2.9)"))
            }
            guard !part.isEmpty, part.count >= mtu - 1, nextOffset < attMaximumAttributeValueLength else { return .done(value) }
            outstanding = .readBlobRequest
            return .send(.readBlobRequest(handle: handle, offset: UInt16(nextOffset)))
        case let .response(response):
            return .failed(.unexpected(response, for: request))
        }
    }

    /// Parts read before the change and after it would not make one value.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(CollectionOfOne(handle), changedIn: range)
    }

    public static func gattOutput(_ output: [UInt8]) -> GATTOutput { .value(output) }
}

/// Read Using Characteristic UUID, Core spec Vol 3 Part G §4.8.2.
///
/// Read By Type Requests for `uuid` over the range, continuing after the last handle found until
/// Attribute Not Found or the range end. Output: every (handle, value) pair; values longer than
/// ATT_MTU − 4 are truncated by the server (Vol 3 Part F §3.4.4.2). Attribute Not Found before
/// anything was found is an error (there is no such characteristic); after, it ends the search.
public struct ReadByUUIDProcedure: GATTProcedure {
    public typealias Output = [ATTHandleValue]
    public var mtu: Int
    public let uuid: BluetoothUUID
    private var walk: GATTHandleRangeWalk<AttributesOfType>

    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = 23) {
        self.uuid = uuid
        self.mtu = mtu
        self.walk = GATTHandleRangeWalk(AttributesOfType(attributeType: uuid), range: range)
    }

    public mutating func start() -> ProcedureStep<[ATTHandleValue]> { .send(walk.request) }
    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[ATTHandleValue]> { walk.step(receiving: pdu) }
    /// Reads the changed part of the range again (`GATTHandleRangeWalk.serverDatabaseChanged`).
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        walk.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }
    public static func gattOutput(_ output: [ATTHandleValue]) -> GATTOutput { .handleValues(output) }
}

/// Read By Type for attributes of `attributeType` (Vol 3 Part F §3.4.4.1), each entry taken as it comes:
/// a handle and its (possibly truncated) value.
private struct AttributesOfType: ReadByTypeQuery {
    let attributeType: BluetoothUUID
    var failsWhenNothingFound: Bool { true }

    func value(of pair: ATTHandleValue) -> Result<ATTHandleValue, GATTError> { .success(pair) }
}

/// Read Multiple Characteristic Values, Core spec Vol 3 Part G §4.8.4.
///
/// One Read Multiple Request; the output is the values concatenated as the server sent them
/// (Vol 3 Part F §3.4.4.8 gives no lengths, so only the caller, knowing them, can split it).
public struct ReadMultipleProcedure: GATTProcedure {
    public typealias Output = [UInt8]
    public var mtu: Int
    public let handles: [UInt16]

    public init(handles: [UInt16], mtu: Int = 23) {
        self.handles = handles
        self.mtu = mtu
    }

    public mutating func start() -> ProcedureStep<[UInt8]> {
        guard handles.count >= 2 else { return .failed(.invalidArgument("Read Multiple needs two or more handles")) }
        guard 1 + 2 * handles.count <= mtu else { return .failed(.invalidArgument("\(handles.count) handles do not fit ATT_MTU \(mtu)")) }
        return .send(.readMultipleRequest(handles: handles))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[UInt8]> {
        switch ATTAnswer(pdu, to: .readMultipleRequest) {
        case let .invalid(error):
            return .failed(error)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readMultipleRequest))
        case let .response(response):
            guard case let .readMultipleResponse(values) = response else {
                return .failed(.unexpected(response, for: .readMultipleRequest))
            }
            return .done(values)
        }
    }

    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(handles, changedIn: range)
    }

    public static func gattOutput(_ output: [UInt8]) -> GATTOutput { .value(output) }
}

/// Read Multiple Variable Length Characteristic Values, Core spec Vol 3 Part G §4.8.5 (Core 5.2+).
///
/// One Read Multiple Variable Request; the output is one value per handle. The last value may be
/// truncated if the response reached ATT_MTU (Vol 3 Part F §3.4.4.12).
public struct ReadMultipleVariableProcedure: GATTProcedure {
    public typealias Output = [[UInt8]]
    public var mtu: Int
    public let handles: [UInt16]

    public init(handles: [UInt16], mtu: Int = 23) {
        self.handles = handles
        self.mtu = mtu
    }

    public mutating func start() -> ProcedureStep<[[UInt8]]> {
        guard handles.count >= 2 else { return .failed(.invalidArgument("Read Multiple Variable needs two or more handles")) }
        guard 1 + 2 * handles.count <= mtu else { return .failed(.invalidArgument("\(handles.count) handles do not fit ATT_MTU \(mtu)")) }
        return .send(.readMultipleVariableRequest(handles: handles))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[[UInt8]]> {
        switch ATTAnswer(pdu, to: .readMultipleVariableRequest) {
        case let .invalid(error):
            return .failed(error)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readMultipleVariableRequest))
        case let .response(response):
            guard case let .readMultipleVariableResponse(tuples) = response else {
                return .failed(.unexpected(response, for: .readMultipleVariableRequest))
            }
            guard tuples.count <= handles.count else {
                return .failed(.protocolViolation("\(tuples.count) values for \(handles.count) handles"))
            }
            return .done(tuples.map(\.value))
        }
    }

    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(handles, changedIn: range)
    }

    public static func gattOutput(_ output: [[UInt8]]) -> GATTOutput { .values(output) }
}

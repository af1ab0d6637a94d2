import BLEWire

/// Discover All Primary Services, Core spec Vol 3 Part G §4.4.1.
///
/// Read By Group Type Requests for «Primary Service» from `range.lowerBound` (0x0001), each next
/// one starting after the last End Group Handle, until Attribute Not Found or an End Group Handle
/// of the range end (0xFFFF). A response whose handles do not advance fails the procedure
/// with `.protocolViolation` rather than looping.
public struct DiscoverAllPrimaryServicesProcedure: GATTProcedure {
    public typealias Output = [GATTService]
    public var mtu: Int
    private var walk: GATTHandleRangeWalk<PrimaryServiceDeclarations>

    public init(range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = 23) {
        self.mtu = mtu
        self.walk = GATTHandleRangeWalk(PrimaryServiceDeclarations(), range: range)
    }

    public mutating func start() -> ProcedureStep<[GATTService]> { .send(walk.request) }
    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTService]> { walk.step(receiving: pdu) }
    /// Searches the changed part of the range again, so a service added there is found
    /// (`GATTHandleRangeWalk.serverDatabaseChanged`).
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        walk.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }
    public static func gattOutput(_ output: [GATTService]) -> GATTOutput { .services(output) }
}

/// Read By Group Type for «Primary Service» (Vol 3 Part F §3.4.4.9): each entry is a service
/// declaration, its value the service UUID (2 or 16 octets, Vol 3 Part G §3.1).
private struct PrimaryServiceDeclarations: HandleRangeQuery {
    func request(startHandle: UInt16, endHandle: UInt16) -> ATTPDU {
        .readByGroupTypeRequest(startHandle: startHandle, endHandle: endHandle, groupType: GATTUUID.primaryService)
    }

    func entries(of response: ATTPDU) -> [ATTGroupData]? {
        guard case let .readByGroupTypeResponse(entries) = response else { return nil }
        return entries
    }

    func value(of entry: ATTGroupData) -> Result<GATTService, GATTError> {
        BluetoothUUID.attValue(entry.value, "service declaration").map { uuid in
            GATTService(uuid: uuid, isPrimary: true, handleRange: entry.handle...entry.endGroupHandle)
        }
    }
}

/// Discover Primary Service by Service UUID, Core spec Vol 3 Part G §4.4.2.
///
/// Find By Type Value Requests (type «Primary Service», value the UUID in its shortest ATT form)
/// over the range, continuing after each last Group End Handle until Attribute Not Found or the
/// range end. A service may be present more than once; all instances are returned.
public struct DiscoverPrimaryServiceByUUIDProcedure: GATTProcedure {
    public typealias Output = [GATTService]
    public var mtu: Int
    public let uuid: BluetoothUUID
    private var walk: GATTHandleRangeWalk<PrimaryServicesByUUID>

    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = 23) {
        self.uuid = uuid
        self.mtu = mtu
        self.walk = GATTHandleRangeWalk(PrimaryServicesByUUID(uuid: uuid), range: range)
    }

    public mutating func start() -> ProcedureStep<[GATTService]> { .send(walk.request) }
    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTService]> { walk.step(receiving: pdu) }
    /// Searches the changed part of the range again (`GATTHandleRangeWalk.serverDatabaseChanged`).
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        walk.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }
    public static func gattOutput(_ output: [GATTService]) -> GATTOutput { .services(output) }
}

/// Find By Type Value for «Primary Service» declarations whose value is `uuid` (Vol 3 Part F
/// §3.4.3.3): each entry is the handle range of one instance of the service.
private struct PrimaryServicesByUUID: HandleRangeQuery {
    let uuid: BluetoothUUID

    func request(startHandle: UInt16, endHandle: UInt16) -> ATTPDU {
        .findByTypeValueRequest(startHandle: startHandle, endHandle: endHandle, attributeType: 0x2800, value: uuid.attBytes)
    }

    func entries(of response: ATTPDU) -> [ATTHandleRange]? {
        guard case let .findByTypeValueResponse(ranges) = response else { return nil }
        return ranges
    }

    func value(of entry: ATTHandleRange) -> Result<GATTService, GATTError> {
        .success(GATTService(uuid: uuid, isPrimary: true, handleRange: entry.foundHandle...entry.groupEndHandle))
    }
}

/// Find Included Services, Core spec Vol 3 Part G §4.5.1.
///
/// Read By Type Requests for «Include» over the service's range. An include declaration's value
/// is the included service's start and end handles plus its UUID only when that is a 16-bit UUID
/// (§3.2); for a 128-bit service the client reads the included service's declaration (a Read
/// Request on its start handle, whose value is the 16-octet UUID) before continuing.
public struct FindIncludedServicesProcedure: GATTProcedure {
    public typealias Output = [GATTIncludedService]
    public var mtu: Int
    private var walk: GATTHandleRangeWalk<IncludeDeclarations>
    /// The Read Request outstanding for a 128-bit UUID, if any. It names the include by its
    /// declaration handle, never by its place in `walk.found`: going back over a change drops
    /// entries from there.
    private var readBack: UUIDReadBack?

    /// A Read Request for an included service's UUID (§4.5.1) that waits for its answer.
    private enum UUIDReadBack: Sendable {
        /// For the include declared at `declaration`, reading the service declaration at `handle`.
        case reading(declaration: UInt16, handle: UInt16)
        /// The database changed meanwhile and the walk went back over the change: its answer is
        /// dropped.
        case dropping
    }

    public init(service: GATTService, mtu: Int = 23) {
        self.init(range: service.handleRange, mtu: mtu)
    }

    public init(range: ClosedRange<UInt16>, mtu: Int = 23) {
        self.mtu = mtu
        self.walk = GATTHandleRangeWalk(IncludeDeclarations(), range: range)
    }

    public mutating func start() -> ProcedureStep<[GATTIncludedService]> { .send(walk.request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTIncludedService]> {
        switch readBack {
        case .dropping?:
            readBack = nil
            if case let .invalid(error) = ATTAnswer(pdu, to: .readRequest) { return .failed(error) }
            return next()
        case let .reading(declaration, _)?:
            return receiveUUID(pdu, forIncludeAt: declaration)
        case nil:
            switch walk.receive(pdu) {
            case let .failure(error): return .failed(error)
            case .success: return next()
            }
        }
    }

    private mutating func receiveUUID(_ pdu: ATTPDU, forIncludeAt declaration: UInt16) -> ProcedureStep<[GATTIncludedService]> {
        readBack = nil
        switch ATTAnswer(pdu, to: .readRequest) {
        case let .invalid(error):
            return .failed(error)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readRequest))
        case let .response(response):
            guard case let .readResponse(value) = response else {
                return .failed(.unexpected(response, for: .readRequest))
            }
            guard value.count == 16, let uuid = try? BluetoothUUID(littleEndian: value) else {
                return .failed(.malformedResponse(.invalid("included service UUID of \(value.count) octets")))
            }
            // A change that drops the include turns the read into `.dropping`, so it is there.
            if let index = walk.found.firstIndex(where: { $0.declaration == declaration }) {
                walk.found[index].uuid = uuid
            }
            return next()
        }
    }

    /// Reads back the first missing UUID, else continues the search, else ends.
    private mutating func next() -> ProcedureStep<[GATTIncludedService]> {
        if let include = walk.found.first(where: { $0.uuid == nil }) {
            readBack = .reading(declaration: include.declaration, handle: include.range.lowerBound)
            return .send(.readRequest(handle: include.range.lowerBound))
        }
        guard walk.isFinished else { return .send(walk.request) }
        return .done(walk.found.compactMap { entry in
            entry.uuid.map { GATTIncludedService(declarationHandle: entry.declaration, serviceHandleRange: entry.range, uuid: $0) }
        })
    }

    /// Searches the changed part of the range again (`GATTHandleRangeWalk.serverDatabaseChanged`);
    /// a UUID being read back then is read again if its include is still there. When only the
    /// included service's declaration lies in the changed range (the include declaration that
    /// names it does not), what is read there is not the service the include names: `.untrusted`.
    /// A read whose answer is already to be dropped is not affected by a further change.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        // While a UUID is read back, the outstanding request is that read, not the walk's.
        guard requestOutstanding, let readBack else {
            return walk.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
        }
        let effect = walk.serverDatabaseChanged(in: range, requestOutstanding: false)
        guard case let .reading(_, readHandle) = readBack else { return effect }
        switch effect {
        case .coveredAgain:
            self.readBack = .dropping
            return .coveredAgain
        case .unaffected:
            return range.contains(readHandle) ? .untrusted : .unaffected
        case .untrusted:
            return .untrusted
        }
    }

    public static func gattOutput(_ output: [GATTIncludedService]) -> GATTOutput { .includedServices(output) }
}

/// Read By Type for «Include» (Vol 3 Part F §3.4.4.1): each entry is an include declaration,
/// its value the included service's start and end handles, then its UUID only if that is 16-bit
/// (Vol 3 Part G §3.2).
private struct IncludeDeclarations: ReadByTypeQuery {
    /// An include declaration as read; `uuid` is nil until read back for a 128-bit service.
    struct Include: Sendable {
        var declaration: UInt16
        var range: ClosedRange<UInt16>
        var uuid: BluetoothUUID?
    }

    var attributeType: BluetoothUUID { GATTUUID.include }

    func value(of pair: ATTHandleValue) -> Result<Include, GATTError> {
        var r = ByteReader(pair.value)
        guard pair.value.count == 4 || pair.value.count == 6,
              let start = try? r.readU16(), let end = try? r.readU16(), start <= end else {
            return .failure(.malformedResponse(.invalid("include declaration value \(pair.value.hexString)")))
        }
        let uuid = pair.value.count == 6 ? try? BluetoothUUID(littleEndian: r.readRemaining()) : nil
        return .success(Include(declaration: pair.handle, range: start...end, uuid: uuid))
    }
}

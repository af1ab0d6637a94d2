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
    private var cursor: GATTHandleCursor
    private var services: [GATTService] = []

    public init(range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = 23) {
        self.mtu = mtu
        self.cursor = GATTHandleCursor(range)
    }

    private var request: ATTPDU {
        .readByGroupTypeRequest(startHandle: cursor.next, endHandle: cursor.range.upperBound, groupType: GATTUUID.primaryService)
    }

    public mutating func start() -> ProcedureStep<[GATTService]> { .send(request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTService]> {
        switch ATTAnswer(pdu, to: .readByGroupTypeRequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.attributeNotFound, _):
            return .done(services)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readByGroupTypeRequest))
        case let .response(response):
            guard case let .readByGroupTypeResponse(entries) = response else {
                return .failed(.unexpected(response, for: .readByGroupTypeRequest))
            }
            for entry in entries {
                if let error = cursor.advance(handle: entry.handle, groupEnd: entry.endGroupHandle) { return .failed(error) }
                switch BluetoothUUID.attValue(entry.value, "service declaration") {
                case let .failure(error): return .failed(error)
                case let .success(uuid):
                    services.append(GATTService(uuid: uuid, isPrimary: true, handleRange: entry.handle...entry.endGroupHandle))
                }
            }
            return cursor.isFinished ? .done(services) : .send(request)
        }
    }

    public static func gattOutput(_ output: [GATTService]) -> GATTOutput { .services(output) }
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
    private var cursor: GATTHandleCursor
    private var services: [GATTService] = []

    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = 23) {
        self.uuid = uuid
        self.mtu = mtu
        self.cursor = GATTHandleCursor(range)
    }

    private var request: ATTPDU {
        .findByTypeValueRequest(startHandle: cursor.next, endHandle: cursor.range.upperBound,
                                attributeType: 0x2800, value: uuid.attBytes)
    }

    public mutating func start() -> ProcedureStep<[GATTService]> { .send(request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTService]> {
        switch ATTAnswer(pdu, to: .findByTypeValueRequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.attributeNotFound, _):
            return .done(services)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .findByTypeValueRequest))
        case let .response(response):
            guard case let .findByTypeValueResponse(ranges) = response else {
                return .failed(.unexpected(response, for: .findByTypeValueRequest))
            }
            for r in ranges {
                if let error = cursor.advance(handle: r.foundHandle, groupEnd: r.groupEndHandle) { return .failed(error) }
                services.append(GATTService(uuid: uuid, isPrimary: true, handleRange: r.foundHandle...r.groupEndHandle))
            }
            return cursor.isFinished ? .done(services) : .send(request)
        }
    }

    public static func gattOutput(_ output: [GATTService]) -> GATTOutput { .services(output) }
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
    private var cursor: GATTHandleCursor
    private var found: [(declaration: UInt16, range: ClosedRange<UInt16>, uuid: BluetoothUUID?)] = []
    /// Index into `found` whose UUID is being read back.
    private var reading: Int?

    public init(service: GATTService, mtu: Int = 23) {
        self.init(range: service.handleRange, mtu: mtu)
    }

    public init(range: ClosedRange<UInt16>, mtu: Int = 23) {
        self.mtu = mtu
        self.cursor = GATTHandleCursor(range)
    }

    private var searchRequest: ATTPDU {
        .readByTypeRequest(startHandle: cursor.next, endHandle: cursor.range.upperBound, attributeType: GATTUUID.include)
    }

    public mutating func start() -> ProcedureStep<[GATTIncludedService]> { .send(searchRequest) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTIncludedService]> {
        if let index = reading { return receiveUUID(pdu, for: index) }
        switch ATTAnswer(pdu, to: .readByTypeRequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.attributeNotFound, _):
            return finish()
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readByTypeRequest))
        case let .response(response):
            guard case let .readByTypeResponse(pairs) = response else {
                return .failed(.unexpected(response, for: .readByTypeRequest))
            }
            for pair in pairs {
                if let error = cursor.advance(handle: pair.handle, groupEnd: pair.handle) { return .failed(error) }
                var r = ByteReader(pair.value)
                guard pair.value.count == 4 || pair.value.count == 6,
                      let start = try? r.readU16(), let end = try? r.readU16(), start <= end else {
                    return .failed(.malformedResponse(.invalid("include declaration value \(pair.value.hexString)")))
                }
                let uuid = pair.value.count == 6 ? try? BluetoothUUID(littleEndian: r.readRemaining()) : nil
                found.append((pair.handle, start...end, uuid))
            }
            return next()
        }
    }

    private mutating func receiveUUID(_ pdu: ATTPDU, for index: Int) -> ProcedureStep<[GATTIncludedService]> {
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
            found[index].uuid = uuid
            reading = nil
            return next()
        }
    }

    /// Reads back the first missing UUID, else continues the search, else ends.
    private mutating func next() -> ProcedureStep<[GATTIncludedService]> {
        if let index = found.firstIndex(where: { $0.uuid == nil }) {
            reading = index
            return .send(.readRequest(handle: found[index].range.lowerBound))
        }
        return cursor.isFinished ? finish() : .send(searchRequest)
    }

    private func finish() -> ProcedureStep<[GATTIncludedService]> {
        .done(found.compactMap { entry in
            entry.uuid.map { GATTIncludedService(declarationHandle: entry.declaration, serviceHandleRange: entry.range, uuid: $0) }
        })
    }

    public static func gattOutput(_ output: [GATTIncludedService]) -> GATTOutput { .includedServices(output) }
}

import BLEWire

/// Discover All Characteristics of a Service (Core spec Vol 3 Part G §4.6.1) and Discover
/// Characteristics by UUID (§4.6.2).
///
/// Read By Type Requests for «Characteristic» over the service's range, continuing after the last
/// declaration handle until Attribute Not Found or the range end. Each declaration value is
/// properties (1) + value handle (2) + UUID (2 or 16), §3.3.1.
///
/// By UUID, §4.6.2 still reads every declaration (the UUID is inside the value, so the server
/// cannot filter); filtering happens after all are known, because a characteristic's end handle
/// is the next declaration's handle − 1 whatever that next characteristic's UUID is.
public struct DiscoverCharacteristicsProcedure: GATTProcedure {
    public typealias Output = [GATTCharacteristic]
    public var mtu: Int
    /// Only characteristics of this type, if set.
    public let uuid: BluetoothUUID?
    private var cursor: GATTHandleCursor
    private var found: [GATTCharacteristic] = []

    public init(service: GATTService, uuid: BluetoothUUID? = nil, mtu: Int = 23) {
        self.init(range: service.handleRange, uuid: uuid, mtu: mtu)
    }

    public init(range: ClosedRange<UInt16>, uuid: BluetoothUUID? = nil, mtu: Int = 23) {
        self.mtu = mtu
        self.uuid = uuid
        self.cursor = GATTHandleCursor(range)
    }

    private var request: ATTPDU {
        .readByTypeRequest(startHandle: cursor.next, endHandle: cursor.range.upperBound, attributeType: GATTUUID.characteristic)
    }

    public mutating func start() -> ProcedureStep<[GATTCharacteristic]> { .send(request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTCharacteristic]> {
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
                guard pair.value.count == 5 || pair.value.count == 19,
                      let properties = try? r.readU8(), let valueHandle = try? r.readU16(),
                      let uuid = try? BluetoothUUID(littleEndian: r.readRemaining()) else {
                    return .failed(.malformedResponse(.invalid("characteristic declaration value \(pair.value.hexString)")))
                }
                found.append(GATTCharacteristic(uuid: uuid, declarationHandle: pair.handle, valueHandle: valueHandle,
                                                properties: CharacteristicProperties(rawValue: properties),
                                                endHandle: cursor.range.upperBound))
            }
            return cursor.isFinished ? finish() : .send(request)
        }
    }

    private func finish() -> ProcedureStep<[GATTCharacteristic]> {
        var all = found
        // Declarations are strictly increasing (GATTHandleCursor), so next − 1 ≥ this declaration.
        for i in all.indices.dropLast() {
            all[i].endHandle = all[i + 1].declarationHandle - 1
        }
        if let uuid { all = all.filter { $0.uuid == uuid } }
        return .done(all)
    }

    public static func gattOutput(_ output: [GATTCharacteristic]) -> GATTOutput { .characteristics(output) }
}

/// Discover All Characteristic Descriptors, Core spec Vol 3 Part G §4.7.1.
///
/// Find Information Requests from the characteristic's value handle + 1 to its end handle,
/// continuing after the last handle until Attribute Not Found or the range end. A characteristic
/// with no room for descriptors ends at once, sending nothing.
public struct DiscoverDescriptorsProcedure: GATTProcedure {
    public typealias Output = [GATTDescriptor]
    public var mtu: Int
    private var cursor: GATTHandleCursor?
    private var found: [GATTDescriptor] = []

    public init(characteristic: GATTCharacteristic, mtu: Int = 23) {
        self.mtu = mtu
        self.cursor = characteristic.descriptorRange.map(GATTHandleCursor.init)
    }

    public init(range: ClosedRange<UInt16>, mtu: Int = 23) {
        self.mtu = mtu
        self.cursor = GATTHandleCursor(range)
    }

    private func request(_ cursor: GATTHandleCursor) -> ATTPDU {
        .findInformationRequest(startHandle: cursor.next, endHandle: cursor.range.upperBound)
    }

    public mutating func start() -> ProcedureStep<[GATTDescriptor]> {
        guard let cursor else { return .done([]) }
        return .send(request(cursor))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTDescriptor]> {
        guard var cursor else { return .failed(.unexpected(pdu, for: .findInformationRequest)) }
        defer { self.cursor = cursor }
        switch ATTAnswer(pdu, to: .findInformationRequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.attributeNotFound, _):
            return .done(found)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .findInformationRequest))
        case let .response(response):
            guard case let .findInformationResponse(entries) = response else {
                return .failed(.unexpected(response, for: .findInformationRequest))
            }
            for entry in entries {
                if let error = cursor.advance(handle: entry.handle, groupEnd: entry.handle) { return .failed(error) }
                found.append(GATTDescriptor(handle: entry.handle, uuid: entry.uuid))
            }
            return cursor.isFinished ? .done(found) : .send(request(cursor))
        }
    }

    public static func gattOutput(_ output: [GATTDescriptor]) -> GATTOutput { .descriptors(output) }
}

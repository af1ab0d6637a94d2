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
    private var walk: GATTHandleRangeWalk<CharacteristicDeclarations>

    public init(service: GATTService, uuid: BluetoothUUID? = nil, mtu: Int = 23) {
        self.init(range: service.handleRange, uuid: uuid, mtu: mtu)
    }

    public init(range: ClosedRange<UInt16>, uuid: BluetoothUUID? = nil, mtu: Int = 23) {
        self.mtu = mtu
        self.uuid = uuid
        self.walk = GATTHandleRangeWalk(CharacteristicDeclarations(rangeEnd: range.upperBound), range: range)
    }

    public mutating func start() -> ProcedureStep<[GATTCharacteristic]> { .send(walk.request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTCharacteristic]> {
        walk.step(receiving: pdu).map { found in
            var all = found
            // Declarations are strictly increasing (the walk rejects any that do not advance), so
            // next − 1 ≥ this declaration.
            for i in all.indices.dropLast() {
                all[i].endHandle = all[i + 1].declarationHandle - 1
            }
            if let uuid { all = all.filter { $0.uuid == uuid } }
            return all
        }
    }

    /// Reads the declarations in the changed part of the range again
    /// (`GATTHandleRangeWalk.serverDatabaseChanged`).
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        walk.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }

    public static func gattOutput(_ output: [GATTCharacteristic]) -> GATTOutput { .characteristics(output) }
}

/// Read By Type for «Characteristic» (Vol 3 Part F §3.4.4.1): each entry is a characteristic
/// declaration, its value properties (1) + value handle (2) + UUID (2 or 16), Vol 3 Part G §3.3.1.
struct CharacteristicDeclarations: ReadByTypeQuery {
    /// Where the last characteristic found ends (§3.3); the procedure ends the others before the
    /// next declaration once all are known.
    let rangeEnd: UInt16

    var attributeType: BluetoothUUID { GATTUUID.characteristic }

    func value(of pair: ATTHandleValue) -> Result<GATTCharacteristic, GATTError> {
        var r = ByteReader(pair.value)
        guard pair.value.count == 5 || pair.value.count == 19,
              let properties = try? r.readU8(), let valueHandle = try? r.readU16(),
              let uuid = try? BluetoothUUID(littleEndian: r.readRemaining()) else {
            return .failure(.malformedResponse(.invalid("characteristic declaration value \(pair.value.hexString)")))
        }
        return .success(GATTCharacteristic(uuid: uuid, declarationHandle: pair.handle, valueHandle: valueHandle,
                                           properties: CharacteristicProperties(rawValue: properties), endHandle: rangeEnd))
    }
}

/// Discover All Characteristic Descriptors, Core spec Vol 3 Part G §4.7.1.
///
/// Find Information Requests from the characteristic's value handle + 1 to its end handle,
/// continuing after the last handle until Attribute Not Found or the range end. A characteristic
/// with no room for descriptors ends at once, sending nothing.
public struct DiscoverDescriptorsProcedure: GATTProcedure {
    public typealias Output = [GATTDescriptor]
    public var mtu: Int
    /// Nil when the characteristic has no room for descriptors.
    private var walk: GATTHandleRangeWalk<CharacteristicDescriptors>?

    public init(characteristic: GATTCharacteristic, mtu: Int = 23) {
        self.mtu = mtu
        self.walk = characteristic.descriptorRange.map { GATTHandleRangeWalk(CharacteristicDescriptors(), range: $0) }
    }

    public init(range: ClosedRange<UInt16>, mtu: Int = 23) {
        self.mtu = mtu
        self.walk = GATTHandleRangeWalk(CharacteristicDescriptors(), range: range)
    }

    public mutating func start() -> ProcedureStep<[GATTDescriptor]> {
        guard let walk else { return .done([]) }
        return .send(walk.request)
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<[GATTDescriptor]> {
        guard var current = walk else { return .failed(.unexpected(pdu, for: .findInformationRequest)) }
        let step = current.step(receiving: pdu)
        walk = current
        // A characteristic's descriptors end at the next declaration (§3.3.3): a range bounded
        // only by the next characteristic declaration, as a targeted search gives it, may reach
        // into the next service, whose declaration ends the search without a further request.
        switch step {
        case .send:
            if let end = current.found.firstIndex(where: { Self.isDeclaration($0.uuid) }) {
                return .done(Array(current.found[..<end]))
            }
            return step
        case let .done(found):
            return .done(Array(found.prefix { !Self.isDeclaration($0.uuid) }))
        case .failed:
            return step
        }
    }

    /// «Primary Service», «Secondary Service», «Include» and «Characteristic» (§3.1–§3.3.1).
    static func isDeclaration(_ uuid: BluetoothUUID) -> Bool {
        uuid == GATTUUID.primaryService || uuid == GATTUUID.secondaryService
            || uuid == GATTUUID.include || uuid == GATTUUID.characteristic
    }

    /// A characteristic's descriptor range comes from its declaration, as the client knew it
    /// before the change: when the change reaches into it, the characteristic may have moved and
    /// its handles hold another's descriptors (whose CCCD a caller would then write), so the
    /// answers are `.untrusted` rather than searched again.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        guard let walk, walk.range.overlaps(range) else { return .unaffected }
        return .untrusted
    }

    public static func gattOutput(_ output: [GATTDescriptor]) -> GATTOutput { .descriptors(output) }
}

/// Find Information (Vol 3 Part F §3.4.3.1): each entry is an attribute's handle and type, which
/// in a characteristic's descriptor range is a descriptor (Vol 3 Part G §3.3.3). Not private: the
/// walk's own tests drive it with answers the bearer would never pass on.
struct CharacteristicDescriptors: HandleRangeQuery {
    func request(startHandle: UInt16, endHandle: UInt16) -> ATTPDU {
        .findInformationRequest(startHandle: startHandle, endHandle: endHandle)
    }

    func entries(of response: ATTPDU) -> [ATTHandleUUID]? {
        guard case let .findInformationResponse(entries) = response else { return nil }
        return entries
    }

    func value(of entry: ATTHandleUUID) -> Result<GATTDescriptor, GATTError> {
        .success(GATTDescriptor(handle: entry.handle, uuid: entry.uuid))
    }
}

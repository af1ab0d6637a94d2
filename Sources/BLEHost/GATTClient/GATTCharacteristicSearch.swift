import BLEWire

/// What a targeted characteristic search learned (Core spec Vol 3 Part G §4.6.1 asked over a
/// handle range, stopped early): every characteristic whose declaration it saw and whose end
/// it can bound, and the range in which no other declaration exists.
public struct GATTCharacteristicSearch: Hashable, Sendable {
    /// The characteristics found in `covered`, in handle order, each with its end handle bounded
    /// by the next declaration (§3.3) or by `covered`'s end. An end handle may reach past the
    /// characteristic's service when the next declaration is another service's: descriptor
    /// discovery tightens it (`DiscoverDescriptorsProcedure` stops at a declaration).
    public var characteristics: [GATTCharacteristic]
    /// Every characteristic declaration in this range is in `characteristics`.
    public var covered: ClosedRange<UInt16>

    /// The result of a search over `covered` that found `characteristics`.
    public init(characteristics: [GATTCharacteristic], covered: ClosedRange<UInt16>) {
        self.characteristics = characteristics
        self.covered = covered
    }
}

/// Finds the first characteristic of a type in a handle range, asking no more than that needs.
///
/// Read By Type Requests for «Characteristic» (Vol 3 Part F §3.4.4.1, the request of Discover
/// Characteristics by UUID, Vol 3 Part G §4.6.2) from the range start, as the walk of §4.6.2
/// does, but it ends as soon as the first declaration of `uuid` and the declaration after it
/// (which bounds its end handle, §3.3) have been seen, instead of reading the rest of the
/// range: a server answers with as many declarations as fit ATT_MTU, so after an MTU exchange
/// one answer usually holds the whole database's 16-bit declarations. The range may span
/// services: no service discovery is needed to find a characteristic, since declarations
/// carry their type and the walk goes in handle order.
///
/// The output keeps every declaration seen, for the attribute cache (§2.5.2), with the range
/// they cover; the last declaration seen, whose end is not known yet, is left out of both.
/// A range with no declaration of `uuid` is searched to its end (Attribute Not Found, or a
/// declaration at the range end).
public struct FindCharacteristicProcedure: GATTProcedure {
    public typealias Output = GATTCharacteristicSearch
    public var mtu: Int
    /// The type looked for.
    public let uuid: BluetoothUUID
    private var walk: GATTHandleRangeWalk<CharacteristicDeclarations>

    /// Searches `range` (default the whole database) for the first declaration of `uuid`.
    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = 23) {
        self.uuid = uuid
        self.mtu = mtu
        self.walk = GATTHandleRangeWalk(CharacteristicDeclarations(rangeEnd: range.upperBound), range: range)
    }

    public mutating func start() -> ProcedureStep<GATTCharacteristicSearch> { .send(walk.request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<GATTCharacteristicSearch> {
        switch walk.receive(pdu) {
        case let .failure(error):
            return .failed(error)
        case .success(.finished):
            return .done(GATTCharacteristicSearch(characteristics: bounded(walk.found), covered: walk.range))
        case .success(.continuing):
            let found = walk.found
            // The target is known with its end once a later declaration follows it.
            if let index = found.firstIndex(where: { $0.uuid == uuid }), index + 1 < found.count {
                let last = found[found.count - 1]
                // Declarations advance strictly (the walk checks), so last > range start.
                let covered = walk.range.lowerBound...(last.declarationHandle - 1)
                return .done(GATTCharacteristicSearch(characteristics: Array(bounded(found).dropLast()), covered: covered))
            }
            return .send(walk.request)
        }
    }

    /// Ends each characteristic before the next declaration (§3.3); the last keeps the range end.
    private func bounded(_ found: [GATTCharacteristic]) -> [GATTCharacteristic] {
        var all = found
        for i in all.indices.dropLast() { all[i].endHandle = all[i + 1].declarationHandle - 1 }
        return all
    }

    /// Reads the declarations in the changed part of the range again
    /// (`GATTHandleRangeWalk.serverDatabaseChanged`): the search then reports what is there now.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        walk.serverDatabaseChanged(in: range, requestOutstanding: requestOutstanding)
    }

    public static func gattOutput(_ output: GATTCharacteristicSearch) -> GATTOutput { .characteristicSearch(output) }
}

/// Reads the Database Hash (Core spec Vol 3 Part G §7.3) with one Read By Type Request for
/// its UUID over the whole database (Read Using Characteristic UUID, §4.8.2), which the server
/// answers even to a change-unaware client and which makes that client change-aware again
/// (robust caching, §2.5.2.1).
///
/// A server has at most one Database Hash, so unlike §4.8.2 this does not continue after the
/// first answer: output is the hash characteristic's handle and value, or nil when the server
/// has none (Attribute Not Found). A value that is not 16 octets is a malformed response.
public struct ReadDatabaseHashProcedure: GATTProcedure {
    public typealias Output = ATTHandleValue?
    public var mtu: Int
    /// The database changed while the request was outstanding: its answer is dropped and the
    /// request asked again.
    private var dropsAnswer = false
    /// How many times the request was asked again so.
    private var askedAgain = 0

    public init(mtu: Int = 23) { self.mtu = mtu }

    /// The request: Read By Type 0x0001–0xFFFF for «Database Hash».
    static var request: ATTPDU {
        .readByTypeRequest(startHandle: 0x0001, endHandle: 0xFFFF, attributeType: GATTUUID.databaseHash)
    }

    public mutating func start() -> ProcedureStep<ATTHandleValue?> { .send(Self.request) }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<ATTHandleValue?> {
        if dropsAnswer {
            dropsAnswer = false
            if case let .invalid(error) = ATTAnswer(pdu, to: .readByTypeRequest) { return .failed(error) }
            return .send(Self.request)
        }
        switch ATTAnswer(pdu, to: .readByTypeRequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.attributeNotFound, _):
            return .done(nil)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .readByTypeRequest))
        case let .response(response):
            guard case let .readByTypeResponse(pairs) = response, let first = pairs.first else {
                return .failed(.unexpected(response, for: .readByTypeRequest))
            }
            guard first.value.count == 16 else {
                return .failed(.malformedResponse(.invalid("Database Hash of \(first.value.count) octets")))
            }
            return .done(first)
        }
    }

    /// A hash answered across a change may be the old database's, and would key a cache of the
    /// new one (§2.5.2): the answer is dropped and the hash read again, up to
    /// `GATTDatabaseChangeEffect.coverAgainLimit` times.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        guard requestOutstanding else { return .coveredAgain }
        guard askedAgain < GATTDatabaseChangeEffect.coverAgainLimit else { return .untrusted }
        askedAgain += 1
        dropsAnswer = true
        return .coveredAgain
    }

    public static func gattOutput(_ output: ATTHandleValue?) -> GATTOutput { .handleValues(output.map { [$0] } ?? []) }
}

import BLEWire

/// An element of the list in a handle-range answer, by the handles it claims: a single attribute,
/// or a group from its declaration to its End Group Handle (Vol 3 Part F §3.4.3.4, §3.4.4.10).
protocol ATTHandleListEntry {
    var firstHandle: UInt16 { get }
    /// The group's last handle; `firstHandle` for a single attribute.
    var lastHandle: UInt16 { get }
}

extension ATTGroupData: ATTHandleListEntry {
    var firstHandle: UInt16 { handle }
    var lastHandle: UInt16 { endGroupHandle }
}

extension ATTHandleRange: ATTHandleListEntry {
    var firstHandle: UInt16 { foundHandle }
    var lastHandle: UInt16 { groupEndHandle }
}

/// A list element that names a single attribute: Find Information's handle and type, Read By
/// Type's handle and value.
protocol ATTSingleAttributeEntry: ATTHandleListEntry {
    var handle: UInt16 { get }
}

extension ATTSingleAttributeEntry {
    var firstHandle: UInt16 { handle }
    var lastHandle: UInt16 { handle }
}

extension ATTHandleValue: ATTSingleAttributeEntry {}
extension ATTHandleUUID: ATTSingleAttributeEntry {}

/// One of the ATT requests that search a handle range (Core spec Vol 3 Part F §3.4.3.1 Find
/// Information, §3.4.3.3 Find By Type Value, §3.4.4.1 Read By Type, §3.4.4.9 Read By Group
/// Type) as a GATT procedure asks it: how to build the request for the rest of the range, where
/// the response keeps its list, and what each element means to the procedure.
/// `GATTHandleRangeWalk` does the rest, the same way for all of them.
protocol HandleRangeQuery: Sendable {
    associatedtype Entry: ATTHandleListEntry
    associatedtype Value: Sendable

    /// The request for `startHandle...endHandle`.
    func request(startHandle: UInt16, endHandle: UInt16) -> ATTPDU

    /// The list of a success response, in the server's order; nil if `response` is not the
    /// response this request expects.
    func entries(of response: ATTPDU) -> [Entry]?

    /// What the procedure makes of one entry, or why its value is malformed. Called only for an
    /// entry whose handles the walk accepted (past the cursor, inside the range, first ≤ last),
    /// so it may build a `ClosedRange` from them; entries are decoded in order, after their
    /// handles are checked, so the first fault in the list is the one reported.
    func value(of entry: Entry) -> Result<Value, GATTError>

    /// Whether Attribute Not Found before any entry fails the walk instead of ending it with no
    /// entries. Read Using Characteristic UUID (Vol 3 Part G §4.8.2) reports it, since it means
    /// there is no such characteristic; the discovery procedures (§4.4–§4.7) find nothing.
    var failsWhenNothingFound: Bool { get }
}

extension HandleRangeQuery {
    var failsWhenNothingFound: Bool { false }
}

/// Read By Type (Vol 3 Part F §3.4.4.1) for the attributes of one type: the request three
/// procedures walk with (Find Included Services, Discover Characteristics, Read Using
/// Characteristic UUID), which differ only in the type and in what they make of a value.
protocol ReadByTypeQuery: HandleRangeQuery where Entry == ATTHandleValue {
    var attributeType: BluetoothUUID { get }
}

extension ReadByTypeQuery {
    func request(startHandle: UInt16, endHandle: UInt16) -> ATTPDU {
        .readByTypeRequest(startHandle: startHandle, endHandle: endHandle, attributeType: attributeType)
    }

    func entries(of response: ATTPDU) -> [ATTHandleValue]? {
        guard case let .readByTypeResponse(pairs) = response else { return nil }
        return pairs
    }
}

/// Walks a handle range with a cursor, the loop the GATT discovery procedures (Core spec Vol 3
/// Part G §4.4.1, §4.4.2, §4.5.1, §4.6.1, §4.6.2, §4.7.1) and Read Using Characteristic UUID
/// (§4.8.2) share: request cursor...end; on a list of entries continue after the last handle (a
/// group's End Group Handle); on Attribute Not Found stop; on any other Error Response fail; stop
/// once an entry reaches the end of the range (0xFFFF for a whole-database search, which never
/// overflows the cursor).
///
/// Every entry must start at or after the cursor and inside the range: a faulty or hostile server
/// that repeats, goes backwards or overshoots fails the walk with `.protocolViolation`, never
/// makes the client loop. A response with no entries cannot advance either (the ATT decoder
/// already rejects empty lists, §3.4.3.2 ff.; this does not rely on it).
///
/// A change of the server's database in the range (Service Changed, Vol 3 Part G §7.1) sends the
/// walk back to the start of the change (`serverDatabaseChanged`), so what it returns describes
/// the database after the change, a service added there included.
///
/// Sans-IO like the procedures that hold it: `request` is what to send, `receive` takes the
/// answer to it (a response or an Error Response, as the bearer passes it on).
struct GATTHandleRangeWalk<Query: HandleRangeQuery>: Sendable {
    /// What `receive` made of an answer.
    enum Progress: Equatable, Sendable {
        /// Send `request` again for the rest of the range.
        case continuing
        /// The range is searched: Attribute Not Found, or an entry reached the range end.
        case finished
    }

    let query: Query
    let range: ClosedRange<UInt16>
    /// Where the next request starts.
    private(set) var cursor: UInt16
    private(set) var isFinished = false
    /// The entries so far, in handle order. Writable so that a procedure can complete them
    /// (Find Included Services reads back 128-bit UUIDs, §4.5.1).
    var found: [Query.Value] = []
    /// The handles each of `found` claims (a group's declaration to its end), in the same order.
    private var spans: [ClosedRange<UInt16>] = []
    /// The database changed while a request was outstanding: its answer is dropped and the
    /// request asked again from the cursor.
    private var dropsAnswer = false
    /// How many changes sent the walk back.
    private(set) var walkedAgain = 0

    init(_ query: Query, range: ClosedRange<UInt16>) {
        self.query = query
        self.range = range
        self.cursor = range.lowerBound
    }

    /// The request for the rest of the range.
    var request: ATTPDU { query.request(startHandle: cursor, endHandle: range.upperBound) }

    /// Takes the answer to `request`.
    mutating func receive(_ pdu: ATTPDU) -> Result<Progress, GATTError> {
        let requestOpcode = request.opcode
        if dropsAnswer {
            dropsAnswer = false
            if case let .invalid(error) = ATTAnswer(pdu, to: requestOpcode) { return .failure(error) }
            return .success(.continuing)
        }
        switch ATTAnswer(pdu, to: requestOpcode) {
        case let .invalid(error):
            return .failure(error)
        case let .error(.attributeNotFound, handle) where found.isEmpty && query.failsWhenNothingFound:
            return .failure(.att(code: .attributeNotFound, handle: handle, request: requestOpcode))
        case .error(.attributeNotFound, _):
            isFinished = true
            return .success(.finished)
        case let .error(code, handle):
            return .failure(.att(code: code, handle: handle, request: requestOpcode))
        case let .response(response):
            guard let entries = query.entries(of: response) else {
                return .failure(.unexpected(response, for: requestOpcode))
            }
            guard !entries.isEmpty else {
                return .failure(.protocolViolation("\(response.opcode) with no entries does not advance from 0x\(attHex16(cursor))"))
            }
            for entry in entries {
                if let error = advance(past: entry) { return .failure(error) }
                switch query.value(of: entry) {
                case let .failure(error): return .failure(error)
                case let .success(value):
                    found.append(value)
                    spans.append(entry.firstHandle...entry.lastHandle)
                }
            }
            return .success(isFinished ? .finished : .continuing)
        }
    }

    /// The procedure step after `receive`: the next request, the entries, or the failure.
    mutating func step(receiving pdu: ATTPDU) -> ProcedureStep<[Query.Value]> {
        switch receive(pdu) {
        case let .failure(error): return .failed(error)
        case .success(.finished): return .done(found)
        case .success(.continuing): return .send(request)
        }
    }

    /// The server's database changed in `changed` (Vol 3 Part G §7.1). When that overlaps the
    /// range, the walk goes back to where the change starts: the entries that reach into the
    /// change or lie after it are dropped, the cursor moves back to the first of them (or to the
    /// change's start, if the walk had passed it), and the answer to an outstanding request is
    /// dropped, since it may describe the database before the change or after it; the walk
    /// goes on from there, so it ends having searched the changed part after the change. Each
    /// change costs at most the requests from its start to the range end, and a walk goes back
    /// at most `GATTDatabaseChangeEffect.coverAgainLimit` times: after that its answers are
    /// `.untrusted`. A walk that has not sent anything yet is not affected at all.
    mutating func serverDatabaseChanged(in changed: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        guard changed.overlaps(range) else { return .unaffected }
        let started = requestOutstanding || dropsAnswer || isFinished || cursor != range.lowerBound || !found.isEmpty
        guard started else { return .coveredAgain }
        guard walkedAgain < GATTDatabaseChangeEffect.coverAgainLimit else { return .untrusted }
        walkedAgain += 1
        let start = max(changed.lowerBound, range.lowerBound)
        // Spans are disjoint and ascending: the ones that reach the change are a suffix.
        var kept = spans.count
        while kept > 0, spans[kept - 1].upperBound >= start { kept -= 1 }
        let from = kept < spans.count ? min(start, spans[kept].lowerBound) : start
        found.removeSubrange(kept...)
        spans.removeSubrange(kept...)
        cursor = isFinished ? from : min(cursor, from)
        isFinished = false
        if requestOutstanding { dropsAnswer = true }
        return .coveredAgain
    }

    /// Moves the cursor past an entry, or says why the entry cannot be accepted.
    private mutating func advance(past entry: Query.Entry) -> GATTError? {
        let handle = entry.firstHandle
        guard !isFinished, handle >= cursor else {
            return .protocolViolation("handle 0x\(attHex16(handle)) does not advance (expected ≥ 0x\(attHex16(cursor)))")
        }
        guard handle <= range.upperBound else {
            return .protocolViolation("handle 0x\(attHex16(handle)) outside the requested range ...0x\(attHex16(range.upperBound))")
        }
        guard entry.lastHandle >= handle else {
            return .malformedResponse(.invalid("group end 0x\(attHex16(entry.lastHandle)) before its start 0x\(attHex16(handle))"))
        }
        if entry.lastHandle >= range.upperBound {
            isFinished = true
        } else {
            cursor = entry.lastHandle + 1
        }
        return nil
    }
}

import BLEWire

// The server side of discovery and reading: Find Information, Find By Type Value, Read By Type,
// Read, Read Blob, Read Multiple, Read Multiple Variable and Read By Group Type
// (Core spec Vol 3 Part F §3.4.3 and §3.4.4).
//
// Each request is evaluated as a pure function of the database, this connection's state and
// the application's answers so far. When it meets a dynamic value it has no answer for, the
// server asks the application (`ServerAction.read`) and evaluates the request again once the
// answer arrives, so a Read By Type over several dynamic values asks for them one by one.
extension ATTServer {
    enum ReadOutcome {
        case respond(ATTPDU)
        case fail(UInt16, ATTErrorCode)
        case needRead(PendingRequest.ReadKey)
    }

    /// Evaluates a read-type request and either answers it or asks the application.
    mutating func startRead(_ request: PendingRequest, database: GATTServerDatabase) -> [ServerAction] {
        var p = request
        switch evaluateRead(p, database: database) {
        case let .respond(pdu):
            pending = nil
            return [.send(pdu.encode())]
        case let .fail(handle, code):
            pending = nil
            return [Self.error(p.request.opcode, handle, code)]
        case let .needRead(key):
            let id = makeID()
            p.awaiting = .read(id: id, key: key)
            pending = p
            return [.read(id: id, handle: key.handle, offset: key.offset)]
        }
    }

    /// The application's answer to `ServerAction.read(id:…)`. An unknown or stale id is ignored.
    /// Errors go to the client as they are (use `.unlikelyError` when the handler itself failed,
    /// §3.4.1.1). `security` is the link's now: requests held meanwhile are judged by it.
    public mutating func completeRead(id: UInt64, result: Result<[UInt8], ATTErrorCode>,
                                      database: inout GATTServerDatabase, security: LinkSecurity, now: Duration) -> [ServerAction] {
        clock = max(clock, now)
        var actions = takeEvents()
        guard !isClosed, var p = pending, case let .read(waiting, key) = p.awaiting, waiting == id else { return actions }
        p.appReads[key] = result
        p.awaiting = .nothing
        p.security = security  // what is left of the request is judged by the link as it is now
        actions += startRead(p, database: database)
        actions += drainDeferred(database: &database, security: security)
        return actions
    }

    func evaluateRead(_ p: PendingRequest, database db: GATTServerDatabase) -> ReadOutcome {
        switch p.request {
        case let .findInformationRequest(start, end):
            return findInformation(start, end, db)
        case let .findByTypeValueRequest(start, end, type, value):
            return findByTypeValue(start, end, type, value, db, p.security)
        case let .readByTypeRequest(start, end, type):
            return readByType(start, end, type, db, p)
        case let .readRequest(handle):
            guard let a = db.attribute(at: handle) else { return .fail(handle, .invalidHandle) }
            if let e = Self.readError(a, p.security) { return .fail(handle, e) }
            switch readValue(a, offset: 0, database: db, appReads: p.appReads) {
            case let .value(v): return .respond(.readResponse(value: Array(v.prefix(mtu - 1))))
            case let .failure(e): return .fail(handle, e)
            case let .needsApp(key): return .needRead(key)
            }
        case let .readBlobRequest(handle, offset):
            return readBlob(handle, Int(offset), db, p)
        case let .readMultipleRequest(handles):
            return readMultiple(handles, variable: false, db, p)
        case let .readMultipleVariableRequest(handles):
            return readMultiple(handles, variable: true, db, p)
        case let .readByGroupTypeRequest(start, end, type):
            return readByGroupType(start, end, type, db, p.security)
        default:
            return .fail(0, .requestNotSupported)
        }
    }

    /// §3.4.3.1: handle–type pairs; one PDU holds only 16-bit or only 128-bit types, so it ends
    /// where the UUID size changes (§3.4.3.2).
    func findInformation(_ start: UInt16, _ end: UInt16, _ db: GATTServerDatabase) -> ReadOutcome {
        guard start != 0, start <= end else { return .fail(start, .invalidHandle) }
        let found = db.attributes(in: start...end)
        guard let first = found.first else { return .fail(start, .attributeNotFound) }
        let short = first.type.uint16 != nil
        let size = short ? 4 : 18
        var entries: [ATTHandleUUID] = []
        var used = 2
        for a in found {
            guard (a.type.uint16 != nil) == short, used + size <= mtu else { break }
            entries.append(ATTHandleUUID(handle: a.handle, uuid: a.type))
            used += size
        }
        return .respond(.findInformationResponse(entries))
    }

    /// §3.4.3.3: attributes of a 16-bit type whose value equals the given one, among those this
    /// link may read (never a security error, §3.4.3.3). Service declarations compare as UUIDs, so
    /// a 16-bit service is found by its 128-bit form too. Dynamic values are never matched: the
    /// request exists to find services, whose declarations the server holds.
    func findByTypeValue(_ start: UInt16, _ end: UInt16, _ type: UInt16, _ value: [UInt8],
                         _ db: GATTServerDatabase, _ security: LinkSecurity) -> ReadOutcome {
        guard start != 0, start <= end else { return .fail(start, .invalidHandle) }
        var ranges: [ATTHandleRange] = []
        var used = 1
        for a in db.attributes(ofType: BluetoothUUID(type), in: start...end) where Self.readError(a, security) == nil {
            guard case let .value(v) = readValue(a, offset: 0, database: db, appReads: [:]) else { continue }
            let matches = v == value || (a.isServiceDeclaration && Self.sameUUID(v, value))
            guard matches else { continue }
            guard used + 4 <= mtu else { break }
            let groupEnd = a.isServiceDeclaration ? (db.groupEndHandle(forServiceAt: a.handle) ?? a.handle) : a.handle
            ranges.append(ATTHandleRange(foundHandle: a.handle, groupEndHandle: groupEnd))
            used += 4
        }
        guard !ranges.isEmpty else { return .fail(start, .attributeNotFound) }
        return .respond(.findByTypeValueResponse(ranges))
    }

    static func sameUUID(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard let x = try? BluetoothUUID(littleEndian: a), let y = try? BluetoothUUID(littleEndian: b) else { return false }
        return x == y
    }

    /// §3.4.4.1: values of one type, lowest handles first, all of one length (values cut to
    /// min(ATT_MTU − 4, 253)); the first attribute that would fail ends the list, or fails the
    /// request when it is the first.
    func readByType(_ start: UInt16, _ end: UInt16, _ type: BluetoothUUID, _ db: GATTServerDatabase,
                    _ p: PendingRequest) -> ReadOutcome {
        guard start != 0, start <= end else { return .fail(start, .invalidHandle) }
        let candidates = db.attributes(ofType: type, in: start...end)
        guard !candidates.isEmpty else { return .fail(start, .attributeNotFound) }
        let cap = min(mtu - 4, 253)
        var pairs: [ATTHandleValue] = []
        var length: Int?
        var used = 2
        for a in candidates {
            if let e = Self.readError(a, p.security) {
                if pairs.isEmpty { return .fail(a.handle, e) }
                break
            }
            if let length, used + 2 + length > mtu { break }
            switch readValue(a, offset: 0, database: db, appReads: p.appReads) {
            case let .needsApp(key):
                return .needRead(key)
            case let .failure(e):
                if pairs.isEmpty { return .fail(a.handle, e) }
                return .respond(.readByTypeResponse(pairs))
            case let .value(v):
                let cut = Array(v.prefix(cap))
                if let length, cut.count != length { return .respond(.readByTypeResponse(pairs)) }
                length = cut.count
                pairs.append(ATTHandleValue(handle: a.handle, value: cut))
                used += 2 + cut.count
            }
        }
        return .respond(.readByTypeResponse(pairs))
    }

    /// §3.4.4.5: part of a value from an offset. Server-defined fixed-length values (declarations,
    /// the CCCD, fixed descriptors, the hash) are never longer than ATT_MTU − 1, and for those the
    /// spec lets the server answer Attribute Not Long; application values may grow, so they are
    /// always readable in parts, with Invalid Offset past their end.
    func readBlob(_ handle: UInt16, _ offset: Int, _ db: GATTServerDatabase, _ p: PendingRequest) -> ReadOutcome {
        guard let a = db.attribute(at: handle) else { return .fail(handle, .invalidHandle) }
        if let e = Self.readError(a, p.security) { return .fail(handle, e) }
        if a.hasFixedLength, case let .value(full) = readValue(a, offset: 0, database: db, appReads: [:]),
           full.count <= mtu - 1 {
            return .fail(handle, .attributeNotLong)
        }
        switch readValue(a, offset: offset, database: db, appReads: p.appReads) {
        case let .value(v): return .respond(.readBlobResponse(value: Array(v.prefix(mtu - 1))))
        case let .failure(e): return .fail(handle, e)
        case let .needsApp(key): return .needRead(key)
        }
    }

    /// §3.4.4.7 / §3.4.4.11: every handle must exist and be readable (the first that is not is
    /// the error's handle). Read Multiple concatenates the values and cuts at ATT_MTU − 1; Read
    /// Multiple Variable prefixes each with its length and cuts at ATT_MTU − 1, or before a tuple
    /// whose length field would not fit (§3.4.4.12). Values past the cut are not read.
    func readMultiple(_ handles: [UInt16], variable: Bool, _ db: GATTServerDatabase, _ p: PendingRequest) -> ReadOutcome {
        let room = mtu - 1
        var out: [UInt8] = []
        var full = false
        for handle in handles {
            guard let a = db.attribute(at: handle) else { return .fail(handle, .invalidHandle) }
            if let e = Self.readError(a, p.security) { return .fail(handle, e) }
            if full { continue }
            switch readValue(a, offset: 0, database: db, appReads: p.appReads) {
            case let .needsApp(key):
                return .needRead(key)
            case let .failure(e):
                return .fail(handle, e)
            case let .value(v):
                if variable {
                    guard room - out.count >= 2 else { full = true; continue }
                    out.append(UInt8(v.count & 0xFF))
                    out.append(UInt8((v.count >> 8) & 0xFF))
                }
                out.append(contentsOf: v.prefix(room - out.count))
                if out.count >= room { full = true }
            }
        }
        if variable {
            // Encoded here rather than through ATTLengthValue so a cut tuple keeps its full length.
            return .respond(.unknown(opcode: .readMultipleVariableResponse, parameters: out))
        }
        return .respond(.readMultipleResponse(values: out))
    }

    /// §3.4.4.9: only the GATT grouping types, «Primary Service» and «Secondary Service»
    /// (Vol 3 Part G §2.5.1), else Unsupported Group Type. Values of one length, cut to
    /// min(ATT_MTU − 6, 251).
    func readByGroupType(_ start: UInt16, _ end: UInt16, _ type: BluetoothUUID, _ db: GATTServerDatabase,
                         _ security: LinkSecurity) -> ReadOutcome {
        guard start != 0, start <= end else { return .fail(start, .invalidHandle) }
        guard type == GATTUUID.primaryService || type == GATTUUID.secondaryService else {
            return .fail(start, .unsupportedGroupType)
        }
        let candidates = db.attributes(ofType: type, in: start...end)
        guard !candidates.isEmpty else { return .fail(start, .attributeNotFound) }
        let cap = min(mtu - 6, 251)
        var entries: [ATTGroupData] = []
        var used = 2
        for a in candidates {
            if let e = Self.readError(a, security) {
                if entries.isEmpty { return .fail(a.handle, e) }
                break
            }
            guard case let .value(v) = readValue(a, offset: 0, database: db, appReads: [:]) else { break }
            let cut = Array(v.prefix(cap))
            if let first = entries.first, first.value.count != cut.count { break }
            guard used + 4 + cut.count <= mtu else { break }
            let groupEnd = db.groupEndHandle(forServiceAt: a.handle) ?? a.handle
            entries.append(ATTGroupData(handle: a.handle, endGroupHandle: groupEnd, value: cut))
            used += 4 + cut.count
        }
        return .respond(.readByGroupTypeResponse(entries))
    }
}

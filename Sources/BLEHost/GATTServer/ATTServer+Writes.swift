import BLEWire

// The server side of writing: Write Request and Command (Core spec Vol 3 Part F §3.4.5), queued
// writes (§3.4.6), and the per-connection values written through them: the CCCD (Vol 3 Part G
// §3.3.3.3) and Client Supported Features (Vol 3 Part G §7.2).
extension ATTServer {
    /// What a write to one attribute turned into.
    enum WriteOutcome {
        /// Applied by the server; these are the reports.
        case done([ServerAction])
        case failed(ATTErrorCode)
        /// Handed to the application as `ServerAction.write` with this id.
        case app(id: UInt64, action: ServerAction)
    }

    mutating func handleWriteRequest(_ request: ATTPDU, database: inout GATTServerDatabase,
                                     security: LinkSecurity) -> [ServerAction] {
        switch request {
        case let .writeRequest(handle, value):
            guard let a = database.attribute(at: handle) else { return [Self.error(.writeRequest, handle, .invalidHandle)] }
            if let e = Self.writeError(a, security) { return [Self.error(.writeRequest, handle, e)] }
            switch write(a, offset: 0, data: value, kind: .request, database: &database) {
            case let .done(reports):
                return reports + [.send(ATTPDU.writeResponse.encode())]
            case let .failed(e):
                return [Self.error(.writeRequest, handle, e)]
            case let .app(id, action):
                pending = PendingRequest(request: request, security: security, awaiting: .write(id: id, handle: handle))
                return [action]
            }

        case let .prepareWriteRequest(handle, offset, value):
            // §3.4.6.1: permissions are checked now; offsets and lengths at execution.
            guard let a = database.attribute(at: handle) else {
                return [Self.error(.prepareWriteRequest, handle, .invalidHandle)]
            }
            if let e = Self.writeError(a, security) { return [Self.error(.prepareWriteRequest, handle, e)] }
            guard prepareQueue.count < prepareQueueLimit else {
                return [Self.error(.prepareWriteRequest, handle, .prepareQueueFull)]
            }
            prepareQueue.append(PreparedWrite(handle: handle, offset: Int(offset), value: value))
            return [.send(ATTPDU.prepareWriteResponse(handle: handle, offset: offset, value: value).encode())]

        case let .executeWriteRequest(flags):
            switch flags {
            case .cancel:
                prepareQueue.removeAll()
                preparedForRemovedService = nil
                return [.send(ATTPDU.executeWriteResponse.encode())]
            case .write:
                if let lost = preparedForRemovedService {
                    prepareQueue.removeAll()
                    preparedForRemovedService = nil
                    return [Self.error(.executeWriteRequest, lost, .invalidHandle)]
                }
                return executeWrite(database: &database, security: security)
            default:
                // Reserved flag values: the request is malformed (§3.3).
                return [Self.error(.executeWriteRequest, 0, .invalidPDU)]
            }

        default:
            return [Self.error(request.opcode, 0, .requestNotSupported)]
        }
    }

    /// §3.4.5.3 / §3.4.5.4: commands are never answered; any failure means the command is
    /// ignored. A Signed Write Command is ignored here: it is checked against the client's bond,
    /// which the owner holds, through `verifySignedWrite` and `applySignedWrite`. Commands this
    /// server does not know are ignored too (§3.3).
    mutating func receiveCommand(_ bytes: [UInt8], database: inout GATTServerDatabase,
                                 security: LinkSecurity) -> [ServerAction] {
        guard case let .writeCommand(handle, value)? = try? ATTPDU.decode(bytes),
              let a = database.attribute(at: handle), Self.writeError(a, security) == nil else { return [] }
        switch write(a, offset: 0, data: value, kind: .command, database: &database) {
        case let .done(reports): return reports
        case .failed: return []
        case let .app(_, action): return [action]
        }
    }

    /// The application's answer to `ServerAction.write(id:…)` of a Write Request or an Execute
    /// Write run. Unknown or stale ids (and command writes) are ignored. `security` is the
    /// link's now: requests held meanwhile are judged by it.
    public mutating func completeWrite(id: UInt64, result: Result<Void, ATTErrorCode>,
                                       database: inout GATTServerDatabase, security: LinkSecurity, now: Duration) -> [ServerAction] {
        clock = max(clock, now)
        var actions = takeEvents()
        guard !isClosed, let p = pending else { return actions }
        switch p.awaiting {
        case let .write(waiting, handle) where waiting == id:
            pending = nil
            switch result {
            case .success: actions.append(.send(ATTPDU.writeResponse.encode()))
            case let .failure(e): actions.append(Self.error(.writeRequest, handle, e))
            }
        case let .execute(waiting, handle, remaining, removed) where waiting == id:
            pending = nil
            switch result {
            case .success: actions += runExecute(remaining, database: &database, security: security, endingAtRemoved: removed)
            case let .failure(e): actions.append(Self.error(.executeWriteRequest, handle, e))
            }
        default:
            return actions
        }
        actions += drainDeferred(database: &database, security: security)
        return actions
    }

    // MARK: Queued writes

    /// §3.4.6.3 with flag 0x01: the queue is taken whole and cleared. Contiguous segments of one
    /// handle merge into one write (the result is the same as writing them one by one). Every
    /// write is validated first — Invalid Offset past the value's current end, Invalid Attribute
    /// Value Length past its maximum — so an invalid queue writes nothing; then the writes are
    /// applied in order, waiting for the application at each dynamic value. An application error
    /// stops the execution there (§3.4.6.3: the attributes' state is then undefined).
    mutating func executeWrite(database: inout GATTServerDatabase, security: LinkSecurity) -> [ServerAction] {
        let queue = prepareQueue
        prepareQueue.removeAll()
        var runs: [PreparedWrite] = []
        for entry in queue {
            if var last = runs.last, last.handle == entry.handle, last.offset + last.value.count == entry.offset {
                last.value += entry.value
                runs[runs.count - 1] = last
            } else {
                runs.append(entry)
            }
        }
        var simulated: [UInt16: [UInt8]] = [:]
        for run in runs {
            guard let a = database.attribute(at: run.handle) else {
                return [Self.error(.executeWriteRequest, run.handle, .invalidHandle)]
            }
            // Permissions as the link is now: each was checked as it was prepared, but an
            // authorization withdrawn or a weaker key since refuses the whole queue.
            if let e = Self.writeError(a, security) {
                return [Self.error(.executeWriteRequest, run.handle, e)]
            }
            if case .dynamic = a.value {
                guard run.offset + run.value.count <= a.maximumLength else {
                    return [Self.error(.executeWriteRequest, run.handle, .invalidAttributeValueLength)]
                }
                continue
            }
            let current = simulated[run.handle] ?? currentValue(a)
            switch newValue(a, current: current, offset: run.offset, data: run.value) {
            case let .success(v): simulated[run.handle] = v
            case let .failure(e): return [Self.error(.executeWriteRequest, run.handle, e)]
            }
        }
        return runExecute(runs, database: &database, security: security)
    }

    /// Applies validated runs in order until one needs the application; answers the Execute
    /// Write Request after the last, or with Invalid Handle for `removed` (a run whose service
    /// went while the application answered an earlier one). Each run's permissions are checked
    /// again against `security`, the link's as the run is written: after the application
    /// answers a run, an authorization withdrawn or a weaker key since then counts.
    mutating func runExecute(_ runs: [PreparedWrite], database: inout GATTServerDatabase,
                             security: LinkSecurity, endingAtRemoved removed: UInt16? = nil) -> [ServerAction] {
        var actions: [ServerAction] = []
        var rest = runs[...]
        while let run = rest.popFirst() {
            guard let a = database.attribute(at: run.handle) else {
                actions.append(Self.error(.executeWriteRequest, run.handle, .invalidHandle))
                return actions
            }
            if let e = Self.writeError(a, security) {
                actions.append(Self.error(.executeWriteRequest, run.handle, e))
                return actions
            }
            switch write(a, offset: run.offset, data: run.value, kind: .prepared, database: &database) {
            case let .done(reports):
                actions += reports
            case let .failed(e):
                actions.append(Self.error(.executeWriteRequest, run.handle, e))
                return actions
            case let .app(id, action):
                pending = PendingRequest(request: .executeWriteRequest(flags: .write), security: security,
                                         awaiting: .execute(id: id, handle: run.handle, remaining: Array(rest), removed: removed))
                actions.append(action)
                return actions
            }
        }
        if let removed {
            actions.append(Self.error(.executeWriteRequest, removed, .invalidHandle))
            return actions
        }
        actions.append(.send(ATTPDU.executeWriteResponse.encode()))
        return actions
    }

    // MARK: Applying one write

    /// Writes `data` at `offset` into `attribute` (permissions already checked).
    mutating func write(_ attribute: GATTAttribute, offset: Int, data: [UInt8], kind: ServerAction.WriteKind,
                        database: inout GATTServerDatabase) -> WriteOutcome {
        if case .dynamic = attribute.value {
            guard offset + data.count <= attribute.maximumLength else { return .failed(.invalidAttributeValueLength) }
            let id = makeID()
            return .app(id: id, action: .write(id: id, handle: attribute.handle, value: data, offset: offset, kind: kind))
        }
        switch newValue(attribute, current: currentValue(attribute), offset: offset, data: data) {
        case let .failure(e):
            return .failed(e)
        case let .success(v):
            return .done(commit(attribute, v, database: &database))
        }
    }

    /// The value a non-dynamic attribute has now, as this connection sees it.
    func currentValue(_ attribute: GATTAttribute) -> [UInt8] {
        switch attribute.value {
        case let .fixed(v), let .stored(v): return v
        case let .clientConfiguration(valueHandle, _):
            let v = cccd(valueHandle: valueHandle)
            return [UInt8(v & 0xFF), UInt8(v >> 8)]
        case .clientSupportedFeatures: return clientFeaturesValue
        case .dynamic, .databaseHash: return []
        }
    }

    /// The value after writing `data` at `offset` into `current`, or why it cannot be written.
    ///
    /// Variable-length values (stored, Client Supported Features) take the written length
    /// (§3.4.5.1): the first `offset` octets, then `data`; of Client Supported Features only the
    /// defined bits are kept (`keptClientFeatures`). The CCCD has a fixed length of two
    /// octets: the written octets replace those at `offset`, the others stay (§3.4.5.1), and a
    /// longer write is Invalid Attribute Value Length.
    func newValue(_ attribute: GATTAttribute, current: [UInt8], offset: Int, data: [UInt8]) -> Result<[UInt8], ATTErrorCode> {
        guard offset <= current.count else { return .failure(.invalidOffset) }
        switch attribute.value {
        case .fixed, .databaseHash, .dynamic:
            return .failure(.writeNotPermitted)
        case .stored:
            let v = Array(current.prefix(offset)) + data
            return v.count <= attribute.maximumLength ? .success(v) : .failure(.invalidAttributeValueLength)
        case let .clientConfiguration(_, properties):
            guard offset + data.count <= 2 else { return .failure(.invalidAttributeValueLength) }
            var v = current
            v.replaceSubrange(offset..<offset + data.count, with: data)
            // CSS Part B §1.2 (0xFD): enabling an update the characteristic does not support.
            let bits = UInt16(v[0]) | UInt16(v[1]) << 8
            if bits & 0x0001 != 0 && !properties.contains(.notify) { return .failure(.cccdImproperlyConfigured) }
            if bits & 0x0002 != 0 && !properties.contains(.indicate) { return .failure(.cccdImproperlyConfigured) }
            return .success(v)
        case .clientSupportedFeatures:
            let written = Array(current.prefix(offset)) + data
            guard written.count <= attribute.maximumLength else { return .failure(.invalidAttributeValueLength) }
            // Reserved bits are processed as 0 (Table 7.6), so only a defined bit can be cleared.
            let v = Self.keptClientFeatures(written)
            // Vol 3 Part G §7.2: a client shall not clear a bit it has set; Value Not Allowed.
            if (current.first ?? 0) & Self.definedClientFeatureBits & ~(v.first ?? 0) != 0 {
                return .failure(.valueNotAllowed)
            }
            return .success(v)
        }
    }

    /// The Client Supported Features bits this server knows (Vol 3 Part G §7.2, Table 7.6):
    /// bit 0 Robust Caching, bit 1 Enhanced ATT bearer, bit 2 Multiple Handle Value
    /// Notifications. Every other bit, in this octet and in any after it, is reserved for
    /// future use, and the server processes it as 0.
    static let definedClientFeatureBits: UInt8 = 0x07

    /// A Client Supported Features value as the server keeps it: the defined bits of its first
    /// octet; nothing for an empty value. Octets after the first hold reserved bits only.
    static func keptClientFeatures(_ value: [UInt8]) -> [UInt8] {
        value.first.map { [$0 & definedClientFeatureBits] } ?? []
    }

    /// The Client Supported Features value as this connection's client reads it: the kept
    /// octet, or one octet of 0 (every bit's default, §7.2) before any write.
    var clientFeaturesValue: [UInt8] {
        client.features.isEmpty ? [0x00] : client.features
    }

    /// Stores a validated new value and reports it.
    mutating func commit(_ attribute: GATTAttribute, _ value: [UInt8], database: inout GATTServerDatabase) -> [ServerAction] {
        switch attribute.value {
        case .stored:
            database.setValue(value, forHandle: attribute.handle)
            return [.valueWritten(handle: attribute.handle, value: value)]
        case let .clientConfiguration(valueHandle, _):
            // Reserved bits (2–15) are not kept: only notifications and indications exist.
            let bits = (UInt16(value[0]) | UInt16(value[1]) << 8) & 0x0003
            let old = cccd(valueHandle: valueHandle)
            client.configurations[valueHandle] = bits
            guard bits != old else { return [] }
            return [.subscriptionChanged(valueHandle: valueHandle, notifications: bits & 1 != 0, indications: bits & 2 != 0)]
        case .clientSupportedFeatures:
            // `newValue` made it: the defined bits only (`keptClientFeatures`).
            client.features = value
            client.featuresWritten = value.first
            return [.valueWritten(handle: attribute.handle, value: value)]
        case .fixed, .dynamic, .databaseHash:
            return []
        }
    }
}

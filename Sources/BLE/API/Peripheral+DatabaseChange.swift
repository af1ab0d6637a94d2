import BLEHost
import BLEWire

/// Reads and writes of characteristics across a change of the server's database (Core spec
/// Vol 3 Part G §7.1, §2.5.2.1).
///
/// A Service Changed indication whose range covers a characteristic's value handle, arriving
/// while a request for it is outstanding (or waiting to go out), ends that request with
/// `GATTError.databaseChanged`: the answer may come from what is now another attribute, so it is
/// not used (`ATTClientBearerSet.serverDatabaseChanged`). A Database Out Of Sync answer
/// (§2.5.2.1) says the server did not serve the request because its database changed since the
/// client last knew it (the whole database counts as changed). Either way the characteristic is
/// found again and the request sent once more, only where that cannot pick another attribute.
/// Attributes outside a Service Changed range keep their handles (§7.1), so:
///
/// - Its service is the one the client knew holding it when the request started (in `services`,
///   or one whose characteristics `discoverCharacteristics(for:)` found, primary or secondary).
/// - That service's declaration outside every range changed since the request started: the
///   service still starts there. A primary one is discovered again by its UUID (§4.4.2) and the
///   instance starting at that handle taken (its end may have moved).
/// - Its declaration inside a changed range: the service may have moved. It is found again only
///   when it was the one service of its UUID the client knew and discovery by UUID finds
///   exactly one now.
/// - Then the service's characteristics of the characteristic's UUID (§4.6.1): exactly one
///   must be there.
/// - A characteristic in no service the client knew, found through the attribute cache (as
///   `characteristic(_:)` and `ble read UUID` find it), is found as it was, the first of its UUID
///   in handle order, and only when the database holds no other of that UUID. One the client
///   neither found so nor knows the service of (its service changed before the request) is not
///   found again.
/// - A secondary service reached by the change, a service not found at its handle, a
///   characteristic gone or no longer told apart (two of its UUID), or a second change during
///   the retry end with `BLEError.gatt(.databaseChanged(range))`: a server whose database keeps
///   changing cannot keep the client asking, and a write is never sent to a handle the client
///   only guesses is the same characteristic. A write the server did carry out before the change
///   may so be carried out twice; one that went to what is now another attribute cannot be
///   undone.
/// - After Database Out Of Sync the client first reads the Database Hash, which makes it
///   change-aware on every bearer (§2.5.2.1); otherwise the server would refuse the search too.
///
/// Requests by handle (`readValue(handle:)`, `writeValue(_:handle:)`, descriptors) are not
/// retried: a handle names an attribute, not a characteristic, and nothing says what it meant.
extension Peripheral {
    /// `body` on `characteristic`, and once more on it found again after a change of the
    /// server's database (see the extension's comment).
    func acrossDatabaseChange<T: Sendable>(of characteristic: GATTCharacteristic,
                                           _ body: (GATTCharacteristic) async throws -> T) async throws -> T {
        try await acrossDatabaseChange(of: [characteristic]) { found in try await body(found.first ?? characteristic) }
    }

    /// `body` on `characteristics`, and once more on them, each found again where the change
    /// reached it, after a change of the server's database (see the extension's comment).
    func acrossDatabaseChange<T: Sendable>(of characteristics: [GATTCharacteristic],
                                           _ body: ([GATTCharacteristic]) async throws -> T) async throws -> T {
        // Taken now: the Service Changed indication removes the services it covers.
        let before = observation.snapshot
        let known = knownServices(before)
        let lost: ClosedRange<UInt16>
        do {
            return try await body(characteristics)
        } catch let BLEError.gatt(error) {
            guard let range = error.changedRange else { throw BLEError.gatt(error) }
            lost = range
            if case .att(.databaseOutOfSync, _, _) = error { try await becomeChangeAware() }
        }
        let found = try await locateAgain(characteristics, since: before.databaseChanges, lost: lost, services: known,
                                          lookedUp: before.lookedUpCharacteristics)
        do {
            return try await body(found)
        } catch let BLEError.gatt(again) {
            guard let range = again.changedRange else { throw BLEError.gatt(again) }
            throw BLEError.gatt(.databaseChanged(range))
        }
    }

    /// `characteristics` found again (`locateAgain`) after the changes since `count`. A change
    /// while they are found again (a server that removes a service, then adds it elsewhere,
    /// indicates twice) may reach what the rules chose by: they are found again with it counted,
    /// up to `GATTDatabaseChangeEffect.coverAgainLimit` times, then `.databaseChanged`.
    private func locateAgain(_ characteristics: [GATTCharacteristic], since count: Int, lost: ClosedRange<UInt16>,
                             services known: [GATTService], lookedUp: [GATTCharacteristic]) async throws -> [GATTCharacteristic] {
        var last = lost
        for _ in 0..<GATTDatabaseChangeEffect.coverAgainLimit {
            let located = observation.snapshot
            let changed = located.changes(since: count) + [lost]
            var found: [GATTCharacteristic] = []
            for c in characteristics {
                found.append(try await locateAgain(c, changed: changed, lost: lost, services: known, lookedUp: lookedUp))
            }
            guard let again = observation.snapshot.changes(since: located.databaseChanges).last else { return found }
            last = again
        }
        throw BLEError.gatt(.databaseChanged(last))
    }

    /// The services whose characteristics the client may hold, by start handle: `services` and
    /// those `discoverCharacteristics(for:)` recorded.
    private func knownServices(_ snapshot: LinkObservation.Snapshot) -> [GATTService] {
        let listed = snapshot.services.filter { s in !snapshot.characteristicServices.contains { $0.startHandle == s.startHandle } }
        return (listed + snapshot.characteristicServices).sorted { $0.startHandle < $1.startHandle }
    }

    /// `characteristic` where it is after the server's database changed in `changed` (every
    /// range since the request started): itself when no change reaches its declaration or
    /// value, else found again by the rules of the extension's comment, or
    /// `.databaseChanged(lost)`.
    private func locateAgain(_ characteristic: GATTCharacteristic, changed: [ClosedRange<UInt16>], lost: ClosedRange<UInt16>,
                             services known: [GATTService], lookedUp: [GATTCharacteristic]) async throws -> GATTCharacteristic {
        let span = characteristic.declarationHandle...max(characteristic.declarationHandle, characteristic.valueHandle)
        guard changed.contains(where: { $0.overlaps(span) }) else { return characteristic }
        let failure = BLEError.gatt(.databaseChanged(lost))
        guard let service = known.first(where: { $0.handleRange.contains(characteristic.declarationHandle) }) else {
            guard lookedUp.contains(characteristic) else { throw failure }
            return try await locateUniqueAgain(characteristic.uuid, orFail: failure)
        }
        guard service.isPrimary else { throw failure }
        let now = try await discoverServices([service.uuid])
        let instance: GATTService?
        if changed.contains(where: { $0.contains(service.startHandle) }) {
            let before = known.filter { $0.isPrimary && $0.uuid == service.uuid }
            instance = before.count == 1 && now.count == 1 ? now.first : nil
        } else {
            instance = now.first { $0.startHandle == service.startHandle }
        }
        guard let instance else { throw failure }
        let matching = try await discoverCharacteristics([characteristic.uuid], for: instance)
        guard matching.count == 1, let found = matching.first else { throw failure }
        return found
    }

    /// The one characteristic of `uuid` in the database, found as `characteristic(_:)` finds it
    /// and then searched for after it to the end of the database; `failure` when there is
    /// none, or another.
    private func locateUniqueAgain(_ uuid: BluetoothUUID, orFail failure: BLEError) async throws -> GATTCharacteristic {
        guard let found = try await characteristic(uuid) else { throw failure }
        guard found.endHandle < 0xFFFF else { return found }
        guard case let .characteristicSearch(after) = try await run(FindCharacteristicProcedure(uuid: uuid, range: (found.endHandle + 1)...0xFFFF)) else {
            throw BLEError.unsupported("internal: unexpected output for a characteristic search")
        }
        guard !after.characteristics.contains(where: { $0.uuid == uuid }) else { throw failure }
        return found
    }

    /// After Database Out Of Sync (§2.5.2.1): reads the Database Hash, which makes the client
    /// change-aware on every bearer. With a cache store that is the read that prepares the link's
    /// cache again (the host dropped it, `GATTCacheSessions.outOfSync`); without one, a read of
    /// its own.
    func becomeChangeAware() async throws {
        if host.configuration.gattCache != nil {
            _ = try await cache()
        } else {
            _ = try await databaseHashOrDiscovery()
        }
    }
}

extension GATTError {
    /// The handles a change of the server's database may have given to other attributes: the
    /// range of `.databaseChanged`, the whole database for Database Out Of Sync (§2.5.2.1,
    /// which does not say where); nil for every other error.
    var changedRange: ClosedRange<UInt16>? {
        switch self {
        case let .databaseChanged(range): return range
        case .att(.databaseOutOfSync, _, _): return 0x0001...0xFFFF
        default: return nil
        }
    }
}

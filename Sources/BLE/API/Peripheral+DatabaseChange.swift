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
/// client last knew it. Either way the characteristic is found again and the request sent once
/// more:
///
/// - By UUID within its service. The service is the one `services` showed holding the
///   characteristic when the request started; it is discovered again by its UUID (§4.4.2) and
///   the same instance taken (the n-th of that UUID in handle order), then its characteristics
///   of the characteristic's UUID (§4.6.1): exactly one must be there. A characteristic whose
///   service the client never discovered (found through the attribute cache, as
///   `characteristic(_:)` and `ble read UUID` find it) is found as it was: the first of its UUID
///   in handle order, searching only what the change cut out of the cache.
/// - After Database Out Of Sync the client first reads the Database Hash, which makes it
///   change-aware on every bearer (§2.5.2.1); otherwise the server would refuse the search too.
/// - Once. A second change during the retry, a characteristic that is gone, or one that can no
///   longer be told apart (two of its UUID in its service) ends with
///   `BLEError.gatt(.databaseChanged(range))`: a server whose database keeps changing cannot keep
///   the client asking, and a write is never sent to a handle the client only guesses is the
///   same characteristic. A write the server did carry out before the change may so be carried
///   out twice; one that went to what is now another attribute cannot be undone.
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
        // Taken now: the Service Changed indication removes the services it covers from `services`.
        let known = services
        let changed: ClosedRange<UInt16>
        do {
            return try await body(characteristics)
        } catch let BLEError.gatt(error) {
            guard let range = error.changedRange else { throw BLEError.gatt(error) }
            changed = range
            if case .att(.databaseOutOfSync, _, _) = error { try await becomeChangeAware() }
        }
        var found: [GATTCharacteristic] = []
        for c in characteristics {
            found.append(try await locateAgain(c, changed: changed, services: known))
        }
        do {
            return try await body(found)
        } catch let BLEError.gatt(again) {
            guard let range = again.changedRange else { throw BLEError.gatt(again) }
            throw BLEError.gatt(.databaseChanged(range))
        }
    }

    /// `characteristic` where it is after the server's database changed in `changed`: itself
    /// when the change does not reach its declaration or value; else found again by UUID within
    /// its service (one of `services`, as they were before the change), or, with no known
    /// service, as the first of its UUID.
    private func locateAgain(_ characteristic: GATTCharacteristic, changed: ClosedRange<UInt16>,
                             services known: [GATTService]) async throws -> GATTCharacteristic {
        let span = characteristic.declarationHandle...max(characteristic.declarationHandle, characteristic.valueHandle)
        guard changed.overlaps(span) else { return characteristic }
        let lost = BLEError.gatt(.databaseChanged(changed))
        guard let service = known.first(where: { $0.handleRange.contains(characteristic.declarationHandle) }) else {
            guard let found = try await self.characteristic(characteristic.uuid) else { throw lost }
            return found
        }
        let siblings = known.filter { $0.uuid == service.uuid }.sorted { $0.startHandle < $1.startHandle }
        let now = try await discoverServices([service.uuid])
        guard let instance = siblings.firstIndex(of: service), instance < now.count else { throw lost }
        let matching = try await discoverCharacteristics([characteristic.uuid], for: now[instance])
        guard matching.count == 1, let found = matching.first else { throw lost }
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

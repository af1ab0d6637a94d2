import BLEHost
import BLEWire

/// Each link's attribute cache (Core spec Vol 3 Part G §2.5.2): what the client knows of the
/// server's database on this connection, the key it is stored under, and whether it may be
/// trusted. Isolated to the host actor that owns it, which it knows only as a
/// `GATTCacheDriver`; `Peripheral`'s cached lookups fill it, and Service Changed indications
/// (§7.1) cut the range they name out of it.
final class GATTCacheSessions {
    /// One link's cache.
    struct Entry {
        /// Where it is stored; nil when it cannot be (no store, or an unbonded server with no
        /// Database Hash, whose cache could never be checked on a later connection).
        var key: GATTCacheKey?
        var cache: GATTAttributeCache
        /// Set by the lookups that loaded it: true when the entry came from storage.
        var loaded: Bool
        /// An unbonded server's database changed (Service Changed) since the hash was read: its
        /// entry is not stored until the next lookup reads the new hash and keys it by that.
        var needsHash = false
    }

    private var entries: [UInt64: Entry] = [:]

    /// The link's cache, once prepared.
    func entry(linkID: UInt64) -> Entry? { entries[linkID] }

    /// Installs a prepared cache for a link that is still up.
    func install(_ entry: Entry, linkID: UInt64, _ host: isolated some GATTCacheDriver) {
        guard let peer = host.peer(ofLink: linkID) else { return }
        entries[linkID] = entry
        // Server Supported Features read before the cache was prepared: kept with it now.
        if entry.cache.serverFeatures == nil, let features = host.serverFeatures(readFrom: peer) {
            update(linkID: linkID, host) { $0.serverFeatures = features }
        }
    }

    /// Changes the link's cache and stores it. A store that fails is logged: the link keeps
    /// what it learned, the next connection discovers again.
    func update(linkID: UInt64, _ host: isolated some GATTCacheDriver, _ body: (inout GATTAttributeCache) -> Void) {
        guard var entry = entries[linkID] else { return }
        let before = entry.cache
        body(&entry.cache)
        entries[linkID] = entry
        guard entry.cache != before else { return }
        persist(entry, host)
    }

    /// A request on the link was answered Database Out Of Sync (§2.5.2.1): the server's
    /// database changed since the cache was filled. The link's cache is dropped, and a bonded
    /// peer's stored entry removed (an unbonded peer's stays valid for the hash it is kept
    /// under); the next lookup prepares it again from the Database Hash.
    func outOfSync(linkID: UInt64, _ host: isolated some GATTCacheDriver) {
        guard let entry = entries.removeValue(forKey: linkID) else { return }
        guard let key = entry.key, key.bonded, let store = host.configuration.gattCache else { return }
        do { try store.remove(key) } catch { host.log("GATT cache \(key): not removed: \(error)") }
    }

    private func persist(_ entry: Entry, _ host: isolated some GATTCacheDriver) {
        guard let key = entry.key, let store = host.configuration.gattCache else { return }
        do {
            try store.save(entry.cache, for: key)
        } catch {
            host.log("GATT cache \(key): not stored: \(error)")
        }
    }

    /// A Service Changed indication named `range` (§7.1): whatever the cache held there is stale.
    /// An unbonded server's entry is keyed by the Database Hash it was read for, which no
    /// longer describes the database: it stops being stored (the entry under the old hash stays
    /// valid for that database) until `rekey` gives it the new hash.
    func servicesChanged(_ range: ClosedRange<UInt16>, linkID: UInt64, _ host: isolated some GATTCacheDriver) {
        if var entry = entries[linkID], let key = entry.key, !key.bonded {
            entry.key = nil
            entry.needsHash = true
            entry.cache.databaseHash = nil
            entries[linkID] = entry
        }
        update(linkID: linkID, host) { $0.invalidate(range) }
    }

    /// The new Database Hash of an unbonded server whose database changed on this link: the
    /// entry is keyed by it (nil: the server has none, so the entry is not stored) and stored.
    func rekey(linkID: UInt64, peer: DeviceAddress, databaseHash hash: [UInt8]?, _ host: isolated some GATTCacheDriver) {
        guard var entry = entries[linkID], entry.needsHash else { return }
        entry.needsHash = false
        entry.cache.databaseHash = hash
        entry.key = hash.map { .unbonded(peer, databaseHash: $0) }
        entries[linkID] = entry
        persist(entry, host)
    }

    /// Whether a failed Database Hash read leaves the bearer usable for discovery instead: an
    /// ATT error or a malformed answer does; a timeout or a closed bearer does not (no more
    /// requests on a timed-out bearer, Vol 3 Part F §3.3.3).
    static func discoveryReplaces(_ error: GATTError) -> Bool {
        switch error {
        case .att, .unexpectedResponse, .malformedResponse, .protocolViolation: return true
        default: return false
        }
    }

    /// The link is gone; its cache stays in the store.
    func linkClosed(_ link: Link, _ host: isolated some GATTCacheDriver) {
        entries[link.id] = nil
    }
}

/// What the attribute caches need from the host beyond `HostServices` (whose configuration
/// holds the cache store): whether a link is still up and its peer, and of the GATT client,
/// the Server Supported Features it read from a peer before the cache was prepared.
protocol GATTCacheDriver: HostServices {
    /// The peer of the link with this id, while it is up.
    func peer(ofLink linkID: UInt64) -> DeviceAddress?
    /// The Server Supported Features (Vol 3 Part G §7.4) the client read from `peer`, if any.
    func serverFeatures(readFrom peer: DeviceAddress) -> [UInt8]?
}

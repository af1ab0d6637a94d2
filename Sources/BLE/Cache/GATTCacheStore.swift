import BLEHost
import BLEWire
import Synchronization

/// Which stored attribute cache belongs to a server (Core spec Vol 3 Part G §2.5.2): for a
/// bonded peer its identity address, since a bonded server tells its clients about changes
/// (Service Changed, §7.1) and keeps their state across connections; for any other peer its
/// address together with the Database Hash (§7.3) it reported, since an unbonded client is
/// told nothing between connections and may trust a cache only for the database it was read
/// from.
public struct GATTCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The bonded peer's identity address, else the address it connected with.
    public var peer: DeviceAddress
    /// The peer is bonded.
    public var bonded: Bool
    /// The Database Hash, for an unbonded peer (nil for a bonded one).
    public var databaseHash: [UInt8]?

    /// The key of a bonded peer's cache.
    public static func bonded(_ identity: DeviceAddress) -> GATTCacheKey {
        GATTCacheKey(peer: identity, bonded: true, databaseHash: nil)
    }

    /// The key of an unbonded peer's cache for the database whose hash is `hash`.
    public static func unbonded(_ address: DeviceAddress, databaseHash hash: [UInt8]) -> GATTCacheKey {
        GATTCacheKey(peer: address, bonded: false, databaseHash: hash)
    }

    /// The file name: `C0-11-22-33-44-55-random.gatt` when bonded, with `-<hash in hex>` before
    /// the suffix otherwise.
    public var fileName: String {
        let base = String("\(peer.address)".map { $0 == ":" ? "-" : $0 }) + "-\(peer.type.peerType)"
        guard !bonded, let databaseHash else { return base + Self.suffix }
        return base + "-" + databaseHash.hexString.lowercased() + Self.suffix
    }

    /// `.gatt`.
    public static let suffix = ".gatt"

    /// The file name, for logs.
    public var description: String { fileName }
}

/// Where attribute caches are kept between connections. `load` of an entry that cannot be
/// trusted (corrupt, hostile, unreadable) throws a typed error and the client discovers afresh.
public protocol GATTCacheStore: Sendable {
    /// The cache stored under `key`, nil when there is none.
    func load(_ key: GATTCacheKey) throws -> GATTAttributeCache?
    /// Stores (replaces) the cache under `key`.
    func save(_ cache: GATTAttributeCache, for key: GATTCacheKey) throws
    /// Removes the cache under `key`, if any.
    func remove(_ key: GATTCacheKey) throws
}

/// Caches in memory, encoded as they would be on disk so both stores read the same bytes: for
/// `ble --hci virtual` (whose demo peripherals end with the process) and for tests.
public final class InMemoryGATTCacheStore: GATTCacheStore {
    private let files = Mutex<[String: [UInt8]]>([:])

    /// An empty store.
    public init() {}

    /// The entry under `key`; a file that does not decode throws `GATTCacheFileError`.
    public func load(_ key: GATTCacheKey) throws -> GATTAttributeCache? {
        guard let bytes = files.withLock({ $0[key.fileName] }) else { return nil }
        return try GATTCacheFileFormat.decode(bytes)
    }

    /// Stores `cache` under `key`, replacing what was there.
    public func save(_ cache: GATTAttributeCache, for key: GATTCacheKey) throws {
        let bytes = GATTCacheFileFormat.encode(cache)
        files.withLock { $0[key.fileName] = bytes }
    }

    /// Removes the entry under `key`, if any.
    public func remove(_ key: GATTCacheKey) throws {
        _ = files.withLock { $0.removeValue(forKey: key.fileName) }
    }

    /// Replaces an entry's bytes as they are, for tests of corrupt and hostile entries.
    public func setBytes(_ bytes: [UInt8], for key: GATTCacheKey) {
        files.withLock { $0[key.fileName] = bytes }
    }

    /// The stored entries' file names.
    public var fileNames: [String] { files.withLock { $0.keys.sorted() } }
}

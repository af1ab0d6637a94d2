import BLEHost
import BLETransport
import BLEWire

/// Attribute caches as files (`ble --gatt-cache DIR`, `BLE_GATT_CACHE`, default
/// `$XDG_CACHE_HOME/ble/gatt`): one `GATTCacheFileFormat` file per key (see
/// `GATTCacheKey.fileName`), written atomically and durably by `PrivateFiles` (temporary file,
/// fsync, rename; 0600 in a 0700 directory), so a process killed mid-write leaves the old entry
/// or the new one. A bonded peer's entry is also written beside its bond, in the bonds
/// directory, where it is read first: it belongs with the keys that make it trustworthy
/// (Core spec Vol 3 Part G §2.5.2: a bonded server tells the client of changes).
public final class DirectoryGATTCacheStore: GATTCacheStore {
    /// The cache directory.
    public let directory: String
    /// The bonds directory, for bonded peers' second copy; nil when bonds are not on disk.
    public let bondsDirectory: String?

    /// Opens (creating it 0700) the store in `directory`; refuses one another user owns.
    public init(directory: String, bondsDirectory: String? = nil) throws {
        self.directory = directory
        self.bondsDirectory = bondsDirectory
        do {
            try PrivateFiles.ensureDirectory(directory)
            try PrivateFiles.removeStaleTemporaries(directory)
        } catch {
            throw BLEError.invalidArgument("GATT cache directory \(error)")
        }
    }

    /// The directory `ble` uses when neither `--gatt-cache` nor `BLE_GATT_CACHE` names one:
    /// `$XDG_CACHE_HOME/ble/gatt`, else `$HOME/.cache/ble/gatt` (XDG Base Directory spec).
    public static func defaultDirectory(environment: [String: String]) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/ble/gatt" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.cache/ble/gatt"
    }

    private func directories(for key: GATTCacheKey) -> [String] {
        if key.bonded, let bondsDirectory { return [bondsDirectory, directory] }
        return [directory]
    }

    /// The entry under `key`; a file that does not decode throws `GATTCacheFileError`.
    public func load(_ key: GATTCacheKey) throws -> GATTAttributeCache? {
        var firstError: (any Error)?
        for dir in directories(for: key) {
            do {
                guard let contents = try PrivateFiles.read(directory: dir, name: key.fileName) else { continue }
                return try GATTCacheFileFormat.decode(contents.bytes)
            } catch {
                // A bad copy beside the bond may still have a good twin in the cache directory.
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
        return nil
    }

    /// Stores `cache` under `key`, replacing what was there.
    public func save(_ cache: GATTAttributeCache, for key: GATTCacheKey) throws {
        let bytes = GATTCacheFileFormat.encode(cache)
        for dir in directories(for: key) {
            if dir == bondsDirectory { try PrivateFiles.ensureDirectory(dir) }
            try PrivateFiles.write(bytes, directory: dir, name: key.fileName)
        }
    }

    /// Removes the entry under `key`, if any.
    public func remove(_ key: GATTCacheKey) throws {
        for dir in directories(for: key) { _ = try PrivateFiles.remove(directory: dir, name: key.fileName) }
    }
}

import BLETransport
import BLEWire
import Synchronization

/// Bonds as files in a directory (`ble --bonds DIR`, `BLE_BONDS`, default
/// `$XDG_DATA_HOME/ble/bonds`): one file per peer named by its identity address
/// (`C0-11-22-33-44-55-random.bond`), and `identity` for this host's own keys. Each write is
/// atomic and durable (`PrivateFiles`), so a process killed at any moment leaves every bond old or
/// new; files are 0600 in a 0700 directory. A file that does not parse is reported by
/// `problems()` and skipped.
public final class DirectoryBondStore: BondStore {
    /// The directory holding the `*.bond` files and the `identity` file.
    public let directory: String
    private let reported = Mutex<[String]>([])
    private let identityLock = Mutex<LocalIdentity?>(nil)

    /// Opens (creating it 0700 if needed) the store in `directory`.
    public init(directory: String) throws {
        self.directory = directory
        do {
            try PrivateFiles.ensureDirectory(directory)
            try PrivateFiles.removeStaleTemporaries(directory)
        } catch {
            throw BLEError.invalidArgument("bonds directory \(error)")
        }
    }

    /// The directory `ble` uses when neither `--bonds` nor `BLE_BONDS` names one:
    /// `$XDG_DATA_HOME/ble/bonds`, else `$HOME/.local/share/ble/bonds` (XDG Base Directory spec).
    public static func defaultDirectory(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/ble/bonds" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.local/share/ble/bonds"
    }

    static let suffix = ".bond"
    static let identityFile = "identity"

    static func fileName(for peer: DeviceAddress) -> String {
        String("\(peer.address)".map { $0 == ":" ? "-" : $0 }) + "-\(peer.type.peerType)" + suffix
    }

    /// Reads every `*.bond` file. A file that does not parse, or whose bond names a peer other than
    /// its file name, is skipped and reported by `problems()`.
    public func bonds() throws -> [Bond] {
        var found: [Bond] = []
        var problems: [String] = []
        let names: [String]
        do { names = try PrivateFiles.list(directory) } catch { throw BLEError.invalidArgument("bonds directory \(error)") }
        for name in names where name.hasSuffix(Self.suffix) && !name.hasPrefix(".") {
            do {
                guard let bytes = try PrivateFiles.read(directory: directory, name: name) else { continue }
                let bond = try BondFileFormat.decodeBond(String(decoding: bytes, as: UTF8.self))
                guard Self.fileName(for: bond.peer) == name else {
                    problems.append("\(name): names \(bond.peer), skipped")
                    continue
                }
                found.append(bond)
            } catch {
                problems.append("\(name): \(error), skipped")
            }
        }
        reported.withLock { $0 = problems }
        return found
    }

    /// Writes `bond` to its peer's file atomically, replacing any earlier bond of that peer.
    public func save(_ bond: Bond) throws {
        do {
            try PrivateFiles.write(Array(BondFileFormat.encode(bond).utf8), directory: directory, name: Self.fileName(for: bond.peer))
        } catch {
            throw BLEError.transport("saving the bond of \(bond.peer): \(error)")
        }
    }

    /// Deletes the peer's bond file; true when there was one.
    public func remove(_ peer: DeviceAddress) throws -> Bool {
        do { return try PrivateFiles.remove(directory: directory, name: Self.fileName(for: peer)) } catch {
            throw BLEError.transport("removing the bond of \(peer): \(error)")
        }
    }

    /// The identity in the `identity` file; generated and written on first use. A corrupt
    /// identity file is an error, not replaced: bonded peers know us by it.
    public func localIdentity() throws -> LocalIdentity {
        try identityLock.withLock { cached in
            if let cached { return cached }
            do {
                if let bytes = try PrivateFiles.read(directory: directory, name: Self.identityFile) {
                    let identity = try BondFileFormat.decodeIdentity(String(decoding: bytes, as: UTF8.self))
                    cached = identity
                    return identity
                }
                let made = try LocalIdentity.generate()
                try PrivateFiles.write(Array(BondFileFormat.encode(made).utf8), directory: directory, name: Self.identityFile)
                cached = made
                return made
            } catch let error as BondFileFormat.Malformed {
                throw BLEError.invalidArgument("\(directory)/\(Self.identityFile): \(error) (move it away to make a new identity; bonded peers will not know us)")
            } catch {
                throw BLEError.transport("local identity in \(directory): \(error)")
            }
        }
    }

    /// The files the last `bonds()` call skipped, each with why.
    public func problems() -> [String] { reported.withLock { $0 } }
}

import BLETransport
import BLEWire
import Synchronization

/// Bonds as files in a directory (`ble --bonds DIR`, `BLE_BONDS`, default
/// `$XDG_DATA_HOME/ble/bonds`): one file per peer named by its identity address
/// (`C0-11-22-33-44-55-random.bond`), and `identity` for this host's own keys. Each write is
/// atomic and durable (`PrivateFiles`), so a process killed at any moment leaves every bond old or
/// new; files are 0600 in a 0700 directory. A file that does not parse, or that another user
/// owns, is reported by `problems()` and skipped; a file or the directory found open to group or
/// others is tightened (0600, 0700) and that is reported too, since its keys may have been read.
/// The directory is held open (`PrivateDirectory`, opened with O_NOFOLLOW) from `init` on: a
/// symlink there is refused, and one swapped in later is not followed.
public final class DirectoryBondStore: BondStore {
    /// The directory holding the `*.bond` files and the `identity` file.
    public let directory: String
    private let files: PrivateDirectory
    private let reported = Mutex<[String]>([])
    /// What was tightened outside `bonds()` (the directory when opened, the identity file),
    /// reported by every `problems()` call from then on.
    private let notices = Mutex<[String]>([])
    private let identityLock = Mutex<LocalIdentity?>(nil)

    /// Opens (creating it 0700 if needed) the store in `directory`. Refuses a symlink and a
    /// directory another user owns; tightens one that group or others can reach to 0700
    /// (reported by `problems()`).
    public init(directory: String) throws {
        self.directory = directory
        do {
            files = try PrivateDirectory(directory)
            notices.withLock { $0 += files.tightened }
            try files.removeStaleTemporaries()
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
    /// The fixed passkeys already shown, six digits a line.
    static let retiredPasskeysFile = "retired-passkeys"

    static func fileName(for peer: DeviceAddress) -> String {
        String("\(peer.address)".map { $0 == ":" ? "-" : $0 }) + "-\(peer.type.peerType)" + suffix
    }

    /// Reads every `*.bond` file. A file that does not parse, that another user owns, or whose
    /// bond names a peer other than its file name, is skipped and reported by `problems()`; one
    /// whose mode let group or others read it is tightened to 0600, used, and reported.
    public func bonds() throws -> [Bond] {
        var found: [Bond] = []
        var problems: [String] = []
        let names: [String]
        do { names = try files.list() } catch { throw BLEError.invalidArgument("bonds directory \(error)") }
        for name in names where name.hasSuffix(Self.suffix) && !name.hasPrefix(".") {
            do {
                guard let contents = try files.read(name: name) else { continue }
                problems += contents.tightened
                let bond = try BondFileFormat.decodeBond(String(decoding: contents.bytes, as: UTF8.self))
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
            try files.write(Array(BondFileFormat.encode(bond).utf8), name: Self.fileName(for: bond.peer))
        } catch {
            throw BLEError.transport("saving the bond of \(bond.peer): \(error)")
        }
    }

    /// Deletes the peer's bond file; true when there was one.
    public func remove(_ peer: DeviceAddress) throws -> Bool {
        do { return try files.remove(name: Self.fileName(for: peer)) } catch {
            throw BLEError.transport("removing the bond of \(peer): \(error)")
        }
    }

    /// The identity in the `identity` file; generated and written on first use. A corrupt
    /// identity file, or one another user owns, is an error, not replaced: bonded peers know us
    /// by it. One that group or others could read is tightened to 0600 and reported by
    /// `problems()`.
    public func localIdentity() throws -> LocalIdentity {
        try identityLock.withLock { cached in
            if let cached { return cached }
            do {
                if let contents = try files.read(name: Self.identityFile) {
                    notices.withLock { $0 += contents.tightened }
                    let identity = try BondFileFormat.decodeIdentity(String(decoding: contents.bytes, as: UTF8.self))
                    cached = identity
                    return identity
                }
                let made = try LocalIdentity.generate()
                try files.write(Array(BondFileFormat.encode(made).utf8), name: Self.identityFile)
                cached = made
                return made
            } catch let error as BondFileFormat.Malformed {
                throw BLEError.invalidArgument("\(directory)/\(Self.identityFile): \(error) (move it away to make a new identity; bonded peers will not know us)")
            } catch {
                throw BLEError.transport("local identity in \(directory): \(error)")
            }
        }
    }

    /// Whether `passkey` is listed in the `retired-passkeys` file.
    public func isPasskeyRetired(_ passkey: UInt32) throws -> Bool {
        try retiredPasskeys().contains(passkey)
    }

    /// Adds `passkey` to the `retired-passkeys` file, atomically and durably (like a bond).
    public func retirePasskey(_ passkey: UInt32) throws {
        try identityLock.withLock { _ in
            var all = try retiredPasskeys()
            guard all.insert(passkey).inserted else { return }
            let text = all.sorted().map { Self.sixDigits($0) + "\n" }.joined()
            do { try files.write(Array(text.utf8), name: Self.retiredPasskeysFile) } catch {
                throw BLEError.transport("retiring the fixed passkey in \(directory): \(error)")
            }
        }
    }

    private func retiredPasskeys() throws -> Set<UInt32> {
        let contents: PrivateFileContents?
        do { contents = try files.read(name: Self.retiredPasskeysFile) } catch {
            throw BLEError.transport("retired passkeys in \(directory): \(error)")
        }
        guard let contents else { return [] }
        notices.withLock { $0 += contents.tightened }
        var found: Set<UInt32> = []
        for line in String(decoding: contents.bytes, as: UTF8.self).split(separator: "\n") {
            guard let value = UInt32(line), value <= 999_999 else {
                throw BLEError.invalidArgument("\(directory)/\(Self.retiredPasskeysFile): '\(line)' is not a six-digit passkey")
            }
            found.insert(value)
        }
        return found
    }

    private static func sixDigits(_ value: UInt32) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// What was tightened when the store opened and when the identity was read, then the files
    /// the last `bonds()` call skipped or tightened, each with why.
    public func problems() -> [String] { notices.withLock { $0 } + reported.withLock { $0 } }
}

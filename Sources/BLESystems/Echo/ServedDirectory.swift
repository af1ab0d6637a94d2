#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// The one directory whose files `ble serve echo --files DIR` may hand out to centrals.
///
/// Any central in radio range can send a `U` frame, unauthenticated, so file:// is off unless
/// the operator names a directory, and then only regular files under it are served: a path is
/// checked as written (`..` removed, nothing on disk touched for a path outside), then resolved
/// with realpath(3) so a symlink cannot lead out of the directory, and opened only if it is a
/// regular file (a FIFO would block the reader forever, a device could be endless or have side
/// effects, a directory has no bytes to send).
public struct ServedDirectory: Sendable, Equatable, CustomStringConvertible {
    /// Why `--files DIR` cannot be used.
    public struct Unusable: Error, Equatable, CustomStringConvertible {
        /// The path as given.
        public let path: String
        /// Why it cannot be served ("not a directory", the system's error).
        public let reason: String
        /// The message shown to the user.
        public var description: String { "cannot serve the files of '\(path)': \(reason)" }
    }

    /// The directory with every symlink resolved: served paths must resolve to below it.
    public let realPath: String
    /// The directory as given, made absolute and normalized: a path written under it is looked
    /// at on disk (the real path may differ when DIR goes through a symlink).
    public let givenPath: String

    /// The real path: where files are served from.
    public var description: String { realPath }

    /// Resolves `path` (relative to the working directory) once, when the server starts.
    public init(_ path: String) throws(Unusable) {
        guard let real = Self.realPath(of: path) else {
            throw Unusable(path: path, reason: String(cString: strerror(errno)))
        }
        var info = stat()
        guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw Unusable(path: path, reason: "not a directory")
        }
        realPath = real
        givenPath = Self.normalized(path.hasPrefix("/") ? path : Self.workingDirectory() + "/" + path)
    }

    /// Whether `path` (absolute, normalized) is the directory itself or below `directory`.
    static func contains(_ directory: String, _ path: String) -> Bool {
        directory == "/" || path == directory || path.hasPrefix(directory + "/")
    }

    /// `path` without `.`, `..` and repeated slashes, from the root (no disk access).
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// `path` with every symlink resolved (realpath(3)), nil when it does not exist.
    public static func realPath(of path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func workingDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "/" }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    // MARK: Reading

    /// The bytes of the regular file at `path` under this directory, at most `limit` of them.
    /// Read on a Dispatch thread, off Swift's cooperative pool: a slow disk holds up only the
    /// central that asked, never the tasks of the server (or, in virtual time, of the world).
    public func read(_ path: String, limit: Int) async throws(FetchError) -> [UInt8] {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], FetchError>, Never>) in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(returning: Result { () throws(FetchError) in try self.readBlocking(path, limit: limit) })
            }
        }
        return try result.get()
    }

    /// The checks and the read, in order, each failure a `FetchError` the central is sent.
    func readBlocking(_ path: String, limit: Int) throws(FetchError) -> [UInt8] {
        let written = Self.normalized(path)
        guard Self.contains(realPath, written) || Self.contains(givenPath, written) else {
            throw .outsideServedDirectory(path: path, directory: realPath)
        }
        guard let real = Self.realPath(of: written) else {
            throw .file(path: path, reason: String(cString: strerror(errno)))
        }
        guard Self.contains(realPath, real) else { throw .outsideServedDirectory(path: path, directory: realPath) }
        // Looked at before opening: opening a device or a FIFO can block or have effects.
        var info = stat()
        guard stat(real, &info) == 0 else { throw .file(path: path, reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        // Non-blocking and not following a symlink, in case the file was swapped since: the
        // descriptor is checked again below.
        let fd = open(real, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw .file(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        if Int(info.st_size) > limit { throw .tooLarge(size: Int(info.st_size), limit: limit) }
        return try Self.readAll(fd, path: path, limit: limit)
    }

    /// Reads to the end, but never more than `limit + 1` bytes (a file may grow while it is read).
    private static func readAll(_ fd: Int32, path: String, limit: Int) throws(FetchError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let got = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, wanted) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .file(path: path, reason: String(cString: strerror(errno)))
            }
            if got == 0 { break }
            bytes.append(contentsOf: chunk[0..<got])
        }
        guard bytes.count <= limit else { throw .tooLarge(size: bytes.count, limit: limit) }
        return bytes
    }
}

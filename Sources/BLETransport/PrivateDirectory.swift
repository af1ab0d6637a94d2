#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory of private files (`PrivateFiles`) held open by one descriptor from the moment it
/// is opened: every later read, write, rename and removal is relative to that descriptor
/// (`openat`, `renameat`, `unlinkat`), and the directory itself was opened with `O_NOFOLLOW`.
/// A symlink there when it is opened is refused, and one swapped in for it later is never
/// followed, so keys are neither written to nor read from a directory someone else chose.
public final class PrivateDirectory: Sendable {
    /// The path the directory was opened by, for messages.
    public let path: String
    /// What opening had to tighten (the directory's mode), one line each, for the caller to report.
    public let tightened: [String]
    private let descriptor: Int32

    /// Creates `path` (and missing parents) as a 0700 directory, or opens an existing one; refuses
    /// a symlink, anything but a directory, and a directory another user owns; tightens one that
    /// group or others can reach to 0700 (said in `tightened`).
    public init(_ path: String) throws(PrivateFileError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw PrivateFiles.failure(prefix, "mkdir") }
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ELOOP || Self.isSymbolicLink(path) { throw PrivateFileError(path: path, message: "a symbolic link: refused (name the directory itself)") }
            if errno == ENOTDIR { throw PrivateFileError(path: path, message: "not a directory") }
            throw PrivateFiles.failure(path, "open")
        }
        do {
            tightened = try PrivateFiles.checkDirectory(fd, path)
        } catch {
            _ = close(fd)
            throw error
        }
        self.path = path
        self.descriptor = fd
    }

    deinit { _ = close(descriptor) }

    private static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    /// Replaces the file `name` with `bytes`, atomically and durably (`PrivateFiles.write`).
    public func write(_ bytes: [UInt8], name: String) throws(PrivateFileError) {
        try checkStillLinked()
        try PrivateFiles.write(bytes, in: descriptor, path, name: name)
    }

    /// Refuses to go on in a directory removed since it was opened (its link count is 0): what
    /// is written there is gone when the process ends, so the caller must hear it was not kept.
    /// (Linux refuses to create files there anyway; this says why.)
    private func checkStillLinked() throws(PrivateFileError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PrivateFiles.failure(path, "fstat") }
        if info.st_nlink == 0 {
            throw PrivateFileError(path: path, message: "the directory was removed after it was opened: nothing is kept there (start again to create it)")
        }
    }

    /// The bytes of the file `name`, or nil when there is none (`PrivateFiles.read`).
    public func read(name: String) throws(PrivateFileError) -> PrivateFileContents? {
        try PrivateFiles.read(in: descriptor, path, name: name)
    }

    /// Removes the file `name`; false when there was none.
    public func remove(name: String) throws(PrivateFileError) -> Bool {
        try PrivateFiles.remove(in: descriptor, path, name: name)
    }

    /// The names in the directory (not `.` or `..`), sorted.
    public func list() throws(PrivateFileError) -> [String] {
        try PrivateFiles.list(in: descriptor, path)
    }

    /// Removes what writers killed mid-write left behind (`PrivateFiles.removeStaleTemporaries`).
    public func removeStaleTemporaries() throws(PrivateFileError) {
        try PrivateFiles.removeStaleTemporaries(in: descriptor, path)
    }
}

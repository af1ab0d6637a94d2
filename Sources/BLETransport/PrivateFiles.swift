#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Makes every temporary file name of this process unique, so two writers never share one.
private let temporaryCounter = Atomic<UInt64>(0)

/// Why a private file could not be read or written: the path and the errno text.
public struct PrivateFileError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let message: String
    public var description: String { "\(path): \(message)" }
}

/// Small files only their owner may read (keys, bonds), written so that a crash at any moment
/// leaves either the old content or the new, never a torn file: write a temporary file beside the
/// target, fsync it, rename it over the target, fsync the directory (POSIX rename(2) is atomic
/// within a directory). Files are 0600 in a 0700 directory.
public enum PrivateFiles {
    /// The longest file `read` accepts: bond files are a few hundred bytes.
    public static let maximumSize = 64 * 1024

    /// Creates `path` (and missing parents) as a 0700 directory, or tightens an existing one
    /// that is ours to 0700.
    public static func ensureDirectory(_ path: String) throws(PrivateFileError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw failure(prefix, "mkdir") }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure(path, "stat") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw PrivateFileError(path: path, message: "not a directory") }
        if info.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 { throw failure(path, "chmod") }
    }

    /// Replaces the file at `directory/name` with `bytes`, atomically and durably.
    public static func write(_ bytes: [UInt8], directory: String, name: String) throws(PrivateFileError) {
        let target = directory + "/" + name
        let serial = temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue
        let temporary = directory + "/." + name + ".tmp-\(getpid())-\(serial)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw failure(temporary, "open") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return systemWrite(fd, base + offset, raw.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = failure(temporary, "write")
                _ = close(fd)
                _ = unlink(temporary)
                throw error
            }
            offset += n
        }
        guard fsync(fd) == 0 else {
            let error = failure(temporary, "fsync")
            _ = close(fd)
            _ = unlink(temporary)
            throw error
        }
        _ = close(fd)
        guard rename(temporary, target) == 0 else {
            let error = failure(target, "rename")
            _ = unlink(temporary)
            throw error
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { throw failure(directory, "open") }
        defer { _ = close(dir) }
        guard fsync(dir) == 0 else { throw failure(directory, "fsync") }
    }

    /// The bytes of `directory/name`, or nil when there is no such file. Refuses a file that is
    /// not a regular file or is larger than `maximumSize`.
    public static func read(directory: String, name: String) throws(PrivateFileError) -> [UInt8]? {
        let path = directory + "/" + name
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw failure(path, "open")
        }
        defer { _ = close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "fstat") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw PrivateFileError(path: path, message: "not a regular file") }
        guard info.st_size <= maximumSize else { throw PrivateFileError(path: path, message: "larger than \(maximumSize) bytes") }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure(path, "read") }
            if n == 0 { break }
            out += buffer[0..<n]
            guard out.count <= maximumSize else { throw PrivateFileError(path: path, message: "larger than \(maximumSize) bytes") }
        }
        return out
    }

    /// Removes the temporary files that writers killed mid-write left in `directory`
    /// (`.NAME.tmp-PID-N` of a process that no longer exists); the targets they were meant for
    /// are intact, old or new.
    public static func removeStaleTemporaries(_ directory: String) throws(PrivateFileError) {
        for name in try list(directory) where name.hasPrefix(".") {
            let parts = name.split(separator: "-")
            guard name.contains(".tmp-"), parts.count >= 3, let pid = Int32(parts[parts.count - 2]) else { continue }
            if pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { _ = unlink(directory + "/" + name) }
        }
    }

    /// Removes `directory/name`; false when there was none.
    public static func remove(directory: String, name: String) throws(PrivateFileError) -> Bool {
        let path = directory + "/" + name
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw failure(path, "unlink")
    }

    /// The names in `directory` (not `.` or `..`), sorted; empty when it does not exist.
    public static func list(_ directory: String) throws(PrivateFileError) -> [String] {
        guard let dir = opendir(directory) else {
            if errno == ENOENT { return [] }
            throw failure(directory, "opendir")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    private static func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(fd, p, n)
        #else
        Darwin.write(fd, p, n)
        #endif
    }

    private static func systemRead(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(fd, p, n)
        #else
        Darwin.read(fd, p, n)
        #endif
    }

    private static func failure(_ path: String, _ call: String) -> PrivateFileError {
        PrivateFileError(path: path, message: "\(call): \(String(cString: strerror(errno)))")
    }
}

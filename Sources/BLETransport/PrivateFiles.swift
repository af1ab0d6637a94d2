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
    /// The file or directory concerned.
    public let path: String
    /// What went wrong with it: the call and its errno text, or why it was refused.
    public let message: String
    /// `path: message`.
    public var description: String { "\(path): \(message)" }
}

/// A private file's bytes, and what `PrivateFiles.read` had to tighten to read it (a file or its
/// directory that group or others could reach), each said in a sentence for the caller to report.
public struct PrivateFileContents: Sendable, Equatable {
    /// The file's bytes.
    public var bytes: [UInt8]
    /// One line per mode tightened, e.g. `DIR/NAME: mode 0644 had group/other bits, tightened to 0600`;
    /// empty when file and directory were private already.
    public var tightened: [String]
}

/// Small files only their owner may read (keys, bonds), written so that a crash at any moment
/// leaves either the old content or the new, never a torn file: write a temporary file beside the
/// target, fsync it, rename it over the target, fsync the directory (POSIX rename(2) is atomic
/// within a directory). Files are 0600 in a 0700 directory.
public enum PrivateFiles {
    /// The longest file `read` accepts: bond files are a few hundred bytes.
    public static let maximumSize = 64 * 1024

    /// Creates `path` (and missing parents) as a 0700 directory, or tightens an existing one
    /// that is ours to 0700 and says so (the returned lines, empty when it was private already).
    /// Refuses a directory another user owns: whoever owns it can read or replace every file
    /// in it.
    @discardableResult
    public static func ensureDirectory(_ path: String) throws(PrivateFileError) -> [String] {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw failure(prefix, "mkdir") }
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOTDIR { throw PrivateFileError(path: path, message: "not a directory") }
            throw failure(path, "open")
        }
        defer { _ = close(fd) }
        return try checkDirectory(fd, path)
    }

    /// Refuses the open directory `fd` unless this user owns it; tightens it to 0700 when group
    /// or others have any permission on it, and says so.
    static func checkDirectory(_ fd: Int32, _ path: String) throws(PrivateFileError) -> [String] {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "fstat") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw PrivateFileError(path: path, message: "not a directory") }
        try checkOwner(info, path)
        return try tighten(fd, info, to: 0o700, path)
    }

    /// Refuses a file or directory this user (the effective user) does not own.
    private static func checkOwner(_ info: stat, _ path: String) throws(PrivateFileError) {
        let me = geteuid()
        guard info.st_uid == me else {
            throw PrivateFileError(path: path, message: "owned by uid \(info.st_uid), not by this user (uid \(me)): refused")
        }
    }

    /// fchmods `fd` to `mode` when group or others have any permission bit, and says so.
    private static func tighten(_ fd: Int32, _ info: stat, to mode: mode_t, _ path: String) throws(PrivateFileError) -> [String] {
        let old = info.st_mode & 0o7777
        guard old & 0o077 != 0 else { return [] }
        guard fchmod(fd, mode) == 0 else { throw failure(path, "fchmod") }
        return ["\(path): mode \(octal(old)) had group/other bits, tightened to \(octal(mode))"]
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Replaces the file at `directory/name` with `bytes`, atomically and durably.
    public static func write(_ bytes: [UInt8], directory: String, name: String) throws(PrivateFileError) {
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { throw failure(directory, "open") }
        defer { _ = close(dir) }
        try write(bytes, in: dir, directory, name: name)
    }

    /// Writes `bytes` to `name` in the open directory `dir` (named `directory` in errors): a
    /// temporary file beside it, fsynced, renamed over it, then the directory fsynced. Every
    /// call is relative to `dir`, so what `directory` names meanwhile does not matter.
    static func write(_ bytes: [UInt8], in dir: Int32, _ directory: String, name: String) throws(PrivateFileError) {
        let target = directory + "/" + name
        let serial = temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue
        let temporaryName = "." + name + ".tmp-\(getpid())-\(serial)"
        let temporary = directory + "/" + temporaryName
        let fd = openat(dir, temporaryName, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
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
                _ = unlinkat(dir, temporaryName, 0)
                throw error
            }
            offset += n
        }
        guard fsync(fd) == 0 else {
            let error = failure(temporary, "fsync")
            _ = close(fd)
            _ = unlinkat(dir, temporaryName, 0)
            throw error
        }
        _ = close(fd)
        guard renameat(dir, temporaryName, dir, name) == 0 else {
            let error = failure(target, "rename")
            _ = unlinkat(dir, temporaryName, 0)
            throw error
        }
        guard fsync(dir) == 0 else { throw failure(directory, "fsync") }
    }

    /// The bytes of `directory/name`, or nil when there is no such file. Refuses a file that is
    /// not a regular file, is larger than `maximumSize`, or that this user does not own (nor
    /// reads anything from a directory another user owns). A file that group or others may
    /// access is tightened to 0600, its directory likewise to 0700, and the result says so in
    /// `tightened` for the caller to report: until then the secret may have been read.
    public static func read(directory: String, name: String) throws(PrivateFileError) -> PrivateFileContents? {
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir < 0 {
            if errno == ENOENT { return nil }
            throw failure(directory, "open")
        }
        defer { _ = close(dir) }
        return try read(in: dir, directory, name: name)
    }

    /// `read(directory:name:)` on the open directory `dir` (named `directory` in errors).
    static func read(in dir: Int32, _ directory: String, name: String) throws(PrivateFileError) -> PrivateFileContents? {
        let path = directory + "/" + name
        let fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw failure(path, "open")
        }
        defer { _ = close(fd) }
        var tightened = try checkDirectory(dir, directory)
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "fstat") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw PrivateFileError(path: path, message: "not a regular file") }
        try checkOwner(info, path)
        tightened += try tighten(fd, info, to: 0o600, path)
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
        return PrivateFileContents(bytes: out, tightened: tightened)
    }

    /// Removes the temporary files that writers killed mid-write left in `directory`
    /// (`.NAME.tmp-PID-N` of a process that no longer exists); the targets they were meant for
    /// are intact, old or new.
    public static func removeStaleTemporaries(_ directory: String) throws(PrivateFileError) {
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir < 0 {
            if errno == ENOENT { return }
            throw failure(directory, "open")
        }
        defer { _ = close(dir) }
        try removeStaleTemporaries(in: dir, directory)
    }

    /// `removeStaleTemporaries(_:)` on the open directory `dir`.
    static func removeStaleTemporaries(in dir: Int32, _ directory: String) throws(PrivateFileError) {
        for name in try list(in: dir, directory) where name.hasPrefix(".") {
            let parts = name.split(separator: "-")
            guard name.contains(".tmp-"), parts.count >= 3, let pid = Int32(parts[parts.count - 2]) else { continue }
            if pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { _ = unlinkat(dir, name, 0) }
        }
    }

    /// Removes `directory/name` and fsyncs the directory, so the removal survives a crash;
    /// false when there was no such file.
    public static func remove(directory: String, name: String) throws(PrivateFileError) -> Bool {
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir < 0 {
            if errno == ENOENT { return false }
            throw failure(directory, "open")
        }
        defer { _ = close(dir) }
        return try remove(in: dir, directory, name: name)
    }

    /// `remove(directory:name:)` on the open directory `dir` (named `directory` in errors).
    static func remove(in dir: Int32, _ directory: String, name: String) throws(PrivateFileError) -> Bool {
        guard unlinkat(dir, name, 0) == 0 else {
            if errno == ENOENT { return false }
            throw failure(directory + "/" + name, "unlink")
        }
        guard fsync(dir) == 0 else { throw failure(directory, "fsync") }
        return true
    }

    /// The names in `directory` (not `.` or `..`), sorted; empty when it does not exist.
    public static func list(_ directory: String) throws(PrivateFileError) -> [String] {
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir < 0 {
            if errno == ENOENT { return [] }
            throw failure(directory, "open")
        }
        defer { _ = close(dir) }
        return try list(in: dir, directory)
    }

    /// The names in the open directory `dir`, sorted. Reads through a descriptor of its own
    /// (`openat(dir, ".")`), so concurrent listings do not share a position.
    static func list(in dir: Int32, _ directory: String) throws(PrivateFileError) -> [String] {
        let own = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0 else { throw failure(directory, "open") }
        guard let stream = fdopendir(own) else {
            let error = failure(directory, "fdopendir")
            _ = close(own)
            throw error
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
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

    static func failure(_ path: String, _ call: String) -> PrivateFileError {
        PrivateFileError(path: path, message: "\(call): \(String(cString: strerror(errno)))")
    }
}

#if canImport(Glibc)
import Glibc
import BLERuntime

/// Thin named wrappers over the few syscalls the transports use (the swift-system idea: one place
/// that knows about errno and EINTR).
enum POSIX {
    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// Sets O_NONBLOCK: all descriptors are polled together with a wake pipe, so no read or write
    /// can hang a thread past `close()`.
    static func setNonBlocking(_ fd: Int32) -> Int32? {
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 { return errno }
        if fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 { return errno }
        return nil
    }

    /// A close-on-exec, non-blocking pipe used only to wake the poll loops; never drained, so
    /// once written it stays readable and every later poll returns at once.
    static func makeWakePipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            // pipe2 is not imported without _GNU_SOURCE; set the same flags by hand.
            if fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 || setNonBlocking(fd) != nil {
                let e = errno
                closeIgnoringErrors(fds[0])
                closeIgnoringErrors(fds[1])
                errno = e
                return nil
            }
        }
        return (fds[0], fds[1])
    }

    static func closeIgnoringErrors(_ fd: Int32) {
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    /// A TCP socket for `host` (nil: any, with `AI_PASSIVE` in `flags`) and `port`: resolves them
    /// (a failure throws "`context`: cannot resolve host …") and offers each address a new
    /// close-on-exec socket in turn. `use` sets it up and returns true to keep it (it is the
    /// result), or false after a failed call, whose errno counts and the socket is closed. No
    /// address kept: nil, with the last errno (`noAddressErrno` when none was tried).
    static func tcpSocket(host: String?, port: UInt16, flags: Int32, context: String, noAddressErrno: Int32,
                          _ use: (Int32, addrinfo) throws -> Bool) throws -> (fd: Int32?, lastErrno: Int32) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = flags
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        if rc != 0 {
            let why = rc == EAI_SYSTEM ? POSIX.errorText(errno) : String(cString: gai_strerror(rc))
            throw TransportError(.openFailed, "\(context): cannot resolve host '\(host ?? "")': \(why)")
        }
        defer { freeaddrinfo(list) }
        var lastErrno = noAddressErrno
        var cursor = list
        while let ai = cursor {
            cursor = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), ai.pointee.ai_protocol)
            if fd < 0 {
                lastErrno = errno
                continue
            }
            if try use(fd, ai.pointee) { return (fd, lastErrno) }
            lastErrno = errno
            closeIgnoringErrors(fd)
        }
        return (nil, lastErrno)
    }
}
#endif

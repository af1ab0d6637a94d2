#if canImport(Glibc)
import Glibc

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
}
#endif

#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// Single key presses from a terminal on stdin, for `ble serve` (key `a` switches advertising on
/// and off, as the S4 peripheral's user does, docs/SYSTEMS.md S4). The terminal is put in
/// non-canonical mode without echo, so a key arrives at once without Enter; Ctrl-C still
/// interrupts (ISIG stays on). `restore()` puts the terminal back as it was.
final class KeyboardKeys: Sendable {
    let keys: AsyncStream<UInt8>
    private let saved: Mutex<termios?>

    /// nil when stdin is not a terminal (piped, a file, /dev/null).
    init?() {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return nil }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
        saved = Mutex(original)
        let (stream, continuation) = AsyncStream<UInt8>.makeStream()
        keys = stream
        // A blocking read on a thread of its own; it ends with stdin (or the process).
        DispatchQueue.global().async {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 {
                if case .terminated = continuation.yield(byte) { break }
            }
            continuation.finish()
        }
    }

    /// Puts the terminal back as it was (once; later calls do nothing).
    func restore() {
        guard var original = saved.withLock({ s -> termios? in
            defer { s = nil }
            return s
        }) else { return }
        _ = tcsetattr(STDIN_FILENO, TCSANOW, &original)
    }

    deinit { restore() }
}

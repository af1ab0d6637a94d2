#if canImport(Glibc)
import Glibc
#endif

/// Drawing a live view in place on a terminal (ANSI escape sequences, ECMA-48), and telling
/// whether stdout is one. The live views themselves are pure and return lines; this only puts
/// them on the screen.
public enum TerminalScreen {
    /// Whether stdout is a terminal (else commands print plain lines).
    public static var isStandardOutput: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Whether stdin is a terminal (a user who can answer a question).
    public static var isStandardInput: Bool { isatty(STDIN_FILENO) == 1 }

    /// Columns of the terminal on stdout, 100 when unknown.
    public static var width: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 100 }
        return Int(size.ws_col)
    }

    /// Replaces the screen with `lines`: cursor home, each line cleared to its end, the rest
    /// of the screen cleared. No full clear, so the view does not flicker.
    public static func draw(_ lines: [String]) {
        var out = "\u{1B}[H"
        for line in lines { out += line + "\u{1B}[K\n" }
        out += "\u{1B}[J"
        print(out, terminator: "")
        flushOutput()
    }

    /// One line to stderr (notices that must not mix with JSON on stdout).
    public static func note(_ text: String) {
        let line = text + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
}

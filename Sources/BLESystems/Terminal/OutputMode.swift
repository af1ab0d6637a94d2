/// How a command shows a flow's events: one choice for every flow, so `ble heart-rate` and
/// `ble accel` behave alike (a live view on a terminal, lines in a pipe, `--json` for programs).
public enum OutputMode: Sendable {
    /// Redrawn in place on a terminal (ANSI escapes, `TerminalScreen`).
    case live
    /// One readable line per event.
    case plain
    /// One JSON object per measurement or sample on stdout; notices go to stderr.
    case json
}

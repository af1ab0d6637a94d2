/// Keys from a terminal in non-canonical mode without echo (`ble serve`'s single-key commands),
/// shared with the questions of a `LinePrompts`, so the one reader of stdin serves both: while a
/// question waits, keys build its answer (echoed, Backspace erases, Enter hands the line over);
/// otherwise each key is a command. Sans-IO: bytes in, what to do out.
public struct TerminalKeyLine: Sendable {
    /// What one byte asks for.
    public enum Output: Sendable, Equatable {
        /// A command key (no question waits).
        case key(UInt8)
        /// Text to echo where the question is shown (the terminal echoes nothing itself).
        case echo(String)
        /// The answer to the question of `turn`, typed and ended with Enter.
        case line(String, turn: UInt64)
    }

    private var typed: [UInt8] = []
    /// The question the typed bytes are for.
    private var typedTurn: UInt64?

    /// Nothing typed yet.
    public init() {}

    /// What `byte` does, `turn` being the current question's (`LinePrompts.turn`), nil when
    /// none waits. A line begun for a question that is gone (withdrawn) is dropped, never
    /// handed to the next one.
    public mutating func take(_ byte: UInt8, turn: UInt64?) -> [Output] {
        if turn != typedTurn {
            typed.removeAll()
            typedTurn = turn
        }
        guard let turn else { return [.key(byte)] }
        switch byte {
        case 0x0A, 0x0D:
            let line = String(decoding: typed, as: UTF8.self)
            typed.removeAll()
            return [.echo("\n"), .line(line, turn: turn)]
        case 0x08, 0x7F:
            guard !typed.isEmpty else { return [] }
            typed.removeLast()
            return [.echo("\u{8} \u{8}")]
        case 0x20...0x7E:
            guard typed.count < 64 else { return [] }
            typed.append(byte)
            return [.echo(String(UnicodeScalar(byte)))]
        default:
            return []
        }
    }
}

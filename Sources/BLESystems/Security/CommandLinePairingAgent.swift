#if canImport(Glibc)
import Glibc
#endif
import BLE

/// The pairing agent of the `ble` tool: passkeys and numeric comparisons come from the command
/// line (`--passkey`, `--confirm`), else from the user at the terminal; with neither, the
/// pairing fails with a message that says which option to give (Passkey Entry Failed, or
/// Numeric Comparison Failed).
///
/// Questions to the user go through one `LinePrompts` (the process's stdin by default): one at
/// a time, each naming the peer it is for, so an answer meant for one pairing cannot be read by
/// another's question (a peer keeping a numeric comparison open on a link of its own); a
/// question withdrawn (its pairing ended and the host cancelled the task asking) takes no
/// line, and when `LinePrompts.limit` questions wait already, a new one is refused at once
/// (the pairing fails as if the user had said no).
public struct CommandLinePairingAgent: PairingAgent {
    /// `--passkey`: what this side types when it is the keyboard side.
    public var passkey: UInt32?
    /// `--confirm yes|no`: the answer to a numeric comparison.
    public var confirm: Bool?
    /// Shows what the user must see: a passkey to type on the peer, a number to compare.
    public var show: @Sendable (String) -> Void
    /// Whether stdin is a terminal a person can answer on.
    public var interactive: Bool
    /// Where the questions wait their turn and get their lines (stdin's by default; a test
    /// or a raw-mode terminal feeds its own).
    public var prompts: LinePrompts

    /// An agent answering with `passkey` and `confirm` where given, else asking through
    /// `prompts` when `interactive`, showing what the user must see with `show`.
    public init(passkey: UInt32?, confirm: Bool?, interactive: Bool = TerminalScreen.isStandardInput,
                show: @escaping @Sendable (String) -> Void = { standardError($0) },
                prompts: LinePrompts = .standardInput) {
        self.passkey = passkey
        self.confirm = confirm
        self.interactive = interactive
        self.show = show
        self.prompts = prompts
    }

    /// Shows the passkey to type on `peer`.
    public func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async {
        show("passkey: \(Self.sixDigits(passkey)) (type it on \(peer))")
    }

    /// `--passkey`, else the six digits the user types when this question's turn comes; nil
    /// (Passkey Entry Failed) on anything else, a withdrawn or refused question included.
    public func enterPasskey(for peer: DeviceAddress) async -> UInt32? {
        if let passkey { return passkey }
        guard interactive else {
            show("ble: \(peer) shows a passkey to type here, and there is no terminal: give --passkey NNNNNN")
            return nil
        }
        switch await prompts.ask(["passkey shown on \(peer): "], about: "\(peer)", show: show) {
        case let .line(line):
            guard let value = UInt32(line.trimmingSpaces), value <= 999_999 else {
                show("ble: a passkey is six digits")
                return nil
            }
            return value
        case .endOfInput:
            show("ble: no passkey for \(peer): the input ended")
            return nil
        case .refused, .cancelled:
            return nil
        }
    }

    /// `--confirm`, else the user's y/N when this question's turn comes; false (Numeric
    /// Comparison Failed) on anything else, a withdrawn or refused question included.
    public func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool {
        let compare = "compare: \(Self.sixDigits(value)) (the number \(peer) shows must be the same)"
        if let confirm {
            show(compare)
            return confirm
        }
        guard interactive else {
            show(compare)
            show("ble: numeric comparison needs an answer, and there is no terminal: give --confirm yes or --confirm no")
            return false
        }
        let question = [compare, "does \(peer) show \(Self.sixDigits(value))? [y/N] "]
        guard case let .line(line) = await prompts.ask(question, about: "\(peer)", show: show) else { return false }
        return ["y", "yes"].contains(line.trimmingSpaces.lowercased())
    }

    /// True when `--confirm` answers comparisons: the number is shown, but nobody is asked.
    public var confirmsWithoutAPerson: Bool { confirm != nil }

    /// Six digits, zero-filled, as both devices show them.
    public static func sixDigits(_ value: UInt32) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }
}

/// Writes `text` and a newline to stderr at once.
public func standardError(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

#if canImport(Glibc)
import Glibc
#endif
import BLE

/// The pairing agent of the `ble` tool: passkeys and numeric comparisons come from the command
/// line (`--passkey`, `--confirm`), else from the user at the terminal; with neither, the
/// pairing fails with a message that says which option to give (Passkey Entry Failed, or
/// Numeric Comparison Failed).
public struct CommandLinePairingAgent: PairingAgent {
    /// `--passkey`: what this side types when it is the keyboard side.
    public var passkey: UInt32?
    /// `--confirm yes|no`: the answer to a numeric comparison.
    public var confirm: Bool?
    /// Shows what the user must see: a passkey to type on the peer, a number to compare.
    public var show: @Sendable (String) -> Void
    /// Whether stdin is a terminal a person can answer on.
    public var interactive: Bool
    /// Reads one answer line (stdin by default).
    public var readAnswer: @Sendable () async throws -> String?

    public init(passkey: UInt32?, confirm: Bool?, interactive: Bool = TerminalScreen.isStandardInput,
                show: @escaping @Sendable (String) -> Void = { standardError($0) },
                readAnswer: @escaping @Sendable () async throws -> String? = { try await readLineFromStandardInput() }) {
        self.passkey = passkey
        self.confirm = confirm
        self.interactive = interactive
        self.show = show
        self.readAnswer = readAnswer
    }

    public func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async {
        show("passkey: \(Self.sixDigits(passkey)) (type it on \(peer))")
    }

    public func enterPasskey(for peer: DeviceAddress) async -> UInt32? {
        if let passkey { return passkey }
        guard interactive else {
            show("ble: \(peer) shows a passkey to type here, and there is no terminal: give --passkey NNNNNN")
            return nil
        }
        show("passkey shown on \(peer): ")
        guard let line = try? await readAnswer(), let value = UInt32(line.trimmingSpaces), value <= 999_999 else {
            show("ble: a passkey is six digits")
            return nil
        }
        return value
    }

    public func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool {
        show("compare: \(Self.sixDigits(value)) (the number \(peer) shows must be the same)")
        if let confirm { return confirm }
        guard interactive else {
            show("ble: numeric comparison needs an answer, and there is no terminal: give --confirm yes or --confirm no")
            return false
        }
        show("does \(peer) show \(Self.sixDigits(value))? [y/N] ")
        guard let line = try? await readAnswer() else { return false }
        return ["y", "yes"].contains(line.trimmingSpaces.lowercased())
    }

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

import BLECommandLine
import BLE
import BLESystems
import Foundation

/// `--bonds` and `--public`: on every command that uses a controller (CONTROLLER OPTIONS).
let bondOptions: [CommandOption] = [
    .single("bonds", value: "DIR", help: "bond store directory (default: $BLE_BONDS, else $XDG_DATA_HOME/ble/bonds, i.e. ~/.local/share/ble/bonds; with --hci virtual, whose demo peripherals forget at exit, memory unless --bonds is given)"),
    .flag("public", help: "use the controller's public address even where the stored identity address would be used"),
    .flag("privacy", help: "use resolvable private addresses made from the stored identity's IRK (bonded peers resolve them)"),
    .single("rpa-rotation", value: "SECONDS", help: "with --privacy: how long each private address lives (default 900, 15 minutes)"),
]

/// How to pair, for the commands that pair or raise security on demand (PAIRING OPTIONS).
let pairingOptions = CommandOptionGroup(title: "PAIRING OPTIONS", options: [
    .single("io", value: "CAP", help: "IO capability: none (default), display, yesno, keyboard, keyboard-display"),
    .single("passkey", value: "NNNNNN", help: "the passkey this side shows (display) or types (keyboard); else shown on stderr / asked on the terminal. A passkey is single-use, shown or typed: after one pairing (recorded in the bonds directory, so across restarts too) random ones are shown, and typing it again is refused"),
    .single("confirm", value: "yes|no", help: "the answer to a numeric comparison; else asked on the terminal (yes accepts any number unseen: the key still counts as authenticated, so use it only where no one can be in the middle)"),
    .flag("legacy", help: "offer LE legacy pairing only (no Secure Connections)"),
    .flag("sc-only", help: "Secure Connections Only mode: refuse legacy pairing, keys under 16 octets, and bonds below level 4 (pair again)"),
    .flag("mitm", help: "require MITM protection (an authenticated key): Just Works fails"),
    .flag("no-bond", help: "pair without bonding: keys are not stored"),
    .flag("no-pair", help: "do not encrypt or pair when a server asks for security; report its ATT error instead"),
])

/// What the security options say, read once per command.
struct SecurityOptions {
    var bondsDirectory: String?
    /// The directory was named (`--bonds` or `BLE_BONDS`), not the default.
    var bondsNamed: Bool
    var usePublicAddress: Bool
    /// `--privacy`: the lifetime of each resolvable private address; nil without privacy.
    var privacyRotation: Duration?
    var io: SMPIOCapability = .noInputNoOutput
    var passkey: UInt32?
    var confirm: Bool?
    var legacy = false
    var secureConnectionsOnly = false
    var mitm = false
    var bonding = true
    var raisesSecurity = true

    init(_ args: ParsedArguments, environment: [String: String] = currentEnvironment()) throws {
        let named = args.option("bonds") ?? environment["BLE_BONDS"]
        bondsNamed = named != nil
        bondsDirectory = named ?? DirectoryBondStore.defaultDirectory(environment: environment)
        usePublicAddress = args.flag("public")
        if args.flag("privacy") {
            guard !usePublicAddress else { throw UsageError("--privacy and --public exclude each other") }
            var seconds = 900
            if let text = args.option("rpa-rotation") {
                guard let n = Int(text), (1...86_400).contains(n) else { throw UsageError("--rpa-rotation takes seconds, 1...86400, not '\(text)'") }
                seconds = n
            }
            privacyRotation = .seconds(seconds)
        } else if args.option("rpa-rotation") != nil {
            throw UsageError("--rpa-rotation needs --privacy")
        }
        if let text = args.option("io") { io = try Self.ioCapability(text) }
        if let text = args.option("passkey") {
            guard text.count <= 6, let value = UInt32(text), value <= 999_999 else { throw UsageError("--passkey takes six digits (000000...999999), not '\(text)'") }
            passkey = value
        }
        switch args.option("confirm") {
        case nil: confirm = nil
        case "yes"?, "y"?: confirm = true
        case "no"?, "n"?: confirm = false
        case let other?: throw UsageError("--confirm must be yes or no, not '\(other)'")
        }
        legacy = args.flag("legacy")
        secureConnectionsOnly = args.flag("sc-only")
        guard !(legacy && secureConnectionsOnly) else { throw UsageError("--legacy and --sc-only exclude each other") }
        mitm = args.flag("mitm")
        bonding = !args.flag("no-bond")
        raisesSecurity = !args.flag("no-pair")
    }

    /// The bond store in `bondsDirectory`; an in-memory one when no directory can be named.
    func bondStore() throws -> any BondStore {
        guard let bondsDirectory else {
            if passkey != nil {
                standardError("note: bonds are kept in memory, so the record that --passkey was used once is lost at exit: the next run shows it again (name a directory with --bonds to keep it)")
            }
            return InMemoryBondStore()
        }
        return try DirectoryBondStore(directory: bondsDirectory)
    }

    /// The host's security settings, with `agent` answering the user's questions through
    /// `prompts` (the process's one queue of questions on stdin by default; nil when there is
    /// no terminal to ask on, e.g. stdin carries data).
    func settings(store: any BondStore, prompts: LinePrompts? = .standardInput,
                  show: @escaping @Sendable (String) -> Void = { standardError($0) }) -> SecuritySettings {
        var s = SecuritySettings()
        s.pairing.ioCapability = io
        s.pairing.mitm = mitm
        s.pairing.secureConnections = !legacy
        s.pairing.secureConnectionsOnly = secureConnectionsOnly
        s.pairing.bonding = bonding
        s.pairing.displayedPasskey = passkey
        if secureConnectionsOnly { s.pairing.minimumKeySize = 16 }
        s.bondStore = store
        s.agent = CommandLinePairingAgent(passkey: passkey, confirm: confirm, interactive: prompts != nil && TerminalScreen.isStandardInput,
                                          show: show, prompts: prompts ?? .standardInput)
        s.raisesSecurityOnDemand = raisesSecurity
        return s
    }

    /// The address to use with `store`: the stored identity's static random address when
    /// `identity` is wanted (pairing, or reconnecting to a bonded peer) and `--public` was not
    /// given; otherwise the controller's public address.
    func ownAddress(store: any BondStore, identity wanted: Bool) throws -> OwnAddress {
        if let privacyRotation {
            _ = try store.localIdentity() // made and kept now, so every run's RPAs share its IRK
            return .resolvablePrivate(rotation: privacyRotation)
        }
        guard wanted, !usePublicAddress else { return .public }
        return .staticRandom(try store.localIdentity().address)
    }
}

/// The process environment as a dictionary.
func currentEnvironment() -> [String: String] {
    ProcessInfo.processInfo.environment
}

extension SecurityOptions {
    /// `--io`'s names of the IO capabilities (Core spec Vol 3 Part H §2.3.2).
    static func ioCapability(_ text: String) throws -> SMPIOCapability {
        switch text {
        case "none": return .noInputNoOutput
        case "display": return .displayOnly
        case "yesno": return .displayYesNo
        case "keyboard": return .keyboardOnly
        case "keyboard-display": return .keyboardDisplay
        default: throw UsageError("--io must be none, display, yesno, keyboard or keyboard-display, not '\(text)'")
        }
    }
}

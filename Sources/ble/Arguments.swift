import BLECommandLine

/// The parser's types under the names the tool's files use, so that the files of Commands/ need
/// not import BLECommandLine: each command is made from `ParsedArguments`, throws `UsageError`
/// for what was typed wrong, and declares its `CommandOption`s and `CommandPositional`s.
typealias ParsedArguments = BLECommandLine.ParsedArguments
typealias UsageError = BLECommandLine.UsageError
typealias CommandOption = BLECommandLine.CommandOption
typealias CommandPositional = BLECommandLine.CommandPositional

/// What a command needs from the tool around it, declared by the command so that `main.swift`
/// provides it without knowing commands by name.
struct CommandNeeds: OptionSet, Sendable {
    let rawValue: Int

    /// Talks to a controller opened from `--hci`: takes the CONTROLLER OPTIONS.
    static let controller = CommandNeeds(rawValue: 1 << 0)
    /// With `--hci virtual` (or BLE_HCI=virtual), the shared in-process radio gets the demo
    /// peripherals before the command's own controller joins it, so there is something to find.
    static let demoPeripheralsOnVirtualRadio = CommandNeeds(rawValue: 1 << 1)
    /// Runs until interrupted, and handles Ctrl-C and SIGTERM itself as its normal way to stop
    /// (shutting down in order, then exiting with its own status). Other commands are cancelled
    /// by an interrupt and exit with 130.
    static let handlesInterrupts = CommandNeeds(rawValue: 1 << 2)
    /// Pairs, or raises security when a peer asks for it: takes the PAIRING OPTIONS.
    static let pairing = CommandNeeds(rawValue: 1 << 3)
    /// Scans or connects as a central: takes `--phy`, the PHYs it listens on for advertisements.
    static let listening = CommandNeeds(rawValue: 1 << 4)
}

/// How to reach a controller, for every command that `needs: .controller`.
let controllerOptions = CommandOptionGroup(title: "CONTROLLER OPTIONS", options: [
    .single("hci", value: "SPEC", help: "controller: virtual (in-process radio with demo peripherals), virtual:PROFILE (a controller of profile 4.0, 4.2, 5.0 or default on it), tcp:HOST:PORT, serial:PATH[@BAUD], hci0 / hci:N (default: $BLE_HCI, else the first Linux adapter that opens)"),
    .single("capture", value: "FILE", help: "write every HCI packet, both directions, to FILE (btsnoop)"),
    .single("gatt-cache", value: "DIR", help: "keep what GATT discovery learns of each peer in DIR (default: $BLE_GATT_CACHE, else $XDG_CACHE_HOME/ble/gatt; in memory with --hci virtual)"),
    .flag("verbose", help: "log what the stack drops or ignores to stderr"),
] + bondOptions)

/// For commands that scan or connect (`needs: .listening`): the PHYs they listen on for
/// advertisements, `HostConfiguration.listeningPHYs`.
let listeningPHYOption = CommandOption.single(
    "phy", value: "LIST", help: "PHYs to listen on for advertisements when scanning and connecting: 1m (default), coded, or 1m,coded (coded needs a Bluetooth 5 controller)")

/// For commands that connect: the ATT MTU to ask for.
let mtuOption = CommandOption.single("mtu", value: "N", help: "ATT MTU to ask for after connecting, 23...517 (default 517)")

/// One `ble` subcommand: what it accepts and needs, declared once, and what it does.
protocol BLECommand: Sendable {
    static var name: String { get }
    static var abstract: String { get }
    static var discussion: String { get }
    static var positionals: [CommandPositional] { get }
    /// The command's own options; the CONTROLLER OPTIONS come with `needs: .controller`.
    static var options: [CommandOption] { get }
    static var needs: CommandNeeds { get }
    /// `arguments` (after the command's name) checked against the signature; a command that
    /// accepts another tool's spellings (`ble bench` takes bumble-bench's `-sd`) rewrites them first.
    static func parse(_ arguments: [String]) throws -> ParsedArguments
    init(_ arguments: ParsedArguments) throws
    func run() async throws
}

extension BLECommand {
    static var discussion: String { "" }
    static var positionals: [CommandPositional] { [] }

    /// Everything the command accepts, for the parser and for help.
    static var signature: CommandSignature {
        CommandSignature(name: name, abstract: abstract, discussion: discussion, positionals: positionals,
                         options: options + (needs.contains(.listening) ? [listeningPHYOption] : []),
                         optionGroups: (needs.contains(.controller) ? [controllerOptions] : []) + (needs.contains(.pairing) ? [pairingOptions] : []))
    }

    /// `arguments` (after the command's name) checked against the signature.
    static func parse(_ arguments: [String]) throws -> ParsedArguments {
        try ParsedArguments(arguments, for: signature)
    }
}

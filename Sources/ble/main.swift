#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEHCI
import BLETransport

/// The `ble` tool: one command-line entry to the stack. Commands are structs in Commands/.
let commands: [any BLECommand.Type] = [
    ScanCommand.self, GattCommand.self, ReadCommand.self, WriteCommand.self, SubscribeCommand.self, ServeCommand.self,
]

@MainActor
func topLevelHelp() -> String {
    var lines = [
        "ble: a Bluetooth LE host stack in Swift, on any HCI controller.",
        "",
        "USAGE: ble COMMAND [OPTIONS]",
        "",
        "COMMANDS:",
    ]
    for c in commands {
        lines.append("  " + c.name.padding(12) + c.abstract)
    }
    lines += [
        "",
        "Every command takes --hci SPEC (tcp:HOST:PORT, serial:PATH[@BAUD], hci0, hci:N; default $BLE_HCI),",
        "--capture FILE (btsnoop of all HCI traffic) and --help.",
    ]
    return lines.joined(separator: "\n")
}

extension String {
    func padding(_ n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
}

func writeError(_ message: String) {
    let text = "ble: \(message)\n"
    _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
}

/// Flushes stdout (and every other stdio stream) so streamed lines reach a pipe at once.
func flushOutput() {
    fflush(nil)
}

// Unbuffered-enough output for pipes: each line is flushed by the commands that stream.
signal(SIGPIPE, SIG_IGN)

let argv = Array(CommandLine.arguments.dropFirst())
guard let name = argv.first, name != "--help", name != "-h", name != "help" else {
    print(topLevelHelp())
    exit(argv.isEmpty ? 64 : 0)
}
guard let command = commands.first(where: { $0.name == name }) else {
    writeError("unknown command '\(name)'\n\n\(topLevelHelp())")
    exit(64)
}
let rest = Array(argv.dropFirst())
if rest.contains("--help") || rest.contains("-h") {
    print(command.help)
    exit(0)
}
let status: Int32 = await {
    do {
        let parsed = try ParsedArguments(rest, spec: command.options + commonOptions, positionalNames: command.positionalNames, minPositionals: command.minPositionals)
        try await command.init(parsed).run()
        return 0
    } catch let e as UsageError {
        writeError("\(e)\nUSAGE: ble \(command.usage)   (ble \(command.name) --help for more)")
        return 64
    } catch {
        writeError("\(error)")
        return 1
    }
}()
exit(status)

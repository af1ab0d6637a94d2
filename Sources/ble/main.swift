#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLECommandLine
import BLESystems

/// The `ble` tool: one command-line entry to the stack. Commands are structs in Commands/.
let commands: [any BLECommand.Type] = [
    ScanCommand.self, GattCommand.self, ReadCommand.self, WriteCommand.self, SubscribeCommand.self, PairCommand.self, BondsCommand.self,
    ServeCommand.self, AdvertiseCommand.self, SyncCommand.self, L2capCommand.self, RadioCommand.self, DemoCommand.self,
    EchoCommand.self, FetchCommand.self, SampleCommand.self,
    HeartRateCommand.self, AccelCommand.self, UICommand.self, BenchCommand.self, PandoraCommand.self, InfoCommand.self,
    GatewayCommand.self,
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
    let withoutController = commands.filter { !$0.needs.contains(.controller) }.map { $0.name }
    lines += [
        "",
        "Every command takes --help (-h). Those that use a controller (all but \(withoutController.joined(separator: ", "))) take",
        "--hci SPEC (virtual, tcp:HOST:PORT, serial:PATH[@BAUD], hci0, hci:N; default $BLE_HCI, else the first",
        "Linux adapter that opens; virtual is an in-process radio with demo peripherals), --capture FILE",
        "(btsnoop of all HCI traffic) and --verbose.",
    ]
    return lines.joined(separator: "\n")
}

func writeError(_ message: String) {
    standardError("ble: \(message)")
}

// Unbuffered-enough output for pipes: each line is flushed by the commands that stream.
signal(SIGPIPE, SIG_IGN)
InterruptSignals.shared.install()

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
// A mistake in a command's declaration (two options of one name, say), not in what was typed.
assert(command.signature.declarationProblems.isEmpty, "ble \(name): \(command.signature.declarationProblems)")
// Help flags count before a `--` (after it everything is a positional, e.g. a VALUE of "-h"),
// and before any other check, so help is shown even for an otherwise wrong command line.
if CommandSignature.asksForHelp(rest) {
    print(command.signature.help(tool: "ble"))
    exit(0)
}

/// Runs the command; Ctrl-C (or SIGTERM) cancels it, which stops the radio work it started
/// (scans, connection attempts, links) before the process exits with 130.
let status: Int32 = await {
    let work = Task { () -> Int32 in
        do {
            let instance = try command.init(command.parse(rest))
            if command.needs.contains(.demoPeripheralsOnVirtualRadio) { await installDemoPeripheralsInSharedWorld() }
            try await instance.run()
            return 0
        } catch let e as UsageError {
            writeError("\(e)\n" + command.signature.usageReminder(tool: "ble"))
            return 64
        } catch let e as TransportError where e.kind == .invalidSpec {
            // A --hci (or BLE_HCI) that names no controller is a usage error too.
            writeError("\(e)\n" + command.signature.usageReminder(tool: "ble"))
            return 64
        } catch is CancellationError {
            return 130
        } catch {
            writeError("\(error)")
            return 1
        }
    }
    if command.needs.contains(.handlesInterrupts) {
        // An interrupt is such a command's normal way to stop; it waits for it itself.
        return await work.value
    }
    let interrupted = Task { () -> Bool in
        guard await waitForInterrupt(limit: nil) else { return false }
        work.cancel()
        return true
    }
    let result = await work.value
    interrupted.cancel()
    return await interrupted.value ? 130 : result
}()
exit(status)

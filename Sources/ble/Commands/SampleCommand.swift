import BLE
import BLEProfiles
import BLESystems
import BLEWire

/// `ble sample [ADDRESS]`: the step-by-step sample central of docs/SYSTEMS.md S2, printing each step
/// with its number.
struct SampleCommand: BLECommand {
    static let name = "sample"
    static let abstract = "S2: the step-by-step sample central (scan, connect, discover, read, write, notify)."
    static let positionals: [CommandPositional] = [.optional("ADDRESS")]
    static let options: [CommandOption] = [
        .single("count", value: "N", help: "notifications to print before disconnecting (default 3)"),
        .single("number", value: "NNN", help: "write \"Write Data NNN\" with this number (default: random 000-999)"),
        mtuOption,
        .single("timeout", value: "S", help: "how long the peripheral may go without notifying (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]
    static let discussion = """
    Steps: 1 manager state, 2 device found (scanning for \(SampleProfile.service), no
    duplicates; with ADDRESS only that device), 3 connected, 4 service, 5 characteristics, 6 each
    readable value as hex and UTF-8, 7 "Write Data NNN" written with response (and read back),
    8 notification state, 9 notifications. Try it against `ble serve sample`.
    """

    var controller: ControllerOptions
    var options = SampleCentral.Options()

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        if let text = args.positionals.first { options.target = try AddressArgument(text).address }
        options.mtu = controller.mtu
        if let count = try args.int("count") {
            guard count > 0 else { throw UsageError("--count must be positive") }
            options.count = count
        }
        if let number = try args.int("number") {
            guard (0...999).contains(number) else { throw UsageError("--number must be 0...999") }
            options.writeNumber = number
        }
        options.notificationTimeout = try args.seconds("timeout") ?? options.notificationTimeout
    }

    func run() async throws {
        _ = try await withCentral(controller) { central in
            try await SampleCentral.run(using: central, options: options) { event in
                print(SampleCentralLines.line(for: event))
                flushOutput()
            }
        }
    }
}

import BLE
import BLEProfiles
import BLESystems
import BLEWire

/// `ble echo TEXT [ADDRESS]`: the S1 phone app's text exchange (docs/SYSTEMS.md S1). Sends TEXT as a `T`
/// frame (a `U` frame when it starts with "http" or "file://") to an echo server and prints the
/// reply, after a line per state of the flow.
struct EchoCommand: BLECommand {
    static let name = "echo"
    static let abstract = "S1: send text to an echo server over the framed stream and print the reply."
    static let positionals: [CommandPositional] = [.required("TEXT"), .optional("ADDRESS")]
    static let options: [CommandOption] = [
        mtuOption,
        .single("timeout", value: "S", help: "how long the server may stay silent while the reply is due (default 30)"),
        .flag("json", help: "print only {\"reply\": TEXT} (or {\"image\": BYTES})"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]
    static let discussion = """
    Scans for service \(EchoProfile.service) (10 s; with ADDRESS only that device), connects
    (10 s), exchanges the ATT MTU, subscribes, writes the frame in pieces of at most ATT_MTU - 3
    bytes with Write Requests, reassembles the notified reply and disconnects. Try it against
    `ble serve echo`.
    """

    var controller: ControllerOptions
    var text: String
    var options: EchoCentral.Options
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        text = args.positionals[0]
        options = try echoOptions(args, controller: controller)
        json = args.flag("json")
    }

    func run() async throws {
        let printer = EchoOutput(json: json)
        let reply = try await withCentral(controller) { central in
            try await EchoCentral.exchange(Frame.forMessage(text), using: central, options: options) { printer.show($0) }
        }
        switch reply.code {
        case .image:
            print(json ? JSON.object([("image", .int(reply.body.count))]).text
                       : "received an image of \(reply.body.count) bytes (ble fetch URL -o FILE saves it)")
        default:
            let text = String(decoding: reply.body, as: UTF8.self)
            print(json ? JSON.object([("reply", .string(text))]).text : text)
        }
    }
}

/// The S1 flow's options from `echo`/`fetch` arguments: the optional ADDRESS (second
/// positional), `--mtu`, `--timeout`.
func echoOptions(_ args: ParsedArguments, controller: ControllerOptions) throws -> EchoCentral.Options {
    var options = EchoCentral.Options()
    if args.positionals.count > 1 { options.target = try AddressArgument(args.positionals[1]).address }
    options.mtu = controller.mtu
    options.replyTimeout = try args.seconds("timeout") ?? options.replyTimeout
    return options
}

/// Opens the controller, runs `body` with a central on it, and closes it on every path.
func withCentral<T>(_ controller: ControllerOptions, _ body: (Central) async throws -> T) async throws -> T {
    let central = try await controller.openCentral()
    do {
        let result = try await body(central)
        await central.close()
        return result
    } catch {
        await central.close()
        throw error
    }
}

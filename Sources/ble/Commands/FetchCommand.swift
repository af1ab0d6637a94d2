import BLE
import BLEProfiles
import BLESystems
import BLEWire
import Foundation

/// `ble fetch URL -o FILE [ADDRESS]`: the S1 phone app's image request (docs/SYSTEMS.md S1). Sends URL
/// as a `U` frame; the echo server fetches it and answers with an `I` frame, saved to FILE.
struct FetchCommand: BLECommand {
    static let name = "fetch"
    static let abstract = "S1: have an echo server fetch a URL and save the bytes it sends back."
    static let positionals: [CommandPositional] = [.required("URL"), .optional("ADDRESS")]
    static let options: [CommandOption] = [
        .single("output", short: "o", value: "FILE", help: "where to save the bytes (required)", isRequired: true),
        mtuOption,
        .single("timeout", value: "S", help: "how long the server may stay silent while the reply is due (default 30)"),
        .flag("json", help: "print only {\"file\": FILE, \"bytes\": N}"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]
    static let discussion = """
    The server fetches http and https URLs and reads file:// URLs on its own machine. On a
    terminal a progress bar shows the reply arriving, with bytes/s; otherwise a line per tenth.
    A server that cannot fetch the URL answers with a text, shown as the error.
    """

    var controller: ControllerOptions
    var url: String
    var output: String
    var options: EchoCentral.Options
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        url = args.positionals[0]
        let output = try args.requiredOption("output")
        guard !output.isEmpty else { throw UsageError("missing -o FILE") }
        self.output = output
        options = try echoOptions(args, controller: controller)
        json = args.flag("json")
    }

    func run() async throws {
        let printer = EchoOutput(json: json)
        let reply = try await withCentral(controller) { central in
            try await EchoCentral.exchange(.url(url), using: central, options: options) { printer.show($0) }
        }
        guard reply.code == .image else {
            throw CentralFlowError.serverError(String(decoding: reply.body, as: UTF8.self))
        }
        do {
            try Data(reply.body).write(to: URL(fileURLWithPath: output))
        } catch {
            throw SaveError(path: output, reason: (error as NSError).localizedDescription)
        }
        if json {
            print(JSON.object([("file", .string(output)), ("bytes", .int(reply.body.count))]).text)
        } else {
            print("saved".padding(12) + "\(reply.body.count) bytes to \(output)")
        }
    }
}

/// The reply arrived but could not be written to the output file.
struct SaveError: Error, CustomStringConvertible {
    let path: String
    let reason: String
    var description: String { "cannot write \(path): \(reason)" }
}

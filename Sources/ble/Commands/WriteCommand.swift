import BLE
import BLEHost
import BLESystems
import BLEWire

/// `ble write ADDRESS CHARACTERISTIC VALUE`.
struct WriteCommand: BLECommand {
    static let name = "write"
    static let abstract = "Write a characteristic value (long values go as prepared writes)."
    static let usage = "write ADDRESS CHARACTERISTIC VALUE [--hex] [--without-response]"
    static let positionalNames = ["ADDRESS", "CHARACTERISTIC", "VALUE"]
    static let minPositionals = 3
    static let options = [
        mtuOption,
        OptionSpec(name: "hex", valueName: nil, help: "VALUE is hex bytes (e.g. 0102ff or \"01 02 ff\"), not UTF-8 text"),
        OptionSpec(name: "without-response", valueName: nil, help: "send a Write Command (no response; must fit ATT MTU - 3)"),
        OptionSpec(name: "json", valueName: nil, help: "print {\"handle\",\"written\",\"hex\",\"utf8\"}"),
        OptionSpec(name: "timeout", valueName: "S", help: "connection timeout (default 10)"),
    ]

    var controller: ControllerOptions
    var target: AddressArgument
    var characteristic: CharacteristicArgument
    var value: [UInt8]
    var withoutResponse: Bool
    var json: Bool
    var timeout: Duration

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
        target = try AddressArgument(args.positionals[0])
        characteristic = try CharacteristicArgument(args.positionals[1])
        let text = args.positionals[2]
        if args.flag("hex") {
            guard let bytes = [UInt8](hexString: text) else { throw UsageError("'\(text)' is not hex bytes") }
            value = bytes
        } else {
            value = Array(text.utf8)
        }
        withoutResponse = args.flag("without-response")
        json = args.flag("json")
        timeout = try args.seconds("timeout") ?? .seconds(10)
    }

    func run() async throws {
        try await withPeripheral(controller, target, timeout: timeout) { peripheral in
            let c = try await characteristic.locate(on: peripheral)
            try await peripheral.writeValue(value, for: c, type: withoutResponse ? .withoutResponse : .withResponse)
            if json {
                print(JSON.object([("handle", .int(Int(c.valueHandle))), ("written", .int(value.count))] + valueJSON(value)).text)
            } else {
                print("wrote \(value.count) bytes to \(c.uuid) [0x\(String(format4: c.valueHandle))]\(withoutResponse ? " (without response)" : "")")
            }
        }
    }
}

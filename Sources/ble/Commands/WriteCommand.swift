import BLE
import BLEHost
import BLESystems
import BLEWire

/// `ble write ADDRESS CHARACTERISTIC VALUE`.
struct WriteCommand: BLECommand {
    static let name = "write"
    static let abstract = "Write a characteristic value (long values go as prepared writes)."
    static let positionals: [CommandPositional] = [
        .address, .characteristic,
        .required("VALUE", help: "UTF-8 text, or hex bytes with --hex; one starting with '-' goes after --"),
    ]
    static let options: [CommandOption] = [
        mtuOption,
        .flag("hex", help: "VALUE is hex bytes (e.g. 0102ff or \"01 02 ff\"), not UTF-8 text"),
        .flag("without-response", help: "send a Write Command (no response; must fit ATT MTU - 3)"),
        .flag("json", help: "print {\"handle\",\"written\",\"hex\",\"utf8\"}"),
        .single("timeout", value: "S", help: "connection timeout (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .demoPeripheralsOnVirtualRadio, .pairing]

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

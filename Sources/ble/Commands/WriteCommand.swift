import BLE
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
        .flag("signed", help: "Signed Write Without Response to a bonded peer over an unencrypted link (a Write Command if encrypted; must fit ATT MTU - 15)"),
        .flag("json", help: "print {\"handle\",\"written\",\"hex\",\"utf8\"}"),
        .single("timeout", value: "S", help: "connection timeout (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]

    var controller: ControllerOptions
    var target: AddressArgument
    var characteristic: CharacteristicArgument
    var value: [UInt8]
    var withoutResponse: Bool
    var signed: Bool
    var json: Bool
    var timeout: Duration

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
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
        signed = args.flag("signed")
        guard !(signed && withoutResponse) else { throw UsageError("--signed and --without-response exclude each other (a signed write has no response)") }
        json = args.flag("json")
        timeout = try args.seconds("timeout") ?? .seconds(10)
    }

    func run() async throws {
        try await withPeripheral(controller, target, timeout: timeout) { peripheral in
            let c = try await characteristic.locate(on: peripheral)
            let type: WriteType = signed ? .signedWithoutResponse : withoutResponse ? .withoutResponse : .withResponse
            // On an encrypted link a signed write goes as a plain Write Command (Vol 3 Part G §4.9.2).
            let encrypted = signed ? await peripheral.securityLevel != .none : false
            let written: GATTCharacteristic
            if case .handle = characteristic, type == .withResponse {
                // By handle: not sent again elsewhere after a change of the server's database
                // (a handle names an attribute, Peripheral+DatabaseChange.swift).
                try await peripheral.writeValue(value, handle: c.valueHandle, type: .withResponse)
                written = c
            } else {
                // The characteristic written: found again if the database changed meanwhile.
                written = try await peripheral.writeValue(value, for: c, type: type)
            }
            if json {
                var fields: [(String, JSON)] = [("handle", .int(Int(written.valueHandle))), ("written", .int(value.count))]
                if signed { fields.append(("signed", .bool(!encrypted))) }
                print(JSON.object(fields + valueJSON(value)).text)
            } else {
                let how = signed ? (encrypted ? " (without response; the link is encrypted, so not signed)" : " (signed, without response)")
                    : withoutResponse ? " (without response)" : ""
                print("wrote \(value.count) bytes to \(written.uuid) [0x\(String(format4: written.valueHandle))]\(how)")
            }
        }
    }
}

import BLE
import BLESystems
import BLEWire

/// `ble read ADDRESS CHARACTERISTIC`: reads a whole value (long reads included).
struct ReadCommand: BLECommand {
    static let name = "read"
    static let abstract = "Read a characteristic value (Read, then Read Blob for long values)."
    static let positionals: [CommandPositional] = [.address, .characteristic]
    static let options: [CommandOption] = [
        mtuOption,
        .flag("json", help: "print {\"handle\",\"uuid\",\"hex\",\"utf8\"}"),
        .single("timeout", value: "S", help: "connection timeout (default 10)"),
    ]
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]

    var controller: ControllerOptions
    var target: AddressArgument
    var characteristic: CharacteristicArgument
    var json: Bool
    var timeout: Duration

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        target = try AddressArgument(args.positionals[0])
        characteristic = try CharacteristicArgument(args.positionals[1])
        json = args.flag("json")
        timeout = try args.seconds("timeout") ?? .seconds(10)
    }

    func run() async throws {
        try await withPeripheral(controller, target, timeout: timeout) { peripheral in
            let value: [UInt8]
            var uuid: BluetoothUUID?
            let handle: UInt16
            switch characteristic {
            case let .handle(h):
                // Read where the handle says and not asked again elsewhere after a change of the
                // server's database: a handle names an attribute (Peripheral+DatabaseChange.swift).
                // A characteristic's declaration handle names its value; any other handle (a
                // descriptor, say) is read as is.
                let declared = try? await characteristic.locate(on: peripheral)
                uuid = declared?.uuid
                handle = declared?.valueHandle ?? h
                value = try await peripheral.readValue(handle: handle)
            case .uuid:
                let c = try await characteristic.locate(on: peripheral)
                // The characteristic read from: found again if the database changed meanwhile.
                let read = try await peripheral.readValueAndCharacteristic(for: c)
                value = read.value
                uuid = read.characteristic.uuid
                handle = read.characteristic.valueHandle
            }
            if json {
                var fields: [(String, JSON)] = [("handle", .int(Int(handle)))]
                if let uuid { fields.append(("uuid", .string(uuid.description))) }
                print(JSON.object(fields + valueJSON(value)).text)
            } else {
                print(valueText(value))
            }
        }
    }
}

/// Opens the controller, connects, runs `body`, disconnects and closes, on every path.
func withPeripheral(_ controller: ControllerOptions, _ target: AddressArgument, timeout: Duration, waitForMTU: Bool = true,
                    _ body: (Peripheral) async throws -> Void) async throws {
    let central = try await controller.openCentral(target: target)
    do {
        let peripheral = try await connect(target, central: central, mtu: controller.mtu, timeout: timeout, waitForMTU: waitForMTU)
        do {
            try await body(peripheral)
        } catch {
            try? await peripheral.disconnect()
            throw error
        }
        await peripheral.flush()
        try? await peripheral.disconnect()
    } catch {
        await central.close()
        throw error
    }
    await central.close()
}

import BLE
import BLEHost
import BLEProfiles
import BLEWire

/// `ble sample [ADDRESS]`: the step-by-step sample central of SEEDS.md S2, printing each step
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
    static let needs: CommandNeeds = [.controller, .demoPeripheralsOnVirtualRadio]
    static let discussion = """
    Steps: 1 manager state, 2 device found (scanning for \(SampleProfile.service), no
    duplicates; with ADDRESS only that device), 3 connected, 4 service, 5 characteristics, 6 each
    readable value as hex and UTF-8, 7 "Write Data NNN" written with response (and read back),
    8 notification state, 9 notifications. Try it against `ble serve sample`.
    """

    var controller: ControllerOptions
    var options = SampleCentral.Options()

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
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
                print(Self.line(event))
                flushOutput()
            }
        }
    }

    /// One printed line per step.
    static func line(_ event: SampleCentralEvent) -> String {
        func step(_ n: Int?, _ label: String, _ text: String) -> String {
            (n.map { "\($0) " } ?? "  ") + (text.isEmpty ? label : label.padding(15) + text)
        }
        switch event {
        case let .managerState(state):
            return step(1, "state", state.rawValue)
        case let .found(name, address, rssi):
            return step(2, "found", "\(name ?? "(unnamed)")  \(address)  rssi \(rssi.map(String.init) ?? "?")")
        case let .connected(address, connected):
            return step(3, "connected", "\(address): \(connected ? "yes" : "no")")
        case let .service(s):
            return step(4, "service", "\(s.uuid) [0x\(String(format4: s.startHandle))–0x\(String(format4: s.endHandle))]")
        case let .characteristic(c):
            let bits = String(c.properties.rawValue, radix: 16, uppercase: true)
            return step(5, "characteristic", "\(c.uuid) [0x\(String(format4: c.valueHandle))] properties 0x\(bits.count < 2 ? "0" + bits : bits) \(c.properties)")
        case let .value(uuid, bytes):
            return step(6, "read", "\(uuid): \(bytesAndText(bytes))")
        case let .wrote(uuid, bytes, back):
            return step(7, "wrote", "\(uuid): \(bytesAndText(bytes)) with response; reads back \(bytesAndText(back))")
        case let .notificationState(uuid, on):
            return step(8, "notifying", "\(uuid): \(on)")
        case let .notification(n, uuid, bytes):
            return step(9, "notification", "#\(n) \(uuid): \(bytesAndText(bytes))")
        case .disconnected:
            return step(nil, "disconnected", "")
        }
    }

    /// Bytes as hex and, when they are UTF-8, as text (SEEDS.md S2 prints both).
    static func bytesAndText(_ bytes: [UInt8]) -> String {
        let text = String(validating: bytes, as: UTF8.self).map { " \"\($0)\"" } ?? " (not UTF-8)"
        return (bytes.isEmpty ? "(empty)" : bytes.hexString) + text
    }
}

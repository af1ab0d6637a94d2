#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEHost
import BLESystems
import BLEWire

/// `ble subscribe ADDRESS CHARACTERISTIC`: prints notifications or indications as they come.
struct SubscribeCommand: BLECommand {
    static let name = "subscribe"
    static let abstract = "Subscribe to notifications or indications and print each value."
    static let positionals: [CommandPositional] = [.address, .characteristic]
    static let options: [CommandOption] = [
        mtuOption,
        .single("count", value: "N", help: "stop after N values"),
        .single("timeout", value: "S", help: "stop after S seconds (default: until interrupted or disconnected)"),
        .flag("json", help: "one {\"handle\",\"hex\",\"utf8\"} object per value"),
    ]
    static let needs: CommandNeeds = [.controller, .demoPeripheralsOnVirtualRadio, .pairing]

    var controller: ControllerOptions
    var target: AddressArgument
    var characteristic: CharacteristicArgument
    var count: Int?
    var timeout: Duration?
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args)
        target = try AddressArgument(args.positionals[0])
        characteristic = try CharacteristicArgument(args.positionals[1])
        count = try args.int("count")
        if let count, count <= 0 { throw UsageError("--count must be positive") }
        timeout = try args.seconds("timeout")
        json = args.flag("json")
    }

    func run() async throws {
        try await withPeripheral(controller, target, timeout: .seconds(10)) { peripheral in
            let c = try await characteristic.locate(on: peripheral)
            let values = await peripheral.notifications(for: c)
            try await peripheral.setNotifyValue(true, for: c)
            let kind = c.properties.contains(.notify) ? "notifications" : "indications"
            if !json { print("subscribed to \(kind) from \(c.uuid) [0x\(String(format4: c.valueHandle))]") }
            let limit = count
            let deadline = timeout
            let received = Counter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await value in values {
                        let n = received.increment()
                        if json {
                            print(JSON.object([("handle", .int(Int(c.valueHandle)))] + valueJSON(value)).text)
                        } else {
                            print(valueText(value))
                        }
                        flushOutput()
                        if let limit, n >= limit { break }
                    }
                }
                if let deadline {
                    group.addTask { try await Task.sleep(for: deadline) }
                }
                _ = try await group.next()
                group.cancelAll()
            }
            if peripheral.state != .connected, let reason = peripheral.disconnectReason {
                throw BLEError.disconnected(reason: reason)
            }
            let n = received.value
            if let limit, n < limit, let deadline {
                throw BLEError.timeout("received \(n) of \(limit) values in \(deadline)")
            }
            try? await peripheral.setNotifyValue(false, for: c)
        }
    }
}

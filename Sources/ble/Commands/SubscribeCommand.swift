#if canImport(Glibc)
import Glibc
#endif
import BLE
import Synchronization
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
    static let needs: CommandNeeds = [.controller, .listening, .demoPeripheralsOnVirtualRadio, .pairing]

    var controller: ControllerOptions
    var target: AddressArgument
    var characteristic: CharacteristicArgument
    var count: Int?
    var timeout: Duration?
    var json: Bool

    init(_ args: ParsedArguments) throws {
        controller = try ControllerOptions(args, listening: true)
        target = try AddressArgument(args.positionals[0])
        characteristic = try CharacteristicArgument(args.positionals[1])
        count = try args.int("count")
        if let count, count <= 0 { throw UsageError("--count must be positive") }
        timeout = try args.seconds("timeout")
        json = args.flag("json")
    }

    func run() async throws {
        // The MTU exchange is overlapped: the first lookup queues behind it on the bearer.
        try await withPeripheral(controller, target, timeout: .seconds(10), waitForMTU: false) { peripheral in
            // Only what this subscription needs goes before the first value: the characteristic
            // and its CCCD, from the attribute cache or a targeted search (Vol 3 Part G §2.5.2);
            // no CCCD write to a bonded server that kept it (§3.3.3.3).
            let c = try await characteristic.locate(on: peripheral)
            // Followed across Service Changed (Vol 3 Part G §7.1): a change that covers the
            // characteristic has it found again and subscribed again.
            let characteristic = self.characteristic
            let updates = await peripheral.follow(c) { try await characteristic.locate(on: $0) }
            let current = Followed(c)
            let wrote = try await peripheral.enableUpdates(for: c)
            let kind = c.properties.contains(.notify) ? "notifications" : "indications"
            if !json { print("subscribed to \(kind) from \(c.uuid) [0x\(String(format4: c.valueHandle))]") }
            let limit = count
            let deadline = timeout
            let received = Counter()
            // The first value, told twice: a wait that may be given up (ending its stream) and
            // the wait that follows it.
            let (firstValue, firstValueSignal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let (firstValueSoon, firstValueSoonSignal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            // Each child says whether its end ends the command.
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for try await update in updates {
                        let value: [UInt8]
                        switch update {
                        case let .resubscribed(moved):
                            current.set(moved)
                            standardError("service changed: subscribed again to \(moved.uuid) [0x\(String(format4: moved.valueHandle))]")
                            continue
                        case let .value(v):
                            value = v
                        }
                        let n = received.increment()
                        if n == 1 {
                            firstValueSignal.yield()
                            firstValueSoonSignal.yield()
                        }
                        if json {
                            let handle = current.value.valueHandle
                            print(JSON.object([("handle", .int(Int(handle)))] + valueJSON(value)).text)
                        } else {
                            print(valueText(value))
                        }
                        flushOutput()
                        if let limit, n >= limit { break }
                    }
                    return true
                }
                if let deadline {
                    group.addTask {
                        try await Task.sleep(for: deadline)
                        return true
                    }
                }
                group.addTask {
                    // A kept subscription should deliver within a measurement or two; if it
                    // does not, the server forgot it after all and the CCCD is written.
                    if !wrote, await !Self.arrives(firstValueSoon, within: Self.keptSubscriptionGrace) {
                        try await peripheral.enableUpdates(for: current.value, force: true)
                    }
                    for await _ in firstValue { break }
                    // After the user's first value: Service Changed and robust caching.
                    await peripheral.completeCaching()
                    return false
                }
                while let ends = try await group.next() {
                    if ends { break }
                }
                group.cancelAll()
            }
            if peripheral.state != .connected, let reason = peripheral.disconnectReason {
                throw BLEError.disconnected(reason: reason)
            }
            let n = received.value
            if let limit, n < limit, let deadline {
                throw BLEError.timeout("received \(n) of \(limit) values in \(deadline)")
            }
            // A bonded server keeps the subscription for the next run (§3.3.3.3), which then
            // needs no request before its first value; others are unsubscribed.
            _ = try? await peripheral.disableUpdates(for: current.value, keepingBonded: true)
        }
    }

    /// How long a subscription a bonded server kept may take to deliver its first value.
    static let keptSubscriptionGrace: Duration = .seconds(3)

    /// True when `signal` yields within `limit`.
    static func arrives(_ signal: AsyncStream<Void>, within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in signal { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}

/// The characteristic a subscription follows now (it moves on Service Changed), shared by the
/// task printing values and the one that ends the subscription.
private final class Followed: Sendable {
    private let characteristic: Mutex<GATTCharacteristic>
    init(_ c: GATTCharacteristic) { characteristic = Mutex(c) }
    var value: GATTCharacteristic { characteristic.withLock { $0 } }
    func set(_ c: GATTCharacteristic) { characteristic.withLock { $0 = c } }
}

import BLE
import BLEVirtual
import BLEHCI
import BLEHost
import BLEVirtualRadio
import BLEWire

/// One benchmark run: a Swift peripheral notifies `count` values of `size` bytes as fast as its
/// queue allows, a Swift central on the same virtual radio receives them all. Both hosts are the
/// unmodified stack; they and the radio run in virtual time, or (`executors`, without the
/// air-time model) in real time on Swift's default executors. `mode` sends indications instead (each
/// confirmed before the next, Vol 3 Part F §3.4.7.2), or has the central write the values
/// without response (§3.4.5.3) for the peripheral to receive.
struct NotificationRun: Sendable {
    /// Which ATT PDU carries the values.
    enum Mode: String, Sendable, CaseIterable {
        /// Handle Value Notification, peripheral to central.
        case notification
        /// Write Command, central to peripheral (paced by the central's ACL buffers).
        case writeWithoutResponse = "write-without-response"
        /// Handle Value Indication, peripheral to central, one outstanding at a time.
        case indication

        /// What one value is called in the benchmark's lines.
        var plural: String {
            switch self {
            case .notification: return "notifications"
            case .writeWithoutResponse: return "writes without response"
            case .indication: return "indications"
            }
        }
    }

    var mode = Mode.notification
    var phy: LEPHY = .le2M
    var dataLength = 251
    /// The controllers' LE ACL buffer length (LE Read Buffer Size, Core Vol 4 Part E §7.8.2): 27
    /// makes the host fragment every 244-byte notification into ten ACL packets.
    var aclBufferLength: UInt16 = 251
    /// Connection interval in 1.25 ms units (6 = 7.5 ms).
    var intervalUnits: UInt16 = 6
    var airTimeModel = true
    var count = 2_000
    /// Notification value size; nil: the largest that fits one LL PDU (data length − 7).
    var size: Int?

    var valueSize: Int { size ?? max(1, dataLength - 7) }
    var interval: Duration { .microseconds(1250 * Int64(intervalUnits)) }

    struct Result: Sendable {
        /// Whole connection intervals from the first notification's arrival.
        var elapsed: Duration
        /// Bytes that arrived within them.
        var bytes: Int
        var bitsPerSecond: Double { Double(bytes * 8) / elapsed.seconds }
        /// Where the run took place, read from the world's clock.
        var executors: Executors
    }

    static let service = BluetoothUUID(0xBE00)
    static let stream = BluetoothUUID(0xBE01)

    /// Where the two hosts and the radio run.
    enum Executors: Sendable {
        /// Real time on Swift's default executors, how an application on a real controller runs
        /// the stack: an actor hop runs inline on the hopping thread when the actor is free, and
        /// the hosts and the radio run on several threads at once (what callgrind counts then
        /// varies with how they interleave, and leaves out the kernel's wake-ups).
        case application
        /// A `VirtualTime` world: one thread and virtual time, as the tests run. Every task
        /// prefers the world's task executor, so every actor hop and every wake-up is a queued
        /// job, which the runtime never runs inline (a cost of the test harness, not the stack).
        /// Deterministic: callgrind counts the same every run.
        case virtualTime

        /// How the benchmark's lines name it.
        var description: String {
            switch self {
            case .application: return "on Swift's default executors"
            case .virtualTime: return "in a virtual-time world"
            }
        }
    }

    /// Where the hosts run; the air-time model always runs in virtual time.
    var executors = Executors.virtualTime

    func run() async throws -> Result {
        let run = self
        if executors == .application && !airTimeModel {
            let world = VirtualWorld(clock: SystemClock(), airTimeModel: false)
            do {
                let result = try await run.measure(in: world)
                await world.radio.shutdown()
                return result
            } catch {
                await world.radio.shutdown()
                throw error
            }
        }
        return try await VirtualWorld.run(airTimeModel: airTimeModel) { world in
            try await run.measure(in: world)
        }
    }

    private func measure(in world: VirtualWorld) async throws -> Result {
        var controller = VirtualControllerConfiguration()
        controller.leACLBufferLength = aclBufferLength
        var host = HostConfiguration()
        host.preferredDataLength = dataLength
        host.preferredPHY = phy
        host.connectionIntervalMin = intervalUnits
        host.connectionIntervalMax = intervalUnits
        let (manager, _) = try await world.addPeripheralManager(name: "Bench", configuration: host, controller: controller)
        let properties: CharacteristicProperties
        switch mode {
        case .notification: properties = [.notify]
        case .writeWithoutResponse: properties = [.writeWithoutResponse]
        case .indication: properties = [.indicate]
        }
        let handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.stream, properties: properties, permissions: [.read, .write], value: [0]),
        ]))
        guard let valueHandle = handles[Self.stream]?.valueHandle else { throw BLEError.invalidArgument("no stream characteristic") }
        let events = await manager.events
        try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("Bench").build(),
                                           parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (central, _) = try await world.addCentral(configuration: host, controller: controller)
        let found = try await central.find(filter: ScanFilter(nameContains: "Bench"), timeout: .seconds(10))
        let peripheral = try await central.connect(found.address)
        _ = try await peripheral.exchangeMTU(517)
        guard let service = try await peripheral.discoverServices([Self.service]).first,
              let characteristic = try await peripheral.discoverCharacteristics([Self.stream], for: service).first else {
            throw BLEError.invalidArgument("benchmark service not found")
        }
        let value = [UInt8](repeating: 0xA5, count: valueSize)
        let count = self.count
        var arrivals: [(time: Duration, bytes: Int)] = []
        arrivals.reserveCapacity(count)
        let sender: Task<Void, any Error>
        if mode == .writeWithoutResponse {
            // Let the data length and PHY updates settle before timing.
            try await world.clock.sleep(for: .milliseconds(100))
            sender = Task(executorPreference: world.clock.taskExecutor) {
                for _ in 0..<count { try await peripheral.writeValue(value, for: characteristic, type: .withoutResponse) }
            }
            for await event in events {
                guard case let .valueWritten(_, handle, v) = event, handle == valueHandle else { continue }
                arrivals.append((world.clock.now(), v.count))
                if arrivals.count == count { break }
            }
        } else {
            let values = await peripheral.notifications(for: characteristic)
            try await peripheral.setNotifyValue(true, for: characteristic)
            for await event in events {
                if case .subscriptionChanged(_, _, let notifications, let indications) = event, notifications || indications { break }
            }
            try await world.clock.sleep(for: .milliseconds(100))
            sender = Task(executorPreference: world.clock.taskExecutor) {
                for _ in 0..<count { _ = try await manager.updateValueWaiting(value, forHandle: valueHandle) }
            }
            for await v in values {
                arrivals.append((world.clock.now(), v.count))
                if arrivals.count == count { break }
            }
        }
        // Count whole connection intervals from the first arrival: the pattern of each event
        // repeats, so bytes per whole interval is the steady rate, free of partial first and
        // last events.
        let first = arrivals.first?.time ?? .zero
        let span = (arrivals.last?.time ?? first) - first
        let intervals = Int((span / interval).rounded(.down))
        let elapsed = interval * intervals
        let bytes = arrivals.filter { $0.time < first + elapsed }.reduce(0) { $0 + $1.bytes }
        try await sender.value
        try await peripheral.disconnect()
        await central.close()
        await manager.close()
        return Result(elapsed: elapsed, bytes: bytes, executors: world.clock is VirtualTime ? .virtualTime : .application)
    }
}

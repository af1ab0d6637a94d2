import BLERuntime
import BLE
import BLEProfiles
import BLEWire

/// The numbered steps of docs/SYSTEMS.md S2's sample central, each reported as it happens.
public enum SampleCentralEvent: Sendable {
    /// 1: the manager's state, by CoreBluetooth's name.
    case managerState(ManagerState)
    /// 2: the device found by scanning for the service (no duplicates).
    case found(name: String?, address: DeviceAddress, rssi: Int8?)
    /// 3: whether the connection stands.
    case connected(DeviceAddress, Bool)
    /// 4: the service discovered.
    case service(GATTService)
    /// 5: each of its characteristics.
    case characteristic(GATTCharacteristic)
    /// 6: a readable characteristic's value (shown as bytes and as UTF-8).
    case value(BluetoothUUID, [UInt8])
    /// 7: the write with response, and the value read back after it.
    case wrote(BluetoothUUID, [UInt8], readBack: [UInt8])
    /// 8: notifications turned on or off (CoreBluetooth's didUpdateNotificationStateFor).
    case notificationState(BluetoothUUID, Bool)
    /// 9: a notification, counted from 1.
    case notification(Int, BluetoothUUID, [UInt8])
    case disconnected
}

/// What the sample central did, for callers that check it (the demo, the tests).
public struct SampleCentralResult: Sendable, Equatable {
    /// The read/write characteristic's value before the write.
    public var initialValue: [UInt8]
    /// What was written ("Write Data NNN").
    public var written: [UInt8]
    /// The value read back after the write.
    public var readBack: [UInt8]
    /// The notified values, in order.
    public var notifications: [[UInt8]]
}

/// The sample central of docs/SYSTEMS.md S2 as a reusable function: "the article's point is that this
/// logic lives in a reusable package, not in the app". `ble sample` prints its steps.
public enum SampleCentral {
    /// How the sample central runs; the defaults are docs/SYSTEMS.md S2's.
    public struct Options: Sendable {
        /// Only this address (any device advertising the service when nil).
        public var target: BDAddress?
        /// How long to scan before "not found".
        public var scanTimeout: Duration = .seconds(10)
        /// How long a connection attempt may take.
        public var connectTimeout: Duration = .seconds(10)
        /// The ATT MTU to ask for.
        public var mtu = 517
        /// Notifications to take before unsubscribing and disconnecting.
        public var count = 3
        /// How long the peripheral may go without notifying while more are due.
        public var notificationTimeout: Duration = .seconds(10)
        /// NNN of "Write Data NNN"; random in 0...999 when nil, as in the article.
        public var writeNumber: Int?

        /// The defaults above; set the fields that differ.
        public init() {}
    }

    /// Runs steps 1 to 9, reporting each; returns what was read, written and notified.
    public static func run(using central: Central, options: Options = Options(),
                    report: @escaping @Sendable (SampleCentralEvent) -> Void) async throws -> SampleCentralResult {
        let state = await central.state
        report(.managerState(state))
        guard state == .poweredOn else { throw CentralFlowError.notPoweredOn(state) }

        let device = try await findAdvertiser(of: SampleProfile.service, target: options.target, using: central, timeout: options.scanTimeout)
        report(.found(name: device.advertisement.localName, address: device.address, rssi: device.rssi))

        let peripheral = try await central.connect(device.address, timeout: options.connectTimeout)
        report(.connected(device.address, peripheral.state == .connected))
        let result: SampleCentralResult
        do {
            result = try await steps(on: peripheral, clock: central.clock, options: options, report: report)
        } catch {
            await disconnectEvenIfCancelled(peripheral, clock: central.clock)
            throw error
        }
        await disconnectEvenIfCancelled(peripheral, clock: central.clock)
        report(.disconnected)
        return result
    }

    /// Steps 4 to 9 on the connected peripheral.
    private static func steps(on peripheral: Peripheral, clock: any BLEClock, options: Options,
                              report: @escaping @Sendable (SampleCentralEvent) -> Void) async throws -> SampleCentralResult {
        try await exchangeMTU(options.mtu, on: peripheral)
        let found = try await discover(SampleProfile.service, on: peripheral)
        report(.service(found.service))
        for c in found.characteristics { report(.characteristic(c)) }
        let readWrite = try found.characteristic(SampleProfile.readWrite)
        let notify = try found.characteristic(SampleProfile.notify)

        var initial: [UInt8] = []
        for c in found.characteristics where c.properties.contains(.read) {
            let value = try await peripheral.readValue(for: c)
            report(.value(c.uuid, value))
            if c.uuid == SampleProfile.readWrite { initial = value }
        }

        let written = Array(SampleProfile.writeData(options.writeNumber ?? Int.random(in: 0...999)).utf8)
        try await peripheral.writeValue(written, for: readWrite, type: .withResponse)
        let readBack = try await peripheral.readValue(for: readWrite)
        report(.wrote(readWrite.uuid, written, readBack: readBack))

        let values = await peripheral.notifications(for: notify)
        try await peripheral.setNotifyValue(true, for: notify)
        report(.notificationState(notify.uuid, true))
        let watchdog = SilenceWatchdog(clock: clock, limit: options.notificationTimeout, waitingFor: "notification")
        let count = options.count
        let received = try await withWatchdog(watchdog) { () -> [[UInt8]]? in
            var received: [[UInt8]] = []
            if count <= 0 { return received }
            for await value in values {
                watchdog.touch()
                received.append(value)
                report(.notification(received.count, notify.uuid, value))
                if received.count >= count { return received }
            }
            try Task.checkCancellation()
            return nil
        }
        guard let received else {
            throw CentralFlowError.disconnected(peripheral.disconnectReason ?? .connectionTimeout, while: "waiting for notifications")
        }
        try await peripheral.setNotifyValue(false, for: notify)
        report(.notificationState(notify.uuid, false))
        return SampleCentralResult(initialValue: initial, written: written, readBack: readBack, notifications: received)
    }
}

import BLE
import Foundation
import BLEVirtual
import Synchronization

/// One gateway's neighbourhood in `ble-bench gateway`: a virtual radio of its own in real time
/// (the broker is real, so the world is too), without the air-time model (values cross at once;
/// a real link adds up to one connection interval), holding
///
/// - `advertisers` peripheral hosts advertising legacy PDUs from distinct public addresses under
///   distinct names, half connectable ADV_IND and half ADV_NONCONN_IND beacons; one in
///   `GatewayBenchOptions.changingEvery` changes its manufacturer data every second (a sensor's
///   reading), faster than the gateway's rate limit lets through;
/// - `notifiers` GATT servers with one notifying characteristic (`characteristic` in `service`)
///   that, once started, notify a `NotificationLedger` value (notifier and sequence number) at
///   the run's rate.
///
/// The central that listens (a gateway, or the radio-only pass's plain central) is added by the
/// caller with `addCentral`.
final class GatewayBenchWorld: Sendable {
    static let service = BluetoothUUID(0xBE00)
    static let characteristic = BluetoothUUID(0xBE01)

    /// A notifying GATT server.
    struct Notifier: Sendable {
        /// Its number across every radio (what its values carry).
        let index: Int
        let address: BDAddress
        let manager: PeripheralManager
        let valueHandle: UInt16
    }

    /// An advertising host.
    struct Advertiser: Sendable {
        let index: Int
        let name: String
        let manager: PeripheralManager
        let kind: AdvertisingParameters.Kind
        /// Whether its data changes every second.
        let changes: Bool
    }

    /// What the world's own traffic did, for the report.
    struct Counts: Sendable {
        /// Notifications the notifiers' hosts queued, and those they refused (no subscriber yet,
        /// or a full queue).
        var notificationsQueued = 0, notificationsRefused = 0
        var advertisingChanges = 0, advertisingChangesFailed = 0
    }

    /// Which gateway this world belongs to (0-based).
    let number: Int
    let world: VirtualWorld
    let advertisers: [Advertiser]
    let notifiers: [Notifier]
    let options: GatewayBenchOptions
    private let traffic = Mutex<[Task<Void, Never>]>([])
    private let tally = Mutex(Counts())

    private init(number: Int, world: VirtualWorld, advertisers: [Advertiser], notifiers: [Notifier], options: GatewayBenchOptions) {
        self.number = number
        self.world = world
        self.advertisers = advertisers
        self.notifiers = notifiers
        self.options = options
    }

    var counts: Counts { tally.withLock { $0 } }

    /// The public address of advertiser `index` on radio `number`: distinct across every radio.
    static func advertiserAddress(_ number: Int, _ index: Int) -> BDAddress {
        BDAddress(rawValue: 0x00BE_0000_0000 | UInt64(number) << 16 | UInt64(index))
    }

    static func notifierAddress(_ number: Int, _ index: Int) -> BDAddress {
        BDAddress(rawValue: 0x00BE_1000_0000 | UInt64(number) << 16 | UInt64(index))
    }

    /// Builds radio `number`'s world and starts its advertisers and notifiers advertising.
    static func build(number: Int, options: GatewayBenchOptions) async throws -> GatewayBenchWorld {
        let world = VirtualWorld(clock: SystemClock(), airTimeModel: false)
        var advertisers: [Advertiser] = []
        for i in 0..<options.advertisers {
            let name = String(format: "Sensor-%02d-%04d", number + 1, i)
            let (manager, _) = try await world.addPeripheralManager(name: name, address: advertiserAddress(number, i))
            let kind: AdvertisingParameters.Kind = i % 2 == 0 ? .connectable : .nonConnectable
            let a = Advertiser(index: i, name: name, manager: manager, kind: kind, changes: i % GatewayBenchOptions.changingEvery == 0)
            try await manager.startAdvertising(advertisement(a, reading: 0), parameters: parameters(kind, options))
            advertisers.append(a)
        }
        var notifiers: [Notifier] = []
        for k in 0..<options.notifiers {
            let name = String(format: "Notifier-%02d-%02d", number + 1, k)
            let address = notifierAddress(number, k)
            let (manager, _) = try await world.addPeripheralManager(name: name, address: address)
            let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
                GATTCharacteristicDefinition(uuid: characteristic, properties: [.read, .notify], permissions: [.read],
                                             value: NotificationLedger.value(notifier: 0, sequence: 0)),
            ]))
            guard let valueHandle = handles.valueHandle(for: characteristic) else {
                throw GatewayBenchError.failed("notifier \(name): its characteristic has no value handle")
            }
            let data = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName(name)
                .serviceUUIDs([service]).build()
            try await manager.startAdvertising(data, parameters: parameters(.connectable, options))
            notifiers.append(Notifier(index: number * options.notifiers + k, address: address, manager: manager, valueHandle: valueHandle))
        }
        return GatewayBenchWorld(number: number, world: world, advertisers: advertisers, notifiers: notifiers, options: options)
    }

    private static func parameters(_ kind: AdvertisingParameters.Kind, _ options: GatewayBenchOptions) -> AdvertisingParameters {
        AdvertisingParameters(kind: kind, interval: options.advertisingInterval)
    }

    /// An advertiser's data: its name, and manufacturer data holding its number and `reading`.
    private static func advertisement(_ a: Advertiser, reading: Int) -> AdvertisingData {
        var b = AdvertisingData.Builder()
        if a.kind == .connectable { b = b.flags([.leGeneralDiscoverable, .brEdrNotSupported]) }
        return b.localName(a.name).manufacturerData(companyID: 0xFFFF, data: [
            UInt8(truncatingIfNeeded: a.index), UInt8(truncatingIfNeeded: a.index >> 8),
            UInt8(truncatingIfNeeded: reading), UInt8(truncatingIfNeeded: reading >> 8),
        ]).build()
    }

    /// A central on this radio (a gateway's, or the radio-only pass's).
    func addCentral() async throws -> Central {
        try await world.addCentral().0
    }

    /// Starts the traffic: every notifier notifies at `rate` (their phases spread over one
    /// period), and the changing advertisers change their data every second (a quarter of
    /// them every 250 ms).
    func startTraffic(ledger: NotificationLedger) {
        let period = 1 / options.rate
        var tasks: [Task<Void, Never>] = []
        for (k, n) in notifiers.enumerated() {
            let phase = period * Double(k) / Double(max(1, notifiers.count))
            tasks.append(Task { await self.notify(n, period: period, phase: phase, ledger: ledger) })
        }
        tasks.append(Task { await self.changeAdvertisements() })
        traffic.withLock { $0 += tasks }
    }

    private func notify(_ n: Notifier, period: Double, phase: Double, ledger: NotificationLedger) async {
        var next = monotonicSeconds() + phase
        var sequence = 0
        while !Task.isCancelled {
            let now = monotonicSeconds()
            if next > now {
                do { try await Task.sleep(for: .seconds(next - now)) } catch { return }
            } else if now - next > period {
                // Fell more than a period behind (an overloaded machine): no burst to catch up.
                next = now
            }
            ledger.sending(notifier: n.index, sequence: sequence, at: monotonicSeconds())
            let result = await n.manager.updateValue(NotificationLedger.value(notifier: n.index, sequence: sequence), forHandle: n.valueHandle)
            if case let .queued(centrals) = result, centrals > 0 {
                tally.withLock { $0.notificationsQueued += 1 }
            } else {
                ledger.notSent(notifier: n.index, sequence: sequence)
                tally.withLock { $0.notificationsRefused += 1 }
            }
            sequence += 1
            next += period
        }
    }

    private func changeAdvertisements() async {
        let changing = advertisers.filter(\.changes)
        var tick = 0
        var next = monotonicSeconds()
        while !Task.isCancelled {
            next += 0.25
            let wait = next - monotonicSeconds()
            if wait > 0 {
                do { try await Task.sleep(for: .seconds(wait)) } catch { return }
            }
            tick += 1
            for (j, a) in changing.enumerated() where j % 4 == tick % 4 {
                do {
                    try await a.manager.startAdvertising(Self.advertisement(a, reading: tick / 4), parameters: Self.parameters(a.kind, options))
                    tally.withLock { $0.advertisingChanges += 1 }
                } catch {
                    tally.withLock { $0.advertisingChangesFailed += 1 }
                }
                if Task.isCancelled { return }
            }
        }
    }

    /// Stops the notifiers and the advertising changes.
    func stopTraffic() async {
        let tasks = traffic.withLock { t in
            defer { t = [] }
            return t
        }
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
    }

    /// Stops the traffic, closes every host and shuts the radio down.
    func close() async {
        await stopTraffic()
        for n in notifiers { await n.manager.close() }
        for a in advertisers { await a.manager.close() }
        await world.radio.shutdown()
    }
}

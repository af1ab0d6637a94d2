import Synchronization
import BLE
import BLEVirtual
import Foundation

/// One host per controller per process: every manager opened on the same controller spec shares
/// its `Central` (so two managers agree on identifiers, and one adapter's exclusive HCI user
/// channel serves them all) and its scan (`ScanEngine`).
final class CBHost: Sendable {
    let spec: String
    let central: Central
    let scans: ScanEngine
    private let observers = Mutex<[UInt64: @Sendable (CBManagerState) -> Void]>([:])
    private let nextObserver = Mutex<UInt64>(1)
    private let failed = Mutex(false)
    let peripheralRole = Mutex<PeripheralManager?>(nil)
    /// What `CBCentralManager.supports` answers: the features of the controller this process
    /// opened last (one, in the usual process; none before any opened).
    static let supportedFeatures = Mutex<CBCentralManager.Feature>([])

    init(spec: String, central: Central) {
        self.spec = spec
        self.central = central
        self.scans = ScanEngine(central: central)
    }

    /// Calls `body` when the host fails (transport lost, hardware error): managers go `.poweredOff`.
    func observe(_ body: @escaping @Sendable (CBManagerState) -> Void) -> UInt64 {
        let id = nextObserver.withLock { n in defer { n += 1 }; return n }
        observers.withLock { $0[id] = body }
        if failed.current { body(.poweredOff) }
        return id
    }

    func removeObserver(_ id: UInt64) {
        observers.withLock { $0[id] = nil }
    }

    /// Watches the host's health once a second (the public API reports it as `state`), so managers
    /// learn of a lost controller without an operation failing first.
    func startMonitor() {
        Task { [weak self] in
            while let self {
                try? await Task.sleep(for: .seconds(1))
                if await self.central.state != .poweredOn {
                    self.failed.withLock { $0 = true }
                    await CBHostRegistry.shared.forget(self)
                    let all = self.observers.withLock { Array($0.values) }
                    for body in all { body(.poweredOff) }
                    return
                }
            }
        }
    }
}

/// Opens each controller once per process and hands the same host to every manager that names it.
actor CBHostRegistry {
    static let shared = CBHostRegistry()
    /// A spec's host: still opening (the task every caller waits on), or open.
    private enum Entry {
        case opening(Task<CBHost, any Error>)
        case open(CBHost)
    }
    private var hosts: [String: Entry] = [:]

    /// The host for `spec` (else `BLE_HCI`, else the first Linux adapter), opened on first use.
    /// One whose controller is gone is not handed out, even before its monitor has noticed: it
    /// is dropped and a new one opened (else a manager reopening after a loss could get the dead
    /// host back and report `.poweredOn` on it).
    func host(spec: String?) async throws -> CBHost {
        let key = spec ?? ProcessInfo.processInfo.environment["BLE_HCI"] ?? ""
        while let entry = hosts[key] {
            let host: CBHost
            switch entry {
            case let .opening(task): host = try await task.value
            case let .open(open): host = open
            }
            if await host.central.state == .poweredOn { return host }
            forget(host)
            if case let .opening(waited) = entry, case let .opening(now) = hosts[key], now == waited { hosts[key] = nil }
        }
        let task = Task<CBHost, any Error> {
            let transport = try await Controllers.open(spec: key.isEmpty ? nil : key)
            let central = try await Central.open(transport: transport, configuration: Self.configuration(spec: key))
            let features: CBCentralManager.Feature = central.controllerInfo.supportsExtendedAdvertisingCommands ? .extendedScanAndConnect : []
            CBHost.supportedFeatures.withLock { $0 = features }
            let host = CBHost(spec: key, central: central)
            host.startMonitor()
            return host
        }
        hosts[key] = .opening(task)
        let result = await task.result
        if case let .opening(now) = hosts[key], now == task {
            hosts[key] = (try? result.get()).map(Entry.open)
        }
        return try result.get()
    }

    /// The host's settings. Bonds persist, as iOS keeps them: in the directory `ble` uses
    /// (`BLE_BONDS`, else `$XDG_DATA_HOME/ble/bonds`, i.e. `~/.local/share/ble/bonds`), so a device
    /// paired with `ble pair` is bonded here too; on the in-process `virtual` radio, whose devices
    /// last one run, they are kept in memory. Pairing happens when a characteristic needs it.
    static func configuration(spec: String) -> HostConfiguration {
        var configuration = HostConfiguration()
        let environment = ProcessInfo.processInfo.environment
        if spec != "virtual", let directory = environment["BLE_BONDS"] ?? DirectoryBondStore.defaultDirectory(environment: environment) {
            do {
                configuration.security.bondStore = try DirectoryBondStore(directory: directory)
            } catch {
                CBLog.warning("bonds are kept in memory only: \(error)")
                configuration.security.bondStore = InMemoryBondStore()
            }
        } else {
            configuration.security.bondStore = InMemoryBondStore()
        }
        return configuration
    }

    /// Drops a failed host, so the next manager opens the controller afresh; a newer host
    /// (opening or open) on the same spec stays.
    func forget(_ host: CBHost) {
        guard case let .open(open) = hosts[host.spec], open === host else { return }
        hosts[host.spec] = nil
    }
}

/// The one radio scan a host runs for all of its managers and pending connections: on (active,
/// every report) while any manager scans or any `connect` waits for its device to be heard, and
/// paused only while a connection is being made. Managers filter what they are given.
actor ScanEngine {
    let central: Central
    private var listeners: [UInt64: @Sendable (ScannedDevice) -> Void] = [:]
    private var watchers: [UInt64: (key: DeviceAddress, continuation: CheckedContinuation<DeviceAddress, any Error>)] = [:]
    private var lastHeard: [DeviceAddress: (address: DeviceAddress, at: ContinuousClock.Instant)] = [:]
    private var paused = 0
    private var running: Task<Void, Never>?
    private var generation: UInt64 = 0
    private var nextID: UInt64 = 1
    private var connecting = false
    private var turns: [CheckedContinuation<Void, Never>] = []

    init(central: Central) { self.central = central }

    /// The key a device is known by: its identity address when a bond resolves it, else the
    /// address it advertises with, as a public or random type.
    static func key(of device: ScannedDevice) -> DeviceAddress {
        normalized(device.identity ?? device.address)
    }

    static func normalized(_ address: DeviceAddress) -> DeviceAddress {
        DeviceAddress(address.address, type: address.type.peerType)
    }

    func addListener(_ body: @escaping @Sendable (ScannedDevice) -> Void) -> UInt64 {
        let id = takeID()
        listeners[id] = body
        refresh()
        return id
    }

    func removeListener(_ id: UInt64) {
        listeners[id] = nil
        refresh()
    }

    /// Connects to the device known by `key`, however long it takes to be heard (CoreBluetooth's
    /// `connect` never times out); cancelling the calling task gives up.
    func connect(_ key: DeviceAddress) async throws -> Peripheral {
        while true {
            let address = try await heard(key)
            await takeTurn()
            defer { releaseTurn() }
            try Task.checkCancellation()
            paused += 1
            refresh()
            do {
                let peripheral = try await central.connect(address, timeout: .seconds(10))
                paused -= 1
                refresh()
                return peripheral
            } catch {
                paused -= 1
                lastHeard[key] = nil
                refresh()
                if Task.isCancelled { throw CancellationError() }
                if case BLEError.timeout = error { continue }
                throw error
            }
        }
    }

    /// The address `key` was heard at in the last two seconds, else the next time it is heard.
    private func heard(_ key: DeviceAddress) async throws -> DeviceAddress {
        if let recent = lastHeard[key], ContinuousClock.now - recent.at < .seconds(2) { return recent.address }
        let id = takeID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                watchers[id] = (key, continuation)
                refresh()
            }
        } onCancel: {
            Task { await self.cancelWatcher(id) }
        }
    }

    private func cancelWatcher(_ id: UInt64) {
        guard let watcher = watchers.removeValue(forKey: id) else { return }
        watcher.continuation.resume(throwing: CancellationError())
        refresh()
    }

    private func takeTurn() async {
        if !connecting {
            connecting = true
            return
        }
        await withCheckedContinuation { turns.append($0) }
    }

    private func releaseTurn() {
        if turns.isEmpty {
            connecting = false
        } else {
            turns.removeFirst().resume()
        }
    }

    private func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Starts or stops the radio scan to match who wants it.
    private func refresh() {
        let wanted = (!listeners.isEmpty || !watchers.isEmpty) && paused == 0
        if wanted, running == nil {
            generation += 1
            let mine = generation
            let central = self.central
            running = Task {
                do {
                    for try await device in central.scan(filter: ScanFilter(allowDuplicates: true), active: true) {
                        self.deliver(device)
                    }
                } catch {
                    // A scan still stopping, or a failed host: try again shortly.
                    try? await Task.sleep(for: .milliseconds(200))
                }
                self.ended(mine)
            }
        } else if !wanted, let task = running {
            task.cancel()
            running = nil
        }
    }

    private func ended(_ which: UInt64) {
        guard which == generation, running != nil else { return }
        running = nil
        refresh()
    }

    private func deliver(_ device: ScannedDevice) {
        let key = Self.key(of: device)
        let now = ContinuousClock.now
        lastHeard[key] = (device.address, now)
        if lastHeard.count > 4096 {  // a long scan among rotating addresses: forget the silent ones
            lastHeard = lastHeard.filter { now - $0.value.at < .seconds(10) }
        }
        for (id, watcher) in watchers where watcher.key == key {
            watchers[id] = nil
            watcher.continuation.resume(returning: device.address)
        }
        for body in listeners.values { body(device) }
        refresh()
    }
}

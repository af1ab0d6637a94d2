import Synchronization
import BLE
import BLEVirtual
import Foundation

/// The central role: scans for peripherals, connects to them, and hands out `CBPeripheral`s.
///
/// Create it with a delegate and a queue (nil: the main queue, which a command-line program runs
/// with `RunLoop.main.run()` or `dispatchMain()`); it starts `.unknown` and reports
/// `centralManagerDidUpdateState` once the controller (`SwiftBLEManagerOptionHCIKey`, else
/// `BLE_HCI`, else the first Linux adapter) is open. Every callback runs on that queue, and no
/// call blocks the caller.
open class CBCentralManager: CBManager, @unchecked Sendable {
    /// A scan as the app asked for it (`scanForPeripherals`), and what it has reported.
    struct ScanRequest {
        var services: [BluetoothUUID]
        var solicited: [BluetoothUUID]
        var allowDuplicates: Bool
        var reported: [DeviceAddress: AdvertisingData] = [:]
        let generation: UInt64
    }

    struct State {
        var host: CBHost?
        var scan: ScanRequest?
        var scanGeneration: UInt64 = 0
        /// This manager's listener on a host's scan, and which host it is on.
        var listener: (host: CBHost, id: UInt64)?
        var peripherals: [DeviceAddress: CBPeripheral] = [:]
        var control: Task<Void, Never>?
        var observer: UInt64?
    }

    let inner = Mutex(State())

    /// Who hears about the manager's state, discoveries and connections (kept weakly).
    open var delegate: (any CBCentralManagerDelegate)? {
        get { delegateReference.value as? any CBCentralManagerDelegate }
        set { delegateReference.value = newValue }
    }

    /// A manager with no delegate on the main queue.
    public override init() {
        super.init()
    }

    /// A manager whose callbacks run on `queue` (nil: the main queue).
    public convenience init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// A manager whose callbacks run on `queue` (nil: the main queue). Of the options, only
    /// `SwiftBLEManagerOptionHCIKey` (the controller) means something on Linux; Apple's keys are
    /// accepted and ignored.
    public init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        super.init(delegate: delegate, queue: queue, options: options)
    }

    /// Opens (or joins) the host for the controller, then reports the state.
    override func open(reportingFailure: Bool = true) {
        open(reportingFailure: reportingFailure) { [weak self] spec in
            let host = try await CBHostRegistry.shared.host(spec: spec)
            guard let self else { return }
            // On the delegate queue, after any state change still queued from a host that failed.
            self.queue.async {
                self.inner.withLock { $0.host = host }
                self.changeState(.poweredOn)
                // After the poweredOn: a host that failed meanwhile calls back at once, and
                // its poweredOff must come second.
                let observer = host.observe { [weak self] _ in self?.controllerLost() }
                self.inner.withLock { $0.observer = observer }
            }
        }
    }

    deinit {
        let (host, observer, listener) = inner.withLock { ($0.host, $0.observer, $0.listener) }
        if let host, let observer { host.removeObserver(observer) }
        if let listener { Task { await listener.host.scans.removeListener(listener.id) } }
    }

    /// Reports a new state to the delegate (the same one again is not reported). Leaving
    /// `.poweredOn` ends the scan and every connection, as on Apple platforms.
    override func stateChanged(from old: CBManagerState, to new: CBManagerState) {
        guard old != new else { return }
        if new != .poweredOn {
            stopScan(checked: false)
            let peripherals = inner.withLock { Array($0.peripherals.values) }
            for p in peripherals where p.state != .disconnected {
                p.inner.withLock { s in
                    s.connectTask?.cancel()
                    s.attempt += 1
                }
                p.detach()
                delegate?.centralManager(self, didDisconnectPeripheral: p, timestamp: CFAbsoluteTimeGetCurrent(),
                                         isReconnecting: false, error: CBError(.peripheralDisconnected))
            }
            inner.withLock { s in
                if let observer = s.observer { s.host?.removeObserver(observer) }
                s.host = nil
                s.observer = nil
            }
        }
        delegate?.centralManagerDidUpdateState(self)
    }

    /// The host when powered on; else nil, with Apple's API-misuse warning.
    private func poweredOnHost(_ what: String) -> CBHost? {
        poweredOn(what, manager: "CBCentralManager") { inner.withLock { $0.host } }
    }

    /// Runs control steps (scan listener on and off) in call order.
    private func control(_ step: @escaping @Sendable () async -> Void) {
        inner.withLock { s in
            let previous = s.control
            s.control = Task {
                await previous?.value
                await step()
            }
        }
    }

    // MARK: Scanning

    /// Whether a scan is running.
    open var isScanning: Bool { inner.withLock { $0.scan != nil } }

    /// Scans for peripherals advertising any of `serviceUUIDs` (nil: all), reporting each through
    /// `didDiscover`, with its scan response already merged in (the first report of a device
    /// waits for it through lost or late scan responses: up to four more advertisements or 2 s,
    /// `Central.scan`). Options:
    /// `CBCentralManagerScanOptionAllowDuplicatesKey` (report every advertisement) and
    /// `CBCentralManagerScanOptionSolicitedServiceUUIDsKey` (also devices soliciting these).
    /// A new call replaces the running scan and reports devices seen before again. Scanning goes
    /// on while connections are pending or open.
    open func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        guard let host = poweredOnHost("scanForPeripherals") else { return }
        let allow = (options?[CBCentralManagerScanOptionAllowDuplicatesKey] as? NSNumber)?.boolValue ?? false
        let solicited = (options?[CBCentralManagerScanOptionSolicitedServiceUUIDsKey] as? [CBUUID])?.map(\.value) ?? []
        inner.withLock { s in
            s.scanGeneration += 1
            s.scan = ScanRequest(services: serviceUUIDs?.map(\.value) ?? [], solicited: solicited,
                                 allowDuplicates: allow, generation: s.scanGeneration)
        }
        control { [weak self] in
            guard let self else { return }
            // A listener on this host's scan, unless there is one (one left on a lost host goes).
            let stale = self.inner.withLock { s -> (host: CBHost, id: UInt64)?? in
                guard s.scan != nil else { return .none }
                if let l = s.listener, l.host === host { return .none }
                defer { s.listener = nil }
                return .some(s.listener)
            }
            guard let stale else { return }
            if let old = stale { await old.host.scans.removeListener(old.id) }
            let id = await host.scans.addListener { [weak self] device in self?.heard(device) }
            self.inner.withLock { $0.listener = (host, id) }
        }
    }

    /// Stops the scan; no `didDiscover` follows.
    open func stopScan() {
        stopScan(checked: true)
    }

    private func stopScan(checked: Bool) {
        if checked, state != .poweredOn { warnNotPoweredOn("stopScan", manager: "CBCentralManager") }
        inner.withLock { $0.scan = nil }
        control { [weak self] in
            guard let self else { return }
            guard let listener = self.inner.withLock({ s -> (host: CBHost, id: UInt64)? in
                guard s.scan == nil else { return nil }
                defer { s.listener = nil }
                return s.listener
            }) else { return }
            await listener.host.scans.removeListener(listener.id)
        }
    }

    /// One report from the host's scan: filtered as this manager's scan asks, then delivered.
    private func heard(_ device: ScannedDevice) {
        let key = ScanEngine.key(of: device)
        let generation = inner.withLock { s -> UInt64? in
            guard var scan = s.scan else { return nil }
            let advertised = device.advertisement.serviceUUIDs + device.advertisement.serviceData.map(\.uuid)
            if !scan.services.isEmpty || !scan.solicited.isEmpty {
                let offers = scan.services.contains(where: advertised.contains)
                let solicits = scan.solicited.contains(where: device.advertisement.solicitedServiceUUIDs.contains)
                guard offers || solicits else { return nil }
            }
            if !scan.allowDuplicates, scan.reported[key] == device.advertisement { return nil }
            scan.reported[key] = device.advertisement
            s.scan = scan
            return scan.generation
        }
        guard let generation else { return }
        let timestamp = CFAbsoluteTimeGetCurrent()
        queue.async {
            guard self.inner.withLock({ $0.scan?.generation == generation }) else { return }
            let peripheral = self.peripheral(for: key)
            let advertisement = device.advertisement
            if let name = advertisement.localName { peripheral.updateName(name) }
            let data = Self.advertisementData(device, timestamp: timestamp)
            self.delegate?.centralManager(self, didDiscover: peripheral, advertisementData: data,
                                          rssi: NSNumber(value: Int(device.rssi ?? 127)))
        }
    }

    /// The dictionary Apple's `didDiscover` gives, from a merged advertisement.
    static func advertisementData(_ device: ScannedDevice, timestamp: CFAbsoluteTime) -> [String: Any] {
        let ad = device.advertisement
        var data: [String: Any] = [
            CBAdvertisementDataIsConnectable: NSNumber(value: device.isConnectable),
            "kCBAdvDataTimestamp": NSNumber(value: timestamp),
        ]
        if let name = ad.localName { data[CBAdvertisementDataLocalNameKey] = name }
        if let tx = ad.txPowerLevel { data[CBAdvertisementDataTxPowerLevelKey] = NSNumber(value: Int(tx)) }
        if !ad.serviceUUIDs.isEmpty { data[CBAdvertisementDataServiceUUIDsKey] = ad.serviceUUIDs.map(CBUUID.init) }
        if !ad.solicitedServiceUUIDs.isEmpty { data[CBAdvertisementDataSolicitedServiceUUIDsKey] = ad.solicitedServiceUUIDs.map(CBUUID.init) }
        if let manufacturer = ad.firstData(of: .manufacturerSpecificData) { data[CBAdvertisementDataManufacturerDataKey] = Data(manufacturer) }
        if !ad.serviceData.isEmpty {
            var services: [CBUUID: Data] = [:]
            for entry in ad.serviceData { services[CBUUID(entry.uuid)] = Data(entry.data) }
            data[CBAdvertisementDataServiceDataKey] = services
        }
        return data
    }

    /// This manager's object for the device known by `key` (made on first sight; the same after).
    func peripheral(for key: DeviceAddress) -> CBPeripheral {
        inner.withLock { s in
            if let known = s.peripherals[key] { return known }
            let made = CBPeripheral(key: key, manager: self)
            s.peripherals[key] = made
            return made
        }
    }

    // MARK: Connections

    /// Connects to a peripheral; `didConnect` follows, however long the device takes to be heard
    /// (it never times out: `cancelPeripheralConnection` gives up). Apple's options are accepted
    /// and ignored. Scanning goes on meanwhile.
    open func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil) {
        guard let host = poweredOnHost("connect") else { return }
        guard peripheral.manager === self else {
            CBLog.warning("API MISUSE: \(peripheral) belongs to another CBCentralManager")
            return
        }
        let attempt = peripheral.inner.withLock { s -> UInt64? in
            guard s.state == .disconnected else { return nil }
            s.state = .connecting
            s.cancelRequested = false
            s.attempt += 1
            return s.attempt
        }
        guard let attempt else { return }
        let task = Task {
            do {
                let api = try await host.scans.connect(peripheral.key)
                self.queue.async {
                    // Still wanted (not cancelled, nor replaced by a newer attempt)? Then the link is
                    // this peripheral's, atomically with its state.
                    guard let link = peripheral.adopt(api, attempt: attempt) else {
                        Task { try? await api.disconnect() }
                        return
                    }
                    link.start(for: peripheral)
                    self.delegate?.centralManager(self, didConnect: peripheral)
                }
                for await state in api.stateUpdates {
                    if case let .disconnected(reason) = state {
                        self.linkEnded(peripheral, api: api, reason: reason)
                        break
                    }
                }
            } catch {
                if Task.isCancelled { return }
                let mapped = CBErrorMapping.map(error)
                self.queue.async {
                    guard peripheral.inner.withLock({ s -> Bool in
                        guard s.state == .connecting, s.attempt == attempt else { return false }
                        s.state = .disconnected
                        s.connectTask = nil
                        return true
                    }) else { return }
                    self.delegate?.centralManager(self, didFailToConnect: peripheral, error: mapped)
                }
            }
        }
        peripheral.inner.withLock { s in
            if s.attempt == attempt { s.connectTask = task }
        }
    }

    /// The link `api` to `peripheral` is down: report it (nil error after `cancelPeripheralConnection`).
    private func linkEnded(_ peripheral: CBPeripheral, api: Peripheral, reason: HCIStatus) {
        let timestamp = CFAbsoluteTimeGetCurrent()
        queue.async {
            let (current, local) = peripheral.inner.withLock { s in (s.link?.api === api && s.state != .disconnected, s.cancelRequested) }
            guard current else { return }
            peripheral.detach()
            let error: (any Error)? = local ? nil : CBErrorMapping.disconnection(reason)
            self.delegate?.centralManager(self, didDisconnectPeripheral: peripheral, timestamp: timestamp,
                                          isReconnecting: false, error: error)
        }
    }

    /// Cancels a pending connection or ends a connection; `didDisconnectPeripheral` follows with
    /// a nil error either way.
    open func cancelPeripheralConnection(_ peripheral: CBPeripheral) {
        guard poweredOnHost("cancelPeripheralConnection") != nil else { return }
        enum Step { case none, pending(Task<Void, Never>?), connected(Peripheral) }
        let step = peripheral.inner.withLock { s -> Step in
            switch s.state {
            case .connecting:
                s.state = .disconnected
                s.attempt += 1
                defer { s.connectTask = nil }
                return .pending(s.connectTask)
            case .connected:
                guard let link = s.link else { return .none }
                s.state = .disconnecting
                s.cancelRequested = true
                return .connected(link.api)
            default:
                return .none
            }
        }
        switch step {
        case .none:
            return
        case let .pending(task):
            task?.cancel()
            queue.async {
                self.delegate?.centralManager(self, didDisconnectPeripheral: peripheral, timestamp: CFAbsoluteTimeGetCurrent(),
                                              isReconnecting: false, error: nil)
            }
        case let .connected(api):
            Task { try? await api.disconnect() }
        }
    }

    /// The peripherals with these identifiers: any identifier this stack made (in this run or an
    /// earlier one), connected or not; identifiers of another form are skipped.
    open func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral] {
        identifiers.compactMap { id in CBIdentifiers.address(from: id).map { peripheral(for: $0) } }
    }

    /// This manager's connected peripherals with any of these services among those discovered.
    open func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral] {
        let wanted = serviceUUIDs.map(\.value)
        return inner.withLock { Array($0.peripherals.values) }
            .filter { $0.state == .connected }
            .filter { p in wanted.isEmpty || (p.services ?? []).contains { s in s.gatt.map { wanted.contains($0.uuid) } ?? false } }
    }

    /// Whether the controller supports these features (`CBCentralManager.Feature`), as iOS
    /// answers for its own: `.extendedScanAndConnect` when the controller a manager of this
    /// process opened last has Bluetooth 5's extended scanning and connecting commands (which the
    /// stack then uses); false before any manager has opened one.
    open class func supports(_ features: Feature) -> Bool {
        features.isSubset(of: CBHost.supportedFeatures.withLock { $0 })
    }

    /// Features a central may support (iOS 13+).
    public struct Feature: OptionSet, Sendable {
        /// The bits.
        public var rawValue: UInt
        /// Features from their bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Extended scanning and connecting.
        public static let extendedScanAndConnect = Feature(rawValue: 1)
    }
}

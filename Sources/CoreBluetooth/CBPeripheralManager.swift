import Synchronization
import BLE
import BLEVirtual
import Foundation

/// What a `CBPeripheralManager` tells its delegate.
public protocol CBPeripheralManagerDelegate: NSObjectProtocol {
    /// The manager's state changed (first from `.unknown`). Required, as on Apple platforms.
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager)
    /// State restoration: never called on Linux.
    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any])
    /// `startAdvertising(_:)` finished.
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?)
    /// `add(_:)` finished.
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?)
    /// A central turned notifications or indications on.
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic)
    /// A central turned them off, or disconnected while subscribed.
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic)
    /// A central reads a dynamic characteristic: set `request.value` and `respond(to:withResult:)`.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest)
    /// A central writes dynamic characteristics: respond once, to the first request.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest])
    /// After `updateValue` returned false, there is room again: send the value again.
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager)
    /// `publishL2CAPChannel(withEncryption:)` finished: the PSM assigned, or why not.
    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?)
    /// `unpublishL2CAPChannel` finished.
    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?)
    /// A central opened a channel to a published PSM.
    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

/// The empty defaults that make the optional methods optional.
extension CBPeripheralManagerDelegate {
    /// Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any]) {}
    /// Does nothing unless implemented.
    public func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {}
    /// Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {}
    /// Does nothing unless implemented (the read then goes unanswered until the ATT timeout).
    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {}
    /// Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {}
    /// Does nothing unless implemented.
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {}
}

/// The peripheral role: publishes services, advertises, answers centrals and updates subscribers.
///
/// With the `virtual` controller each peripheral manager gets a controller of its own on the
/// shared virtual radio, so a central and a peripheral in one process can talk; on any other
/// controller it shares the central managers' host (both roles on one controller).
open class CBPeripheralManager: CBManager, @unchecked Sendable {
    struct Published {
        let service: CBMutableService
        let handles: GATTServiceHandles
    }

    struct State {
        var api: PeripheralManager?
        var published: [Published] = []
        var byHandle: [UInt16: CBMutableCharacteristic] = [:]
        var centrals: [DeviceAddress: CBCentral] = [:]
        var advertising = false
        /// Counts `startAdvertising` and `stopAdvertising` calls, so a start that finishes after a
        /// later call does not set `advertising` over it.
        var advertisingCalls: UInt64 = 0
        var pendingUpdates = 0
        var owesReady = false
        var lane: OperationLane?
        /// The controller is this manager's own (`virtual`), closed with it.
        var ownsController = false
        /// The published L2CAP PSMs and their listeners.
        var l2cap: [CBL2CAPPSM: L2CAPListener] = [:]
    }

    /// How many `updateValue` calls may wait for the link before it returns false.
    static let updateWindow = 16

    let inner = Mutex(State())

    /// Who hears about the manager's state, requests and subscriptions (kept weakly).
    open var delegate: (any CBPeripheralManagerDelegate)? {
        get { delegateReference.value as? any CBPeripheralManagerDelegate }
        set { delegateReference.value = newValue }
    }

    /// A manager with no delegate on the main queue.
    public override init() {
        super.init()
    }

    /// A manager whose callbacks run on `queue` (nil: the main queue).
    public convenience init(delegate: (any CBPeripheralManagerDelegate)?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// A manager whose callbacks run on `queue` (nil: the main queue). Of the options only
    /// `SwiftBLEManagerOptionHCIKey` means something on Linux.
    public init(delegate: (any CBPeripheralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        super.init(delegate: delegate, queue: queue, options: options)
    }

    /// Opens the controller (`virtual`: one of its own; else the host's peripheral role,
    /// shared with the central managers), then reports the state.
    override func open(reportingFailure: Bool = true) {
        open(reportingFailure: reportingFailure) { [weak self] spec in
            let key = spec ?? ProcessInfo.processInfo.environment["BLE_HCI"] ?? ""
            let api: PeripheralManager
            let owns = key == "virtual"
            if owns {
                api = try await PeripheralManager.open(transport: try await Controllers.open(spec: key))
            } else {
                api = try await CBHostRegistry.shared.host(spec: spec).peripheralManager()
            }
            guard let self else {
                if owns { await api.close() }
                return
            }
            let lane = OperationLane()
            self.inner.withLock { s in
                s.api = api
                s.lane = lane
                s.ownsController = owns
            }
            let events = await api.events
            Task { [weak self] in
                for await event in events {
                    guard let self else { return }
                    await self.handle(event, api)
                }
            }
            self.changeState(.poweredOn)
            self.watch(api)
        }
    }

    /// Watches the controller's health once a second: lost, the manager goes `.poweredOff`
    /// (advertising, services and subscriptions gone with it, as after a Bluetooth reset on
    /// Apple platforms), then `.poweredOn` again once a controller opens (tried every second):
    /// add the services again then.
    private func watch(_ api: PeripheralManager) {
        Task { [weak self] in
            while self != nil {
                try? await Task.sleep(for: .seconds(1))
                guard await api.state != .poweredOn else { continue }
                guard let self else { return }
                let subscribed = self.inner.withLock { s -> [CBMutableCharacteristic] in
                    s.advertising = false
                    s.api = nil
                    s.lane = nil
                    s.published = []
                    s.pendingUpdates = 0
                    s.owesReady = false
                    s.l2cap = [:]
                    defer { s.byHandle = [:] }
                    return Array(s.byHandle.values)
                }
                for c in subscribed {
                    c.local.withLock { l in
                        l.subscribed = []
                        l.valueHandle = nil
                    }
                }
                self.controllerLost()
                return
            }
        }
    }

    /// A manager that goes away takes its services, advertising and published PSMs with it (and
    /// its own controller, on `virtual`).
    deinit {
        let (api, owns, published, advertising, listeners) = inner.withLock {
            ($0.api, $0.ownsController, $0.published.map(\.handles), $0.advertising, Array($0.l2cap.values))
        }
        guard let api else { return }
        Task {
            if owns {
                await api.close()
                return
            }
            for listener in listeners { await listener.stop() }
            if advertising { try? await api.stopAdvertising() }
            for handles in published { try? await api.remove(handles) }
        }
    }

    /// Reports the state to the delegate (every time it is set).
    override func stateChanged(from old: CBManagerState, to new: CBManagerState) {
        delegate?.peripheralManagerDidUpdateState(self)
    }

    /// The stack when powered on; else nil, with Apple's API-misuse warning.
    func poweredOn(_ what: String) -> (PeripheralManager, OperationLane)? {
        poweredOn(what, manager: "CBPeripheralManager") { inner.withLock { s in s.api.flatMap { a in s.lane.map { (a, $0) } } } }
    }

    // MARK: Services

    /// Publishes a service; `didAdd` follows.
    open func add(_ service: CBMutableService) {
        guard let (api, lane) = poweredOn("add") else { return }
        let characteristics = (service.characteristics ?? []).compactMap { $0 as? CBMutableCharacteristic }
        let definition = GATTServiceDefinition(
            uuid: service.uuid.value, isPrimary: service.isPrimary,
            includes: (service.includedServices ?? []).map(\.uuid.value),
            characteristics: characteristics.map(Self.definition))
        lane.enqueue {
            do {
                let handles = try await api.add(definition)
                self.inner.withLock { s in
                    s.published.append(Published(service: service, handles: handles))
                    for (c, h) in zip(characteristics, handles.characteristics) {
                        s.byHandle[h.valueHandle] = c
                        c.local.withLock { l in
                            l.valueHandle = h.valueHandle
                            l.manager = self
                        }
                    }
                }
                self.queue.async { self.delegate?.peripheralManager(self, didAdd: service, error: nil) }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.queue.async { self.delegate?.peripheralManager(self, didAdd: service, error: mapped) }
            }
        }
    }

    static func definition(_ c: CBMutableCharacteristic) -> GATTCharacteristicDefinition {
        var permissions: AttributePermissions = []
        let p = c.permissions
        if p.contains(.readable) || p.contains(.readEncryptionRequired) { permissions.insert(.read) }
        if p.contains(.writeable) || p.contains(.writeEncryptionRequired) { permissions.insert(.write) }
        if p.contains(.readEncryptionRequired) { permissions.insert(.readEncrypted) }
        if p.contains(.writeEncryptionRequired) { permissions.insert(.writeEncrypted) }
        var userDescription: String?
        var descriptors: [GATTDescriptorDefinition] = []
        for d in c.descriptors ?? [] {
            if d.uuid.value == BluetoothUUID(0x2901), let text = d.value as? String {
                userDescription = text
                continue
            }
            let bytes: [UInt8]
            switch d.value {
            case let data as Data: bytes = [UInt8](data)
            case let text as String: bytes = Array(text.utf8)
            case let number as NSNumber: bytes = [UInt8(truncatingIfNeeded: number.intValue), UInt8(truncatingIfNeeded: number.intValue >> 8)]
            default: bytes = []
            }
            descriptors.append(GATTDescriptorDefinition(uuid: d.uuid.value, permissions: .read, value: bytes))
        }
        return GATTCharacteristicDefinition(
            uuid: c.uuid.value, properties: CharacteristicProperties(rawValue: UInt8(c.properties.rawValue & 0xFF)),
            permissions: permissions, value: c.value.map { [UInt8]($0) },
            userDescription: userDescription, descriptors: descriptors)
    }

    /// Withdraws a published service, also one whose `add(_:)` has not finished yet (the removal
    /// then happens once it has, in call order).
    open func remove(_ service: CBMutableService) {
        guard let (api, lane) = poweredOn("remove") else { return }
        let entry = unpublish(service)
        lane.enqueue {
            // Published by an add that was still running when remove was called.
            guard let handles = (entry ?? self.unpublish(service))?.handles else { return }
            try? await api.remove(handles)
        }
    }

    /// Forgets `service`'s entry (and its characteristics' handles), returning it; nil when not published.
    private func unpublish(_ service: CBMutableService) -> Published? {
        inner.withLock { s -> Published? in
            guard let i = s.published.firstIndex(where: { $0.service === service }) else { return nil }
            let e = s.published.remove(at: i)
            for h in e.handles.characteristics { s.byHandle[h.valueHandle] = nil }
            return e
        }
    }

    /// Withdraws every published service, also those whose `add(_:)` has not finished yet (once
    /// it has, in call order); services added after this call stay.
    open func removeAllServices() {
        guard let (api, lane) = poweredOn("removeAllServices") else { return }
        let now = inner.withLock { s -> [Published] in
            defer {
                s.published = []
                s.byHandle = [:]
            }
            return s.published
        }
        lane.enqueue {
            // Published by adds that were still running when this was called (those called
            // later are behind this step in the lane).
            let late = self.inner.withLock { s -> [Published] in
                defer {
                    s.published = []
                    s.byHandle = [:]
                }
                return s.published
            }
            for entry in now + late { try? await api.remove(entry.handles) }
        }
    }

    // MARK: Advertising

    /// Whether advertising is on: from the moment the latest `startAdvertising` succeeded (just
    /// before `peripheralManagerDidStartAdvertising`) until `stopAdvertising`; a start that
    /// finishes after a later stop leaves it off.
    open var isAdvertising: Bool { inner.withLock { $0.advertising } }

    /// Advertises the local name (`CBAdvertisementDataLocalNameKey`) and service UUIDs
    /// (`CBAdvertisementDataServiceUUIDsKey`): the UUIDs in the advertisement, the name in the
    /// scan response; `peripheralManagerDidStartAdvertising` follows.
    open func startAdvertising(_ advertisementData: [String: Any]?) {
        guard let (api, lane) = poweredOn("startAdvertising") else { return }
        let name = advertisementData?[CBAdvertisementDataLocalNameKey] as? String
        let uuids = (advertisementData?[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID])?.map(\.value) ?? []
        var data = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
        if !uuids.isEmpty { data = data.serviceUUIDs(uuids) }
        let response = name.map { AdvertisingData.Builder().localName($0).build().shorteningLocalName(toFit: 31) }
        let advertisement = data.build()
        let call = inner.withLock { s in
            s.advertisingCalls += 1
            return s.advertisingCalls
        }
        lane.enqueue {
            do {
                try await api.startAdvertising(advertisement, scanResponse: response)
                self.inner.withLock { s in
                    if s.advertisingCalls == call { s.advertising = true }
                }
                self.queue.async { self.delegate?.peripheralManagerDidStartAdvertising(self, error: nil) }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.queue.async { self.delegate?.peripheralManagerDidStartAdvertising(self, error: mapped) }
            }
        }
    }

    /// Stops advertising.
    open func stopAdvertising() {
        guard let (api, lane) = poweredOn("stopAdvertising") else { return }
        inner.withLock { s in
            s.advertising = false
            s.advertisingCalls += 1
        }
        lane.enqueue { try? await api.stopAdvertising() }
    }

    /// Asks a connected central for the link timing `latency` stands for (see
    /// `CBPeripheralManagerConnectionLatency`): a connection parameter request the central may
    /// grant or not, as on Apple platforms. Nothing is reported back; a central that is not
    /// connected, or a controller that refuses, gets a warning on stderr.
    open func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBCentral) {
        guard let (api, _) = poweredOn("setDesiredConnectionLatency") else { return }
        guard let connection = central.connection.current else {
            CBLog.warning("API MISUSE: \(central) is not connected: setDesiredConnectionLatency is ignored")
            return
        }
        let p = latency.parameters
        Task {
            do {
                try await api.requestConnectionParameters(intervalMin: p.intervalMin, intervalMax: p.intervalMax, latency: p.latency,
                                                          supervisionTimeout: p.timeout, for: connection)
            } catch {
                CBLog.warning("setDesiredConnectionLatency(\(latency)) for \(central): \(error)")
            }
        }
    }

    // MARK: Updates and requests

    /// Notifies or indicates `value` to the subscribed centrals (all, or those given). Returns
    /// false when the queue to them is full: nothing is sent, and
    /// `peripheralManagerIsReady(toUpdateSubscribers:)` says when to try again.
    @discardableResult
    open func updateValue(_ value: Data, for characteristic: CBMutableCharacteristic, onSubscribedCentrals centrals: [CBCentral]?) -> Bool {
        guard let (api, _) = poweredOn("updateValue") else { return false }
        guard let handle = characteristic.local.withLock({ $0.valueHandle }) else { return false }
        let counted = inner.withLock { s -> OperationLane? in
            guard let lane = s.lane else { return nil }
            guard s.pendingUpdates < Self.updateWindow else {
                s.owesReady = true
                return nil
            }
            s.pendingUpdates += 1
            return lane
        }
        guard let lane = counted else { return false }
        let targets = centrals?.compactMap { $0.connection.current }
        let bytes = [UInt8](value)
        lane.enqueue {
            _ = try? await api.updateValueWaiting(bytes, forHandle: handle, onSubscribedCentrals: targets)
            let ready = self.inner.withLock { s -> Bool in
                // An update left over from a host that was lost counted there; the count
                // started again with the next one.
                guard s.lane === lane else { return false }
                s.pendingUpdates -= 1
                guard s.owesReady else { return false }
                s.owesReady = false
                return true
            }
            if ready {
                self.queue.async {
                    // None after the host it was owed on was lost (`.poweredOff` reported).
                    guard self.inner.withLock({ $0.lane === lane }) else { return }
                    self.delegate?.peripheralManagerIsReady(toUpdateSubscribers: self)
                }
            }
        }
        return true
    }

    /// Answers a read (with `request.value`, from its offset) or the writes of one
    /// `didReceiveWrite` (respond to the first).
    open func respond(to request: CBATTRequest, withResult result: CBATTError.Code) {
        guard let (api, _) = poweredOn("respond") else { return }
        let code = ATTErrorCode(UInt8(truncatingIfNeeded: result.rawValue))
        switch request.origin {
        case let .read(r):
            let bytes = [UInt8](request.value ?? Data())
            Task { await api.respond(to: r, with: result == .success ? .success(bytes) : .failure(code)) }
        case let .write(w):
            guard w.kind != .command else { return }
            Task { await api.respond(to: w, with: result == .success ? .success(()) : .failure(code)) }
        }
    }

    private func central(for c: ConnectedCentral) -> CBCentral {
        let key = ScanEngine.normalized(c.address)
        let central = inner.withLock { s in
            if let known = s.centrals[key] { return known }
            let made = CBCentral(address: key)
            s.centrals[key] = made
            return made
        }
        central.connection.withLock { $0 = c }
        return central
    }

    private func handle(_ event: PeripheralManagerEvent, _ api: PeripheralManager) async {
        switch event {
        case let .connected(c):
            let central = central(for: c)
            central.mtu.withLock { $0 = 23 }
        case let .mtuChanged(c, mtu):
            central(for: c).mtu.withLock { $0 = mtu }
        case let .subscriptionChanged(c, handle, notifications, indications):
            let central = central(for: c)
            guard let characteristic = inner.withLock({ $0.byHandle[handle] }) else { return }
            let on = notifications || indications
            let changed = characteristic.local.withLock { l -> Bool in
                let was = l.subscribed.contains { $0 === central }
                if on, !was { l.subscribed.append(central) }
                if !on { l.subscribed.removeAll { $0 === central } }
                return was != on
            }
            guard changed else { return }
            queue.async {
                if on {
                    self.delegate?.peripheralManager(self, central: central, didSubscribeTo: characteristic)
                } else {
                    self.delegate?.peripheralManager(self, central: central, didUnsubscribeFrom: characteristic)
                }
            }
        case let .disconnected(c, _):
            let central = central(for: c)
            central.connection.withLock { $0 = nil }
            let all = inner.withLock { Array($0.byHandle.values) }
            let dropped = all.filter { ch in
                ch.local.withLock { l in
                    let was = l.subscribed.contains { $0 === central }
                    l.subscribed.removeAll { $0 === central }
                    return was
                }
            }
            if !dropped.isEmpty {
                queue.async {
                    for ch in dropped { self.delegate?.peripheralManager(self, central: central, didUnsubscribeFrom: ch) }
                }
            }
        case let .read(r):
            let central = central(for: r.central)
            guard let characteristic = inner.withLock({ $0.byHandle[r.handle] }) else {
                await api.respond(to: r, with: .failure(.attributeNotFound))
                return
            }
            let request = CBATTRequest(central: central, characteristic: characteristic, offset: r.offset, value: nil, origin: .read(r))
            queue.async { self.delegate?.peripheralManager(self, didReceiveRead: request) }
        case let .write(w):
            let central = central(for: w.central)
            guard let characteristic = inner.withLock({ $0.byHandle[w.handle] }) else {
                if w.kind != .command { await api.respond(to: w, with: .failure(.attributeNotFound)) }
                return
            }
            let request = CBATTRequest(central: central, characteristic: characteristic, offset: w.offset,
                                       value: Data(w.value), origin: .write(w))
            queue.async { self.delegate?.peripheralManager(self, didReceiveWrite: [request]) }
        default:
            return
        }
    }
}

extension CBHost {
    /// The peripheral role on this host's controller, made once and shared.
    func peripheralManager() -> PeripheralManager {
        peripheralRole.withLock { made in
            if let made { return made }
            let new = PeripheralManager(sharingControllerWith: central)
            made = new
            return new
        }
    }
}

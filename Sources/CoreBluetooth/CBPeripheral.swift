import Synchronization
import BLE
import Foundation

/// A remote device (`CBPeripheral`, `CBCentral`): what it is known by.
open class CBPeer: NSObject, @unchecked Sendable {
    private let peerIdentifier: UUID

    init(identifier: UUID) {
        self.peerIdentifier = identifier
        super.init()
    }

    /// The device's identifier: stable for the same device across runs and managers (derived from
    /// its identity address; see `CBIdentifiers`).
    open var identifier: UUID { peerIdentifier }
}

/// Identifiers from addresses. Apple's are random per device and app; here the identifier is
/// built from the device's identity address and type (a version-8 UUID whose last group is the
/// address: `53424C45-0000-8001-8000-C01122334455` for random `C0:11:22:33:44:55`), so it is the
/// same in every run and every process, and `retrievePeripherals(withIdentifiers:)` can find a
/// device from an identifier saved by an earlier run.
enum CBIdentifiers {
    static func uuid(for address: DeviceAddress) -> UUID {
        let a = address.address.rawValue
        let type: UInt8 = address.type.peerType == .public ? 0 : 1
        return UUID(uuid: (0x53, 0x42, 0x4C, 0x45, 0x00, 0x00, 0x80, type, 0x80, 0x00,
                           UInt8((a >> 40) & 0xFF), UInt8((a >> 32) & 0xFF), UInt8((a >> 24) & 0xFF),
                           UInt8((a >> 16) & 0xFF), UInt8((a >> 8) & 0xFF), UInt8(a & 0xFF)))
    }

    static func address(from identifier: UUID) -> DeviceAddress? {
        let u = identifier.uuid
        guard [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.8, u.9] == [0x53, 0x42, 0x4C, 0x45, 0, 0, 0x80, 0x80, 0] as [UInt8], u.7 <= 1 else { return nil }
        let raw = [u.10, u.11, u.12, u.13, u.14, u.15].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return DeviceAddress(BDAddress(rawValue: raw), type: u.7 == 0 ? .public : .random)
    }
}

/// Runs one peripheral's GATT operations one after another, in the order they were called.
final class OperationLane: Sendable {
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
        self.continuation = continuation
        Task {
            for await operation in stream { await operation() }
        }
    }

    func enqueue(_ operation: @escaping @Sendable () async -> Void) {
        continuation.yield(operation)
    }

    func finish() {
        continuation.finish()
    }
}

/// A remote peripheral as a `CBCentralManager` sees it. The same object stands for the same
/// device for the manager's lifetime (managers keep them: identity equality in sets works).
/// Every operation reports through the delegate on the manager's queue; operations run in the
/// order they were called; on a peripheral that is not connected they report `CBError.notConnected`.
open class CBPeripheral: CBPeer, @unchecked Sendable {
    /// One connection's worth of the stack.
    final class Link: Sendable {
        let api: Peripheral
        let lane = OperationLane()
        init(api: Peripheral) { self.api = api }
    }

    struct State {
        var name: String?
        var state: CBPeripheralState = .disconnected
        var services: [CBService]?
        var link: Link?
        var connectTask: Task<Void, Never>?
        /// Counts connection attempts, so a late result of a cancelled one is recognised.
        var attempt: UInt64 = 0
        var cancelRequested = false
        var queuedWritesWithoutResponse = 0
        var owesReady = false
    }

    /// How many writes without response may wait before `canSendWriteWithoutResponse` is false.
    static let writeWithoutResponseWindow = 8

    /// The identity address the device is known by.
    let key: DeviceAddress
    /// The manager's queue, where every callback runs (kept here: also after the manager is gone).
    let queue: DispatchQueue
    private let owner: WeakReference<CBCentralManager>
    private let delegateReference = WeakReference<AnyObject>(nil)
    let inner = Mutex(State())

    init(key: DeviceAddress, manager: CBCentralManager) {
        self.key = key
        self.queue = manager.queue
        self.owner = WeakReference(manager)
        super.init(identifier: CBIdentifiers.uuid(for: key))
    }

    /// Who hears about this peripheral's operations (kept weakly, as on Apple platforms).
    open var delegate: (any CBPeripheralDelegate)? {
        get { delegateReference.value as? any CBPeripheralDelegate }
        set { delegateReference.value = newValue }
    }

    /// The name: the advertised local name (set from each advertisement before `didDiscover`) or
    /// the GAP Device Name last read, nil until either; `peripheralDidUpdateName` says it changed.
    open var name: String? { inner.withLock { $0.name } }
    /// The connection state.
    open var state: CBPeripheralState { inner.withLock { $0.state } }
    /// The services discovered so far on this connection (nil until `didDiscoverServices`;
    /// cleared when the link ends).
    open var services: [CBService]? { inner.withLock { $0.services } }
    /// Whether a write without response can be queued now; when it was false (asked here, or
    /// a write was made while it would have been), `peripheralIsReady(toSendWriteWithoutResponse:)`
    /// follows once it is true again: once, however many false answers came before. A queue
    /// that reached its window and drained with nobody asking or writing past it owes none.
    open var canSendWriteWithoutResponse: Bool {
        inner.withLock { s in
            guard s.link != nil else { return false }
            guard s.queuedWritesWithoutResponse < Self.writeWithoutResponseWindow else {
                s.owesReady = true
                return false
            }
            return true
        }
    }
    /// ANCS authorization (iOS only): always false.
    open var ancsAuthorized: Bool { false }

    /// The longest value one write can carry: 512 with response (long writes), ATT_MTU − 3
    /// without (right after connecting, the MTU is already exchanged).
    open func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int {
        guard let api = inner.withLock({ $0.link?.api }) else { return type == .withResponse ? 512 : 20 }
        return api.maximumWriteValueLength(for: type == .withResponse ? .withResponse : .withoutResponse)
    }

    /// `<CBPeripheral: 0x…, identifier = …, name = HRM, mtu = 247, state = connected>`, as Apple prints it.
    open override var description: String {
        let s = inner.current
        let mtu = s.link?.api.mtu ?? 0
        return "<CBPeripheral: \(pointerText(self)), identifier = \(identifier.uuidString), name = \(s.name ?? "(null)"), mtu = \(mtu), state = \(s.state)>"
    }

    var manager: CBCentralManager? { owner.value }

    // MARK: Delivery

    /// Runs `body` on the manager's queue (where every callback and every change of what the app
    /// reads happens).
    func deliver(_ body: @escaping @Sendable (CBPeripheral) -> Void) {
        queue.async { body(self) }
    }

    /// Runs `operation` in call order on the current link, or reports `notConnected` through `failed`.
    func perform(_ operation: @escaping @Sendable (Peripheral) async -> Void, failed: @escaping @Sendable (CBPeripheral, any Error) -> Void) {
        let link = inner.withLock { $0.state == .connected ? $0.link : nil }
        guard let link else {
            CBLog.warning("API MISUSE: \(self) is not connected: the operation fails with CBError.notConnected")
            deliver { failed($0, CBError(.notConnected)) }
            return
        }
        link.lane.enqueue { await operation(link.api) }
    }

    // MARK: Services

    /// Discovers the peripheral's primary services (all, or those with these UUIDs).
    open func discoverServices(_ serviceUUIDs: [CBUUID]?) {
        let uuids = serviceUUIDs?.map(\.value)
        perform({ api in
            do {
                let found = try await api.discoverServices(uuids)
                self.deliver { p in
                    p.mergeServices(found)
                    p.delegate?.peripheral(p, didDiscoverServices: nil)
                }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didDiscoverServices: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didDiscoverServices: error) })
    }

    /// Discovers the services `service` includes (all, or those with these UUIDs).
    open func discoverIncludedServices(_ includedServiceUUIDs: [CBUUID]?, for service: CBService) {
        let wanted = includedServiceUUIDs?.map(\.value)
        guard let gatt = service.gatt else { return }
        perform({ api in
            do {
                let found = try await api.discoverIncludedServices(for: gatt)
                    .filter { wanted == nil || wanted!.isEmpty || wanted!.contains($0.uuid) }
                self.deliver { p in
                    let included = found.map { p.serviceObject(GATTService(uuid: $0.uuid, isPrimary: false, handleRange: $0.serviceHandleRange)) }
                    service.inner.withLock { $0.includedServices = included }
                    p.delegate?.peripheral(p, didDiscoverIncludedServicesFor: service, error: nil)
                }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didDiscoverIncludedServicesFor: service, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didDiscoverIncludedServicesFor: service, error: error) })
    }

    /// Discovers a service's characteristics (all, or those with these UUIDs).
    open func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService) {
        let uuids = characteristicUUIDs?.map(\.value)
        guard let gatt = service.gatt else { return }
        perform({ api in
            do {
                let found = try await api.discoverCharacteristics(uuids, for: gatt)
                self.deliver { p in
                    service.inner.withLock { s in
                        var list = s.characteristics ?? []
                        for c in found where !list.contains(where: { $0.gatt?.valueHandle == c.valueHandle }) {
                            list.append(CBCharacteristic(gatt: c, service: service))
                        }
                        s.characteristics = list.sorted { ($0.gatt?.valueHandle ?? 0) < ($1.gatt?.valueHandle ?? 0) }
                    }
                    p.delegate?.peripheral(p, didDiscoverCharacteristicsFor: service, error: nil)
                }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didDiscoverCharacteristicsFor: service, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didDiscoverCharacteristicsFor: service, error: error) })
    }

    /// Discovers a characteristic's descriptors.
    open func discoverDescriptors(for characteristic: CBCharacteristic) {
        guard let gatt = characteristic.gatt else { return }
        perform({ api in
            do {
                let found = try await api.discoverDescriptors(for: gatt)
                self.deliver { p in
                    characteristic.inner.withLock { s in
                        var list = s.descriptors ?? []
                        for d in found where !list.contains(where: { $0.gatt?.handle == d.handle }) {
                            list.append(CBDescriptor(gatt: d, characteristic: characteristic))
                        }
                        s.descriptors = list.sorted { ($0.gatt?.handle ?? 0) < ($1.gatt?.handle ?? 0) }
                    }
                    p.delegate?.peripheral(p, didDiscoverDescriptorsFor: characteristic, error: nil)
                }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didDiscoverDescriptorsFor: characteristic, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didDiscoverDescriptorsFor: characteristic, error: error) })
    }

    // MARK: Values

    /// Reads a characteristic's value (whole: long values with Read Blob); `didUpdateValueFor` follows.
    open func readValue(for characteristic: CBCharacteristic) {
        guard let gatt = characteristic.gatt else { return }
        perform({ api in
            do {
                let bytes = try await api.readValue(for: gatt)
                self.deliver { p in
                    characteristic.inner.withLock { $0.value = Data(bytes) }
                    if let name = Self.deviceName(in: bytes, of: gatt) { p.updateName(name) }
                    p.delegate?.peripheral(p, didUpdateValueFor: characteristic, error: nil)
                }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didUpdateValueFor: characteristic, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didUpdateValueFor: characteristic, error: error) })
    }

    /// Reads a descriptor's value; `didUpdateValueFor descriptor` follows.
    open func readValue(for descriptor: CBDescriptor) {
        guard let gatt = descriptor.gatt else { return }
        perform({ api in
            do {
                let bytes = try await api.readValue(for: gatt)
                self.deliver { p in
                    descriptor.stored.withLock { $0.value = CBDescriptor.typedValue(bytes, uuid: gatt.uuid) }
                    p.delegate?.peripheral(p, didUpdateValueFor: descriptor, error: nil)
                }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didUpdateValueFor: descriptor, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didUpdateValueFor: descriptor, error: error) })
    }

    /// Writes a characteristic's value. With response, `didWriteValueFor` follows (a value longer
    /// than one PDU goes as a long write, up to 512 bytes). Without response, nothing follows;
    /// pace with `canSendWriteWithoutResponse`.
    open func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        guard let gatt = characteristic.gatt else { return }
        let bytes = [UInt8](data)
        if type == .withoutResponse {
            let countedOn = inner.withLock { s -> Link? in
                guard s.state == .connected, let link = s.link else { return nil }
                // A write taken while the property would say false (the app did not ask) owes
                // the callback too, as on Apple platforms.
                if s.queuedWritesWithoutResponse >= Self.writeWithoutResponseWindow { s.owesReady = true }
                s.queuedWritesWithoutResponse += 1
                return link
            }
            guard let countedOn else {
                CBLog.warning("API MISUSE: \(self) is not connected: the write without response is dropped")
                return
            }
            // On the lane of the link it was counted on (a `perform` would look the link up again).
            countedOn.lane.enqueue {
                do {
                    try await countedOn.api.writeValue(bytes, for: gatt, type: .withoutResponse)
                } catch {
                    CBLog.warning("write without response to \(characteristic.uuid) failed: \(error)")
                }
                let ready = self.inner.withLock { s -> Bool in
                    // A write left over from a link that ended counted on that link, not on
                    // the one now (`adopt` started the count again).
                    guard s.link === countedOn else { return false }
                    s.queuedWritesWithoutResponse -= 1
                    let owed = s.owesReady && s.queuedWritesWithoutResponse < Self.writeWithoutResponseWindow
                    if owed { s.owesReady = false }
                    return owed
                }
                // Checked again where it is delivered: a link that ended before the callback ran
                // (its disconnect already reported) gets none.
                if ready {
                    self.deliver { p in
                        guard p.inner.withLock({ $0.link === countedOn }) else { return }
                        p.delegate?.peripheralIsReady(toSendWriteWithoutResponse: p)
                    }
                }
            }
            return
        }
        perform({ api in
            do {
                try await api.writeValue(bytes, for: gatt, type: .withResponse)
                self.deliver { p in p.delegate?.peripheral(p, didWriteValueFor: characteristic, error: nil) }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didWriteValueFor: characteristic, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didWriteValueFor: characteristic, error: error) })
    }

    /// Writes a descriptor's value; `didWriteValueFor descriptor` follows. The Client
    /// Characteristic Configuration descriptor is set with `setNotifyValue(_:for:)` instead
    /// (Apple raises an exception; here the write fails with `CBError.invalidParameters`).
    open func writeValue(_ data: Data, for descriptor: CBDescriptor) {
        guard let gatt = descriptor.gatt else { return }
        if gatt.uuid == GATTUUID.clientCharacteristicConfiguration {
            CBLog.warning("API MISUSE: Client Characteristic Configuration descriptors must be configured using setNotifyValue(_:for:)")
            deliver { p in p.delegate?.peripheral(p, didWriteValueFor: descriptor, error: CBError(.invalidParameters)) }
            return
        }
        let bytes = [UInt8](data)
        perform({ api in
            do {
                try await api.writeValue(bytes, for: gatt)
                self.deliver { p in p.delegate?.peripheral(p, didWriteValueFor: descriptor, error: nil) }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didWriteValueFor: descriptor, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didWriteValueFor: descriptor, error: error) })
    }

    /// Turns notifications (or indications, when the characteristic only indicates) on or off;
    /// `didUpdateNotificationStateFor` follows, then each value arrives through
    /// `didUpdateValueFor`. A characteristic that does neither reports `CBATTError.requestNotSupported`.
    open func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic) {
        guard let gatt = characteristic.gatt else { return }
        guard !enabled || !characteristic.properties.isDisjoint(with: [.notify, .indicate]) else {
            CBLog.warning("\(characteristic.uuid) neither notifies nor indicates: setNotifyValue(true) fails")
            deliver { p in p.delegate?.peripheral(p, didUpdateNotificationStateFor: characteristic, error: CBATTError(.requestNotSupported)) }
            return
        }
        if !enabled { characteristic.inner.withLock { $0.acceptsNotifications = false } }
        perform({ api in
            if enabled {
                let needsListener = characteristic.inner.withLock { s -> Bool in
                    s.acceptsNotifications = true
                    return s.listener == nil
                }
                if needsListener {
                    let values = await api.notifications(for: gatt)
                    let listener = Task {
                        for await value in values {
                            self.deliver { p in
                                guard characteristic.inner.withLock({ s -> Bool in
                                    guard s.acceptsNotifications else { return false }
                                    guard s.isNotifying else {
                                        s.held.append(Data(value))
                                        return false
                                    }
                                    s.value = Data(value)
                                    return true
                                }) else { return }
                                p.delegate?.peripheral(p, didUpdateValueFor: characteristic, error: nil)
                            }
                        }
                    }
                    characteristic.inner.withLock { $0.listener = listener }
                }
            }
            let cccd = characteristic.descriptors?.first { $0.gatt?.uuid == GATTUUID.clientCharacteristicConfiguration }?.gatt?.handle
            do {
                try await api.setNotifyValue(enabled, for: gatt, cccdHandle: cccd)
                self.deliver { p in
                    let held = characteristic.inner.withLock { s -> [Data] in
                        s.isNotifying = enabled
                        defer { s.held = [] }
                        return enabled ? s.held : []
                    }
                    p.delegate?.peripheral(p, didUpdateNotificationStateFor: characteristic, error: nil)
                    for value in held {
                        characteristic.inner.withLock { $0.value = value }
                        p.delegate?.peripheral(p, didUpdateValueFor: characteristic, error: nil)
                    }
                }
            } catch {
                if enabled {
                    characteristic.inner.withLock { s in
                        s.acceptsNotifications = s.isNotifying
                        s.held = []
                    }
                }
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didUpdateNotificationStateFor: characteristic, error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didUpdateNotificationStateFor: characteristic, error: error) })
    }

    /// Reads the link's RSSI (HCI Read RSSI); `didReadRSSI` follows with it in dBm.
    open func readRSSI() {
        perform({ api in
            do {
                let rssi = try await api.readRSSI()
                self.deliver { p in p.delegate?.peripheral(p, didReadRSSI: NSNumber(value: rssi), error: nil) }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didReadRSSI: NSNumber(value: 127), error: mapped) }
            }
        }, failed: { p, error in p.delegate?.peripheral(p, didReadRSSI: NSNumber(value: 127), error: error) })
    }

    // MARK: Objects and links

    /// The service object for `gatt`: the existing one when discovery found it before (identity).
    func serviceObject(_ gatt: GATTService) -> CBService {
        if let known = inner.withLock({ $0.services?.first { $0.gatt?.handleRange == gatt.handleRange } }) { return known }
        return CBService(gatt: gatt, isPrimary: gatt.isPrimary, peripheral: self)
    }

    /// Adds discovered services, keeping the objects of those already known.
    func mergeServices(_ found: [GATTService]) {
        let objects = found.map(serviceObject)
        inner.withLock { s in
            var list = s.services ?? []
            for o in objects where !list.contains(where: { $0 === o }) { list.append(o) }
            s.services = list.sorted { ($0.gatt?.startHandle ?? 0) < ($1.gatt?.startHandle ?? 0) }
        }
    }

    /// The link is up: if connection attempt `attempt` is still the one wanted, it becomes this
    /// peripheral's link (and the state `.connected`) in one step; nil when it is not wanted.
    func adopt(_ api: Peripheral, attempt: UInt64) -> Link? {
        let link = Link(api: api)
        let adopted = inner.withLock { s -> Bool in
            guard s.state == .connecting, s.attempt == attempt else { return false }
            s.link = link
            s.state = .connected
            s.cancelRequested = false
            s.queuedWritesWithoutResponse = 0
            s.owesReady = false
            return true
        }
        return adopted ? link : nil
    }

    /// The link is down (on the delegate queue): the services are dropped and notifications stop.
    func detach() {
        let (link, services) = inner.withLock { s -> (Link?, [CBService]) in
            defer {
                s.link = nil
                s.services = nil
                s.state = .disconnected
                s.connectTask = nil
            }
            return (s.link, s.services ?? [])
        }
        link?.lane.finish()
        for service in services {
            for c in service.characteristics ?? [] {
                c.inner.withLock { s in
                    s.isNotifying = false
                    s.acceptsNotifications = false
                    s.listener?.cancel()
                    s.listener = nil
                }
            }
        }
    }
}

extension CBPeripheral.Link {
    /// Starts the link's work: the MTU is exchanged first, so `maximumWriteValueLength(for:
    /// .withoutResponse)` is right from the first discovery on; Service Changed indications
    /// invalidate the services they cover.
    func start(for peripheral: CBPeripheral) {
        let api = self.api
        lane.enqueue { _ = try? await api.exchangeMTU() }
        Task { [weak peripheral] in
            for await range in await api.servicesChanged() {
                guard let peripheral else { return }
                peripheral.deliver { p in
                    let invalidated = p.inner.withLock { s -> [CBService] in
                        guard s.link?.api === api else { return [] }
                        let gone = (s.services ?? []).filter { ($0.gatt?.handleRange.overlaps(range)) ?? false }
                        s.services = s.services?.filter { service in !gone.contains { $0 === service } }
                        return gone
                    }
                    if !invalidated.isEmpty { p.delegate?.peripheral(p, didModifyServices: invalidated) }
                }
            }
        }
    }
}

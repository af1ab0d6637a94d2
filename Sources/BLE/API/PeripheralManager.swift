import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire

/// The peripheral role: a GATT server with an attribute database, advertising, and the
/// requests and subscriptions of connected centrals. Shaped like CoreBluetooth's
/// `CBPeripheralManager`, with events as an async stream instead of a delegate.
///
/// ```swift
/// let manager = try await PeripheralManager.open(spec: "tcp:127.0.0.1:6402", name: "Thermo")
/// let handles = try await manager.add(GATTServiceDefinition(uuid: "181A", characteristics: [...]))
/// try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("Thermo").build())
/// for await event in manager.events { ... }
/// ```
public final class PeripheralManager: Sendable {
    let host: HostController

    /// Opens a controller for the peripheral role. `name` and `appearance` fill the GAP service.
    public static func open(spec: String? = nil, capture: String? = nil, name: String = "SwiftBLE", appearance: UInt16 = 0,
                            address: OwnAddress = .public, clock: any BLEClock = SystemClock(),
                            configuration: HostConfiguration = HostConfiguration()) async throws -> PeripheralManager {
        let transport = try await TransportFactory.open(spec: spec, capture: capture)
        return try await open(transport: transport, name: name, appearance: appearance, address: address, clock: clock, configuration: configuration)
    }

    /// Opens the peripheral role on a transport (a virtual radio's controller, a test double).
    public static func open(transport: any HCITransport, name: String = "SwiftBLE", appearance: UInt16 = 0,
                            address: OwnAddress = .public, clock: any BLEClock = SystemClock(),
                            configuration: HostConfiguration = HostConfiguration()) async throws -> PeripheralManager {
        let host = HostController(transport: transport, clock: clock, configuration: configuration)
        do {
            try await host.start()
            try await host.run { host in
                try await host.setOwnAddress(address)
                host.server.database.setDeviceName(name, appearance: appearance)
            }
            return PeripheralManager(host: host)
        } catch {
            await host.close()
            throw error
        }
    }

    /// Serves on the controller `central` already uses: both roles on one controller, one
    /// host (Core spec Vol 6 Part B §1.1 lets a device be central and peripheral at once).
    public convenience init(sharingControllerWith central: Central) {
        self.init(host: central.host)
    }

    init(host: HostController) {
        self.host = host
    }

    /// The clock this manager's host runs on: sleep on it (not `Task.sleep`) so code keeps to
    /// virtual time in a `VirtualWorld`.
    public var clock: any BLEClock { host.clock }

    /// `poweredOn` once the controller is initialised; `poweredOff` after a transport or hardware failure.
    public var state: ManagerState {
        get async { await host.run { $0.failure } == nil ? .poweredOn : .poweredOff }
    }

    /// Everything that happens from now on: connections, subscriptions, requests, ready signals.
    /// Each call returns a new stream; every stream sees every event.
    public var events: PeripheralManagerEventStream {
        get async { await host.run { $0.server.events($0) } }
    }

    // MARK: Database

    /// Adds a service after the last handle in use (every attribute already there keeps its
    /// handle); returns its handles. Clients subscribed to Service Changed are told.
    @discardableResult
    public func add(_ service: GATTServiceDefinition) async throws -> GATTServiceHandles {
        try await host.run { try $0.server.addService(service, $0) }
    }

    /// Removes a service added with `add(_:)`, with its read and write handlers. Clients subscribed
    /// to Service Changed are told its handle range changed.
    public func remove(_ service: GATTServiceHandles) async throws {
        try await host.run { try $0.server.removeService(service, $0) }
    }

    /// The services in the database now, in handle order (the GAP and GATT services first):
    /// what a caller that did not keep `add`'s answers (a `ble serve` profile's install) removes.
    public var services: [GATTServiceHandles] {
        get async { await host.run { $0.server.database.services } }
    }

    /// The Database Hash a client reads now (Core spec Vol 3 Part G §7.3), in the characteristic's
    /// octet order: it changes with every service added or removed. Nil when it cannot be
    /// computed (the crypto library failed).
    public var databaseHash: [UInt8]? {
        get async { await host.run { try? $0.server.database.databaseHashCharacteristicValue() } }
    }

    /// Answers reads of a dynamic value (`value: nil` in its definition) with `handler`
    /// instead of `.read` events. The handler may take its time (it runs in its own task).
    public func setReadHandler(forHandle handle: UInt16, _ handler: GATTReadHandler?) async {
        await host.run { $0.server.setReadHandler(handler, forHandle: handle) }
    }

    /// Answers writes of a dynamic value with `handler` instead of `.write` events.
    public func setWriteHandler(forHandle handle: UInt16, _ handler: GATTWriteHandler?) async {
        await host.run { $0.server.setWriteHandler(handler, forHandle: handle) }
    }

    /// Answers a `.read` event (CoreBluetooth's `respond(to:withResult:)`).
    public func respond(to request: GATTReadRequest, with result: Result<[UInt8], ATTErrorCode>) async {
        await host.run { $0.server.respond(toRead: request.id, with: result, $0) }
    }

    /// Answers a `.write` event (ignored for Write Commands, which get no answer).
    public func respond(to request: GATTWriteRequest, with result: Result<Void, ATTErrorCode>) async {
        await host.run { $0.server.respond(toWrite: request.id, with: result, $0) }
    }

    /// The current stored value of an attribute (for values the server keeps).
    public func value(forHandle handle: UInt16) async -> [UInt8]? {
        await host.run { $0.server.database.value(forHandle: handle) }
    }

    /// Changes a stored value without notifying anyone (use `updateValue` to notify).
    public func setValue(_ value: [UInt8], forHandle handle: UInt16) async {
        _ = await host.run { host in host.server.database.setValue(value, forHandle: handle) }
    }

    // MARK: Advertising

    /// Starts advertising `data` (and `scanResponse` for active scanners). Data over the
    /// 31-byte legacy limit is refused with `.invalidArgument` saying by how much. A
    /// `stopAdvertising` that comes while this is still setting up wins: this then throws
    /// `CancellationError` and advertising stays off.
    public func startAdvertising(_ data: AdvertisingData, scanResponse: AdvertisingData? = nil,
                                 parameters: AdvertisingParameters = AdvertisingParameters()) async throws {
        try await host.run { host in
            try await host.advertising.start(parameters, data: data, scanResponse: scanResponse, host)
            host.server.emit(.advertisingStarted)
        }
    }

    /// Stops advertising, waits for the controller to confirm, and emits `.advertisingStopped`.
    /// Advertising stays off, also after disconnects, until `startAdvertising` is called again.
    public func stopAdvertising() async throws {
        try await host.run { host in
            try await host.advertising.stop(host)
            host.server.emit(.advertisingStopped)
        }
    }

    /// Whether the controller is advertising now. Legacy connectable advertising stops at each
    /// connection until the host turns it back on, so this can be briefly false while connected.
    public var isAdvertising: Bool {
        get async { await host.run { $0.advertising.isEnabled } }
    }

    // MARK: Updates

    /// Notifies or indicates a new value to subscribed centrals (all, or those given), and
    /// stores it if the server keeps this value. Returns `.queueFull` when a central's bounded
    /// queue has no room: wait for `.readyToUpdateSubscribers` and send again.
    @discardableResult
    public func updateValue(_ value: [UInt8], forHandle valueHandle: UInt16, onSubscribedCentrals centrals: [ConnectedCentral]? = nil) async -> UpdateValueResult {
        let targets = centrals.map { Set($0.map(\.id)) }
        return await host.run { $0.server.updateValue(value, valueHandle: valueHandle, centrals: targets, $0) }
    }

    /// Notifies several characteristic values at once to every central subscribed to them (or to
    /// the given ones): a central whose client set Client Supported Features bit 2 (Core spec
    /// Vol 3 Part G §7.2) gets them in one Multiple Handle Value Notification (Vol 3 Part F
    /// §3.4.7.4; several when they exceed its ATT_MTU), any other a Handle Value Notification
    /// per value; a value subscribed for indications only is indicated on its own. Each value is
    /// stored as `updateValue` stores it. All or nothing: `.queueFull` when some central's queue
    /// lacks room for all of it (nothing was queued; wait for `.readyToUpdateSubscribers`).
    public func updateValues(_ values: [(handle: UInt16, value: [UInt8])], onSubscribedCentrals centrals: [ConnectedCentral]? = nil) async -> UpdateValueResult {
        let targets = centrals.map { Set($0.map(\.id)) }
        return await host.run { $0.server.updateValues(values, centrals: targets, $0) }
    }

    /// Like `updateValue`, but waits for room instead of reporting a full queue. Returns the
    /// number of centrals the value was queued for.
    @discardableResult
    public func updateValueWaiting(_ value: [UInt8], forHandle valueHandle: UInt16, onSubscribedCentrals centrals: [ConnectedCentral]? = nil) async throws -> Int {
        let targets = centrals.map { Set($0.map(\.id)) }
        return try await host.run { try await $0.server.updateValueWaiting(valueHandle: valueHandle, centrals: targets, { value }, $0) }
    }

    /// Like `updateValueWaiting(_:forHandle:onSubscribedCentrals:)`, but `makeValue` makes the
    /// value at each attempt, on the host, with nothing in between it and the queueing: after a
    /// wait for room the value sent is the one current then, not one made before the wait, and
    /// whatever the application changes concurrently (a control point write) is either wholly
    /// before the value was made or wholly after it was queued.
    @discardableResult
    public func updateValueWaiting(forHandle valueHandle: UInt16, onSubscribedCentrals centrals: [ConnectedCentral]? = nil,
                                   makingValue makeValue: @Sendable () -> [UInt8]) async throws -> Int {
        let targets = centrals.map { Set($0.map(\.id)) }
        return try await host.run { try await $0.server.updateValueWaiting(valueHandle: valueHandle, centrals: targets, makeValue, $0) }
    }

    /// Grants or withdraws authorization for a central: attributes with `.readAuthorized` /
    /// `.writeAuthorized` permissions answer Insufficient Authorization (Vol 3 Part F §3.4.1.1)
    /// until the application authorizes the central that asks.
    public func authorize(_ central: ConnectedCentral, _ authorized: Bool = true) async {
        await host.run { host in
            guard let handle = host.connections.links.handle(forID: central.id) else { return }
            host.connections.links.withLink(handle) { $0.security.authorized = authorized }
        }
    }

    /// The address centrals see: the static random address it was opened with, or the
    /// controller's public address.
    public var address: DeviceAddress? {
        get async { await host.run { $0.ownDeviceAddress } }
    }

    /// The centrals connected now.
    public var connectedCentrals: [ConnectedCentral] {
        get async {
            await host.run { host in
                host.connections.links.all.filter { $0.role == .peripheral }.map(\.central).sorted { $0.id < $1.id }
            }
        }
    }

    /// Disconnects a central with a reason.
    public func disconnect(_ central: ConnectedCentral, reason: HCIStatus = .remoteUserTerminatedConnection) async throws {
        try await host.run { try await $0.connections.disconnect(linkID: central.id, reason: reason, $0) }
    }

    /// Asks for LL payloads of `octets` (27...251) towards a central (LE Set Data Length).
    public func setDataLength(_ octets: Int, for central: ConnectedCentral) async throws {
        try await host.run { try await $0.connections.setDataLength(linkID: central.id, octets: octets, $0) }
    }

    /// Asks for a PHY on a central's link (LE Set PHY).
    public func setPHY(_ phy: LEPHY, for central: ConnectedCentral) async throws {
        try await host.run { try await $0.connections.setPHY(linkID: central.id, phy, $0) }
    }

    /// Closes the transport; every pending operation fails with `.closed`. A manager made with
    /// `init(sharingControllerWith:)` closes the central's host too, as they share it.
    public func close() async {
        await host.close()
    }
}

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
    public let host: HostController

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
            try await host.setOwnAddress(address)
            await host.setDeviceName(name, appearance: appearance)
            return PeripheralManager(host: host)
        } catch {
            await host.close()
            throw error
        }
    }

    /// Serves on a host that is already started (e.g. one a `Central` also uses: both roles on
    /// one controller).
    public init(host: HostController) {
        self.host = host
    }

    /// The clock this manager's host runs on: sleep on it (not `Task.sleep`) so code keeps to
    /// virtual time in a `VirtualWorld`.
    public var clock: any BLEClock { host.clock }

    public var state: ManagerState {
        get async { await host.failure == nil ? .poweredOn : .poweredOff }
    }

    /// Everything that happens from now on: connections, subscriptions, requests, ready signals.
    /// Each call returns a new stream; every stream sees every event.
    public var events: AsyncStream<PeripheralManagerEvent> {
        get async { await host.peripheralManagerEvents() }
    }

    // MARK: Database

    /// Adds a service; returns its handles. Clients subscribed to Service Changed are told.
    @discardableResult
    public func add(_ service: GATTServiceDefinition) async throws -> GATTServiceHandles {
        try await host.addService(service)
    }

    public func remove(_ service: GATTServiceHandles) async throws {
        try await host.removeService(service)
    }

    /// Answers reads of a dynamic value (`value: nil` in its definition) with `handler`
    /// instead of `.read` events. The handler may take its time (it runs in its own task).
    public func setReadHandler(forHandle handle: UInt16, _ handler: GATTReadHandler?) async {
        await host.setReadHandler(handler, forHandle: handle)
    }

    /// Answers writes of a dynamic value with `handler` instead of `.write` events.
    public func setWriteHandler(forHandle handle: UInt16, _ handler: GATTWriteHandler?) async {
        await host.setWriteHandler(handler, forHandle: handle)
    }

    /// Answers a `.read` event (CoreBluetooth's `respond(to:withResult:)`).
    public func respond(to request: GATTReadRequest, with result: Result<[UInt8], ATTErrorCode>) async {
        await host.respond(toRead: request.id, with: result)
    }

    /// Answers a `.write` event (ignored for Write Commands, which get no answer).
    public func respond(to request: GATTWriteRequest, with result: Result<Void, ATTErrorCode>) async {
        await host.respond(toWrite: request.id, with: result)
    }

    /// The current stored value of an attribute (for values the server keeps).
    public func value(forHandle handle: UInt16) async -> [UInt8]? {
        await host.database.value(forHandle: handle)
    }

    /// Changes a stored value without notifying anyone (use `updateValue` to notify).
    public func setValue(_ value: [UInt8], forHandle handle: UInt16) async {
        await host.setStoredValue(value, forHandle: handle)
    }

    // MARK: Advertising

    /// Starts advertising `data` (and `scanResponse` for active scanners). Data over the
    /// 31-byte legacy limit is refused with `.invalidArgument` saying by how much.
    public func startAdvertising(_ data: AdvertisingData, scanResponse: AdvertisingData? = nil,
                                 parameters: AdvertisingParameters = AdvertisingParameters()) async throws {
        try await host.startAdvertising(parameters, data: data, scanResponse: scanResponse)
        await host.emit(.advertisingStarted)
    }

    public func stopAdvertising() async throws {
        try await host.stopAdvertising()
        await host.emit(.advertisingStopped)
    }

    public var isAdvertising: Bool {
        get async { await host.advertising?.enabled ?? false }
    }

    // MARK: Updates

    /// Notifies or indicates a new value to subscribed centrals (all, or those given), and
    /// stores it if the server keeps this value. Returns `.queueFull` when a central's bounded
    /// queue has no room: wait for `.readyToUpdateSubscribers` and send again.
    @discardableResult
    public func updateValue(_ value: [UInt8], forHandle valueHandle: UInt16, onSubscribedCentrals centrals: [ConnectedCentral]? = nil) async -> UpdateValueResult {
        await host.updateValueStoring(value, valueHandle: valueHandle, centrals: centrals.map { Set($0.map(\.id)) })
    }

    /// Like `updateValue`, but waits for room instead of reporting a full queue. Returns the
    /// number of centrals the value was queued for.
    @discardableResult
    public func updateValueWaiting(_ value: [UInt8], forHandle valueHandle: UInt16, onSubscribedCentrals centrals: [ConnectedCentral]? = nil) async throws -> Int {
        try await host.updateValueWaiting(valueHandle: valueHandle, centrals: centrals.map { Set($0.map(\.id)) }) { value }
    }

    /// Like `updateValueWaiting(_:forHandle:onSubscribedCentrals:)`, but `makeValue` makes the
    /// value at each attempt, on the host, with nothing in between it and the queueing: after a
    /// wait for room the value sent is the one current then, not one made before the wait, and
    /// whatever the application changes concurrently (a control point write) is either wholly
    /// before the value was made or wholly after it was queued.
    @discardableResult
    public func updateValueWaiting(forHandle valueHandle: UInt16, onSubscribedCentrals centrals: [ConnectedCentral]? = nil,
                                   makingValue makeValue: @Sendable () -> [UInt8]) async throws -> Int {
        try await host.updateValueWaiting(valueHandle: valueHandle, centrals: centrals.map { Set($0.map(\.id)) }, makeValue)
    }

    /// Grants or withdraws authorization for a central: attributes with `.readAuthorized` /
    /// `.writeAuthorized` permissions answer Insufficient Authorization (Vol 3 Part F §3.4.1.1)
    /// until the application authorizes the central that asks.
    public func authorize(_ central: ConnectedCentral, _ authorized: Bool = true) async {
        await host.setAuthorized(authorized, linkID: central.id)
    }

    /// The centrals connected now.
    public var connectedCentrals: [ConnectedCentral] {
        get async { await host.connectedCentrals() }
    }

    /// Disconnects a central with a reason.
    public func disconnect(_ central: ConnectedCentral, reason: HCIStatus = .remoteUserTerminatedConnection) async throws {
        try await host.disconnect(linkID: central.id, reason: reason)
    }

    /// Asks for LL payloads of `octets` (27...251) towards a central (LE Set Data Length).
    public func setDataLength(_ octets: Int, for central: ConnectedCentral) async throws {
        try await host.setDataLength(linkID: central.id, octets: octets)
    }

    /// Asks for a PHY on a central's link (LE Set PHY).
    public func setPHY(_ phy: LEPHY, for central: ConnectedCentral) async throws {
        try await host.setPHY(linkID: central.id, phy)
    }

    public func close() async {
        await host.close()
    }
}

extension HostController {
    func connectedCentrals() -> [ConnectedCentral] {
        links.values.filter { $0.role == .peripheral }.map { ConnectedCentral(id: $0.id, address: $0.peer) }.sorted { $0.id < $1.id }
    }

    func setAuthorized(_ authorized: Bool, linkID: UInt64) {
        guard let handle = linkHandle(forID: linkID) else { return }
        links[handle]?.security.authorized = authorized
    }

    func setStoredValue(_ value: [UInt8], forHandle handle: UInt16) {
        database.setValue(value, forHandle: handle)
    }

    /// Sends the update and, when it was queued and the server stores this value, stores it too,
    /// so a later read returns what was last notified.
    func updateValueStoring(_ value: [UInt8], valueHandle: UInt16, centrals: Set<UInt64>?) -> UpdateValueResult {
        let result = updateValue(value, valueHandle: valueHandle, centrals: centrals)
        if case .queued = result, database.value(forHandle: valueHandle) != nil {
            database.setValue(value, forHandle: valueHandle)
        }
        return result
    }
}

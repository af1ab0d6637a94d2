import BLE
import BLESystems
import BLEVirtual

/// Our stack as Pandora's device under test: one controller, the central role and the
/// peripheral role on it (`PeripheralManager(sharingControllerWith:)`), and the connections
/// handed out to the client as cookies. `reset(factory: true)` closes it all and opens it
/// afresh, which is Pandora's FactoryReset: bonds (kept in memory only), the random address,
/// GATT cache and the controller's state go with the old host; Reset keeps the bonds and the
/// random address.
actor PandoraStack {
    /// A connection as the client knows it.
    enum Link: Sendable {
        /// We are the central: the peer is a `Peripheral`.
        case asCentral(Peripheral)
        /// We are the peripheral: the peer is a `ConnectedCentral` of this manager (the host
        /// it belongs to: after a reset a new host numbers its centrals afresh).
        case asPeripheral(ConnectedCentral, PeripheralManager)
    }

    struct Record {
        let link: Link
        let peer: DeviceAddress
        var down = false
        var downWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    let spec: String?
    let ioCapability: SMPIOCapability
    let relay = PairingRelay()
    let channels = PandoraChannels()
    private(set) var central: Central?
    private(set) var manager: PeripheralManager?
    private var managerEvents: Task<Void, Never>?
    private var records: [UInt64: Record] = [:]
    private var cookieOfCentral: [UInt64: UInt64] = [:]
    private var nextCookie: UInt64 = 1
    /// Bonds, in memory: they last until FactoryReset.
    private var bonds = InMemoryBondStore()
    /// Our static random address, drawn at each reset (what OwnAddressType RANDOM uses).
    private(set) var randomAddress = PandoraStack.drawStaticRandomAddress()
    private var usingRandomAddress = false
    /// Counts opens and closes: what was read before an await is stale when it changed.
    private var generation = 0
    /// The reset under way; resets run one after another, whatever cancels their callers.
    private var resetting: Task<Void, any Error>?
    private var nextWaiter = 0
    /// Advertise requests waiting for centrals to connect, oldest first.
    private var advertiseWaiters: [(id: Int, continuation: AsyncStream<UInt64>.Continuation)] = []

    init(spec: String?, ioCapability: SMPIOCapability) {
        self.spec = spec
        self.ioCapability = ioCapability
    }

    /// The host configuration of a DUT: bonds in memory, every key given and asked for, MITM
    /// asked for (not demanded), Just Works confirmed by the user, prompts through the relay.
    private func configuration() -> HostConfiguration {
        var configuration = HostConfiguration()
        var pairing = SMPPairingSettings(ioCapability: ioCapability, bonding: true, mitm: false)
        pairing.requestsMITM = true
        pairing.confirmsJustWorks = true
        configuration.security.pairing = pairing
        configuration.security.agent = RelayPairingAgent(relay: relay)
        configuration.security.bondStore = bonds
        configuration.gattCache = InMemoryGATTCacheStore()
        return configuration
    }

    /// Opens the controller and both roles on it.
    func open() async throws {
        let transport = try await Controllers.open(spec: spec)
        let central = try await Central.open(transport: transport, address: .public, configuration: configuration())
        let manager = PeripheralManager(sharingControllerWith: central)
        generation += 1
        self.central = central
        self.manager = manager
        usingRandomAddress = false
        let events = await manager.events
        managerEvents = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event, from: manager)
            }
        }
    }

    /// Pandora's FactoryReset (`factory`: everything goes) and Reset (bonds and the random
    /// address stay): a new host starts on the controller.
    func reset(factory: Bool) async throws {
        let previous = resetting
        let task = Task {
            _ = try? await previous?.value
            await self.close()
            if factory { self.forgetIdentity() }
            try await self.open()
        }
        resetting = task
        // A cancelled caller does not cut the reset short: the stack is never left half open.
        try await task.value
    }

    private func forgetIdentity() {
        bonds = InMemoryBondStore()
        randomAddress = Self.drawStaticRandomAddress()
    }

    /// Closes the host. Everything of it is let go before the first await, so nothing that
    /// runs meanwhile (a central connecting) lands in the state of the next one.
    /// The end of `ble pandora`: after a reset under way, so nothing opens after it.
    func shutdown() async {
        _ = try? await resetting?.value
        await close()
    }

    func close() async {
        generation += 1
        managerEvents?.cancel()
        managerEvents = nil
        let central = self.central
        self.central = nil
        manager = nil
        for w in advertiseWaiters { w.continuation.finish() }
        advertiseWaiters = []
        for cookie in Array(records.keys) { markDown(cookie) }
        records = [:]
        cookieOfCentral = [:]
        relay.forgetAll()
        await channels.reset()
        await central?.close()
    }

    func requireCentral() throws(ControlError) -> Central {
        guard let central else { throw ControlError(.unavailable, "the stack is not open (a reset failed)") }
        return central
    }

    func requireManager() throws(ControlError) -> PeripheralManager {
        guard let manager else { throw ControlError(.unavailable, "the stack is not open (a reset failed)") }
        return manager
    }

    /// Pandora's OwnAddressType: PUBLIC (0) and RESOLVABLE_OR_PUBLIC (2) use the public
    /// address, RANDOM (1) and RESOLVABLE_OR_RANDOM (3) our static random one (with no peer in
    /// the resolving list a controller would fall back to these anyway, Vol 4 Part E §7.8.5).
    func useOwnAddressType(_ type: Int) async throws {
        let random = type == 1 || type == 3
        guard random != usingRandomAddress else { return }
        let central = try requireCentral()
        let opened = generation
        try await central.useOwnAddress(random ? .staticRandom(randomAddress) : .public)
        // A reset meanwhile opened a new host, which starts on the public address.
        if generation == opened { usingRandomAddress = random }
    }

    static func drawStaticRandomAddress() -> BDAddress {
        // A static random address: the two top bits 11, the rest neither all 0 nor all 1.
        BDAddress(rawValue: UInt64.random(in: 1..<((1 << 46) - 1)) | 0xC000_0000_0000)
    }

    // MARK: Connections

    /// Hands a new link a cookie.
    func register(_ link: Link, peer: DeviceAddress) -> UInt64 {
        let cookie = nextCookie
        nextCookie += 1
        records[cookie] = Record(link: link, peer: peer)
        relay.register(peer, cookie: cookie)
        switch link {
        case let .asPeripheral(c, _):
            cookieOfCentral[c.id] = cookie
        case let .asCentral(p):
            Task { [weak self] in
                for await state in p.stateUpdates {
                    if case .disconnected = state { await self?.markDown(cookie) }
                }
            }
        }
        return cookie
    }

    func record(_ cookie: UInt64) throws(ControlError) -> Record {
        guard let r = records[cookie] else { throw ControlError(.notFound, "no connection \(cookie)") }
        return r
    }

    /// Whether a live link to `peer` exists already.
    func isConnected(to peer: DeviceAddress) -> Bool {
        records.values.contains { !$0.down && $0.peer == peer }
    }

    func markDown(_ cookie: UInt64) {
        guard var r = records[cookie], !r.down else { return }
        r.down = true
        let waiters = r.downWaiters
        r.downWaiters = [:]
        records[cookie] = r
        relay.forget(r.peer, cookie: cookie)
        for w in waiters.values { w.resume() }
    }

    /// Returns once the link is down (or the stack was reset); throws CancellationError when
    /// the wait is cancelled.
    func waitUntilDown(_ cookie: UInt64) async throws {
        guard let r = records[cookie] else { throw ControlError(.notFound, "no connection \(cookie)") }
        if r.down { return }
        nextWaiter += 1
        let token = nextWaiter
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                if Task.isCancelled || records[cookie] == nil || records[cookie]?.down == true {
                    c.resume()
                } else {
                    records[cookie]?.downWaiters[token] = c
                }
            }
        } onCancel: {
            Task { await self.stopWaitingUntilDown(cookie, token: token) }
        }
        try Task.checkCancellation()
    }

    private func stopWaitingUntilDown(_ cookie: UInt64, token: Int) {
        records[cookie]?.downWaiters.removeValue(forKey: token)?.resume()
    }

    /// The events of the peripheral role: centrals connecting to our advertising, links ending.
    /// Events of a manager closed by a reset are dropped.
    private func handle(_ event: PeripheralManagerEvent, from source: PeripheralManager) {
        guard source === manager else { return }
        switch event {
        case let .connected(c):
            let cookie = register(.asPeripheral(c, source), peer: c.address)
            if !advertiseWaiters.isEmpty { advertiseWaiters[0].continuation.yield(cookie) }
        case let .disconnected(c, _):
            if let cookie = cookieOfCentral.removeValue(forKey: c.id) { markDown(cookie) }
        default:
            break
        }
    }

    /// Cookies of the centrals that connect while request `id` advertises.
    func connectionsWhileAdvertising(id: Int) -> AsyncStream<UInt64> {
        let (stream, continuation) = AsyncStream<UInt64>.makeStream()
        advertiseWaiters.append((id, continuation))
        return stream
    }

    func stopWaitingForConnections(id: Int) {
        advertiseWaiters.removeAll { w in
            if w.id == id { w.continuation.finish() }
            return w.id == id
        }
    }
}

import BLEHCI
import BLEHost
import BLERuntime

/// The one actor that owns a controller's state (ARCHITECTURE.md), as a thin driver: it moves
/// bytes between the transport and the parts, hands them the time, runs the one timer they
/// share, and owns every task it starts. What to do with an event lives in the parts:
///
/// - HCI command flow (`CommandFlowController`) and ACL credits (`ACLFlowController`), here;
/// - `L2CAPRouter`: reassembly, fixed channels, LE signaling, the SMP channel;
/// - `ConnectionManager`: create, cancel and disconnect, the link table, link events;
/// - `ScanCoordinator` and `AdvertisingCoordinator`: the GAP roles' radio work;
/// - `GATTClientSessions` and `GATTServerSessions`: each link's ATT bearer, both sides;
/// - `SecurityCoordinator`: pairing (SMP), bonds and encryption;
/// - `L2CAPChannelSessions`: LE credit-based channels, their readers, senders and listeners.
///
/// The sans-IO state machines behind the parts (in `BLEHost` and `BLEHCI`) take bytes, events
/// and `now` and return what to send; the parts keep the continuations of the callers waiting
/// on them. Everything runs isolated to this actor.
actor HostController {
    nonisolated let transport: any HCITransport
    nonisolated let clock: any BLEClock
    nonisolated let configuration: HostConfiguration

    let connections: ConnectionManager
    let scanning = ScanCoordinator()
    let advertising = AdvertisingCoordinator()
    let advertisingSets = AdvertisingSetCoordinator()
    let periodicSyncs = PeriodicSyncCoordinator()
    let client = GATTClientSessions()
    /// Each link's attribute cache (Vol 3 Part G §2.5.2).
    let caches = GATTCacheSessions()
    let server: GATTServerSessions
    let security: SecurityCoordinator
    let privacy = PrivacyCoordinator()
    let l2cap = L2CAPChannelSessions()

    var commandFlow = CommandFlowController()
    var aclFlow = ACLFlowController(bufferCount: 1, bufferLength: 27)
    var router = L2CAPRouter()
    var ownAddress = OwnAddressSetting()
    private var commandWaiters = ContinuationTable<CommandResult>()
    private var nextToken: UInt64 = 1

    /// What the controller reported during initialisation.
    var info: ControllerInfo?
    /// Whether advertising, scanning and connecting use Bluetooth 5's extended commands (the
    /// configuration asks for them and the controller has them), for the controller's lifetime:
    /// the two sets are never mixed on one controller (Vol 4 Part E §3.1.1).
    private(set) var usesExtendedCommands = false
    /// The PHYs the controller has (LE 1M until it is initialised).
    var supportedPHYs: LEPHYSet { info?.supportedPHYs ?? .le1M }
    /// Set when the controller or transport failed for good; every later call fails with it.
    private(set) var failure: BLEError?

    private let outbound: AsyncStream<H4Frame>.Continuation
    /// The transport takes frames without suspending (an in-process pipe): they are written from
    /// the actor turn that made them, with no writer task in between.
    private nonisolated let immediate: Bool
    /// An immediate write failed: like the writer task after a failed write, nothing more is
    /// written (the reader then sees the transport end).
    private var writeFailed = false
    private var tasks = HostTasks()
    private var readerStarted = false
    private var timerTask: Task<Void, Never>?
    private var scheduledDeadline: Duration?

    init(transport: any HCITransport, clock: any BLEClock = SystemClock(), configuration: HostConfiguration = HostConfiguration()) {
        self.transport = transport
        self.clock = clock
        self.configuration = configuration
        self.connections = ConnectionManager(configuration: configuration)
        self.security = SecurityCoordinator(settings: configuration.security)
        self.server = GATTServerSessions(offersEnhancedATT: configuration.offersEnhancedATT)
        // Enhanced ATT bearers are accepted only when the server offers EATT (Vol 3 Part G §5.3);
        // otherwise SPSM 0x0027 is refused like any SPSM nobody listens on.
        if configuration.offersEnhancedATT {
            var router = L2CAPRouter()
            router.listeners[ATTBearerID.enhancedATTPSM] = Self.enhancedATTListener(configuration)
            self.router = router
        }
        let (stream, continuation) = AsyncStream<H4Frame>.makeStream(bufferingPolicy: .unbounded)
        self.outbound = continuation
        self.immediate = transport.acceptsImmediateSends
        // One writer drains the outbound queue so frames reach the transport in the order the actor
        // produced them, and the actor never waits on a socket. It ends when `close` finishes the
        // queue, or at the first failed write (the reader then sees the transport end).
        let writer = Task(executorPreference: clock.taskExecutor) { [transport] in
            for await frame in stream {
                do { try await transport.send(frame) } catch {
                    HostDiagnostics.log("[host] transport write failed: \(error)")
                    break
                }
            }
        }
        tasks.record(tasks.reserve(), writer)
    }

    /// Starts reading from the transport and initialises the controller.
    @discardableResult
    func start() async throws -> ControllerInfo {
        if let info { return info }
        // Settings that would put reserved values on the wire are refused before anything is sent.
        do { try configuration.security.pairing.validate() } catch { throw BLEError.invalidArgument("\(error)") }
        if !readerStarted {
            readerStarted = true
            startReader()
        }
        let info = try await ControllerInitialisation.run(self)
        commandFlow.initialisationEnded()
        aclFlow = ACLFlowController(bufferCount: info.aclBufferCount, bufferLength: info.aclBufferLength)
        usesExtendedCommands = info.usesExtendedCommands(configuration.advertisingCommands)
        self.info = info
        return info
    }

    /// Stops everything: fails pending work with `.closed`, cancels the host's tasks, closes the
    /// transport.
    func close() async {
        if failure == nil { fail(.closed) }
        timerTask?.cancel()
        tasks.cancelAll()
        outbound.finish()
        await transport.close()
    }

    var now: Duration { clock.now() }

    /// Runs `body` on this actor with the host in hand: how the API objects and the parts' own
    /// tasks reach the parts, which are isolated to the host.
    func run<T: Sendable>(_ body: @Sendable (isolated HostController) async throws -> T) async rethrows -> T {
        try await body(self)
    }

    /// A new number for a waiter, a stream or a request, unique in this host.
    func makeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }

    // MARK: - Background work

    /// Starts `body` as a task the host owns: cancelled on close; an error other than
    /// cancellation goes to the diagnostics log under `name`, never silently away.
    @discardableResult
    func spawn(_ name: String, _ body: @escaping @Sendable () async throws -> Void) -> UInt64 {
        let id = tasks.reserve()
        let task = Task(executorPreference: clock.taskExecutor) { [weak self] in
            do {
                try await body()
            } catch is CancellationError {
            } catch {
                self?.log("\(name): \(error)")
            }
            await self?.taskEnded(id)
        }
        tasks.record(id, task)
        return id
    }

    /// Cancels a task `spawn` started, if it still runs.
    func cancelTask(_ id: UInt64) {
        tasks.cancel(id)
    }

    /// How many background tasks the host has running (the writer and reader included), so a
    /// test can wait for one to have run to its end instead of guessing how long it takes.
    var backgroundTaskCount: Int { tasks.count }

    private func taskEnded(_ id: UInt64) {
        tasks.ended(id)
    }

    /// Sends `command` in the background (an answer to the peer, a radio change nobody waits
    /// for); a failure is logged under `name`.
    func sendInBackground(_ command: HCICommand, _ name: String) {
        spawn(name) { try await self.commandReturning(command) }
    }

    // MARK: - Outbound

    func sendFrame(_ frame: H4Frame) {
        guard immediate else {
            outbound.yield(frame)
            return
        }
        guard !writeFailed else { return }
        do { try transport.sendImmediately(frame) } catch {
            writeFailed = true
            HostDiagnostics.log("[host] transport write failed: \(error)")
        }
    }

    func sendCommandPacket(_ command: HCICommand) {
        sendFrame(H4Frame(type: .command, payload: command.encode()))
    }

    /// Sends one encoded HCI ACL data packet (what `ACLFlowController` hands out).
    private func sendACLPacket(_ bytes: [UInt8]) {
        sendFrame(H4Frame(type: .acl, payload: bytes))
    }

    /// Sends an L2CAP basic frame on a fixed channel (Core spec Vol 3 Part A §3.1). The flow
    /// controller writes the ACL and basic headers and the payload into each fragment at once:
    /// the payload is copied once on its way to the transport.
    /// Returns how many PDUs of the handle then wait for credits (`ACLFlowController.queuedPDUs`),
    /// which is what a sender keeping that backlog small asks next.
    @discardableResult
    func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int {
        guard connections.links.contains(handle) else { return 0 }
        return aclFlow.enqueueBasicFrame(handle: handle, channel: channel, payload: payload, send: sendACLPacket)
    }

    /// Runs `body` on the ACL flow controller in place, with what sends its packets, for a
    /// caller that holds a link in place (`LinkTable.withLink`), so knows it is open and may not
    /// look the table up meanwhile; the packets' writes touch no link and not the flow controller.
    /// One access for several PDUs (`GATTServerSessions.drain`).
    func withACLFlow<R>(_ body: (inout ACLFlowController, ([UInt8]) -> Void) -> R) -> R {
        body(&aclFlow, sendACLPacket)
    }

    // MARK: - Commands

    /// Sends one HCI command and waits for its Command Complete (return parameters) or Command
    /// Status. An error status, a timeout, or a hardware error throws `BLEError.hci`.
    @discardableResult
    func command(_ command: HCICommand, timeout: Duration? = nil) async throws -> CommandResult {
        if let failure { throw failure }
        let token = makeToken()
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<CommandResult, any Error>) in
            commandWaiters.insert(token, c)
            let toSend = commandFlow.enqueue(command, token: token, now: now, timeout: timeout ?? configuration.commandTimeout)
            toSend.forEach(sendCommandPacket)
            rescheduleTimer()
        }
    }

    /// Runs a command that answers with Command Complete and returns its return parameters after
    /// checking the status byte.
    @discardableResult
    func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
        let result = try await command(cmd)
        switch result {
        case let .complete(parameters):
            if let status = parameters.first, status != 0 {
                throw BLEError.hci(.commandFailed(opcode: cmd.opcode, status: HCIStatus(rawValue: status)))
            }
            return parameters
        case .status:
            return []
        }
    }

    private func resolveCommands(_ completions: [CommandCompletion]) {
        for c in completions {
            commandWaiters.resume(c.token, with: c.result.mapError { BLEError.hci($0) })
        }
    }

    // MARK: - Inbound

    private func startReader() {
        if let queue = transport.incomingQueue {
            spawn("transport reader") { [weak self] in await self?.read(queue) }
        } else {
            let stream = transport.incoming
            spawn("transport reader") { [weak self] in await self?.read(stream) }
        }
    }

    /// `read(_:)` for a transport that queues its frames: each wake-up takes the whole burst
    /// that arrived meanwhile (the ACL fragments of a PDU, their completions) in one actor turn.
    private func read(_ queue: HCIFrameQueue) async {
        do {
            try await queue.read { frames in
                commandFlow.beginBatch()
                for frame in frames { take(frame) }
                endOfBatch()
            }
            transportEnded(nil)
        } catch {
            transportEnded(error)
        }
    }

    /// Takes the controller's frames until the transport ends. Isolated to the host, so a frame
    /// goes from the transport's stream through every layer without leaving the actor.
    private func read(_ stream: AsyncThrowingStream<H4Frame, any Error>) async {
        do {
            for try await frame in stream { receive(frame) }
            transportEnded(nil)
        } catch {
            transportEnded(error)
        }
    }

    private func transportEnded(_ error: (any Error)?) {
        guard failure == nil else { return }
        let message = error.map { "\($0)" } ?? "the controller closed the connection"
        fail(.transport(message))
    }

    func receive(_ frame: H4Frame) {
        commandFlow.beginBatch()
        take(frame)
        endOfBatch()
    }

    /// After the frames of one wake-up: the scans' consumers get the devices those frames gave
    /// (one buffer operation per consumer, not one per event), and the timer is re-armed.
    private func endOfBatch() {
        scanning.deliver(self)
        rescheduleTimer()
    }

    /// `receive` without re-arming the timer, for a batch that re-arms it once at its end (no
    /// time passes within one actor turn that a deadline could miss).
    private func take(_ frame: H4Frame) {
        switch frame.type {
        case .event:
            // Number Of Completed Packets, one per burst of packets sent, read in place.
            if HCIEvent.scanCompletedPackets(frame.payload, { aclFlow.credit(handle: $0, count: $1) }) {
                completedPackets(frame.payload)
                return
            }
            // LE (Extended) Advertising Reports, read in place: no HCIEvent, no arrays per report.
            if scanning.receive(event: frame.payload, self) { return }
            do {
                handle(try HCIEvent.decode(frame.payload))
            } catch {
                // A garbled event from the controller: report and keep serving.
                log("dropped malformed HCI event: \(error)")
            }
        case .acl:
            receiveACL(frame.payload)
        default:
            break
        }
    }

    /// Hands one HCI event to the part it concerns. Core spec Vol 4 Part E §7.7.
    private func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete, .commandStatus:
            let (completions, toSend) = commandFlow.receive(event, now: now)
            toSend.forEach(sendCommandPacket)
            resolveCommands(completions)
        case let .numberOfCompletedPackets(entries):
            // `scanCompletedPackets` takes every well-formed one before it is decoded.
            for entry in entries { aclFlow.credit(handle: entry.handle, count: entry.count) }
            aclFlow.pump(sendACLPacket)
            for entry in entries { server.pumpNotifications(handle: entry.handle, self) }
            client.aclProgressed(self)
        case .disconnectionComplete:
            connections.handle(event, self)
        case let .encryptionChange(status, handle, enabled):
            security.encryptionChanged(handle: handle, status: status, enabled: enabled, self)
        case let .encryptionKeyRefreshComplete(status, handle):
            security.encryptionChanged(handle: handle, status: status, enabled: status == .success, self)
        case let .le(.longTermKeyRequest(handle, rand, ediv)):
            security.longTermKeyRequested(handle: handle, ediv: ediv, rand: rand, self)
        case .hardwareError(let code):
            fail(.hci(.hardwareError(code: code)))
        case let .le(.advertisingReport(reports)), let .le(.extendedAdvertisingReport(reports)):
            scanning.receive(reports, self)
        case let .le(.advertisingSetTerminated(event)):
            advertisingSetTerminated(event)
        case let .le(.periodicAdvertisingSyncEstablished(event)):
            periodicSyncs.established(event, self)
        case let .le(.periodicAdvertisingReport(report)):
            periodicSyncs.report(report)
        case let .le(.periodicAdvertisingSyncLost(syncHandle)):
            periodicSyncs.lost(syncHandle)
        case let .le(.periodicAdvertisingSyncTransferReceived(event)):
            periodicSyncs.transferReceived(event, self)
        case let .le(meta):
            connections.handle(meta, self)
        default:
            log("ignored event \(event)")
        }
    }

    /// Number Of Completed Packets (Vol 4 Part E §7.7.19), its credits already returned by
    /// `scanCompletedPackets`: what waited for them goes now, then each handle's server queue
    /// refills the ACL queue and writers waiting for room wake.
    private func completedPackets(_ payload: [UInt8]) {
        aclFlow.pump(sendACLPacket)
        _ = HCIEvent.scanCompletedPackets(payload) { handle, _ in server.pumpNotifications(handle: handle, self) }
        client.aclProgressed(self)
    }

    /// Routes an HCI ACL data packet (as received, header included) through L2CAP to the
    /// link's ATT bearer or control channels.
    private func receiveACL(_ bytes: [UInt8]) {
        let handle = bytes.count >= 2 ? (UInt16(bytes[0]) | UInt16(bytes[1]) << 8) & 0x0FFF : 0
        // A listener's requirement is checked against the link's security (Vol 3 Part A §4.22).
        let routing = router.receive(acl: bytes, security: { connections.links.withLink(handle) { $0.security } ?? LinkSecurity() },
                                     now: now)
        switch routing {
        case .none:
            break
        case let .att(payload):
            receiveATT(payload, handle: handle)
        case let .smp(payload):
            security.receive(payload, handle: handle, self)
        case let .control(actions):
            connections.perform(actions, handle: handle, self)
        case let .dropped(why):
            log(why)
        }
    }

    /// Splits one ATT bearer between our client and our server by opcode (Vol 3 Part F §3.3):
    /// requests, commands and confirmations are for the server; the rest for the client. Every
    /// bearer, unenhanced or Enhanced ATT (§3.2.11), carries both directions.
    /// The PDU is read where it lies (in the ACL packet, for the unenhanced bearer): the client
    /// copies out only a value it delivers; the server, which keeps what it is given, gets a copy.
    func receiveATT(_ payload: ArraySlice<UInt8>, handle: UInt16, bearer: ATTBearerID = .unenhanced) {
        guard let first = payload.first else { return }
        switch ATTOpcode(rawValue: first).kind {
        case .request, .command, .confirmation, .unknown:
            server.receive(Array(payload), handle: handle, bearer: bearer, self)
        case .response, .notification, .indication:
            client.receive(payload, handle: handle, bearer: bearer, self)
        }
    }

    /// Fails all pending work and refuses new work: after a hardware error or a lost transport
    /// nothing the host believed about the controller holds.
    func fail(_ error: BLEError) {
        if failure == nil { failure = error }
        let hciError: HCIError
        if case let .hci(e) = error { hciError = e } else { hciError = .transportClosed }
        resolveCommands(commandFlow.failAll(hciError))
        connections.closeAll(error: error, self)
        scanning.fail(error, self)
        advertisingSets.reset()
        periodicSyncs.fail(error)
        l2cap.fail(error)
        // After the links' `.disconnected` events: the manager's event streams end.
        server.finishEvents()
    }

    /// Tears a link down in every part: its GATT work fails with `error`, its streams finish,
    /// its ACL credits return. Called by the connection manager when a link ends.
    func linkEnded(_ link: Link, reason: HCIStatus, error: BLEError) {
        client.linkClosed(link, error: error, self)
        caches.linkClosed(link, self)
        security.linkClosed(link, error: error, self)
        aclFlow.connectionClosed(handle: link.handle, send: sendACLPacket)
        router.linkClosed(handle: link.handle)
        l2cap.linkClosed(handle: link.handle, error: error)
        server.linkClosed(link, reason: reason, self)
        if link.role == .peripheral, failure == nil {
            advertising.restartIfWanted(afterConnection: false, self)
            advertisingSets.linkEnded(handle: link.handle, self)
        }
    }

    // MARK: - Timers

    /// Arms one timer for the earliest deadline of all the parts.
    func rescheduleTimer() {
        // After every received frame: no array, no allocation.
        let next = earliest(earliest(earliest(commandFlow.nextDeadline, connections.nextDeadline),
                                     earliest(scanning.nextDeadline, server.nextDeadline)),
                            earliest(earliest(security.nextDeadline, privacy.nextDeadline), router.nextDeadline))
        guard next != scheduledDeadline else { return }
        timerTask?.cancel()
        scheduledDeadline = next
        guard let next else { timerTask = nil; return }
        let clock = self.clock
        timerTask = Task(executorPreference: clock.taskExecutor) { [weak self] in
            do { try await clock.sleep(until: next) } catch { return }
            await self?.timerFired()
        }
    }

    private func timerFired() {
        scheduledDeadline = nil
        let t = now
        let (expired, next) = commandFlow.expire(now: t)
        next.forEach(sendCommandPacket)
        resolveCommands(expired)
        connections.expire(now: t, self)
        scanning.expire(now: t, self)
        server.expire(now: t, self)
        security.expire(now: t, self)
        privacy.expire(now: t, self)
        for (handle, actions) in router.expire(now: t) { connections.perform(actions, handle: handle, self) }
        rescheduleTimer()
    }

    nonisolated func log(_ message: String) {
        HostDiagnostics.log("[host] \(message)")
    }
}

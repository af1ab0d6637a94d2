import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire

/// What the controller told us about itself during initialisation.
public struct ControllerInfo: Sendable {
    public var address: BDAddress
    public var version: LocalVersionInformation?
    public var supportedCommands: LocalSupportedCommands?
    public var features: LocalSupportedFeatures?
    public var leFeatures: LESupportedFeatures?
    /// LE ACL data buffers the host may fill before Number Of Completed Packets returns credits.
    public var aclBufferLength: Int
    public var aclBufferCount: Int
}

/// Tunables of the host stack; defaults follow the spec's recommendations.
public struct HostConfiguration: Sendable {
    /// Time allowed for any HCI command to be answered (Command Complete or Status).
    public var commandTimeout: Duration = .seconds(5)
    /// ATT transaction timeout, Core spec Vol 3 Part F §3.3.3.
    public var attTransactionTimeout: Duration = .seconds(30)
    /// The ATT_MTU we offer in MTU exchanges (517 fits the longest attribute value plus headers).
    public var preferredATTMTU: Int = 517
    /// Connection parameters for LE Create Connection (units of 1.25 ms / 10 ms, Vol 4 Part E §7.8.12).
    public var connectionIntervalMin: UInt16 = 24 // 30 ms
    public var connectionIntervalMax: UInt16 = 40 // 50 ms
    public var supervisionTimeout: UInt16 = 420 // 4.2 s
    public var maxLatency: UInt16 = 0
    /// Scan timing in units of 0.625 ms (Vol 4 Part E §7.8.10).
    public var scanInterval: UInt16 = 0x0060 // 60 ms
    public var scanWindow: UInt16 = 0x0030 // 30 ms
    /// How long a dynamic read or write may wait for the application before the server answers
    /// Unlikely Error (the central's own transaction timeout is 30 s).
    public var applicationResponseTimeout: Duration = .seconds(10)
    /// Capacity of each notification stream delivered to the application.
    public var notificationBufferLimit: Int = 65_536
    /// When set, every new link (either role) asks for this LL payload size with LE Set Data
    /// Length (27...251 octets, Vol 4 Part E §7.8.33), as Zephyr and Android do by default.
    public var preferredDataLength: Int?
    /// When set, every new link asks for this PHY with LE Set PHY (Vol 4 Part E §7.8.49).
    public var preferredPHY: LEPHY?

    public init() {}
}

/// The one actor that owns a controller's state (ARCHITECTURE.md): it drives the sans-IO
/// machines — HCI command flow, ACL credits and reassembly, L2CAP signaling, one ATT bearer per
/// link, the scan aggregator — with bytes from the transport and the time from its clock, and
/// sends what they return. Transports only move bytes.
public actor HostController {
    public nonisolated let transport: any HCITransport
    public nonisolated let clock: any BLEClock
    public let configuration: HostConfiguration

    var commandFlow = CommandFlowController()
    var commandWaiters: [UInt64: CheckedContinuation<CommandResult, any Error>] = [:]
    var commandOpcodes: [UInt64: HCIOpcode] = [:]
    var nextToken: UInt64 = 1

    var aclFlow = ACLFlowController(bufferCount: 1, bufferLength: 27)
    var reassembler = ACLReassembler()
    var links: [UInt16: Link] = [:]
    var nextLinkID: UInt64 = 1

    var advertising: AdvertisingState?
    var database = GATTServerDatabase(deviceName: "SwiftBLE", appearance: 0)
    var readHandlers: [UInt16: GATTReadHandler] = [:]
    var writeHandlers: [UInt16: GATTWriteHandler] = [:]
    var pendingServerRequests: [UInt64: PendingServerRequest] = [:]
    var indicationWaiters: [UInt64: IndicationWaiter] = [:]
    var roomWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    var managerEventSinks: [UInt64: AsyncStream<PeripheralManagerEvent>.Continuation] = [:]
    var ownAddressType: OwnAddressType = .public
    var ownRandomAddress: BDAddress?
    var scan: ScanSession?
    let scanRadio = ScanRadioState()
    var nextScanID: UInt64 = 1
    var pendingConnection: PendingConnection?
    var nextConnectionAttempt: UInt64 = 1
    var disconnectAttempts: [UInt16: [OneShot<Void>]] = [:]
    var aclWaiters: [ACLWaiter] = []

    public internal(set) var info: ControllerInfo?
    /// Set when the controller or transport failed for good; every later call fails with it.
    public private(set) var failure: BLEError?

    private let outbound: AsyncStream<H4Frame>.Continuation
    private var writerTask: Task<Void, Never>?
    private var readerTask: Task<Void, Never>?
    private var timerTask: Task<Void, Never>?
    private var scheduledDeadline: Duration?

    public init(transport: any HCITransport, clock: any BLEClock = SystemClock(), configuration: HostConfiguration = HostConfiguration()) {
        self.transport = transport
        self.clock = clock
        self.configuration = configuration
        let (stream, continuation) = AsyncStream<H4Frame>.makeStream(bufferingPolicy: .unbounded)
        self.outbound = continuation
        // One writer drains the outbound queue so frames reach the transport in the order the actor
        // produced them, and the actor never waits on a socket.
        writerTask = Task(executorPreference: clock.taskExecutor) { [transport] in
            for await frame in stream {
                do { try await transport.send(frame) } catch { break }
            }
        }
    }

    /// Starts reading from the transport and initialises the controller (Core spec Vol 4 Part E
    /// §4: Reset, then reads of version, commands, features, address and buffer sizes, then the
    /// event masks).
    @discardableResult
    public func start() async throws -> ControllerInfo {
        if let info { return info }
        startReader()
        return try await initialiseController()
    }

    /// Stops everything: fails pending work with `.closed`, closes the transport.
    public func close() async {
        if failure == nil { fail(.closed) }
        readerTask?.cancel()
        timerTask?.cancel()
        outbound.finish()
        await transport.close()
    }

    var now: Duration { clock.now() }

    // MARK: - Outbound

    func sendFrame(_ frame: H4Frame) {
        outbound.yield(frame)
    }

    func sendCommandPacket(_ command: HCICommand) {
        sendFrame(H4Frame(type: .command, payload: command.encode()))
    }

    func sendACL(_ packets: [ACLPacket]) {
        for p in packets { sendFrame(H4Frame(type: .acl, payload: p.encode())) }
    }

    /// Sends an L2CAP basic frame on a fixed channel (Core spec Vol 3 Part A §3.1).
    func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) {
        guard links[handle] != nil else { return }
        let pdu = L2CAPFrame(channelID: channel, payload: payload).encode()
        sendACL(aclFlow.enqueue(handle: handle, pdu: pdu))
    }

    // MARK: - Commands

    /// Sends one HCI command and waits for its Command Complete (return parameters) or Command
    /// Status. An error status, a timeout, or a hardware error throws `BLEError.hci`.
    @discardableResult
    func command(_ command: HCICommand, timeout: Duration? = nil) async throws -> CommandResult {
        if let failure { throw failure }
        let token = nextToken
        nextToken += 1
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<CommandResult, any Error>) in
            commandWaiters[token] = c
            commandOpcodes[token] = command.opcode
            let toSend = commandFlow.enqueue(command, token: token, now: now, timeout: timeout ?? configuration.commandTimeout)
            toSend.forEach(sendCommandPacket)
            rescheduleTimer()
        }
    }

    /// Runs a command that answers with Command Complete and returns its return parameters after
    /// checking the status byte.
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

    func resolveCommands(_ completions: [CommandCompletion]) {
        for c in completions {
            guard let waiter = commandWaiters.removeValue(forKey: c.token) else { continue }
            commandOpcodes[c.token] = nil
            switch c.result {
            case let .success(r): waiter.resume(returning: r)
            case let .failure(e): waiter.resume(throwing: BLEError.hci(e))
            }
        }
    }

    // MARK: - Reading

    private func startReader() {
        guard readerTask == nil else { return }
        let stream = transport.incoming
        readerTask = Task(executorPreference: clock.taskExecutor) { [weak self] in
            do {
                for try await frame in stream {
                    guard let self else { return }
                    await self.receive(frame)
                }
                await self?.transportEnded(nil)
            } catch {
                await self?.transportEnded(error)
            }
        }
    }

    private func transportEnded(_ error: (any Error)?) {
        guard failure == nil else { return }
        let message = error.map { "\($0)" } ?? "the controller closed the connection"
        fail(.transport(message))
    }

    func receive(_ frame: H4Frame) {
        switch frame.type {
        case .event:
            do {
                handle(try HCIEvent.decode(frame.payload))
            } catch {
                // A garbled event from the controller: report and keep serving.
                log("dropped malformed HCI event: \(error)")
            }
        case .acl:
            do {
                receiveACL(try ACLPacket.decode(frame.payload))
            } catch {
                log("dropped malformed ACL packet: \(error)")
            }
        default:
            break
        }
        rescheduleTimer()
    }

    /// Fails all pending work and refuses new work: after a hardware error or a lost transport
    /// nothing the host believed about the controller holds.
    func fail(_ error: BLEError) {
        if failure == nil { failure = error }
        let hciError: HCIError
        if case let .hci(e) = error { hciError = e } else { hciError = .transportClosed }
        resolveCommands(commandFlow.failAll(hciError))
        for handle in links.keys.sorted() { linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: error) }
        scan?.finish(throwing: error)
        scan = nil
        pendingConnection?.result.fail(error)
        pendingConnection = nil
    }

    // MARK: - Timers

    /// Arms one timer for the earliest deadline of all the state machines.
    func rescheduleTimer() {
        var deadlines: [Duration] = []
        if let d = commandFlow.nextDeadline { deadlines.append(d) }
        for link in links.values {
            if let d = link.bearer.nextDeadline { deadlines.append(d) }
            if let d = link.server.nextDeadline { deadlines.append(d) }
        }
        if let d = scan?.deadline { deadlines.append(d) }
        if let d = pendingServerRequests.values.map(\.deadline).min() { deadlines.append(d) }
        if let d = pendingConnection?.deadline, !(pendingConnection?.cancelSent ?? true) { deadlines.append(d) }
        let next = deadlines.min()
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
        for handle in links.keys.sorted() {
            guard let (actions, serverActions) = withLink(handle, { ($0.bearer.expire(now: t), $0.server.expire(now: t)) }) else { continue }
            perform(actions, handle: handle)
            performServer(serverActions, handle: handle)
        }
        if let s = scan, let d = s.deadline, d <= t { finishScan(id: s.id) }
        for (token, pending) in pendingServerRequests where pending.deadline <= t {
            log("the application did not answer a dynamic \(pending.kind) in time: Unlikely Error")
            switch pending.kind {
            case .read: respond(toRead: token, with: .failure(.unlikelyError))
            case .write: respond(toWrite: token, with: .failure(.unlikelyError))
            }
        }
        if let p = pendingConnection, p.deadline <= t, !p.cancelSent { connectionTimedOut() }
        rescheduleTimer()
    }

    nonisolated func log(_ message: String) {
        if HostDiagnostics.verbose { HostDiagnostics.write("[host] \(message)") }
    }
}

extension HostController {
    /// Runs `body` on the link in place. A `var link = links[h]` … `links[h] = link` round trip
    /// copies the link, and its first mutation then copies every buffer it holds (the ATT
    /// server's queues, the bearer's state): on the notification path that was the largest cost.
    /// `body` must touch only the link, not the actor (the dictionary is being accessed).
    @discardableResult
    func withLink<R>(_ handle: UInt16, _ body: (inout Link) -> R) -> R? {
        guard let index = links.index(forKey: handle) else { return nil }
        return body(&links.values[index])
    }
}

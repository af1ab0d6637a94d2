import BLEHCI
import BLEHost
import BLEWire

/// What a new connection looks like to the API.
struct LinkHandle: Sendable {
    let id: UInt64
    let handle: UInt16
    let peer: DeviceAddress
    let observation: LinkObservation
}

/// The host's connections: creating (central), cancelling and disconnecting them, the link
/// table, and the controller's events about links (parameters, data length, PHY,
/// the peer's requests). The attempt's decisions are the sans-IO `ConnectionInitiator`'s; this
/// part keeps the callers waiting on them. Isolated to the host actor that owns it.
final class ConnectionManager {
    var links = LinkTable()
    private var initiator = ConnectionInitiator()
    /// The caller of the running attempt, waiting for its connection handle.
    private var attemptResult: (id: UInt64, result: OneShot<UInt16>)?
    private var disconnectAttempts: [UInt16: [OneShot<Void>]] = [:]
    /// Callers waiting for a link's LE Connection Update Complete (ConnectionManager+ParameterUpdates.swift).
    var parameterUpdates: [UInt16: [OneShot<LinkParameters>]] = [:]
    /// What the peripheral asked for on each link with a request in flight, to ask again over
    /// L2CAP when the central's Link Layer lacks the procedure (ConnectionManager+ParameterUpdates.swift).
    var askedParameters: [UInt16: LESignalingCommand.ConnectionParameters] = [:]
    private let configuration: HostConfiguration

    init(configuration: HostConfiguration) {
        self.configuration = configuration
    }

    /// The earliest deadline of the connection attempt and of the links' protocols.
    var nextDeadline: Duration? {
        earliest(initiator.nextDeadline, links.nextDeadline())
    }

    /// Whether an LE Create Connection is outstanding.
    var isInitiating: Bool { attemptResult != nil }

    // MARK: - Connecting

    /// Connects as central (LE Create Connection, Vol 4 Part E §7.8.12, or LE Extended Create
    /// Connection, §7.8.66, initiating on `phys`). At the deadline, or when the calling task is
    /// cancelled, LE Create Connection Cancel (§7.8.13, for both) stops the initiator; the
    /// controller then reports the connection as failed with Unknown Connection Identifier.
    func connect(to peer: DeviceAddress, timeout: Duration, phys: LEPHYSet = .le1M, ownAddressType: OwnAddressType,
                 _ host: isolated some ConnectionDriver) async throws -> LinkHandle {
        if let failure = host.failure { throw failure }
        try ListeningPHYs.validate(phys, for: .initiating, extended: host.usesExtendedCommands, supported: host.supportedPHYs)
        guard attemptResult == nil else { throw BLEError.busy("another connection attempt is in progress") }
        await host.prepareRadioForConnecting()
        guard let id = initiator.begin(peer: peer, deadline: host.now + timeout) else {
            throw BLEError.busy("another connection attempt is in progress")
        }
        let result = OneShot<UInt16>()
        attemptResult = (id, result)
        defer {
            initiator.end(id)
            if attemptResult?.id == id { attemptResult = nil }
        }
        try await host.command(Self.createConnection(peer: peer, phys: phys, ownAddressType: host.ownAddressType, configuration,
                                                     extended: host.usesExtendedCommands, supported: host.supportedPHYs))
        host.rescheduleTimer()
        let handle: UInt16 = try await withTaskCancellationHandler {
            try await result.wait()
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.connections.cancelByCaller(id, $0) } }
        }
        guard let link = links[handle] else { throw BLEError.notConnected }
        return LinkHandle(id: link.id, handle: handle, peer: link.peer, observation: link.observation)
    }


    /// LE Create Connection (§7.8.12), or LE Extended Create Connection (§7.8.66) with the same
    /// parameters for each PHY in `phys`, and for LE 2M alongside LE 1M when the controller has
    /// LE 2M (`supported`; an extended advertiser whose auxiliary packets go on LE 2M is answered
    /// there, and the link starts on it; a controller without it refuses the entry).
    static func createConnection(peer: DeviceAddress, phys: LEPHYSet, ownAddressType: OwnAddressType, _ c: HostConfiguration,
                                 extended: Bool, supported: LEPHYSet) -> HCICommand {
        guard extended else {
            return .leCreateConnection(
                scanInterval: c.scanInterval, scanWindow: c.scanWindow, filterPolicy: 0, peer: peer,
                ownAddressType: ownAddressType, connectionIntervalMin: c.connectionIntervalMin, connectionIntervalMax: c.connectionIntervalMax,
                maxLatency: c.maxLatency, supervisionTimeout: c.supervisionTimeout, minCELength: 0, maxCELength: 0)
        }
        let entry = ExtendedConnectionPHYParameters(
            scanInterval: c.scanInterval, scanWindow: c.scanWindow, intervalMin: c.connectionIntervalMin,
            intervalMax: c.connectionIntervalMax, latency: c.maxLatency, supervisionTimeout: c.supervisionTimeout)
        return .leExtendedCreateConnection(ownAddressType: ownAddressType, peer: peer, le1M: phys.contains(.le1M) ? entry : nil,
                                           le2M: phys.contains(.le1M) && supported.contains(.le2M) ? entry : nil, leCoded: phys.contains(.leCoded) ? entry : nil)
    }

    func cancelByCaller(_ id: UInt64, _ host: isolated some ConnectionDriver) {
        if initiator.cancelByCaller(id) { sendCreateConnectionCancel(id, host) }
    }

    /// LE Create Connection Cancel (Vol 4 Part E §7.8.13). The attempt then ends with the
    /// controller's LE Connection Complete (status Unknown Connection Identifier), or with a
    /// completed connection that won the race. If neither comes within a command timeout (the
    /// cancel failed or the event was lost), the attempt fails anyway: it never hangs.
    private func sendCreateConnectionCancel(_ id: UInt64, _ host: isolated some ConnectionDriver) {
        let limit = configuration.commandTimeout
        let clock = host.clock
        host.spawn("LE Create Connection Cancel") {
            do {
                try await host.commandReturning(.leCreateConnectionCancel)
            } catch {
                // Command Disallowed: the connection completed meanwhile; its event settles it.
                host.log("LE Create Connection Cancel: \(error)")
            }
            try await clock.sleep(for: limit)
            await host.run { $0.connections.abandon(id) }
        }
    }

    func abandon(_ id: UInt64) {
        guard let failure = initiator.abandoned(id), let waiting = attemptResult, waiting.id == id else { return }
        waiting.result.fail(Self.error(failure))
    }

    private static func error(_ failure: ConnectionInitiator.Failure) -> any Error {
        switch failure {
        case let .timeout(peer): return BLEError.timeout("connecting to \(peer)")
        case .cancelled: return CancellationError()
        case let .refused(status): return BLEError.connectionFailed(status)
        }
    }

    private func connectionCompleted(_ event: LEConnectionComplete, _ host: isolated some ConnectionDriver) {
        if event.status == .advertisingTimeout {
            // High duty cycle directed advertising ended with no connection (Vol 4 Part E
            // §7.7.65.1): about our advertising, never about a connection attempt of ours.
            host.log("directed advertising timed out")
            return
        }
        if event.status == .success, links[event.handle] != nil {
            host.log("LE Connection Complete for live handle 0x\(String(event.handle, radix: 16)) ignored")
            return
        }
        if event.status == .success {
            let parameters = LinkParameters(interval: event.interval, latency: event.latency, supervisionTimeout: event.supervisionTimeout)
            let role: ConnectionRole = event.role == .central ? .central : .peripheral
            links[event.handle] = Link(
                id: links.makeID(), handle: event.handle, peer: event.peer, role: role, parameters: parameters,
                clients: ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: configuration.attTransactionTimeout)),
                server: ATTServer(preferredMTU: configuration.preferredATTMTU),
                observation: LinkObservation(parameters: parameters))
            links.withLink(event.handle) {
                if let rpa = event.peerResolvablePrivateAddress, rpa != .zero {
                    $0.peerOnAir = DeviceAddress(rpa, type: .random)
                } else {
                    $0.peerOnAir = DeviceAddress(event.peer.address, type: event.peer.type.peerType)
                }
                if let rpa = event.localResolvablePrivateAddress, rpa != .zero {
                    $0.localOnAir = DeviceAddress(rpa, type: .random)
                } else {
                    $0.localOnAir = host.ownDeviceAddress
                }
            }
            applyLinkPreferences(handle: event.handle, host)
            if host.usesExtendedCommands { readPHY(handle: event.handle, host) }
            if let link = links[event.handle] { host.linkOpened(link) }
            // A central connected to our advertising (Vol 6 Part B §4.5): the driver has it served.
            if role == .peripheral { return }
        }
        switch initiator.connectionComplete(status: event.status, handle: event.handle) {
        case let .connected(id, handle):
            if let waiting = attemptResult, waiting.id == id { waiting.result.succeed(handle) }
        case let .failed(id, failure):
            if let waiting = attemptResult, waiting.id == id { waiting.result.fail(Self.error(failure)) }
        case let .unwanted(handle, id, failure):
            if let id, let failure, let waiting = attemptResult, waiting.id == id { waiting.result.fail(Self.error(failure)) }
            disconnectInBackground(handle: handle, "disconnecting an unwanted link", host)
        case .ignored:
            break
        }
    }

    // MARK: - Disconnecting

    /// Disconnects (Vol 4 Part E §7.1.6) and waits for Disconnection Complete.
    ///
    /// Ends when the link is down, when the controller reports the disconnect failed (the link
    /// stays up and the error is thrown), or at a deadline of the command timeout plus the
    /// supervision timeout, after which the controller must have dropped the link.
    func disconnect(handle: UInt16, reason: HCIStatus, _ host: isolated some ConnectionDriver) async throws {
        guard let link = links[handle] else { return }
        link.observation.update { $0.state = .disconnecting }
        let attempt = OneShot<Void>()
        disconnectAttempts[handle, default: []].append(attempt)
        let linkID = link.id
        let limit = configuration.commandTimeout + .milliseconds(Int64(link.parameters.supervisionTimeoutMilliseconds))
        let clock = host.clock
        let owned = ActorOwned(attempt)
        host.spawn("disconnect deadline") {
            try await clock.sleep(for: limit)
            await host.run { $0.connections.disconnectTimedOut(owned.value, linkID: linkID, $0) }
        }
        do {
            try await host.command(.disconnect(handle: handle, reason: reason))
        } catch BLEError.hci(.commandFailed(_, .unknownConnectionIdentifier)) {
            linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: .notConnected, host)
            return
        } catch {
            // The controller refused (or never answered) the command: the link stays up, and this
            // attempt is over, so its deadline must not tear the live link down later.
            disconnectAttempts[handle]?.removeAll { $0 === attempt }
            attempt.fail(error)
            if links[handle]?.id == linkID { link.observation.update { $0.state = .connected } }
            throw error
        }
        try await attempt.wait()
    }

    func disconnectTimedOut(_ attempt: OneShot<Void>, linkID: UInt64, _ host: isolated some ConnectionDriver) {
        guard !attempt.isFulfilled else { return }
        attempt.fail(BLEError.timeout("the controller did not report the disconnect"))
        // The controller never reported the link down: treat it as gone, so nothing waits on it.
        if let handle = links.handle(forID: linkID) {
            linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: .timeout("disconnecting"), host)
        }
    }

    /// Disconnects the link now on `handle` in the background (a link nobody wants, a bearer
    /// that timed out). The link is named by its id, so a handle the controller has reused by
    /// the time the task runs is never hit.
    func disconnectInBackground(handle: UInt16, _ name: String, _ host: isolated some ConnectionDriver) {
        guard let linkID = links[handle]?.id else { return }
        host.spawn(name) {
            try await host.run { try await $0.connections.disconnect(linkID: linkID, reason: .remoteUserTerminatedConnection, $0) }
        }
    }

    /// Removes a link and has every part tear down its state for it.
    func linkClosed(handle: UInt16, reason: HCIStatus, error: BLEError, _ host: isolated some ConnectionDriver) {
        guard let link = links.remove(handle) else { return }
        for attempt in disconnectAttempts.removeValue(forKey: handle) ?? [] { attempt.succeed(()) }
        for update in parameterUpdates.removeValue(forKey: handle) ?? [] { update.fail(error) }
        askedParameters[handle] = nil
        link.observation.update { $0.state = .disconnected(reason: reason) }
        host.linkEnded(link, reason: reason, error: error)
    }

    /// Closes every link and fails the running attempt: the controller or transport is gone.
    func closeAll(error: BLEError, _ host: isolated some ConnectionDriver) {
        for handle in links.handles { linkClosed(handle: handle, reason: .connectionTerminatedByLocalHost, error: error, host) }
        attemptResult?.result.fail(error)
    }

    func expire(now: Duration, _ host: isolated some ConnectionDriver) {
        if let id = attemptResult?.id, initiator.expire(now: now) { sendCreateConnectionCancel(id, host) }
        for handle in links.handles {
            // Every client bearer of the link, Enhanced ATT ones too (Vol 3 Part F §3.3.3).
            guard let (client, server) = links.withLink(handle, { ($0.clients.expire(now: now), $0.server.expire(now: now)) }) else { continue }
            host.linkTimersExpired(handle: handle, client: client, server: server, now: now)
        }
    }

    // MARK: - Controller events about links

    func handle(_ event: HCIEvent, _ host: isolated some ConnectionDriver) {
        switch event {
        case let .disconnectionComplete(status, handle, reason):
            guard status == .success else {
                // The link stays up (Vol 4 Part E §7.7.5).
                links[handle]?.observation.update { $0.state = .connected }
                for attempt in disconnectAttempts.removeValue(forKey: handle) ?? [] {
                    attempt.fail(BLEError.hci(.commandFailed(opcode: .disconnect, status: status)))
                }
                return
            }
            linkClosed(handle: handle, reason: reason, error: .disconnected(reason: reason), host)
        default:
            break
        }
    }

    func handle(_ meta: LEMetaEvent, _ host: isolated some ConnectionDriver) {
        switch meta {
        case let .connectionComplete(c):
            connectionCompleted(c, host)
        case let .connectionUpdateComplete(status, handle, interval, latency, timeout):
            connectionUpdateCompleted(status: status, handle: handle,
                                      LinkParameters(interval: interval, latency: latency, supervisionTimeout: timeout), host)
        case let .dataLengthChange(handle, maxTxOctets, _, maxRxOctets, _):
            links.withLink(handle) {
                $0.maxTxOctets = Int(maxTxOctets)
                $0.maxRxOctets = Int(maxRxOctets)
                $0.publish()
            }
        case let .phyUpdateComplete(status, handle, txPHY, rxPHY):
            guard status == .success else { return }
            links.withLink(handle) {
                $0.txPHY = txPHY
                $0.rxPHY = rxPHY
                $0.phyUpdates += 1
                $0.publish()
            }
        case let .channelSelectionAlgorithm(handle, algorithm):
            // 0x00 is algorithm #1, 0x01 algorithm #2 (§7.7.65.20); other values are reserved.
            guard algorithm <= 1 else { return host.log("LE Channel Selection Algorithm 0x\(String(algorithm, radix: 16)) ignored") }
            links.withLink(handle) {
                $0.channelSelectionAlgorithm = Int(algorithm) + 1
                $0.publish()
            }
        case let .remoteConnectionParameterRequest(handle, intervalMin, intervalMax, latency, timeout):
            // Accept what the peer asks if it is within the spec's ranges (Vol 4 Part E §7.7.65.6);
            // otherwise refuse with Unacceptable Connection Parameters.
            let valid = LinkParameters.isValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: timeout)
            let reply: HCICommand = valid
                ? .leRemoteConnectionParameterRequestReply(handle: handle, intervalMin: intervalMin, intervalMax: intervalMax, maxLatency: latency, supervisionTimeout: timeout, minCELength: 0, maxCELength: 0)
                : .leRemoteConnectionParameterRequestNegativeReply(handle: handle, reason: .unacceptableConnectionParameters)
            host.sendInBackground(reply, "answering the peer's connection parameter request")
        default:
            host.log("ignored LE event \(meta)")
        }
    }

    /// Carries out what a link's L2CAP control channels asked for.
    func perform(_ actions: [L2CAPControlAction], handle: UInt16, _ host: isolated some ConnectionDriver) {
        for action in actions {
            switch action {
            case let .send(channel, payload):
                host.sendL2CAP(handle: handle, channel: channel, payload: payload)
            case let .updateConnectionParameters(p):
                // The central answers a peripheral's request (Vol 3 Part A §4.20) by applying it
                // with LE Connection Update (Vol 4 Part E §7.8.18).
                host.sendInBackground(.leConnectionUpdate(
                    handle: handle, intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                    maxLatency: p.latency, supervisionTimeout: p.timeout, minCELength: 0, maxCELength: 0),
                    "LE Connection Update for the peer's request")
            case let .channel(event):
                host.channelEvent(event, handle: handle)
            case let .connectionParameterUpdateAnswered(accepted):
                parameterUpdateAnswered(accepted: accepted, handle: handle, host)
            }
        }
    }

    // MARK: - Data length and PHY

    /// LE Set Data Length (Core spec Vol 4 Part E §7.8.33) for one link; the controller then
    /// runs the Data Length Update procedure with the peer.
    func setDataLength(linkID: UInt64, octets: Int, _ host: isolated some ConnectionDriver) async throws {
        guard let handle = links.handle(forID: linkID) else { throw BLEError.notConnected }
        guard (27...251).contains(octets) else { throw BLEError.invalidArgument("data length \(octets) is outside 27...251 octets") }
        guard host.info?.supportsDataLengthExtension ?? true else {
            throw ControllerInfo.notSupported(.leSetDataLength, "a data length over 27 octets (Data Length Extension)")
        }
        // TxTime for that many octets on LE 1M: (octets + 14) × 8 µs (Vol 6 Part B §4.5.10).
        try await host.commandReturning(.leSetDataLength(handle: handle, txOctets: UInt16(octets), txTime: UInt16((octets + 14) * 8)))
    }

    /// LE Set PHY (§7.8.49) for one link, both directions.
    func setPHY(linkID: UInt64, _ phy: LEPHY, _ host: isolated some ConnectionDriver) async throws {
        guard let handle = links.handle(forID: linkID) else { throw BLEError.notConnected }
        let set: LEPHYSet
        switch phy {
        case .le1M: set = .le1M
        case .le2M: set = .le2M
        case .leCoded: set = .leCoded
        default: throw BLEError.invalidArgument("unknown PHY \(phy)")
        }
        guard host.info?.lists(HCIOpcode.leSetPHY) ?? true else { throw ControllerInfo.notSupported(.leSetPHY, "changing a link's PHY") }
        guard host.supportedPHYs.contains(set) else {
            throw BLEError.unsupported("\(phy) is not among this controller's PHYs (\(host.supportedPHYs))")
        }
        try await host.command(.leSetPHY(handle: handle, tx: set, rx: set))
    }

    /// LE Read PHY (§7.8.47) for a link just made with the extended commands: one made from an
    /// extended advertisement starts on the advertiser's PHY (LE Coded, or LE 2M from its
    /// auxiliary packets), which LE Enhanced Connection Complete does not say. Not on a
    /// controller with LE 1M alone (the link is on it, and the command need not be there).
    private func readPHY(handle: UInt16, _ host: isolated some ConnectionDriver) {
        guard host.supportedPHYs != .le1M, host.info?.lists(.leReadPHY) ?? true, let link = links[handle] else { return }
        let (id, updates) = (link.id, link.phyUpdates)
        host.spawn("LE Read PHY") {
            do {
                let result = try LEReadPHYResult(returnParameters: try await host.commandReturning(.leReadPHY(handle: handle)))
                await host.run { h in
                    // The same link still (a handle is reused once a link is gone), and no PHY
                    // Update Complete since the read was asked for (its PHYs are the newer).
                    guard let now = h.connections.links[handle], now.id == id, now.phyUpdates == updates else { return }
                    h.connections.links.withLink(handle) {
                        $0.txPHY = result.txPHY
                        $0.rxPHY = result.rxPHY
                        $0.publish()
                    }
                }
            } catch {
                host.log("LE Read PHY: \(error)")
            }
        }
    }

    /// Applies `HostConfiguration.preferredDataLength` / `preferredPHY` to a new link, in the
    /// background: a controller that refuses (or lacks the feature) leaves the link as it is.
    private func applyLinkPreferences(handle: UInt16, _ host: isolated some ConnectionDriver) {
        let dataLength = configuration.preferredDataLength
        let phy = configuration.preferredPHY
        guard dataLength != nil || phy != nil, let id = links[handle]?.id else { return }
        host.spawn("link preferences") {
            if let dataLength {
                do { try await host.run { try await $0.connections.setDataLength(linkID: id, octets: dataLength, $0) } } catch { host.log("LE Set Data Length: \(error)") }
            }
            if let phy {
                do { try await host.run { try await $0.connections.setPHY(linkID: id, phy, $0) } } catch { host.log("LE Set PHY: \(error)") }
            }
        }
    }
}

extension ConnectionManager {
    /// Disconnects the link with this id (resolved here, so a reused handle is never hit).
    func disconnect(linkID: UInt64, reason: HCIStatus, _ host: isolated some ConnectionDriver) async throws {
        guard let handle = links.handle(forID: linkID) else { return }
        try await disconnect(handle: handle, reason: reason, host)
    }
}

/// What the connection manager needs from the host beyond `HostServices`: itself (for its own
/// tasks); commands sent in the background; L2CAP control PDUs sent on a
/// link; of privacy, the radio made ready and the own address (type, and as it went on the
/// air); and the driver's routing of what happens to links, in the order ARCHITECTURE.md gives:
/// a link opened, a link ended, a link's ATT timers expired, an L2CAP channel event.
protocol ConnectionDriver: HostServices {
    var connections: ConnectionManager { get }
    nonisolated var clock: any BLEClock { get }
    /// Sends a command from a task of its own; a failure goes to the log under `name`.
    func sendInBackground(_ command: HCICommand, _ name: String)
    @discardableResult
    func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) -> Int
    /// Makes the radio ready to initiate; called with the initiator idle.
    func prepareRadioForConnecting() async
    var ownAddressType: OwnAddressType { get }
    /// Whether the controller is driven with the extended commands (`AdvertisingCommandSet`).
    var usesExtendedCommands: Bool { get }
    /// The PHYs the controller has (`ControllerInfo.supportedPHYs`).
    var supportedPHYs: LEPHYSet { get }
    /// What the controller said of itself at initialisation (nil before).
    var info: ControllerInfo? { get }
    /// Sends a Connection Parameter Update Request to the central of `handle` (Vol 3 Part A
    /// §4.20); false when the link is unknown to L2CAP.
    func requestParametersOverL2CAP(handle: UInt16, _ parameters: LESignalingCommand.ConnectionParameters) -> Bool
    var ownDeviceAddress: DeviceAddress? { get }
    /// A link is up (in the table): the parts learn of it.
    func linkOpened(_ link: Link)
    /// A link is down (out of the table): the parts tear down their state for it.
    func linkEnded(_ link: Link, reason: HCIStatus, error: BLEError)
    /// A link's ATT transaction or confirmation timers ran out: what its bearers' machines said.
    func linkTimersExpired(handle: UInt16, client: ATTBearerSetActions, server: [ServerAction], now: Duration)
    /// An LE credit-based channel event of a link's signaling channel.
    func channelEvent(_ event: CreditBasedChannelEvent, handle: UInt16)
}

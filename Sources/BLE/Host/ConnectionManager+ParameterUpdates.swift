import BLEHCI
import BLEHost

extension ConnectionManager {
    /// How long an LE Connection Update may take after the controller took the command: the
    /// Link Layer's procedure response timeout, 40 s (Core spec Vol 6 Part B §5.2), after which
    /// the controller ends the procedure (or the link) itself.
    static let connectionUpdateResponseTimeout: Duration = .seconds(40)

    /// LE Connection Update (Core spec Vol 4 Part E §7.8.18) on the link with this id, waiting for
    /// its LE Connection Update Complete (§7.7.65.3): the parameters the link has then.
    ///
    /// From a peripheral the controller runs the Connection Parameters Request procedure with
    /// the central (Vol 6 Part B §5.1.7), which may refuse. Where that procedure is missing (our
    /// controller lacks LE feature bit 1, or the central's Link Layer answers Unsupported Remote
    /// Feature, 0x1A) the peripheral asks with an L2CAP Connection Parameter Update Request
    /// instead (Vol 3 Part A §4.20), as the spec provides for; a rejection throws
    /// `.hci(.commandFailed(opcode: .leConnectionUpdate, status: .unacceptableConnectionParameters))`. A completion with a non-zero status
    /// throws `.hci(.commandFailed(opcode: .leConnectionUpdate, status:))` carrying it, and the
    /// link keeps its parameters; a controller that refuses the command throws the same with the
    /// Command Status; a link that goes away throws why; no completion within the command
    /// timeout plus the procedure response timeout throws `.timeout`.
    func updateParameters(linkID: UInt64, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, supervisionTimeout: UInt16,
                          _ host: isolated some ConnectionDriver) async throws -> LinkParameters {
        guard let handle = links.handle(forID: linkID) else { throw BLEError.notConnected }
        let peripheral = links[handle]?.role == .peripheral
        let listed = host.info?.lists(.leConnectionUpdate) ?? true
        guard peripheral || listed else { throw ControllerInfo.notSupported(.leConnectionUpdate, "new connection parameters") }
        // One request of the peripheral's at a time per link: the Link Layer procedure and the
        // L2CAP request (one identifier outstanding, Vol 3 Part A §4.20) each answer only the last.
        guard !peripheral || parameterUpdates[handle]?.isEmpty != false else {
            throw BLEError.busy("a connection parameter request is already under way on this link")
        }
        // Parameters the link already has: nothing to ask, and a peripheral's controller reports
        // no update that changes nothing (Vol 4 Part E §7.7.65.3).
        if peripheral, let now = links[handle]?.parameters, intervalMin <= now.interval, now.interval <= intervalMax,
           now.latency == latency, now.supervisionTimeout == supervisionTimeout {
            return now
        }
        let update = OneShot<LinkParameters>()
        parameterUpdates[handle, default: []].append(update)
        let owned = ActorOwned(update)
        let limit = host.configuration.commandTimeout + Self.connectionUpdateResponseTimeout
        let clock = host.clock
        host.spawn("connection update deadline") {
            try await clock.sleep(for: limit)
            await host.run { $0.connections.parameterUpdateTimedOut(owned.value, handle: handle) }
        }
        let asked = LESignalingCommand.ConnectionParameters(intervalMin: intervalMin, intervalMax: intervalMax,
                                                            latency: latency, timeout: supervisionTimeout)
        if peripheral { askedParameters[handle] = asked }
        if peripheral && (host.info?.supportsConnectionParametersRequest == false || !listed) {
            guard host.requestParametersOverL2CAP(handle: handle, asked) else {
                parameterUpdates[handle]?.removeAll { $0 === update }
                askedParameters[handle] = nil
                throw BLEError.notConnected
            }
            return try await update.wait()
        }
        do {
            try await host.command(.leConnectionUpdate(handle: handle, intervalMin: intervalMin, intervalMax: intervalMax,
                                                       maxLatency: latency, supervisionTimeout: supervisionTimeout,
                                                       minCELength: 0, maxCELength: 0))
        } catch {
            parameterUpdates[handle]?.removeAll { $0 === update }
            askedParameters[handle] = nil
            update.fail(error)
            throw error
        }
        return try await update.wait()
    }

    /// LE Connection Update Complete (§7.7.65.3): on success the link takes the new parameters;
    /// otherwise it keeps the ones it had. Either way the callers waiting on the link learn it.
    func connectionUpdateCompleted(status: HCIStatus, handle: UInt16, _ parameters: LinkParameters, _ host: isolated some ConnectionDriver) {
        let asked = askedParameters.removeValue(forKey: handle)
        // The central's Link Layer lacks the Connection Parameters Request procedure: ask its
        // host over L2CAP instead (Vol 3 Part A §4.20); the waiters wait on.
        if status == .unsupportedRemoteFeature, let asked, parameterUpdates[handle]?.isEmpty == false,
           host.requestParametersOverL2CAP(handle: handle, asked) {
            host.log("the central lacks the Connection Parameters Request procedure: asking over L2CAP")
            askedParameters[handle] = asked
            return
        }
        let waiting = parameterUpdates.removeValue(forKey: handle) ?? []
        guard status == .success else {
            host.log("LE Connection Update on 0x\(String(handle, radix: 16)) failed: \(status)")
            for update in waiting { update.fail(BLEError.hci(.commandFailed(opcode: .leConnectionUpdate, status: status))) }
            return
        }
        links.withLink(handle) {
            $0.parameters = parameters
            $0.publish()
        }
        for update in waiting { update.succeed(parameters) }
    }

    func parameterUpdateTimedOut(_ update: OneShot<LinkParameters>, handle: UInt16) {
        guard !update.isFulfilled else { return }
        parameterUpdates[handle]?.removeAll { $0 === update }
        if parameterUpdates[handle]?.isEmpty != false { askedParameters[handle] = nil }
        update.fail(BLEError.timeout("no LE Connection Update Complete"))
    }

    /// The central answered our L2CAP Connection Parameter Update Request (Vol 3 Part A §4.21):
    /// on acceptance its LE Connection Update follows and completes the waiters; a rejection
    /// fails them, and the link keeps its parameters.
    func parameterUpdateAnswered(accepted: Bool, handle: UInt16, _ host: isolated some ConnectionDriver) {
        if accepted {
            // Parameters the link already has need no update, and the peripheral's controller
            // may then report none (§7.7.65.3): the request is done.
            guard let asked = askedParameters[handle], let now = links[handle]?.parameters,
                  asked.intervalMin <= now.interval, now.interval <= asked.intervalMax, now.latency == asked.latency,
                  now.supervisionTimeout == asked.timeout else { return }
            askedParameters[handle] = nil
            for update in parameterUpdates.removeValue(forKey: handle) ?? [] { update.succeed(now) }
            return
        }
        askedParameters[handle] = nil
        let waiting = parameterUpdates.removeValue(forKey: handle) ?? []
        host.log("the central rejected the connection parameters asked over L2CAP")
        for update in waiting {
            update.fail(BLEError.hci(.commandFailed(opcode: .leConnectionUpdate, status: .unacceptableConnectionParameters)))
        }
    }
}

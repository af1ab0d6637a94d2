import BLEHCI
import BLEHost
import BLEWire

extension HostController {
    /// Dispatches one decoded HCI event. Core spec Vol 4 Part E §7.7.
    func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete, .commandStatus:
            let (completions, toSend) = commandFlow.receive(event, now: now)
            toSend.forEach(sendCommandPacket)
            resolveCommands(completions)

        case let .numberOfCompletedPackets(entries):
            sendACL(aclFlow.completed(entries))
            for entry in entries { pumpNotifications(handle: entry.handle) }
            if !aclWaiters.isEmpty { releaseACLWaiters() }

        case let .disconnectionComplete(status, handle, reason):
            guard status == .success else {
                disconnectFailed(handle: handle, status: status)
                return
            }
            linkClosed(handle: handle, reason: reason, error: .disconnected(reason: reason))

        case let .hardwareError(code):
            fail(.hci(.hardwareError(code: code)))

        case let .encryptionChange(status, handle, enabled):
            if status == .success {
                links[handle]?.encrypted = enabled
                links[handle]?.security.encrypted = enabled
            }

        case let .le(meta):
            handle(meta)

        default:
            log("ignored event \(event)")
        }
    }

    private func handle(_ meta: LEMetaEvent) {
        switch meta {
        case let .connectionComplete(c):
            connectionCompleted(c)

        case let .advertisingReport(reports):
            for r in reports { receiveAdvertisingReport(r) }

        case let .extendedAdvertisingReport(reports):
            for r in reports { receiveAdvertisingReport(r) }

        case let .connectionUpdateComplete(status, handle, interval, latency, timeout):
            guard status == .success, var link = links[handle] else { return }
            link.parameters = LinkParameters(interval: interval, latency: latency, supervisionTimeout: timeout)
            links[handle] = link
            link.publish()

        case let .dataLengthChange(handle, maxTxOctets, _, maxRxOctets, _):
            guard var link = links[handle] else { return }
            link.maxTxOctets = Int(maxTxOctets)
            link.maxRxOctets = Int(maxRxOctets)
            links[handle] = link
            link.publish()

        case let .phyUpdateComplete(status, handle, txPHY, rxPHY):
            guard status == .success, var link = links[handle] else { return }
            link.txPHY = txPHY
            link.rxPHY = rxPHY
            links[handle] = link
            link.publish()

        case let .remoteConnectionParameterRequest(handle, intervalMin, intervalMax, latency, timeout):
            // Accept what the peer asks if it is within the spec's ranges (Vol 4 Part E §7.7.65.6);
            // otherwise refuse with Unacceptable Connection Parameters.
            let valid = LinkParameters.isValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: timeout)
            let reply: HCICommand = valid
                ? .leRemoteConnectionParameterRequestReply(handle: handle, intervalMin: intervalMin, intervalMax: intervalMax, maxLatency: latency, supervisionTimeout: timeout, minCELength: 0, maxCELength: 0)
                : .leRemoteConnectionParameterRequestNegativeReply(handle: handle, reason: .unacceptableConnectionParameters)
            Task(executorPreference: clock.taskExecutor) { try? await self.command(reply) }

        case let .longTermKeyRequest(handle, _, _):
            // No bonding yet (SMP arrives with the pairing issue): refuse, so the peer learns at once.
            Task(executorPreference: clock.taskExecutor) { try? await self.command(.leLongTermKeyRequestNegativeReply(handle: handle)) }

        default:
            log("ignored LE event \(meta)")
        }
    }
}

import BLEHCI
import BLEHost

/// The host's side of the enhanced credit-based mode (Core spec Vol 3 Part A §4.25–§4.28):
/// callers waiting for several channels at once and for a reconfiguration. Channels the peer
/// opens in this mode reach the listener exactly as LE credit-based ones do (`.opened`).
extension L2CAPChannelSessions {
    /// Opens `count` (1...5) channels to the peer of `linkID` on `psm` with one Credit Based
    /// Connection Request and waits for the answer (or the 30 s signaling timeout). Returns the
    /// channels the peer accepted, at least one; none accepted throws `.l2cap(.refused(result))`.
    func openEnhanced(linkID: UInt64, psm: UInt16, count: Int, parameters: CreditBasedChannelParameters,
                      _ host: isolated some L2CAPDriver) async throws -> [LECreditBasedChannel] {
        if let failure = host.failure { throw failure }
        guard let handle = host.linkHandle(forID: linkID) else { throw BLEError.notConnected }
        guard (0x0001...0x00FF).contains(psm) else { throw BLEError.invalidArgument("PSM \(psm) is outside 0x0001...0x00FF") }
        guard (1...5).contains(count) else { throw BLEError.invalidArgument("\(count) channels: one request opens 1...5") }
        guard parameters.isValidEnhanced, parameters.initialCredits > 0 else {
            throw BLEError.invalidArgument("MTU \(parameters.mtu) (≥ 64), MPS \(parameters.mps) (64...65533), credits \(parameters.initialCredits) (≥ 1)")
        }
        let token = host.makeToken()
        // As for one channel: the channels are made when the response arrives, and a caller
        // who gave up has them closed again.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<[LECreditBasedChannel], any Error>) in
                guard let actions = host.router.connectEnhanced(handle: handle, spsm: psm, parameters: parameters, count: count,
                                                                token: token, now: host.now) else {
                    c.resume(throwing: BLEError.l2cap(.refused(.noResourcesAvailable)))
                    return
                }
                enhancedWaiters.insert(token, c)
                enhancedHandles[token] = handle
                host.performSignaling(actions, handle: handle)
                host.rescheduleTimer()
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.l2cap.cancelEnhanced(token: token) } }
        }
    }

    private func cancelEnhanced(token: UInt64) {
        enhancedHandles[token] = nil
        enhancedWaiters.resume(token, with: .failure(CancellationError()))
        reconfigureWaiters.resume(token, with: .failure(CancellationError()))
    }

    /// Announces a new MTU and MPS for the open enhanced channels `ids`, all of one link
    /// (Credit Based Reconfigure Request, §4.27), and waits for the peer's answer.
    func reconfigure(ids: [UInt64], mtu: UInt16, mps: UInt16, _ host: isolated some L2CAPDriver) async throws {
        if let failure = host.failure { throw failure }
        var keys: [Key] = []
        for id in ids {
            guard let key = keysByID[id], channels[key] != nil else { throw BLEError.l2cap(.closed) }
            keys.append(key)
        }
        guard let handle = keys.first?.handle, keys.allSatisfy({ $0.handle == handle }) else {
            throw BLEError.invalidArgument("reconfigure 1...5 channels of one link")
        }
        let token = host.makeToken()
        let actions: [L2CAPControlAction]
        do {
            actions = try host.router.reconfigure(handle: handle, cids: keys.map(\.cid), mtu: mtu, mps: mps, token: token, now: host.now)
        } catch {
            throw BLEError.invalidArgument(Self.explain(error))
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: host) { (c: CheckedContinuation<Void, any Error>) in
                reconfigureWaiters.insert(token, c)
                enhancedHandles[token] = handle
                host.performSignaling(actions, handle: handle)
                host.rescheduleTimer()
            }
        } onCancel: {
            Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.l2cap.cancelEnhanced(token: token) } }
        }
    }

    private static func explain(_ problem: LESignalingChannel.ReconfigureProblem) -> String {
        func hex(_ cid: UInt16) -> String { "0x" + String(cid, radix: 16) }
        switch problem {
        case .channelCount: return "reconfigure 1...5 distinct channels"
        case let .notEnhanced(cid): return "channel \(hex(cid)) is not an open enhanced credit-based channel"
        case .outOfRange: return "MTU must be ≥ 64 and MPS 64...65533"
        case let .mtuReduction(cid): return "the MTU of channel \(hex(cid)) may not get smaller"
        case let .mpsReduction(cid): return "the MPS of channel \(hex(cid)) may not get smaller when several channels are reconfigured"
        case let .busy(cid): return "channel \(hex(cid)) is already being reconfigured"
        }
    }

    /// The router's enhanced-mode events for `handle`.
    func handleEnhanced(_ event: CreditBasedChannelEvent, handle: UInt16, _ host: isolated some L2CAPDriver) {
        switch event {
        case let .enhancedConnected(token, infos, _):
            enhancedHandles[token] = nil
            guard let linkID = host.link(handle)?.id else {
                enhancedWaiters.resume(token, with: .failure(BLEError.notConnected))
                return
            }
            let made = infos.map { makeChannel($0, handle: handle, linkID: linkID, host) }
            if !enhancedWaiters.resume(token, with: .success(made)) {
                for channel in made { close(id: channel.id, host) }
            }
        case let .reconfigured(token, _):
            enhancedHandles[token] = nil
            reconfigureWaiters.resume(token, with: .success(()))
        case let .reconfigureFailed(token, error):
            enhancedHandles[token] = nil
            reconfigureWaiters.resume(token, with: .failure(BLEError.l2cap(error)))
        case let .connectFailed(token, error) where enhancedHandles[token] != nil:
            enhancedHandles[token] = nil
            enhancedWaiters.resume(token, with: .failure(BLEError.l2cap(error)))
        default:
            // `.peerReconfigured`: the router holds the new values; `send` reads them there.
            break
        }
    }

    /// The channel `id`'s parameters as they are now (an enhanced channel's change with either
    /// side's reconfiguration); nil once it has closed.
    func currentInfo(id: UInt64, _ host: isolated some L2CAPDriver) -> CreditBasedChannelInfo? {
        guard let key = keysByID[id] else { return nil }
        return host.router.channel(handle: key.handle, cid: key.cid).map { c in
            var info = CreditBasedChannelInfo(spsm: c.spsm, localCID: c.localCID, remoteCID: c.remoteCID, local: c.local, remote: c.remote)
            info.mode = c.mode
            return info
        }
    }
}

import BLE
import BLESystems

/// Pandora's `L2CAP` service (pandora/l2cap.proto) for LE credit-based channels, both modes
/// (Core spec Vol 3 Part A §4.22, §4.25). Basic (BR/EDR) channels and fixed channels are not
/// an LE host's to open through it: UNIMPLEMENTED.
extension PandoraStack {
    /// Runs an L2CAP request; nil when `request` is not one.
    func l2cap(_ request: ControlRequest, emit: @escaping @Sendable (JSON) async -> Void) async throws -> JSON? {
        switch request.op {
        case "l2capConnect":
            let r = try record(try request.connection())
            guard !r.down else { throw ControlError(.failedPrecondition, "connection \(try request.connection()) is down") }
            let (psm, parameters, enhanced) = try channelRequest(request)
            let channel: LECreditBasedChannel
            do {
                switch (r.link, enhanced) {
                case let (.asCentral(p), false): channel = try await p.openL2CAPChannel(psm: psm, parameters: parameters)
                case let (.asCentral(p), true): channel = try await p.openL2CAPChannels(psm: psm, count: 1, parameters: parameters)[0]
                case let (.asPeripheral(c, manager), false): channel = try await manager.openL2CAPChannel(to: c, psm: psm, parameters: parameters)
                case let (.asPeripheral(c, manager), true): channel = try await manager.openL2CAPChannels(to: c, psm: psm, count: 1, parameters: parameters)[0]
                }
            } catch let error as BLEError {
                if case .l2cap = error { return .object([("error", .string("command_not_understood")), ("detail", .string("\(error)"))]) }
                throw error
            }
            return .object([("channel", .int(Int(await channels.add(channel))))])
        case "l2capWaitConnection":
            let r = try record(try request.connection())
            let (psm, parameters, _) = try channelRequest(request)
            let manager = try requireManager()
            guard let channel = try await channels.waitForChannel(psm: psm, from: r.peer, listen: {
                try await manager.listenL2CAP(psm: psm, parameters: parameters)
            }) else { throw ControlError(Task.isCancelled ? .cancelled : .aborted, Task.isCancelled ? "cancelled" : "the stack was reset") }
            return .object([("channel", .int(Int(await channels.add(channel))))])
        case "l2capSend":
            let channel = try await channels.channel(try channelCookie(request))
            let data = try request.hex("data") ?? []
            guard data.count <= channel.peerMTU else {
                throw ControlError(.invalidArgument, "l2capSend: \(data.count) bytes exceed the peer's MTU of \(channel.peerMTU)")
            }
            try await channel.send(data)
            return .object([])
        case "l2capReceive":
            let cookie = try channelCookie(request)
            while let sdu = try await channels.next(cookie) {
                if Task.isCancelled {
                    await channels.putBack(sdu, cookie)
                    throw CancellationError()
                }
                await emit(.object([("data", .hex(sdu))]))
            }
            return nil
        case "l2capDisconnect":
            try await channels.close(try channelCookie(request))
            return .object([])
        case "l2capWaitDisconnection":
            try await channels.waitUntilClosed(try channelCookie(request))
            return .object([])
        default:
            return nil
        }
    }

    private func channelCookie(_ request: ControlRequest) throws(ControlError) -> UInt64 {
        UInt64(try request.int("channel", in: 0...Int(Int32.max)))
    }

    /// SPSM, parameters and mode of a Connect / WaitConnection (zeros take our defaults).
    private func channelRequest(_ request: ControlRequest) throws(ControlError) -> (UInt16, CreditBasedChannelParameters, Bool) {
        let mode = try request.string("mode")
        guard mode == "le_credit_based" || mode == "enhanced_credit_based" else {
            throw ControlError(.unimplemented, "\(mode) channels: this is an LE-only host (LE credit-based and enhanced credit-based channels only)")
        }
        let enhanced = mode == "enhanced_credit_based"
        let psm = UInt16(try request.int("spsm", in: 1...255))
        let defaults: CreditBasedChannelParameters = enhanced ? .enhancedStandard : .standard
        let mtu = try request.int("mtu", in: 0...65535, default: 0)
        let mps = try request.int("mps", in: 0...65533, default: 0)
        let credits = try request.int("initialCredit", in: 0...65535, default: 0)
        let parameters = CreditBasedChannelParameters(mtu: mtu == 0 ? defaults.mtu : UInt16(mtu), mps: mps == 0 ? defaults.mps : UInt16(mps),
                                                      initialCredits: credits == 0 ? defaults.initialCredits : UInt16(credits))
        guard parameters.isValid else { throw ControlError(.invalidArgument, "\(request.op): MTU ≥ 23, MPS 23...65533") }
        return (psm, parameters, enhanced)
    }
}

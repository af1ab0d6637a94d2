import BLEHCI
import BLEHost

extension CreditBasedChannelParameters {
    /// What an enhanced credit-based channel offers unless told otherwise: as `.standard`
    /// (MTU 4096, MPS 247, 16 credits), which meets the mode's minimum of 64 (Core spec Vol 3
    /// Part A §4.25).
    public static let enhancedStandard = CreditBasedChannelParameters.standard
}

extension LECreditBasedChannel {
    /// The mode the channel was opened in: LE credit-based (§4.22) or enhanced (§4.25).
    public var mode: CreditBasedMode { info.mode }

    /// The channel's parameters now: an enhanced channel's MTU and MPS change when either side
    /// reconfigures it (§4.27), while `info` keeps those it opened with. Nil once it has closed.
    public func currentInfo() async -> CreditBasedChannelInfo? {
        await host.run { [id] in $0.l2cap.currentInfo(id: id, $0) }
    }

    /// Raises this enhanced channel's MTU (and sets its MPS; by default the current one) with a
    /// Credit Based Reconfigure Request (Vol 3 Part A §4.27) and waits for the peer's answer.
    /// The MTU may not get smaller; the MPS may, for one channel. Fails with
    /// `.l2cap(.reconfigureRefused(result))` when the peer refuses (the old values stay),
    /// `.l2cap(.rejected)` when it does not know the command, `.l2cap(.timeout)` after 30 s
    /// (the channel is then disconnected), `.invalidArgument` before anything is sent when
    /// the values are not allowed or the channel is an LE credit-based one.
    public func reconfigure(mtu: UInt16, mps: UInt16? = nil) async throws {
        let current = await currentInfo()?.local.mps ?? info.local.mps
        try await Self.reconfigure([self], mtu: mtu, mps: mps ?? current)
    }

    /// Reconfigures up to five enhanced channels of one link at once to the same MTU and MPS
    /// (§4.27): neither may get smaller on any of them when there is more than one.
    public static func reconfigure(_ channels: [LECreditBasedChannel], mtu: UInt16, mps: UInt16) async throws {
        guard let host = channels.first?.host, channels.allSatisfy({ $0.host === host }) else {
            throw BLEError.invalidArgument("reconfigure 1...5 channels of one host")
        }
        let ids = channels.map(\.id)
        try await host.run { try await $0.l2cap.reconfigure(ids: ids, mtu: mtu, mps: mps, $0) }
    }
}

extension HostController {
    /// Opens `count` enhanced channels on `linkID`; a refusal for want of security raises it and
    /// tries once more, as for one LE credit-based channel.
    func openL2CAPChannels(linkID: UInt64, psm: UInt16, count: Int, parameters: CreditBasedChannelParameters) async throws -> [LECreditBasedChannel] {
        try await raisingSecurityOnRefusal(linkID: linkID) {
            try await l2cap.openEnhanced(linkID: linkID, psm: psm, count: count, parameters: parameters, self)
        }
    }
}

extension Peripheral {
    /// Opens `count` (1...5) enhanced credit-based channels to the peripheral on `psm` with one
    /// Credit Based Connection Request (Core spec Vol 3 Part A §4.25; MTU ≥ 64, MPS 64–65533).
    /// The peer may accept only some: the array holds those it opened (at least one). Fails with
    /// `BLEError.l2cap(.refused(result))` when it refuses them all (a refusal for security
    /// raises it and tries again), `.l2cap(.rejected)` when it lacks the enhanced mode,
    /// `.l2cap(.timeout)` after 30 s.
    public func openL2CAPChannels(psm: UInt16, count: Int,
                                  parameters: CreditBasedChannelParameters = .enhancedStandard) async throws -> [LECreditBasedChannel] {
        try await host.openL2CAPChannels(linkID: linkID, psm: psm, count: count, parameters: parameters)
    }
}

extension PeripheralManager {
    /// Opens `count` (1...5) enhanced credit-based channels to a connected central on `psm`
    /// (Vol 3 Part A §4.25), as `Peripheral.openL2CAPChannels(psm:count:parameters:)`.
    public func openL2CAPChannels(to central: ConnectedCentral, psm: UInt16, count: Int,
                                  parameters: CreditBasedChannelParameters = .enhancedStandard) async throws -> [LECreditBasedChannel] {
        try await host.openL2CAPChannels(linkID: central.id, psm: psm, count: count, parameters: parameters)
    }
}

extension Central {
    /// Accepts channels on `psm` in the given `modes` only (Vol 3 Part A §4.22, §4.25); a
    /// request in another mode is refused with "SPSM not supported". Without `modes`, a listener
    /// takes both.
    public func listenL2CAP(psm: UInt16, security: L2CAPSecurityRequirement = .none,
                            parameters: CreditBasedChannelParameters = .standard,
                            modes: Set<CreditBasedMode>) async throws -> L2CAPListener {
        try await host.listenL2CAP(psm: psm, security: security, parameters: parameters, modes: modes)
    }
}

extension PeripheralManager {
    /// Accepts channels on `psm` in the given `modes` only (Vol 3 Part A §4.22, §4.25), as
    /// `Central.listenL2CAP(psm:security:parameters:modes:)`.
    public func listenL2CAP(psm: UInt16, security: L2CAPSecurityRequirement = .none,
                            parameters: CreditBasedChannelParameters = .standard,
                            modes: Set<CreditBasedMode>) async throws -> L2CAPListener {
        try await host.listenL2CAP(psm: psm, security: security, parameters: parameters, modes: modes)
    }
}

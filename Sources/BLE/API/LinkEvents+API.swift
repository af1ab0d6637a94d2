import BLEHost

extension Peripheral {
    /// The link's connection parameters each time an LE Connection Update Complete changes
    /// them (Core spec Vol 4 Part E §7.7.65.3), whoever asked; ends after the disconnect.
    public var connectionParameterUpdates: AsyncStream<LinkParameters> { observation.parameterUpdates() }

    /// Every change of this link's security from now on (`LinkSecurityEvent`), whoever started
    /// it: our `pair()`, a pairing the peripheral asked for with a Security Request (Core spec
    /// Vol 3 Part H §3.6.7), encryption with a bond's key. Ends after the disconnect.
    public var securityEvents: AsyncStream<LinkSecurityEvent> { observation.securityEvents() }
}

extension PeripheralManager {
    /// Every change of `central`'s link security from now on: its pairings (also reported as
    /// `.paired` / `.pairingFailed` events), encryption with a bond's key, and failures. Ends
    /// after the disconnect, and at once when the central is no longer connected.
    public func securityEvents(for central: ConnectedCentral) async -> AsyncStream<LinkSecurityEvent> {
        guard let observation = await observation(of: central) else { return AsyncStream { $0.finish() } }
        return observation.securityEvents()
    }

    /// `central`'s connection parameters each time an LE Connection Update Complete changes
    /// them (Vol 4 Part E §7.7.65.3); ends after the disconnect, at once when it is gone.
    public func connectionParameterUpdates(for central: ConnectedCentral) async -> AsyncStream<LinkParameters> {
        guard let observation = await observation(of: central) else { return AsyncStream { $0.finish() } }
        return observation.parameterUpdates()
    }

    /// `central`'s connection parameters now; nil once it is gone.
    public func connectionParameters(of central: ConnectedCentral) async -> LinkParameters? {
        await observation(of: central)?.snapshot.parameters
    }

    private func observation(of central: ConnectedCentral) async -> LinkObservation? {
        await host.run { host in host.linkHandle(forID: central.id).flatMap { host.link($0)?.observation } }
    }

    /// `central`'s link security now (Vol 3 Part C §10.2.1); `.none` once it is gone.
    public func securityLevel(of central: ConnectedCentral) async -> SecurityLevel {
        await host.run { $0.security.level(linkID: central.id, $0) }
    }
}

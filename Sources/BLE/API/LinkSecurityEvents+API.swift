import BLEHost

extension Peripheral {
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
        let observation = await host.run { host -> LinkObservation? in
            host.linkHandle(forID: central.id).flatMap { host.link($0)?.observation }
        }
        guard let observation else { return AsyncStream { $0.finish() } }
        return observation.securityEvents()
    }

    /// `central`'s link security now (Vol 3 Part C §10.2.1); `.none` once it is gone.
    public func securityLevel(of central: ConnectedCentral) async -> SecurityLevel {
        await host.run { $0.security.level(linkID: central.id, $0) }
    }
}

import BLEHost

/// Enhanced ATT on this link (Core spec Vol 3 Part G §5.3, Part F §3.2.11): besides the
/// unenhanced bearer, the client may have several Enhanced ATT bearers to the server, on which
/// independent procedures run in parallel. On an encrypted link to a server that offers EATT
/// (Server Supported Features bit 0, §7.4) the host opens `HostConfiguration.enhancedATTBearers`
/// of them in the background; nothing changes for a server that does not.
extension Peripheral {
    /// How many Enhanced ATT bearers are open on this link now (0 when disconnected).
    public func enhancedATTBearerCount() async -> Int {
        await host.run { [linkID] in await $0.client.enhancedBearerCount(linkID: linkID, waitingForSetUp: false, $0) } ?? 0
    }

    /// Waits for the background set-up of Enhanced ATT bearers to end, if one runs (it starts
    /// when the link is encrypted, Vol 3 Part G §5.3.1), and returns how many are open then.
    /// The set-up is bounded by the ATT and L2CAP signalling timeouts, so this returns; a
    /// cancelled caller returns at once with the count open then.
    public func enhancedATTBearersSettled() async -> Int {
        await host.run { [linkID] in await $0.client.enhancedBearerCount(linkID: linkID, waitingForSetUp: true, $0) } ?? 0
    }

    /// Opens `count` (1...5) more Enhanced ATT bearers now, with one L2CAP Credit Based
    /// Connection Request on SPSM 0x0027 (Vol 3 Part A §4.25), raising security first if the
    /// server refuses for want of it; returns how many the server accepted. For a server whose
    /// EATT support the background set-up did not see.
    @discardableResult
    public func openEnhancedATTBearers(count: Int) async throws -> Int {
        guard (1...5).contains(count) else { throw BLEError.invalidArgument("\(count) Enhanced ATT bearers: one request opens 1...5") }
        return try await host.run { [linkID] in try await $0.openEnhancedATTBearers(linkID: linkID, count: count) }.count
    }
}

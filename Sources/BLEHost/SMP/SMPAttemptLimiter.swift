import BLEWire

/// Repeated Attempts (Core spec Vol 3 Part H §2.3.6): after an authentication failure a peer
/// must wait before the next pairing is accepted, the wait doubling with each failure up to a
/// ceiling and reset by a success. A peer that tries too soon gets Pairing Failed "Repeated
/// Attempts" without any pairing work; after a few failures from any addresses that this side
/// detected itself (a wrong guess checked here), every peer waits, since an attacker can change
/// its address for each guess. A failure a peer merely reports costs it nothing to send, so it
/// slows only that peer: made-up reports cannot lock everyone out. The global count is not
/// cleared by a success (one Just Works pairing would wipe it) but lapses after a quiet
/// `globalMemory`. Sans-IO: `now` comes from the owner. The table is bounded, so a flood of
/// made-up addresses cannot grow it without limit.
public struct SMPAttemptLimiter: Sendable {
    /// The wait after a peer's first counted failure; each further failure doubles it.
    public var initialInterval: Duration
    /// The ceiling of the doubling wait.
    public var maximumInterval: Duration
    /// How many peers are tracked; past it, the peer whose wait ends soonest is forgotten.
    public var capacity: Int
    private var peers: [DeviceAddress: (failures: Int, until: Duration)] = [:]
    /// Failures from any address since the last success: a central can make up a new address
    /// for every attempt, so after `globalAllowance` of them every peer waits too.
    private var global: (failures: Int, until: Duration) = (0, .zero)
    /// How many failures, from any addresses, before every peer waits (the global back-off).
    public var globalAllowance = 3
    /// How long after the last locally detected failure the global count is forgotten.
    public var globalMemory: Duration = .seconds(300)
    private var lastGlobalFailure: Duration = .zero

    /// Defaults: a 2-second wait, doubling up to 64 seconds, for at most 256 peers.
    public init(initialInterval: Duration = .seconds(2), maximumInterval: Duration = .seconds(64), capacity: Int = 256) {
        self.initialInterval = initialInterval
        self.maximumInterval = maximumInterval
        self.capacity = capacity
    }

    /// The failures that prove nothing but a wrong guess, which is what the back-off slows down.
    public static func counts(_ reason: SMPPairingFailedReason) -> Bool {
        [.confirmValueFailed, .passkeyEntryFailed, .dhKeyCheckFailed, .numericComparisonFailed].contains(reason)
    }

    /// Whether `peer` may pair now.
    public func mayPair(_ peer: DeviceAddress, now: Duration) -> Bool {
        if global.failures >= globalAllowance && now < global.until { return false }
        guard let entry = peers[peer] else { return true }
        return now >= entry.until
    }

    /// When `peer` may pair again, if it has to wait.
    public func waitingUntil(_ peer: DeviceAddress) -> Duration? { peers[peer]?.until }

    /// A pairing with `peer` failed with `reason`: detected by this side (`local`), or reported
    /// by the peer in its Pairing Failed.
    public mutating func failed(_ peer: DeviceAddress, reason: SMPPairingFailedReason, local: Bool = true, now: Duration) {
        guard Self.counts(reason) else { return }
        let failures = (peers[peer]?.failures ?? 0) + 1
        var wait = initialInterval
        for _ in 1..<min(failures, 32) where wait < maximumInterval { wait = wait * 2 }
        peers[peer] = (failures, now + min(wait, maximumInterval))
        if peers.count > capacity, let oldest = peers.min(by: { $0.value.until < $1.value.until })?.key {
            peers[oldest] = nil
        }
        guard local else { return }
        if now - lastGlobalFailure > globalMemory { global = (0, .zero) }
        lastGlobalFailure = now
        global.failures += 1
        if global.failures >= globalAllowance {
            var globalWait = initialInterval
            for _ in 0..<min(global.failures - globalAllowance, 32) where globalWait < maximumInterval { globalWait = globalWait * 2 }
            global.until = now + min(globalWait, maximumInterval)
        }
    }

    /// A pairing with `peer` succeeded: `peer` waits no more (the global back-off stands).
    public mutating func succeeded(_ peer: DeviceAddress) {
        peers[peer] = nil
    }
}

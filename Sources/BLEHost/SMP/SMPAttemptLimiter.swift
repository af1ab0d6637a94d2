import BLEWire

/// Repeated Attempts (Core spec Vol 3 Part H §2.3.6): after an authentication failure a peer
/// must wait before the next pairing is accepted, the wait doubling with each failure up to a
/// ceiling and reset by a success. A peer that tries too soon gets Pairing Failed "Repeated
/// Attempts" without any pairing work; after a few failures from any addresses, every peer waits
/// (an attacker can change its address for each guess). Sans-IO: `now` comes from the owner. The table is bounded,
/// so a flood of made-up addresses cannot grow it without limit.
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

    /// A pairing with `peer` failed with `reason`.
    public mutating func failed(_ peer: DeviceAddress, reason: SMPPairingFailedReason, now: Duration) {
        guard Self.counts(reason) else { return }
        let failures = (peers[peer]?.failures ?? 0) + 1
        var wait = initialInterval
        for _ in 1..<min(failures, 32) where wait < maximumInterval { wait = wait * 2 }
        peers[peer] = (failures, now + min(wait, maximumInterval))
        global.failures += 1
        if global.failures >= globalAllowance {
            var globalWait = initialInterval
            for _ in 0..<min(global.failures - globalAllowance, 32) where globalWait < maximumInterval { globalWait = globalWait * 2 }
            global.until = now + min(globalWait, maximumInterval)
        }
        if peers.count > capacity, let oldest = peers.min(by: { $0.value.until < $1.value.until })?.key {
            peers[oldest] = nil
        }
    }

    /// A pairing with `peer` succeeded: no more waiting.
    public mutating func succeeded(_ peer: DeviceAddress) {
        peers[peer] = nil
        global = (0, .zero)
    }
}

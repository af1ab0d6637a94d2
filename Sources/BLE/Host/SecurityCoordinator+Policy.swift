import BLEHCI
import BLEHost
import BLEWire

// What the Security Manager allows, apart from the pairing machine's own checks: a fixed passkey
// serves one pairing, in this host's life and, through the bond store, across restarts (one
// recorded Passkey Entry pairing reveals all of it, Vol 3 Part H §2.3.5.6.3); a bonded peer may
// not replace its bond with an unauthenticated key from a pairing it started.
extension SecurityCoordinator {
    /// Whether the fixed passkey was shown before, by this host or (the bond store says) by an
    /// earlier run. A store that cannot answer counts it as shown: a random passkey costs nothing.
    func fixedPasskeyIsRetired(_ host: isolated some SecurityDriver) -> Bool {
        if let fixedPasskeyRetired { return fixedPasskeyRetired }
        guard let fixed = settings.pairing.displayedPasskey else { return false }
        var retired = false
        do {
            retired = try settings.bondStore?.isPasskeyRetired(fixed) ?? false
        } catch {
            host.log("bond store: \(error); not using the fixed passkey")
            retired = true
        }
        if retired { host.log("the fixed passkey was used before: pairings show random passkeys") }
        fixedPasskeyRetired = retired
        return retired
    }

    /// The fixed passkey is about to be used: it is not used again in this host's life, and the
    /// bond store records that before anyone sees it, so a restart does not bring it back. False
    /// when the store could not record it: then it must not be used at all (fail closed, as a
    /// SignCounter the store cannot record is not used), since after a restart nothing would
    /// say it was.
    func retireFixedPasskey(_ value: UInt32, _ host: isolated some SecurityDriver) -> Bool {
        fixedPasskeyRetired = true
        for h in machines.keys { machines[h]?.settings.displayedPasskey = nil }
        do {
            try settings.bondStore?.retirePasskey(value)
            host.log("the fixed passkey is used once: later pairings show random passkeys and refuse it typed")
            return true
        } catch {
            host.log("recording that the fixed passkey was used failed: \(error); it is not used (after a restart nothing would say it was), and later pairings use random passkeys")
            return false
        }
    }

    /// Whether `typed` is the fixed passkey and was used before; if it is the fixed passkey
    /// and was not, it is retired now. Typed or shown, it is the same 20-bit secret that one
    /// recorded pairing reveals (Vol 3 Part H §2.3.5.6.3), so it serves one pairing either way.
    func typedFixedPasskeyWasUsed(_ typed: UInt32?, _ host: isolated some SecurityDriver) -> Bool {
        guard let typed, typed == settings.pairing.displayedPasskey else { return false }
        if fixedPasskeyIsRetired(host) { return true }
        // Not recorded: refused as if used, so it is not used unrecorded.
        return !retireFixedPasskey(typed, host)
    }

    /// Whether a pairing on `link` must not give its bonded peer an unauthenticated key:
    /// the peer is bonded, the pairing is not the application's own (`explicit`), and
    /// `allowsUnauthenticatedBondReplacement` is off.
    func protectsBond(of link: Link, explicit: Bool, _ host: isolated some SecurityDriver) -> Bool {
        guard !settings.allowsUnauthenticatedBondReplacement, !explicit else { return false }
        return bond(for: link.peer, host) != nil
    }
}

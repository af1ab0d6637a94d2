import BLEHost
import BLEWire

// Data signing (Core spec Vol 3 Part C §10.4, Vol 3 Part H §2.4.5) with the keys bonds keep:
// the peer's CSRK and its last accepted SignCounter to verify its Signed Write Commands, our
// CSRK as we gave it and our next SignCounter to sign ours. The bond is found as for
// encryption, by the peer's identity (its identity address, the address it paired from, or an
// RPA its IRK resolves), so a peer that changed its private address is still known.
//
// Counters are stored before they take effect, so a restart can never open a replay: a signed
// write we receive is applied only once its counter is in the bond store (if the store cannot
// record it, the write is dropped, like any failed command), and our own counter is stored one
// higher before the write that uses it goes out (if it cannot be, nothing is sent).
extension SecurityCoordinator {
    /// What our server checks a signed write from `peer` (a link's peer address) against: nil
    /// when the peer is not bonded or gave no CSRK.
    /// None in Secure Connections Only mode, which allows only mode 1 level 4 (Vol 3 Part C
    /// §10.2.4): data signing is security mode 2, so no signed write is taken there.
    func peerSigningKey(from peer: DeviceAddress, _ host: isolated some SecurityDriver) -> ATTPeerSigningKey? {
        guard !settings.pairing.secureConnectionsOnly else { return nil }
        guard let b = bond(for: peer, host), let key = b.peerSignatureKey else { return nil }
        return ATTPeerSigningKey(key: key, lastCounter: b.peerSignCounter, authenticated: b.authenticated, keySize: b.keySize)
    }

    /// Records `counter` as the last SignCounter accepted from `peer` (a link's peer address);
    /// false when the bond is gone or the store could not write it, and then the write must not
    /// be applied.
    func acceptPeerSignCounter(_ counter: UInt32, from peer: DeviceAddress, _ host: isolated some SecurityDriver) -> Bool {
        guard var b = bond(for: peer, host), b.peerSignatureKey != nil else { return false }
        if let last = b.peerSignCounter, counter <= last { return false }
        b.peerSignCounter = counter
        return store(b, replacing: true, host)
    }

    /// The key and counter for our next signed write to `peer` (a link's peer address), after storing the
    /// counter one higher in the bond. Throws `BLEError.security(.unavailable)` when the peer is
    /// not bonded, we gave it no CSRK, the counter is used up, the store cannot record it, or
    /// the host is in Secure Connections Only mode.
    func takeLocalSignCounter(towards peer: DeviceAddress, _ host: isolated some SecurityDriver) throws(BLEError) -> (key: [UInt8], counter: UInt32) {
        guard !settings.pairing.secureConnectionsOnly else {
            throw .security(.unavailable("Secure Connections Only mode allows only encrypted level 4 links (Vol 3 Part C §10.2.4), not signed writes: write over an encrypted link"))
        }
        guard var b = bond(for: peer, host) else {
            throw .security(.unavailable("no bond with \(peer): pair with bonding before signing writes to it"))
        }
        guard let key = b.localSignatureKey else {
            throw .security(.unavailable("we gave \(peer) no signing key (CSRK) when pairing: pair again to sign writes to it"))
        }
        let counter = b.localSignCounter
        guard counter < UInt32.max else {
            throw .security(.unavailable("the SignCounter towards \(peer) is used up: pair again for a new signing key"))
        }
        b.localSignCounter = counter + 1
        guard store(b, replacing: true, host) else {
            throw .security(.unavailable("the bond store could not record the SignCounter towards \(peer); nothing was sent"))
        }
        return (key, counter)
    }
}

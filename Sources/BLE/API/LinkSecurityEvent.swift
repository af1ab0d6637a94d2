import BLEHost

/// What happened to a link's security, as `Peripheral.securityEvents` and
/// `PeripheralManager.securityEvents(for:)` report it: pairings either side started, their
/// failures, and encryption with a stored key (Core spec Vol 3 Part H §2.3–§2.4).
public enum LinkSecurityEvent: Sendable, Hashable {
    /// A pairing ended with keys; the link is encrypted with the new one.
    case paired(PairingResult)
    /// A pairing ended without keys, with the Pairing Failed reason and its side.
    case pairingFailed(SMPPairingError)
    /// The link was encrypted (or its key refreshed) without a pairing, at this level: the key
    /// of a bond (HCI Encryption Change, Vol 4 Part E §7.7.8).
    case encrypted(SecurityLevel)
    /// Encryption failed with this HCI status (e.g. PIN or Key Missing, 0x06, when the peer
    /// has no longer the bond's key).
    case encryptionFailed(status: UInt8)
}

import BLEHost
import BLEWire

/// How the host secures links: what it offers in pairing, where bonds live, who answers the
/// user's questions, and whether GATT raises security by itself the way iOS does.
public struct SecuritySettings: Sendable {
    /// IO capability, bonding, MITM, Secure Connections (Only), key sizes and key distribution
    /// (Core spec Vol 3 Part H §3.5.1).
    public var pairing = SMPPairingSettings()
    /// Where bonds are kept; nil keeps them only for this host's lifetime.
    public var bondStore: (any BondStore)?
    /// Answers passkey, numeric comparison and approval questions.
    public var agent: any PairingAgent = FixedPairingAgent(confirms: false)
    /// The GATT client, on Insufficient Authentication / Encryption / Encryption Key Size,
    /// encrypts with a bond's key or pairs, then retries the request once (`--no-pair` clears it).
    public var raisesSecurityOnDemand = true
    /// The central answers a peripheral's Security Request (Vol 3 Part H §3.6.7) by encrypting
    /// with a bond's key, or by pairing.
    public var answersSecurityRequests = true
    /// The GATT server's shortest acceptable encryption key for attributes that need
    /// encryption (Insufficient Encryption Key Size below it).
    public var minimumServerKeySize = 16
    /// Back-off after failed pairings (Repeated Attempts, Vol 3 Part H §2.3.6).
    public var attemptLimiter = SMPAttemptLimiter()
    /// Bonded peers' IRKs go into the controller's resolving list, with address resolution on
    /// (Vol 6 Part B §6), when the controller has one; the host resolves RPAs itself either way.
    public var usesControllerAddressResolution = true
    /// Whether a pairing the peer started (its Pairing Request or Security Request, or a GATT
    /// server's security error) may replace the bond of a bonded device with an unauthenticated
    /// (Just Works) key. Off by default, as in Zephyr: anyone can copy a bonded device's address
    /// and pair Just Works, and the real device's keys would stop working. Such a pairing fails
    /// with Authentication Requirements (`SMPPairingError.existingBondKept`, and the
    /// `.pairingFailed` event on a peripheral); our own `pair()` and removing the bond still
    /// replace it.
    public var allowsUnauthenticatedBondReplacement = false
    /// At most this many bonds are kept: every pairing from a new identity would add one. When
    /// full, an authenticated bond takes the place of an unauthenticated one.
    public var maximumBonds = 512

    /// Defaults: Just Works with bonding, Secure Connections preferred, keys in memory.
    public init() {}
}

/// What a finished pairing gave a link.
public struct PairingResult: Sendable, Hashable, CustomStringConvertible {
    /// LE Secure Connections (true) or LE legacy pairing.
    public var secureConnections: Bool
    /// The association model the IO capabilities chose.
    public var method: SMPAssociationModel
    /// The negotiated encryption key size, 7...16 octets.
    public var keySize: Int
    /// The level the link is at now.
    public var securityLevel: SecurityLevel
    /// Both sides asked to bond, and the keys were stored.
    public var bonded: Bool
    /// The key kinds each side distributed.
    public var keysSent: SMPKeyDistribution
    /// The key kinds the peer distributed to us (`keysSent`: the ones we distributed).
    public var keysReceived: SMPKeyDistribution
    /// The peer's identity address, when it distributed one.
    public var peerIdentity: DeviceAddress?

    /// One line for logs: pairing kind, method, key size, security level and whether bonded.
    public var description: String {
        "\(secureConnections ? "Secure Connections" : "legacy") \(method), key size \(keySize), level \(securityLevel.rawValue)\(bonded ? ", bonded" : "")"
    }
}

extension SMPKeyDistribution {
    /// The key kinds by name: `ltk`, `irk`, `csrk`.
    public var names: [String] {
        var n: [String] = []
        if contains(.encryptionKey) { n.append("ltk") }
        if contains(.identityKey) { n.append("irk") }
        if contains(.signingKey) { n.append("csrk") }
        return n
    }
}

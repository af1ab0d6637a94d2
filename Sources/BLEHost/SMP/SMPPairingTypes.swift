import BLECrypto
import BLEWire

/// What this device offers and demands when it pairs (Core spec Vol 3 Part H §2.3, §3.5.1).
public struct SMPPairingSettings: Sendable, Hashable {
    /// What this device can show and input, declared in the feature exchange; with the peer's it
    /// picks the association model (§2.3.5.1).
    public var ioCapability: SMPIOCapability
    /// Bonding_Flags: store the keys for later reconnections.
    public var bonding: Bool
    /// Demand MITM protection: pairing that would end unauthenticated fails with
    /// Authentication Requirements.
    public var mitm: Bool
    /// Set the MITM bit without demanding it: an authenticated model when the IO capabilities
    /// allow one, Just Works otherwise (what iOS asks for).
    public var requestsMITM = false
    /// Offer LE Secure Connections.
    public var secureConnections: Bool
    /// Secure Connections Only mode (Vol 3 Part C §10.2.4): legacy pairing and keys shorter than
    /// 16 octets are refused.
    public var secureConnectionsOnly: Bool
    /// The smallest encryption key size accepted (7...16 octets, §2.3.4; `validate()` refuses others). 16 by default, as iOS
    /// and Android require: the key size is not covered by the DHKey check, so a relay could
    /// otherwise talk both sides down to 56-bit keys.
    public var minimumKeySize: UInt8
    /// The largest key size offered (7...16 octets, at least `minimumKeySize`).
    public var maximumKeySize: UInt8
    /// The keys this device gives (LTK only matters for legacy pairing).
    public var distributes: SMPKeyDistribution
    /// The keys this device asks the peer for.
    public var requests: SMPKeyDistribution
    /// Ask the application before answering a peer's Pairing Request (responder only).
    public var asksApproval: Bool
    /// The passkey to show when this side displays one (`ble --passkey`); nil draws a fresh
    /// random one per pairing, as §2.3.5.3 recommends.
    public var displayedPasskey: UInt32?
    /// Accept a peer using the specification's debug key pair (Vol 3 Part H §2.3.5.6.1): anyone
    /// who records that pairing can compute its keys, so it is refused unless this is set (for
    /// sniffer-friendly tests and fuzzing).
    public var acceptsDebugKeys = false
    /// Ask the user to accept a Just Works pairing before it goes on (`.confirmJustWorks`,
    /// answered with `justWorksConfirmed`): where a comparison would be shown in Secure
    /// Connections (Vol 3 Part H §2.3.5.6.2, step 6, where the user may be asked to accept),
    /// before the confirm value in legacy pairing (§2.3.5.2). Off: Just Works goes on by itself.
    public var confirmsJustWorks = false

    /// Defaults: NoInputNoOutput (Just Works) with bonding, no MITM demand, Secure Connections
    /// offered, key sizes 7...16, and LTK, IRK and CSRK both given and asked for.
    public init(ioCapability: SMPIOCapability = .noInputNoOutput, bonding: Bool = true, mitm: Bool = false,
                secureConnections: Bool = true, secureConnectionsOnly: Bool = false,
                minimumKeySize: UInt8 = 16, maximumKeySize: UInt8 = 16,
                distributes: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
                requests: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
                asksApproval: Bool = false, displayedPasskey: UInt32? = nil) {
        self.ioCapability = ioCapability
        self.bonding = bonding
        self.mitm = mitm
        self.secureConnections = secureConnections
        self.secureConnectionsOnly = secureConnectionsOnly
        self.minimumKeySize = minimumKeySize
        self.maximumKeySize = maximumKeySize
        self.distributes = distributes
        self.requests = requests
        self.asksApproval = asksApproval
        self.displayedPasskey = displayedPasskey
    }

    /// The AuthReq octet these settings send (§3.5.1). Keypress and CT2 are never set: this
    /// stack sends no keypress notifications and derives no BR/EDR keys.
    var authRequirements: SMPAuthRequirements {
        var a: SMPAuthRequirements = []
        if bonding { a.insert(.bonding) }
        // Secure Connections Only pairs only at level 4, which is authenticated: without the
        // flag from either side the peer would choose Just Works (§2.3.5.1) and fail it.
        if mitm || requestsMITM || secureConnectionsOnly { a.insert(.mitm) }
        if secureConnections || secureConnectionsOnly { a.insert(.secureConnections) }
        return a
    }
}

/// Why `SMPPairingSettings` cannot be used: refused when the host is opened, before anything
/// reaches the wire.
public enum SMPSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `minimumKeySize` or `maximumKeySize` outside 7...16 octets, or the minimum above the
    /// maximum (Core v5.4 Vol 3 Part H §2.3.4; other values are reserved in the Maximum
    /// Encryption Key Size field, §3.5.1).
    case keySizeOutOfRange(minimum: UInt8, maximum: UInt8)

    /// Which setting is wrong and what it must be.
    public var description: String {
        switch self {
        case let .keySizeOutOfRange(minimum, maximum):
            return "encryption key sizes \(minimum)...\(maximum): the minimum and maximum key size must lie in 7...16 octets, the minimum not above the maximum (Core Vol 3 Part H §2.3.4)"
        }
    }
}

extension SMPPairingSettings {
    /// The encryption key sizes the specification defines, in octets (Vol 3 Part H §2.3.4).
    public static let keySizes: ClosedRange<UInt8> = 7...16

    /// Refuses settings that would put reserved values on the wire or could negotiate a key
    /// shorter than 7 octets.
    public func validate() throws(SMPSettingsError) {
        guard Self.keySizes.contains(minimumKeySize), Self.keySizes.contains(maximumKeySize), minimumKeySize <= maximumKeySize else {
            throw .keySizeOutOfRange(minimum: minimumKeySize, maximum: maximumKeySize)
        }
    }
}

/// Out-of-band data for one pairing (Core spec Vol 3 Part H §2.3.5.6.4 for Secure Connections,
/// §2.3.5.4 for legacy).
public struct SMPOutOfBandData: Sendable, Hashable {
    /// Legacy pairing: the 128-bit TK both sides got out of band, least significant octet first.
    public var legacyTemporaryKey: [UInt8]?
    /// Secure Connections: what this device gave the peer, if anything. The key pair is the one
    /// the pairing must use, since the confirm value the peer holds was computed over it.
    public var local: SMPLocalOOB?
    /// Secure Connections: the random value r and confirm value C (least significant octet first)
    /// received from the peer.
    public var peerRandom: [UInt8]?
    /// C, the peer's confirm value over its public key; its Pairing Public Key must match it
    /// (§2.3.5.6.4).
    public var peerConfirm: [UInt8]?

    /// OOB data for one pairing; leave nil what the pairing has none of (all nil: no OOB).
    public init(legacyTemporaryKey: [UInt8]? = nil, local: SMPLocalOOB? = nil, peerRandom: [UInt8]? = nil, peerConfirm: [UInt8]? = nil) {
        self.legacyTemporaryKey = legacyTemporaryKey
        self.local = local
        self.peerRandom = peerRandom
        self.peerConfirm = peerConfirm
    }

    /// Whether there is peer data to announce with OOB_Data_Flag in this kind of pairing.
    func hasPeerData(secureConnections: Bool) -> Bool {
        secureConnections ? (peerRandom != nil && peerConfirm != nil) : legacyTemporaryKey != nil
    }
}

/// The OOB data this device generated for Secure Connections: a key pair, a random value r and
/// C = f4(PKx, PKx, r, 0) (§2.3.5.6.4). Give `random` and `confirm` to the peer out of band.
public struct SMPLocalOOB: Sendable, Hashable {
    /// The P-256 key pair this device must send as its Pairing Public Key: `confirm` commits to its
    /// X coordinate.
    public let keyPair: P256KeyPair
    /// r, least significant octet first.
    public let random: [UInt8]
    /// C, least significant octet first.
    public let confirm: [UInt8]

    /// Generates fresh OOB data.
    public static func generate() throws(CryptoError) -> SMPLocalOOB {
        let pair = try P256.generateKeyPair()
        let r = try SecureRandom.bytes(count: 16)
        let c = try SMPCrypto.f4(u: pair.publicKeyX, v: pair.publicKeyX, x: Array(r.reversed()), z: 0)
        return SMPLocalOOB(keyPair: pair, random: r, confirm: Array(c.reversed()))
    }

    /// OOB data from its parts, e.g. kept from an earlier `generate()`.
    public init(keyPair: P256KeyPair, random: [UInt8], confirm: [UInt8]) {
        self.keyPair = keyPair
        self.random = random
        self.confirm = confirm
    }
}

/// The keys one side distributed in the key distribution phase (Core spec Vol 3 Part H §3.6).
/// Keys are least significant octet first, as they travel and as HCI takes them.
public struct SMPDistributedKeys: Sendable, Hashable {
    /// LTK, with the EDIV and Rand that name it (legacy pairing only).
    public var longTermKey: [UInt8]?
    public var ediv: UInt16 = 0
    public var rand: UInt64 = 0
    public var identityResolvingKey: [UInt8]?
    public var identityAddress: DeviceAddress?
    public var signatureKey: [UInt8]?

    public init(longTermKey: [UInt8]? = nil, ediv: UInt16 = 0, rand: UInt64 = 0, identityResolvingKey: [UInt8]? = nil,
                identityAddress: DeviceAddress? = nil, signatureKey: [UInt8]? = nil) {
        self.longTermKey = longTermKey
        self.ediv = ediv
        self.rand = rand
        self.identityResolvingKey = identityResolvingKey
        self.identityAddress = identityAddress
        self.signatureKey = signatureKey
    }

    /// The kinds present, as the key distribution bits name them.
    public var kinds: SMPKeyDistribution {
        var k: SMPKeyDistribution = []
        if longTermKey != nil { k.insert(.encryptionKey) }
        if identityResolvingKey != nil { k.insert(.identityKey) }
        if signatureKey != nil { k.insert(.signingKey) }
        return k
    }
}

/// This device's own long-lived keys, distributed when the peer asks for them.
public struct SMPLocalIdentity: Sendable, Hashable {
    public var identityResolvingKey: [UInt8]
    /// The public or static random address the peer should know us by.
    public var identityAddress: DeviceAddress
    public var signatureKey: [UInt8]

    public init(identityResolvingKey: [UInt8], identityAddress: DeviceAddress, signatureKey: [UInt8]) {
        self.identityResolvingKey = identityResolvingKey
        self.identityAddress = identityAddress
        self.signatureKey = signatureKey
    }
}

/// What a finished pairing produced.
public struct SMPPairingOutcome: Sendable, Hashable {
    public var secureConnections: Bool
    public var model: SMPAssociationModel
    /// The negotiated encryption key size, 7...16 octets.
    public var keySize: Int
    /// The key is authenticated (MITM-protected).
    public var authenticated: Bool
    /// Both sides asked to bond: the keys are meant to be stored.
    public var bonded: Bool
    /// The key the link is now encrypted with (the STK in legacy pairing, the LTK under Secure
    /// Connections), least significant octet first.
    public var linkKey: [UInt8]
    /// Secure Connections: the LTK from f5 (both sides store it, EDIV = Rand = 0).
    public var secureConnectionsLongTermKey: [UInt8]?
    /// The keys we gave and the keys the peer gave.
    public var sent: SMPDistributedKeys
    public var received: SMPDistributedKeys

    /// The level a link encrypted with this pairing's keys has.
    public var securityLevel: SecurityLevel {
        .of(authenticated: authenticated, secureConnections: secureConnections, keySize: keySize)
    }
}

/// Why a pairing ended without keys. Every case says which side decided and why, in the Pairing
/// Failed reason's terms where there is one (Core spec Vol 3 Part H §3.5.5).
public enum SMPPairingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// We sent Pairing Failed with `reason`; `detail` says what we found.
    case local(SMPPairingFailedReason, detail: String)
    /// The peer sent Pairing Failed with `reason`.
    case peer(SMPPairingFailedReason)
    /// No SMP command within 30 seconds (§3.4): SMP is closed on this link until it reconnects.
    case timeout
    /// The controller could not encrypt the link (HCI status): with a new key at the end of a
    /// pairing, or with a bond's key on reconnection. 0x06 (PIN or Key Missing) there means
    /// the peer has no key for us any more (Vol 4 Part E §7.7.8).
    case encryptionFailed(status: UInt8)
    /// Pairing was refused before it started: SMP already timed out on this link, or a pairing
    /// is in progress.
    case unavailable(String)
    /// The pairing completed, but the peer claimed the identity of a device bonded with us from
    /// an address that bond does not know (neither its identity nor an RPA its IRK resolves):
    /// the claim was refused, nothing stored, and the link dropped.
    case identityConflict(String)
    /// We sent Pairing Failed (Authentication Requirements): the peer started a pairing that
    /// would give an unauthenticated key, and this device is bonded already; the bond is kept
    /// (`SMPPairing.protectsExistingBond`).
    case existingBondKept(String)
    /// We sent Pairing Failed (Passkey Entry Failed): the passkey entered is the fixed passkey
    /// (`displayedPasskey`), which a pairing used before, so a recording of that pairing
    /// reveals it (Vol 3 Part H §2.3.5.6.3); a fixed passkey is single-use, shown or typed.
    case fixedPasskeyUsed(String)
    /// The link was secured in answer, but not as far as was needed: the peer answered a request
    /// for an authenticated key, or a longer one, with a key no better (e.g. encryption with an
    /// unauthenticated bond's key for a Security Request asking for MITM protection).
    case notRaised(String)

    /// The Pairing Failed reason, when one was sent or received.
    public var reason: SMPPairingFailedReason? {
        switch self {
        case let .local(r, _), let .peer(r): return r
        case .existingBondKept: return .authenticationRequirements
        case .fixedPasskeyUsed: return .passkeyEntryFailed
        default: return nil
        }
    }

    /// Which side ended the pairing and why, for logs and error messages.
    public var description: String {
        switch self {
        case let .local(r, detail): return "pairing failed (\(r)): \(detail)"
        case let .peer(r): return "peer ended pairing: \(r)"
        case .timeout: return "pairing timed out (no SMP command for 30 s)"
        case let .encryptionFailed(status):
            let hex = "HCI status 0x" + (status < 0x10 ? "0" : "") + String(status, radix: 16)
            // 0x06, PIN or Key Missing: the peer answered the LTK request with a negative reply.
            return status == 0x06 ? "encryption failed, \(hex): the peer has no key for this link (it forgot the bond; pairing again repairs it)"
                : "encryption failed, \(hex)"
        case let .unavailable(why): return "pairing unavailable: \(why)"
        case let .identityConflict(why): return "pairing refused: \(why)"
        case let .existingBondKept(why): return "pairing refused (Authentication Requirements): \(why)"
        case let .fixedPasskeyUsed(why): return "pairing refused (Passkey Entry Failed): \(why)"
        case let .notRaised(why): return "security not raised: \(why)"
        }
    }
}

extension SMPPairingFailedReason: CustomStringConvertible {
    /// The reason's name as Table 3.7 gives it, or `reason 0x..` for a reserved value.
    public var description: String {
        switch self {
        case .passkeyEntryFailed: return "Passkey Entry Failed"
        case .oobNotAvailable: return "OOB Not Available"
        case .authenticationRequirements: return "Authentication Requirements"
        case .confirmValueFailed: return "Confirm Value Failed"
        case .pairingNotSupported: return "Pairing Not Supported"
        case .encryptionKeySize: return "Encryption Key Size"
        case .commandNotSupported: return "Command Not Supported"
        case .unspecifiedReason: return "Unspecified Reason"
        case .repeatedAttempts: return "Repeated Attempts"
        case .invalidParameters: return "Invalid Parameters"
        case .dhKeyCheckFailed: return "DHKey Check Failed"
        case .numericComparisonFailed: return "Numeric Comparison Failed"
        default: return "reason 0x" + String(rawValue, radix: 16)
        }
    }
}

/// What the pairing state machine asks its owner to do.
public enum SMPAction: Sendable, Hashable {
    /// Send these bytes on the link's SMP channel (CID 0x0006).
    case send([UInt8])
    /// Show the user this passkey (six digits, zero-filled).
    case displayPasskey(UInt32)
    /// Ask the user for the passkey the other device shows; answer with `passkeyEntered`.
    case requestPasskey
    /// Show this six-digit value and ask whether the peer shows the same; answer with
    /// `numericComparisonConfirmed`.
    case confirmNumericComparison(UInt32)
    /// Ask the user to accept a Just Works pairing (`SMPPairingSettings.confirmsJustWorks`);
    /// answer with `justWorksConfirmed`.
    case confirmJustWorks
    /// Ask whether to pair with a peer that sent these features; answer with `approve`.
    case requestApproval(SMPPairingFeatures)
    /// Central: encrypt the link with this key (LE Enable Encryption).
    case startEncryption(longTermKey: [UInt8], ediv: UInt16, rand: UInt64)
    /// The pairing ended with keys.
    case completed(SMPPairingOutcome)
    /// The pairing ended without keys.
    case failed(SMPPairingError)
    /// Central: the peripheral asks for security (Security Request, §3.6.7) while no pairing
    /// runs; the owner re-encrypts with a bond's key or starts pairing.
    case securityRequested(SMPAuthRequirements)
}

/// Security Manager Protocol command codes (Core spec Vol 3 Part H §3.3, Table 3.3). Unknown
/// values are kept, not rejected, so a newer peer's commands can be answered properly.
public struct SMPCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let pairingRequest = SMPCode(rawValue: 0x01)
    public static let pairingResponse = SMPCode(rawValue: 0x02)
    public static let pairingConfirm = SMPCode(rawValue: 0x03)
    public static let pairingRandom = SMPCode(rawValue: 0x04)
    public static let pairingFailed = SMPCode(rawValue: 0x05)
    public static let encryptionInformation = SMPCode(rawValue: 0x06)
    public static let centralIdentification = SMPCode(rawValue: 0x07)
    public static let identityInformation = SMPCode(rawValue: 0x08)
    public static let identityAddressInformation = SMPCode(rawValue: 0x09)
    public static let signingInformation = SMPCode(rawValue: 0x0A)
    public static let securityRequest = SMPCode(rawValue: 0x0B)
    public static let pairingPublicKey = SMPCode(rawValue: 0x0C)
    public static let pairingDHKeyCheck = SMPCode(rawValue: 0x0D)
    public static let pairingKeypressNotification = SMPCode(rawValue: 0x0E)

    public var description: String { "SMP 0x" + String(rawValue, radix: 16) }
}

/// The reason octet of Pairing Failed (Core spec Vol 3 Part H §3.5.5, Table 3.7).
public struct SMPPairingFailedReason: RawRepresentable, Hashable, Sendable {
    /// The reason octet as it travels.
    public var rawValue: UInt8
    /// Any octet; values Table 3.7 does not define are reserved but kept (`description` shows them
    /// in hex).
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01: the user's passkey input failed or was cancelled. Sent when the agent gives no
    /// passkey, or one of more than six digits. Counted by `SMPAttemptLimiter` (Core spec
    /// Vol 3 Part H §3.5.5).
    public static let passkeyEntryFailed = SMPPairingFailedReason(rawValue: 0x01)
    /// 0x02: OOB data is not available. Sent when legacy OOB pairing is chosen but no 16-octet TK
    /// was given (Core spec Vol 3 Part H §3.5.5).
    public static let oobNotAvailable = SMPPairingFailedReason(rawValue: 0x02)
    /// 0x03: the authentication requirements cannot be met with the devices' IO capabilities. Sent
    /// when MITM protection is demanded but only Just Works is possible, when Secure Connections
    /// Only mode meets a legacy-only peer, or when the peer sends our own public key back
    /// (Core spec Vol 3 Part H §3.5.5).
    public static let authenticationRequirements = SMPPairingFailedReason(rawValue: 0x03)
    /// 0x04: the peer's confirm value does not match the one computed from its random value (or,
    /// with OOB, from its public key). Sent on that mismatch, most often a wrong passkey or TK.
    /// Counted by `SMPAttemptLimiter` (Core spec Vol 3 Part H §3.5.5).
    public static let confirmValueFailed = SMPPairingFailedReason(rawValue: 0x04)
    /// 0x05: this device does not pair. Sent by a responder when the application declines the
    /// peer's Pairing Request (`PairingAgent.approvePairing`) (Core spec Vol 3 Part H §3.5.5).
    public static let pairingNotSupported = SMPPairingFailedReason(rawValue: 0x05)
    /// 0x06: the negotiated encryption key size is too short for the security requirements. Sent
    /// when it is below `SMPPairingSettings.minimumKeySize`, or below 16 in Secure Connections Only
    /// mode (Core spec Vol 3 Part H §3.5.5).
    public static let encryptionKeySize = SMPPairingFailedReason(rawValue: 0x06)
    /// 0x07: the received SMP command is not supported on this device. Sent for a reserved command
    /// code, and for a command the role does not take: a Pairing Request at the central, a Security
    /// Request at the peripheral (Core spec Vol 3 Part H §3.5.5).
    public static let commandNotSupported = SMPPairingFailedReason(rawValue: 0x07)
    /// 0x08: pairing failed for a reason no other code names. Sent for a command out of order (a
    /// Pairing Request during a pairing, an unexpected Confirm, Random or key) and for local
    /// failures such as the random source (Core spec Vol 3 Part H §3.5.5).
    public static let unspecifiedReason = SMPPairingFailedReason(rawValue: 0x08)
    /// 0x09: too little time has passed since the last failed attempt (§2.3.6). Sent, without any
    /// pairing work, to a peer whose `SMPAttemptLimiter` wait has not ended (Core spec
    /// Vol 3 Part H §3.5.5).
    public static let repeatedAttempts = SMPPairingFailedReason(rawValue: 0x09)
    /// 0x0A: the command's length or a parameter is out of range. Sent for a malformed PDU
    /// (`SMPDecodeError`), a reserved IO capability or OOB flag, a key size outside 7...16, keys
    /// not asked for, or an identity address neither public nor static random (Core spec
    /// Vol 3 Part H §3.5.5).
    public static let invalidParameters = SMPPairingFailedReason(rawValue: 0x0A)
    /// 0x0B: the peer's DHKey Check value does not match the one computed locally (Secure
    /// Connections). Sent on that mismatch and when the peer's public key is not a point on P-256.
    /// Counted by `SMPAttemptLimiter` (Core spec Vol 3 Part H §3.5.5).
    public static let dhKeyCheckFailed = SMPPairingFailedReason(rawValue: 0x0B)
    /// 0x0C: the two devices' Numeric Comparison values do not match. Sent when the user says they
    /// differ (`PairingAgent.confirmNumericComparison` answers false). Counted by
    /// `SMPAttemptLimiter` (Core spec Vol 3 Part H §3.5.5).
    public static let numericComparisonFailed = SMPPairingFailedReason(rawValue: 0x0C)
}

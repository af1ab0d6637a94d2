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
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let passkeyEntryFailed = SMPPairingFailedReason(rawValue: 0x01)
    public static let oobNotAvailable = SMPPairingFailedReason(rawValue: 0x02)
    public static let authenticationRequirements = SMPPairingFailedReason(rawValue: 0x03)
    public static let confirmValueFailed = SMPPairingFailedReason(rawValue: 0x04)
    public static let pairingNotSupported = SMPPairingFailedReason(rawValue: 0x05)
    public static let encryptionKeySize = SMPPairingFailedReason(rawValue: 0x06)
    public static let commandNotSupported = SMPPairingFailedReason(rawValue: 0x07)
    public static let unspecifiedReason = SMPPairingFailedReason(rawValue: 0x08)
    public static let repeatedAttempts = SMPPairingFailedReason(rawValue: 0x09)
    public static let invalidParameters = SMPPairingFailedReason(rawValue: 0x0A)
    public static let dhKeyCheckFailed = SMPPairingFailedReason(rawValue: 0x0B)
    public static let numericComparisonFailed = SMPPairingFailedReason(rawValue: 0x0C)
}

import BLEWire

/// IO capabilities a device declares in the pairing feature exchange (Core spec Vol 3 Part H
/// §3.5.1, Table 3.4). Reserved values are kept, not rejected: the state machine answers them
/// with Pairing Failed "Invalid Parameters".
public struct SMPIOCapability: RawRepresentable, Hashable, Sendable {
    /// The IO_Capability octet as it travels.
    public var rawValue: UInt8
    /// Any octet, reserved values included (see `isDefined`).
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00 DisplayOnly: can show a six-digit number but takes no input (Vol 3 Part H §2.3.2).
    public static let displayOnly = SMPIOCapability(rawValue: 0x00)
    /// 0x01 DisplayYesNo: a display and a yes/no input, enough for Numeric Comparison (§2.3.2).
    public static let displayYesNo = SMPIOCapability(rawValue: 0x01)
    /// 0x02 KeyboardOnly: can type digits but shows nothing, so it enters the passkey (§2.3.2).
    public static let keyboardOnly = SMPIOCapability(rawValue: 0x02)
    /// 0x03 NoInputNoOutput: no display and no keyboard (at most a yes/no input), so Just Works
    /// only (§2.3.2).
    public static let noInputNoOutput = SMPIOCapability(rawValue: 0x03)
    /// 0x04 KeyboardDisplay: keyboard and display, so it can show or type a passkey, or compare
    /// numbers (§2.3.2).
    public static let keyboardDisplay = SMPIOCapability(rawValue: 0x04)

    /// Whether the value is one the specification defines (0x05–0xFF are reserved).
    public var isDefined: Bool { rawValue <= 0x04 }
}

/// The AuthReq field (Core spec Vol 3 Part H §3.5.1, Figure 3.3): bonding flags in bits 0–1,
/// then MITM, Secure Connections, Keypress and CT2. Bits 6–7 are reserved and kept as sent.
public struct SMPAuthRequirements: OptionSet, Hashable, Sendable {
    /// The AuthReq octet as it travels.
    public var rawValue: UInt8
    /// Any octet; reserved bits are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags 0b01: the device wants to bond (store the keys).
    public static let bonding = SMPAuthRequirements(rawValue: 0x01)
    /// Man-in-the-middle protection requested.
    public static let mitm = SMPAuthRequirements(rawValue: 0x04)
    /// LE Secure Connections supported.
    public static let secureConnections = SMPAuthRequirements(rawValue: 0x08)
    /// Keypress notifications wanted during Passkey Entry.
    public static let keypress = SMPAuthRequirements(rawValue: 0x10)
    /// h7 supported for cross-transport key derivation.
    public static let ct2 = SMPAuthRequirements(rawValue: 0x20)
}

/// Which keys a side distributes after pairing (Core spec Vol 3 Part H §3.6.1, Figure 3.11).
public struct SMPKeyDistribution: OptionSet, Hashable, Sendable {
    /// The key distribution octet as it travels.
    public var rawValue: UInt8
    /// Any octet; reserved bits (4–7) are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LTK with EDIV and Rand (legacy); ignored under Secure Connections, where f5 derives it.
    public static let encryptionKey = SMPKeyDistribution(rawValue: 0x01)
    /// IRK and identity address.
    public static let identityKey = SMPKeyDistribution(rawValue: 0x02)
    /// CSRK, for signed writes.
    public static let signingKey = SMPKeyDistribution(rawValue: 0x04)
    /// BR/EDR link key derivation (cross-transport).
    public static let linkKey = SMPKeyDistribution(rawValue: 0x08)
}

/// The six octets after the code of Pairing Request and Pairing Response (§3.5.1, §3.5.2).
public struct SMPPairingFeatures: Hashable, Sendable {
    /// IO_Capability: what the sender can show and input, which with the peer's picks the
    /// association model (§2.3.5.1).
    public var ioCapability: SMPIOCapability
    /// OOB_Data_Flag: 0x00 not present, 0x01 present (other values reserved, kept).
    public var oobDataFlag: UInt8
    /// AuthReq: the bonding, MITM, Secure Connections, Keypress and CT2 flags.
    public var authRequirements: SMPAuthRequirements
    /// Maximum_Encryption_Key_Size, 7...16 octets when valid.
    public var maximumEncryptionKeySize: UInt8
    /// Initiator Key Distribution: the keys the initiator (central) will give. In the Response, the
    /// subset the responder agrees to.
    public var initiatorKeyDistribution: SMPKeyDistribution
    /// Responder Key Distribution: the keys the initiator asks the responder (peripheral) for. In
    /// the Response, the subset the responder will give.
    public var responderKeyDistribution: SMPKeyDistribution

    /// Features from their fields; no OOB data and a 16-octet maximum key size unless given.
    public init(ioCapability: SMPIOCapability, oobDataFlag: UInt8 = 0, authRequirements: SMPAuthRequirements,
                maximumEncryptionKeySize: UInt8 = 16, initiatorKeyDistribution: SMPKeyDistribution,
                responderKeyDistribution: SMPKeyDistribution) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authRequirements = authRequirements
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }
}

/// Keypress notification types (§3.5.8, Table 3.8).
public struct SMPKeypressType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let entryStarted = SMPKeypressType(rawValue: 0)
    public static let digitEntered = SMPKeypressType(rawValue: 1)
    public static let digitErased = SMPKeypressType(rawValue: 2)
    public static let cleared = SMPKeypressType(rawValue: 3)
    public static let entryCompleted = SMPKeypressType(rawValue: 4)
}

/// Why bytes on the SMP channel are not a valid command. The owner answers with Pairing Failed
/// "Invalid Parameters" (0x0A) or "Command Not Supported" (0x07), as `failureReason` says
/// (Core spec Vol 3 Part H §3.5.5).
public enum SMPDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An empty PDU: not even a code.
    case empty
    /// The PDU of `code` is `length` octets long; the command has exactly `expected`.
    case wrongLength(code: SMPCode, length: Int, expected: Int)

    /// The Pairing Failed reason the peer is owed.
    public var failureReason: SMPPairingFailedReason { .invalidParameters }

    public var description: String {
        switch self {
        case .empty: return "empty SMP PDU"
        case let .wrongLength(code, length, expected):
            return "\(code) is \(length) octets, expected \(expected)"
        }
    }
}

/// One Security Manager command (Core spec Vol 3 Part H §3.3–3.5): what travels on fixed
/// channel 0x0006. Multi-octet values are kept in the order they travel (least significant
/// octet first), as the crypto functions of `BLECrypto.SMPCrypto` take them. A code the stack
/// does not know is kept with its bytes.
public enum SMPPDU: Hashable, Sendable {
    case pairingRequest(SMPPairingFeatures)
    case pairingResponse(SMPPairingFeatures)
    /// Mconfirm / Sconfirm, 16 octets.
    case pairingConfirm([UInt8])
    /// Mrand / Srand, 16 octets.
    case pairingRandom([UInt8])
    case pairingFailed(SMPPairingFailedReason)
    /// LTK, 16 octets (legacy key distribution).
    case encryptionInformation(longTermKey: [UInt8])
    /// EDIV and Rand that identify the LTK.
    case centralIdentification(ediv: UInt16, rand: UInt64)
    /// IRK, 16 octets.
    case identityInformation(identityResolvingKey: [UInt8])
    /// The public or static random identity address.
    case identityAddressInformation(DeviceAddress)
    /// CSRK, 16 octets.
    case signingInformation(signatureKey: [UInt8])
    case securityRequest(SMPAuthRequirements)
    /// P-256 public key: X and Y, 32 octets each.
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    /// Ea / Eb, 16 octets.
    case pairingDHKeyCheck([UInt8])
    case keypressNotification(SMPKeypressType)
    case unknown(code: UInt8, parameters: [UInt8])

    /// The command's code.
    public var code: SMPCode {
        switch self {
        case .pairingRequest: return .pairingRequest
        case .pairingResponse: return .pairingResponse
        case .pairingConfirm: return .pairingConfirm
        case .pairingRandom: return .pairingRandom
        case .pairingFailed: return .pairingFailed
        case .encryptionInformation: return .encryptionInformation
        case .centralIdentification: return .centralIdentification
        case .identityInformation: return .identityInformation
        case .identityAddressInformation: return .identityAddressInformation
        case .signingInformation: return .signingInformation
        case .securityRequest: return .securityRequest
        case .pairingPublicKey: return .pairingPublicKey
        case .pairingDHKeyCheck: return .pairingDHKeyCheck
        case .keypressNotification: return .pairingKeypressNotification
        case let .unknown(code, _): return SMPCode(rawValue: code)
        }
    }

    /// The parameter length of each known command (§3.5–3.6); every one is fixed.
    static func parameterLength(of code: SMPCode) -> Int? {
        switch code {
        case .pairingRequest, .pairingResponse: return 6
        case .pairingConfirm, .pairingRandom, .encryptionInformation, .identityInformation,
             .signingInformation, .pairingDHKeyCheck: return 16
        case .pairingFailed, .securityRequest, .pairingKeypressNotification: return 1
        case .centralIdentification: return 10
        case .identityAddressInformation: return 7
        case .pairingPublicKey: return 64
        default: return nil
        }
    }

    /// Decodes one PDU. A known command of the wrong length is an error (the peer gets Pairing
    /// Failed "Invalid Parameters"); an unknown code is `.unknown`.
    public static func decode(_ pdu: [UInt8]) throws(SMPDecodeError) -> SMPPDU {
        guard let first = pdu.first else { throw .empty }
        let code = SMPCode(rawValue: first)
        let parameters = Array(pdu.dropFirst())
        guard let expected = parameterLength(of: code) else { return .unknown(code: first, parameters: parameters) }
        guard parameters.count == expected else { throw .wrongLength(code: code, length: pdu.count, expected: expected + 1) }
        let p = parameters
        switch code {
        case .pairingRequest: return .pairingRequest(features(p))
        case .pairingResponse: return .pairingResponse(features(p))
        case .pairingConfirm: return .pairingConfirm(p)
        case .pairingRandom: return .pairingRandom(p)
        case .pairingFailed: return .pairingFailed(SMPPairingFailedReason(rawValue: p[0]))
        case .encryptionInformation: return .encryptionInformation(longTermKey: p)
        case .centralIdentification:
            let ediv = UInt16(p[0]) | UInt16(p[1]) << 8
            let rand = p[2..<10].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return .centralIdentification(ediv: ediv, rand: rand)
        case .identityInformation: return .identityInformation(identityResolvingKey: p)
        case .identityAddressInformation:
            // Address type 0x00 public, 0x01 static random (§3.6.5); other values are reserved
            // and read as random, the only other kind an identity address can be.
            let address = BDAddress(littleEndian: Array(p[1..<7]))
            return .identityAddressInformation(DeviceAddress(address, type: p[0] == 0 ? .public : .random))
        case .signingInformation: return .signingInformation(signatureKey: p)
        case .securityRequest: return .securityRequest(SMPAuthRequirements(rawValue: p[0]))
        case .pairingPublicKey: return .pairingPublicKey(x: Array(p[0..<32]), y: Array(p[32..<64]))
        case .pairingDHKeyCheck: return .pairingDHKeyCheck(p)
        case .pairingKeypressNotification: return .keypressNotification(SMPKeypressType(rawValue: p[0]))
        default: return .unknown(code: first, parameters: p)
        }
    }

    private static func features(_ p: [UInt8]) -> SMPPairingFeatures {
        SMPPairingFeatures(ioCapability: SMPIOCapability(rawValue: p[0]), oobDataFlag: p[1],
                           authRequirements: SMPAuthRequirements(rawValue: p[2]), maximumEncryptionKeySize: p[3],
                           initiatorKeyDistribution: SMPKeyDistribution(rawValue: p[4]),
                           responderKeyDistribution: SMPKeyDistribution(rawValue: p[5]))
    }

    /// The PDU's bytes, code first. Fixed-size fields given with the wrong size are padded with
    /// zeros or cut, so the result always has the command's length.
    public func encode() -> [UInt8] {
        var out: [UInt8] = [code.rawValue]
        switch self {
        case let .pairingRequest(f), let .pairingResponse(f):
            out += [f.ioCapability.rawValue, f.oobDataFlag, f.authRequirements.rawValue, f.maximumEncryptionKeySize,
                    f.initiatorKeyDistribution.rawValue, f.responderKeyDistribution.rawValue]
        case let .pairingConfirm(v), let .pairingRandom(v), let .encryptionInformation(v), let .identityInformation(v),
             let .signingInformation(v), let .pairingDHKeyCheck(v):
            out += Self.fixed(v, 16)
        case let .pairingFailed(reason):
            out.append(reason.rawValue)
        case let .centralIdentification(ediv, rand):
            out += [UInt8(ediv & 0xFF), UInt8(ediv >> 8)]
            out += (0..<8).map { UInt8(truncatingIfNeeded: rand >> (8 * $0)) }
        case let .identityAddressInformation(address):
            out.append(address.type == .public || address.type == .publicIdentity ? 0x00 : 0x01)
            out += address.address.littleEndianBytes
        case let .securityRequest(auth):
            out.append(auth.rawValue)
        case let .pairingPublicKey(x, y):
            out += Self.fixed(x, 32) + Self.fixed(y, 32)
        case let .keypressNotification(type):
            out.append(type.rawValue)
        case let .unknown(_, parameters):
            out += parameters
        }
        return out
    }

    private static func fixed(_ bytes: [UInt8], _ count: Int) -> [UInt8] {
        bytes.count >= count ? Array(bytes.prefix(count)) : bytes + [UInt8](repeating: 0, count: count - bytes.count)
    }
}

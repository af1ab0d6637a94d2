/// How the two devices authenticate each other during pairing (Core spec Vol 3 Part H §2.3.5.1).
public enum SMPAssociationModel: String, Hashable, Sendable, CustomStringConvertible {
    /// No user involvement; no protection against a man in the middle (unauthenticated).
    case justWorks
    /// Both devices show a six-digit value and the user confirms they match (Secure Connections).
    case numericComparison
    /// One device shows a six-digit passkey and the user types it on the other (or types the same
    /// value on both).
    case passkeyEntry = "passkey"
    /// Data exchanged out of band (NFC, a QR code, a configuration file).
    case outOfBand = "oob"

    /// The raw value: `justWorks`, `numericComparison`, `passkey` or `oob`.
    public var description: String { rawValue }

    /// Whether the model protects against a man in the middle, making the key authenticated
    /// (Vol 3 Part H §2.3.5.1). OOB counts as authenticated: its strength is that of the OOB
    /// channel, which the spec leaves to the application.
    public var isAuthenticated: Bool { self != .justWorks }
}

/// Who does what in Passkey Entry (Vol 3 Part H §2.3.5.1, Table 2.8).
public enum SMPPasskeyRoles: Hashable, Sendable {
    /// The initiator shows the passkey, the responder's user types it.
    case initiatorDisplays
    /// The responder shows the passkey, the initiator's user types it.
    case responderDisplays
    /// Both users type the same passkey (KeyboardOnly on both sides).
    case bothInput
}

/// The association model and, for Passkey Entry, who displays: the outcome of the feature
/// exchange (Vol 3 Part H §2.3.5.1).
public struct SMPMethod: Hashable, Sendable {
    public var model: SMPAssociationModel
    public var passkeyRoles: SMPPasskeyRoles?

    public init(model: SMPAssociationModel, passkeyRoles: SMPPasskeyRoles? = nil) {
        self.model = model
        self.passkeyRoles = passkeyRoles
    }

    static let justWorks = SMPMethod(model: .justWorks)
    static let numericComparison = SMPMethod(model: .numericComparison)
    static let outOfBand = SMPMethod(model: .outOfBand)
    static func passkey(_ roles: SMPPasskeyRoles) -> SMPMethod { SMPMethod(model: .passkeyEntry, passkeyRoles: roles) }

    /// Chooses the model from both sides' Pairing Request/Response features (Vol 3 Part H
    /// §2.3.5.1, Tables 2.6–2.8):
    /// - legacy pairing uses OOB when both sides have OOB data; Secure Connections when either has;
    /// - otherwise, when neither side asks for MITM protection, Just Works;
    /// - otherwise the IO capability table.
    /// Reserved IO capabilities never get here: the feature exchange refuses them first.
    public static func select(initiator: SMPPairingFeatures, responder: SMPPairingFeatures, secureConnections: Bool) -> SMPMethod {
        let initiatorOOB = initiator.oobDataFlag == 0x01
        let responderOOB = responder.oobDataFlag == 0x01
        if secureConnections ? (initiatorOOB || responderOOB) : (initiatorOOB && responderOOB) {
            return .outOfBand
        }
        let mitm = initiator.authRequirements.contains(.mitm) || responder.authRequirements.contains(.mitm)
        guard mitm else { return .justWorks }
        return fromIOCapabilities(initiator: initiator.ioCapability, responder: responder.ioCapability,
                                  secureConnections: secureConnections)
    }

    /// Table 2.8 of Vol 3 Part H §2.3.5.1: rows are the responder's capability, columns the
    /// initiator's. Entries that differ between legacy and Secure Connections are the
    /// DisplayYesNo/KeyboardDisplay pairs, which get Numeric Comparison under Secure Connections.
    static func fromIOCapabilities(initiator: SMPIOCapability, responder: SMPIOCapability, secureConnections: Bool) -> SMPMethod {
        let sc = secureConnections
        switch (responder, initiator) {
        case (.noInputNoOutput, _), (_, .noInputNoOutput):
            return .justWorks
        case (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo),
             (.displayYesNo, .displayOnly):
            return .justWorks
        case (.displayOnly, .keyboardOnly), (.displayOnly, .keyboardDisplay),
             (.displayYesNo, .keyboardOnly), (.keyboardDisplay, .keyboardOnly):
            return .passkey(.responderDisplays)
        case (.displayYesNo, .displayYesNo):
            return sc ? .numericComparison : .justWorks
        case (.displayYesNo, .keyboardDisplay):
            // The side with the keyboard types what the DisplayYesNo side shows.
            return sc ? .numericComparison : .passkey(.responderDisplays)
        case (.keyboardDisplay, .displayYesNo), (.keyboardDisplay, .keyboardDisplay):
            return sc ? .numericComparison : .passkey(.initiatorDisplays)
        case (.keyboardOnly, .displayOnly), (.keyboardOnly, .displayYesNo), (.keyboardOnly, .keyboardDisplay),
             (.keyboardDisplay, .displayOnly):
            return .passkey(.initiatorDisplays)
        case (.keyboardOnly, .keyboardOnly):
            return .passkey(.bothInput)
        default:
            return .justWorks
        }
    }
}

/// What an encrypted link is worth (Core spec Vol 3 Part C §10.2.1, LE security mode 1).
public enum SecurityLevel: Int, Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Level 1: no encryption.
    case none = 1
    /// Level 2: encrypted with an unauthenticated key (Just Works).
    case encrypted = 2
    /// Level 3: encrypted with an authenticated (MITM-protected) key.
    case authenticated = 3
    /// Level 4: authenticated LE Secure Connections with a 128-bit key.
    case secureConnections = 4

    /// Orders levels by number: a link at a higher level meets every lower level's requirements.
    public static func < (a: SecurityLevel, b: SecurityLevel) -> Bool { a.rawValue < b.rawValue }

    /// The level a key of this kind gives a link.
    public static func of(authenticated: Bool, secureConnections: Bool, keySize: Int) -> SecurityLevel {
        guard authenticated else { return .encrypted }
        return secureConnections && keySize == 16 ? .secureConnections : .authenticated
    }

    /// The level's number with what it means, e.g. `3 (authenticated encryption)`.
    public var description: String {
        switch self {
        case .none: return "1 (no encryption)"
        case .encrypted: return "2 (unauthenticated encryption)"
        case .authenticated: return "3 (authenticated encryption)"
        case .secureConnections: return "4 (authenticated Secure Connections)"
        }
    }
}

import BLE

/// What `ble pair` prints: the outcome as lines for people, or one JSON object with `--json`.
public enum PairingReport {
    /// The lines of a successful pairing.
    public static func lines(_ r: PairingResult, peer: DeviceAddress, bondsDirectory: String?) -> [String] {
        var out = [
            "paired: \(peer)",
            "pairing: \(r.secureConnections ? "LE Secure Connections" : "LE legacy")",
            "method: \(methodName(r.method))",
            "security level: \(r.securityLevel)",
            "key size: \(r.keySize)",
            "keys sent: \(names(r.keysSent))",
            "keys received: \(names(r.keysReceived))",
        ]
        if let identity = r.peerIdentity { out.append("identity: \(identity)") }
        out.append(r.bonded ? "bond: stored\(bondsDirectory.map { " in \($0)" } ?? "")" : "bond: not stored (no bonding)")
        return out
    }

    /// The JSON object of a pairing's outcome.
    public static func json(_ r: PairingResult, peer: DeviceAddress) -> JSON {
        .object([
            ("paired", .bool(true)), ("peer", .string("\(peer)")), ("secureConnections", .bool(r.secureConnections)),
            ("method", .string(r.method.rawValue)), ("securityLevel", .int(r.securityLevel.rawValue)), ("keySize", .int(r.keySize)),
            ("keysSent", .array(r.keysSent.names.map { .string($0) })), ("keysReceived", .array(r.keysReceived.names.map { .string($0) })),
            ("identity", .optional(r.peerIdentity.map { "\($0)" })), ("bonded", .bool(r.bonded)),
        ])
    }

    /// The JSON object of a pairing that failed.
    public static func json(failure: any Error, peer: DeviceAddress?) -> JSON {
        var fields: [(String, JSON)] = [("paired", .bool(false)), ("peer", .optional(peer.map { "\($0)" })), ("error", .string("\(failure)"))]
        if case let BLEError.security(e) = failure, let reason = e.reason {
            fields += [("reason", .int(Int(reason.rawValue))), ("reasonText", .string("\(reason)"))]
        }
        return .object(fields)
    }

    static func methodName(_ m: SMPAssociationModel) -> String {
        switch m {
        case .justWorks: return "Just Works"
        case .numericComparison: return "Numeric Comparison"
        case .passkeyEntry: return "Passkey Entry"
        case .outOfBand: return "Out of Band"
        }
    }

    static func names(_ k: SMPKeyDistribution) -> String {
        k.names.isEmpty ? "none" : k.names.joined(separator: ", ")
    }
}

/// What `ble bonds` prints for each bond.
public enum BondListing {
    public static func line(_ b: Bond) -> String {
        var parts = ["\(b.peer)", "level \(b.securityLevel.rawValue)", b.secureConnections ? "secure connections" : "legacy",
                     "key size \(b.keySize)"]
        if let a = b.connectionAddress { parts.append("paired from \(a)") }
        if b.peerIdentityResolvingKey != nil { parts.append("irk") }
        if b.peerSignatureKey != nil { parts.append("csrk") }
        if !b.clientConfigurations.isEmpty { parts.append("\(b.clientConfigurations.count) subscription(s)") }
        return parts.joined(separator: "  ")
    }

    public static func json(_ b: Bond) -> JSON {
        .object([
            ("peer", .string(b.peer.address.description)), ("type", .string(b.peer.type.peerType == .public ? "public" : "random")),
            ("connectionAddress", .optional(b.connectionAddress.map { "\($0)" })),
            ("securityLevel", .int(b.securityLevel.rawValue)), ("secureConnections", .bool(b.secureConnections)),
            ("authenticated", .bool(b.authenticated)), ("keySize", .int(b.keySize)),
            ("irk", .bool(b.peerIdentityResolvingKey != nil)), ("csrk", .bool(b.peerSignatureKey != nil)),
            ("subscriptions", .int(b.clientConfigurations.count)),
        ])
    }
}

import BLEWire

/// The error-code half of the Result types the owner answers dynamic reads and writes with.
extension ATTErrorCode: Error {}

/// A request waiting for the application, and what the application has answered so far.
struct PendingRequest: Sendable {
    /// A dynamic read the application answered (or is asked for): handle and offset.
    struct ReadKey: Hashable, Sendable {
        var handle: UInt16
        var offset: Int
    }

    enum Awaiting: Sendable {
        case nothing
        /// A dynamic read for a read-type request; the request is evaluated again on the answer.
        case read(id: UInt64, key: ReadKey)
        /// A Write Request to a dynamic value.
        case write(id: UInt64, handle: UInt16)
        /// One run of an Execute Write; `remaining` follow it, then Invalid Handle for `removed`,
        /// the handle of a run whose service was removed meanwhile (`forgetHandles`), if any.
        case execute(id: UInt64, handle: UInt16, remaining: [ATTServer.PreparedWrite], removed: UInt16?)
    }

    var request: ATTPDU
    /// The link security the request is judged by: as it arrived, then as it is each time the
    /// request goes on after an answer from the application.
    var security: LinkSecurity
    var appReads: [ReadKey: Result<[UInt8], ATTErrorCode>] = [:]
    var awaiting: Awaiting = .nothing
}

// Permission checks. Core spec Vol 3 Part F §3.4.4 / §3.4.5 / §3.4.6 give each request's error
// codes; Vol 3 Part C §10.3.1 (LE security mode 1) says which security error a link gets.
//
// Order, when several apply (§3.4.1.1 leaves it to the implementation): Invalid Handle, then
// Read/Write Not Permitted (no requirement the client could meet), then the link's security,
// then the application's authorization.
//
// Security on an unencrypted link (Vol 3 Part C §10.3.1): when the peer is bonded (an LTK
// exists) the client only has to start encryption, so the answer is Insufficient Encryption;
// without an LTK it has to pair first, so the answer is Insufficient Authentication. On an
// encrypted link with an unauthenticated key, an attribute that needs authentication answers
// Insufficient Authentication (the client must pair again with MITM protection).
extension ATTServer {
    static func securityError(encryption: Bool, authentication: Bool, authorization: Bool,
                              _ security: LinkSecurity) -> ATTErrorCode? {
        if (encryption || authentication) && !security.encrypted {
            return security.hasLongTermKey ? .insufficientEncryption : .insufficientAuthentication
        }
        if (encryption || authentication) && security.keySize < security.requiredKeySize { return .encryptionKeySizeTooShort }
        if authentication && !security.authenticated { return .insufficientAuthentication }
        if authorization && !security.authorized { return .insufficientAuthorization }
        return nil
    }

    /// Why `attribute` cannot be read on this link, nil if it can.
    static func readError(_ attribute: GATTAttribute, _ security: LinkSecurity) -> ATTErrorCode? {
        guard attribute.permissions.isReadable else { return .readNotPermitted }
        return readSecurityError(attribute, security)
    }

    /// What this link's security lacks for reading `attribute` (its encryption, authentication
    /// and authorization requirements), nil if nothing; whether the attribute is readable at
    /// all is not asked. Notifications and indications of a value are judged by this, so a
    /// notify-only value (no read permission) can still be notified.
    static func readSecurityError(_ attribute: GATTAttribute, _ security: LinkSecurity) -> ATTErrorCode? {
        readSecurityError(permissions: attribute.permissions, security)
    }

    /// `readSecurityError(_:_:)` from the attribute's permissions alone (what the per-update
    /// check reads, without copying the attribute out of the database).
    static func readSecurityError(permissions p: AttributePermissions, _ security: LinkSecurity) -> ATTErrorCode? {
        securityError(encryption: p.contains(.readEncrypted), authentication: p.contains(.readAuthenticated),
                             authorization: p.contains(.readAuthorized), security)
    }

    /// Why `attribute` cannot be written on this link, nil if it can. A value that takes signed
    /// writes needs encryption for any other write (`.writeSigned`).
    static func writeError(_ attribute: GATTAttribute, _ security: LinkSecurity) -> ATTErrorCode? {
        let p = attribute.permissions
        guard p.isWritable else { return .writeNotPermitted }
        return securityError(encryption: p.contains(.writeEncrypted) || p.contains(.writeSigned),
                             authentication: p.contains(.writeAuthenticated), authorization: p.contains(.writeAuthorized), security)
    }

    /// Why `attribute` cannot take a Signed Write Command from a client with `signer`'s CSRK,
    /// nil if it can (see `AttributePermissions.writeSigned`): the signature counts as
    /// encryption with the key of the pairing that distributed the CSRK.
    static func signedWriteError(_ attribute: GATTAttribute, signer: ATTPeerSigningKey, _ security: LinkSecurity) -> ATTErrorCode? {
        let p = attribute.permissions
        guard p.contains(.writeSigned) else { return .writeNotPermitted }
        var signed = security
        signed.encrypted = true
        signed.authenticated = signer.authenticated
        signed.keySize = signer.keySize
        return securityError(encryption: true, authentication: p.contains(.writeAuthenticated),
                             authorization: p.contains(.writeAuthorized), signed)
    }

    /// Where a value read stands: known, failed, or waiting for the application.
    enum Lookup {
        case value([UInt8])
        case failure(ATTErrorCode)
        case needsApp(PendingRequest.ReadKey)
    }

    /// The value of `attribute` from `offset` on, as this connection sees it. Dynamic values come
    /// from `appReads` (the application's answers for this request) or need asking.
    func readValue(_ attribute: GATTAttribute, offset: Int, database: GATTServerDatabase,
                   appReads: [PendingRequest.ReadKey: Result<[UInt8], ATTErrorCode>]) -> Lookup {
        let full: [UInt8]
        switch attribute.value {
        case let .fixed(v), let .stored(v):
            full = v
        case .dynamic:
            let key = PendingRequest.ReadKey(handle: attribute.handle, offset: offset)
            switch appReads[key] {
            case let .success(v)?: return .value(v)
            case let .failure(code)?: return .failure(code)
            case nil: return .needsApp(key)
            }
        case let .clientConfiguration(valueHandle, _):
            let v = cccd(valueHandle: valueHandle)
            full = [UInt8(v & 0xFF), UInt8(v >> 8)]
        case .clientSupportedFeatures:
            full = clientFeaturesValue
        case .databaseHash:
            guard let v = try? database.currentDatabaseHashValue() else { return .failure(.unlikelyError) }
            full = v
        }
        guard offset <= full.count else { return .failure(.invalidOffset) }
        return .value(Array(full[offset...]))
    }
}

import BLEWire

/// What the server's owner knows of a client's signing key, from the client's bond: the CSRK it
/// distributed in Signing Information (Core spec Vol 3 Part H §3.6.6) and the last SignCounter
/// accepted from it (Vol 3 Part C §10.4.2).
public struct ATTPeerSigningKey: Hashable, Sendable {
    /// The client's CSRK, least significant octet first, as SMP distributed it.
    public var key: [UInt8]
    /// The SignCounter of the last signed write accepted from this client, nil before any: a
    /// write is accepted only with a greater one.
    public var lastCounter: UInt32?
    /// The pairing that distributed the CSRK was authenticated (MITM-protected): its signed
    /// writes meet `.writeAuthenticated` (LE security mode 2 level 2, Vol 3 Part C §10.2.2).
    public var authenticated: Bool
    /// The encryption key size of that pairing, 7...16: the server's key-size policy applies to
    /// it as to an encrypted link's key.
    public var keySize: Int

    /// A client's signing state as its bond records it.
    public init(key: [UInt8], lastCounter: UInt32?, authenticated: Bool, keySize: Int) {
        self.key = key
        self.lastCounter = lastCounter
        self.authenticated = authenticated
        self.keySize = keySize
    }
}

/// A Signed Write Command whose signature, counter and permissions checked out
/// (`ATTServer.verifySignedWrite`), not applied yet: the owner records `counter` with the bond,
/// then applies it with `ATTServer.applySignedWrite`. Only `verifySignedWrite` makes one.
public struct ATTVerifiedSignedWrite: Hashable, Sendable {
    /// The attribute written.
    public let handle: UInt16
    /// The value written.
    public let value: [UInt8]
    /// The SignCounter the write carried: the client's new last counter.
    public let counter: UInt32
    let signer: ATTPeerSigningKey
}

/// Why a Signed Write Command was ignored. Commands are never answered (Vol 3 Part F §3.4.5.4),
/// so this is for the owner's log only.
public enum ATTSignedWriteRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// Not a Signed Write Command, or one too short to hold a handle and a 12-octet signature.
    case malformed
    /// The bearer is closed after a transaction timeout (Vol 3 Part F §3.3.3).
    case bearerClosed
    /// The client is change-unaware and enabled robust caching: its commands are ignored
    /// (Vol 3 Part G §2.5.2.1), since the handle it names may have moved.
    case changeUnaware
    /// The link is encrypted: a client there writes with a plain Write Command (Vol 3 Part G
    /// §4.9.2), so a signed one is not accepted.
    case encryptedLink
    /// No CSRK for this client: it is not bonded, or gave no Signing Information.
    case noSigningKey
    /// No attribute at the handle.
    case invalidHandle(UInt16)
    /// The attribute does not take this signed write (its permissions, or a value it cannot
    /// hold): the error a Write Request would have got.
    case refused(UInt16, ATTErrorCode)
    /// The MAC does not match (Vol 3 Part C §10.4.2): a forgery, a corrupted PDU, or a CSRK
    /// other than the bond's.
    case badSignature
    /// The SignCounter is not above the last one accepted from this client: a replay
    /// (Vol 3 Part C §10.4.2).
    case replayed(counter: UInt32, last: UInt32)

    /// The refusal in words, for the log.
    public var description: String {
        switch self {
        case .malformed: return "malformed Signed Write Command"
        case .bearerClosed: return "the ATT bearer is closed"
        case .changeUnaware: return "the client is change-unaware (robust caching): commands are ignored"
        case .encryptedLink: return "signed write on an encrypted link (a Write Command is used there)"
        case .noSigningKey: return "no CSRK for this client (not bonded, or it gave no Signing Information)"
        case let .invalidHandle(h): return "no attribute at 0x\(String(h, radix: 16))"
        case let .refused(h, code): return "0x\(String(h, radix: 16)) does not take this signed write: \(code)"
        case .badSignature: return "the signature does not verify"
        case let .replayed(counter, last): return "SignCounter \(counter) is not above the last accepted, \(last): a replay"
        }
    }
}

// Signed Write Command, server side (Core spec Vol 3 Part F §3.4.5.4, Vol 3 Part G §4.9.2,
// Vol 3 Part C §10.4.2). In two steps, because the client's counter must be recorded before
// the write is applied: `verifySignedWrite` checks everything and changes nothing, the owner
// stores the new counter with the bond (and drops the write if it cannot), then
// `applySignedWrite` writes. `receive` ignores Signed Write Commands: only the owner holds the
// bond they are checked against.
extension ATTServer {
    /// Checks a Signed Write Command from the client whose signing state is `signingKey` (nil
    /// when it has no bonded CSRK), against the database and the link's security, changing
    /// nothing. Checked in this order: the PDU's shape, the bearer, the client's change
    /// awareness (Vol 3 Part G §2.5.2.1), the link being unencrypted,
    /// the key, the attribute, its permissions (`AttributePermissions.writeSigned`) and whether
    /// it can hold the value, the MAC, then the counter. Never traps on the PDU's contents.
    public func verifySignedWrite(_ pdu: [UInt8], signingKey: ATTPeerSigningKey?, database: GATTServerDatabase,
                                  security: LinkSecurity) -> Result<ATTVerifiedSignedWrite, ATTSignedWriteRefusal> {
        guard case let .signedWriteCommand(handle, value, signature)? = try? ATTPDU.decode(pdu) else { return .failure(.malformed) }
        guard !isClosed else { return .failure(.bearerClosed) }
        // Routed around `receive`, so the robust-caching verdict for commands is given here.
        guard client.changeAware || !robustCachingEnabled else { return .failure(.changeUnaware) }
        guard !security.encrypted else { return .failure(.encryptedLink) }
        guard let signer = signingKey else { return .failure(.noSigningKey) }
        guard let attribute = database.attribute(at: handle) else { return .failure(.invalidHandle(handle)) }
        if let code = Self.signedWriteError(attribute, signer: signer, security) ?? valueError(attribute, value) {
            return .failure(.refused(handle, code))
        }
        guard ATTSignature.isValid(signature, of: Array(pdu.dropLast(ATTSignature.length)), key: signer.key),
              let counter = ATTSignature.counter(of: signature) else { return .failure(.badSignature) }
        if let last = signer.lastCounter, counter <= last { return .failure(.replayed(counter: counter, last: last)) }
        return .success(ATTVerifiedSignedWrite(handle: handle, value: value, counter: counter, signer: signer))
    }

    /// Why `value` cannot be written whole into `attribute`, nil if it can (what `write` would
    /// find), so a write that would fail is refused before its counter is recorded.
    func valueError(_ attribute: GATTAttribute, _ value: [UInt8]) -> ATTErrorCode? {
        if case .dynamic = attribute.value {
            return value.count <= attribute.maximumLength ? nil : .invalidAttributeValueLength
        }
        if case let .failure(code) = newValue(attribute, current: currentValue(attribute), offset: 0, data: value) { return code }
        return nil
    }

    /// Applies a verified signed write, once its counter is recorded: a stored value changes
    /// (`.valueWritten`), a dynamic one goes to the application as `ServerAction.write` of kind
    /// `.signedCommand`. The permissions are checked again against `security` now; a write
    /// that no longer fits (a value too long, a handle since removed) is dropped, like any
    /// failed command.
    public mutating func applySignedWrite(_ verified: ATTVerifiedSignedWrite, database: inout GATTServerDatabase,
                                          security: LinkSecurity, now: Duration) -> [ServerAction] {
        clock = max(clock, now)
        var actions = takeEvents()
        guard !isClosed, !security.encrypted, let a = database.attribute(at: verified.handle),
              Self.signedWriteError(a, signer: verified.signer, security) == nil else { return actions }
        switch write(a, offset: 0, data: verified.value, kind: .signedCommand, database: &database) {
        case let .done(reports): actions += reports
        case .failed: break
        case let .app(_, action): actions.append(action)
        }
        return actions
    }
}

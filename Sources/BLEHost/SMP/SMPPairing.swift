import BLECrypto
import BLEWire

/// Where the randomness of a pairing comes from: nonces, passkeys, distributed keys and the
/// P-256 key pair. Production uses libcrypto's DRBG; tests can fix the values.
public struct SMPEntropy: Sendable {
    public var bytes: @Sendable (Int) throws(CryptoError) -> [UInt8]
    public var keyPair: @Sendable () throws(CryptoError) -> P256KeyPair

    public init(bytes: @escaping @Sendable (Int) throws(CryptoError) -> [UInt8],
                keyPair: @escaping @Sendable () throws(CryptoError) -> P256KeyPair) {
        self.bytes = bytes
        self.keyPair = keyPair
    }

    /// libcrypto's RAND_bytes and a fresh P-256 pair per pairing (Vol 3 Part H §2.3.5.6.1).
    public static let system = SMPEntropy(bytes: { (n) throws(CryptoError) in try SecureRandom.bytes(count: n) },
                                          keyPair: { () throws(CryptoError) in try P256.generateKeyPair() })
}

/// One link's Security Manager pairing procedure (Core spec Vol 3 Part H §2.3, §3), both roles,
/// sans-IO: the owner hands in SMP PDUs, the user's answers, the controller's encryption events
/// and the time; it gets back `SMPAction`s (PDUs to send, questions for the user, encryption to
/// start, the outcome). Legacy pairing (Just Works, Passkey Entry, OOB) lives in
/// `SMPPairing+Legacy.swift`, Secure Connections (Just Works, Numeric Comparison, Passkey Entry,
/// OOB) in `SMPPairing+SecureConnections.swift`, the key distribution phase in
/// `SMPPairing+KeyDistribution.swift`.
///
/// The initiator is the central, the responder the peripheral (§2.3). Every failure sends
/// Pairing Failed with the reason the spec gives, and after the 30-second SMP timeout (§3.4)
/// the procedure accepts nothing more on this link.
public struct SMPPairing: Sendable {
    public enum Role: Sendable, Hashable { case initiator, responder }

    /// The SMP transaction timeout (§3.4).
    public static let timeout: Duration = .seconds(30)

    public let role: Role
    public var settings: SMPPairingSettings
    public var identity: SMPLocalIdentity
    public var outOfBand: SMPOutOfBandData
    let entropy: SMPEntropy
    /// The addresses the link was made with (not identities): they enter c1, f5 and f6.
    let initiatorAddress: DeviceAddress
    let responderAddress: DeviceAddress

    var phase: Phase = .idle
    var session: SMPSession?
    /// When the running procedure times out, if one runs.
    public private(set) var nextDeadline: Duration?
    /// Set by the SMP timeout: no further SMP traffic on this link (§3.4).
    public private(set) var isClosed = false
    /// Counts the pairings begun on this link, so an answer the user gives to a question of an
    /// earlier pairing is not taken for the current one.
    public private(set) var generation: UInt64 = 0
    /// The association model of the latest pairing, kept after it ends: whether its failure was
    /// a guess at a secret (Passkey Entry, OOB) that the repeated-attempts back-off is for.
    public private(set) var lastModel: SMPAssociationModel?
    /// Set by the owner when the peer is bonded and this pairing was not asked for by our
    /// application: a pairing whose model gives an unauthenticated key (Just Works) then fails
    /// with Authentication Requirements once the feature exchange chose it, so whoever copies a
    /// bonded device's address cannot replace its keys (Zephyr's default too).
    public var protectsExistingBond = false

    public init(role: Role, settings: SMPPairingSettings, identity: SMPLocalIdentity,
                outOfBand: SMPOutOfBandData = SMPOutOfBandData(), entropy: SMPEntropy = .system,
                initiatorAddress: DeviceAddress, responderAddress: DeviceAddress) {
        self.role = role
        self.settings = settings
        self.identity = identity
        self.outOfBand = outOfBand
        self.entropy = entropy
        self.initiatorAddress = initiatorAddress
        self.responderAddress = responderAddress
    }

    /// Whether a pairing is in progress.
    public var isPairing: Bool { phase != .idle }

    /// What the key of the running pairing will be worth, once the feature exchange fixed it:
    /// the owner marks the link with it when the controller reports encryption.
    public var negotiatedKey: (secureConnections: Bool, authenticated: Bool, keySize: Int)? {
        guard let s = session, s.responder != nil else { return nil }
        return (s.secureConnections, s.method.model.isAuthenticated, s.keySize)
    }

    /// Where a pairing is.
    enum Phase: Hashable, Sendable {
        case idle
        case awaitingApproval
        case awaitingResponse
        /// Responder: answering a Pairing Request.
        case featureExchange
        case legacyConfirm
        case legacyRandom
        case publicKey
        case confirm
        case random
        case dhKeyCheck
        case encrypting
        case distributing
    }

    /// A failure found while handling an input: the reason the peer is owed and what happened.
    struct Abort: Error {
        let reason: SMPPairingFailedReason
        let detail: String
        /// What the owner is told, when more than `.local(reason, detail)`.
        var error: SMPPairingError?
        init(_ reason: SMPPairingFailedReason, _ detail: String, error: SMPPairingError? = nil) {
            self.reason = reason
            self.detail = detail
            self.error = error
        }
    }

    // MARK: - Inputs

    /// Central: starts pairing by sending a Pairing Request (§3.5.1).
    public mutating func start(now: Duration) -> [SMPAction] {
        guard !isClosed else { return [.failed(.unavailable("SMP timed out on this link; reconnect to pair"))] }
        guard role == .initiator else { return [.failed(.unavailable("only the central starts pairing; a peripheral sends a Security Request"))] }
        guard phase == .idle else { return [.failed(.unavailable("a pairing is already in progress"))] }
        do { try settings.validate() } catch { return [.failed(.unavailable("\(error)"))] }
        let features = SMPPairingFeatures(
            ioCapability: settings.ioCapability,
            oobDataFlag: outOfBand.hasPeerData(secureConnections: settings.secureConnections) ? 1 : 0,
            authRequirements: settings.authRequirements, maximumEncryptionKeySize: settings.maximumKeySize,
            initiatorKeyDistribution: settings.distributes.subtracting(.linkKey),
            responderKeyDistribution: settings.requests.subtracting(.linkKey))
        let pdu = SMPPDU.pairingRequest(features).encode()
        generation += 1
        session = SMPSession(preq: pdu, initiator: features)
        phase = .awaitingResponse
        return [send(pdu, now: now)]
    }

    /// Peripheral: asks the central to secure the link (Security Request, §3.6.7). Starts no
    /// timer: the central may answer by encrypting with a stored key instead of pairing.
    public func securityRequest() -> [SMPAction] {
        guard !isClosed, role == .responder, phase == .idle else { return [] }
        return [.send(SMPPDU.securityRequest(settings.authRequirements).encode())]
    }

    /// Takes one PDU from the SMP channel.
    public mutating func receive(_ bytes: [UInt8], now: Duration) -> [SMPAction] {
        guard !isClosed else { return [] }
        let pdu: SMPPDU
        do {
            pdu = try SMPPDU.decode(bytes)
        } catch {
            if bytes.first == SMPCode.pairingFailed.rawValue { return peerFailed(.unspecifiedReason) }
            return abort(Abort(error.failureReason, "\(error)"))
        }
        do {
            return try handle(pdu, now: now)
        } catch {
            return abort(error)
        }
    }

    /// The passkey the user typed (nil: the user gave up), after `.requestPasskey`.
    /// `usedBefore`: it is the owner's fixed passkey, which an earlier pairing used, so a
    /// recording of that pairing reveals it (§2.3.5.6.3): refused with Passkey Entry Failed.
    public mutating func passkeyEntered(_ passkey: UInt32?, usedBefore: Bool = false, now: Duration) -> [SMPAction] {
        guard !isClosed, var s = session, s.awaitingPasskeyInput else { return [] }
        guard let passkey else { return abort(Abort(.passkeyEntryFailed, "the user did not enter a passkey")) }
        if usedBefore {
            let why = "the passkey entered is the fixed passkey, which an earlier pairing used: a fixed passkey is single-use"
            return abort(Abort(.passkeyEntryFailed, why, error: .fixedPasskeyUsed(why)))
        }
        guard passkey <= 999_999 else { return abort(Abort(.passkeyEntryFailed, "a passkey has six digits, got \(passkey)")) }
        s.awaitingPasskeyInput = false
        s.passkey = passkey
        session = s
        do { return try passkeyKnown(now: now) } catch { return abort(error) }
    }

    /// The user's answer to `.confirmNumericComparison`. `byPerson` false: the answer came
    /// without anyone comparing the numbers (an agent that accepts every comparison), so the
    /// key authenticates nothing and may not replace a protected bond (`protectsExistingBond`),
    /// as a Just Works key may not.
    public mutating func numericComparisonConfirmed(_ matches: Bool, byPerson: Bool = true, now: Duration) -> [SMPAction] {
        guard !isClosed, var s = session, s.awaitingNumericConfirmation, s.method.model == .numericComparison else { return [] }
        guard matches else { return abort(Abort(.numericComparisonFailed, "the user said the numbers differ")) }
        if protectsExistingBond && !byPerson {
            let why = "the peer is bonded, and a pairing it started whose numbers nobody compared (the agent confirms every comparison) does not replace the bond (remove the bond, or pair from this side, to replace it)"
            return abort(Abort(.authenticationRequirements, why, error: .existingBondKept(why)))
        }
        s.awaitingNumericConfirmation = false
        session = s
        do { return try numericComparisonAccepted(now: now) } catch { return abort(error) }
    }

    /// The user's answer to `.confirmJustWorks`: declining ends the pairing with Pairing Failed
    /// (Unspecified Reason), accepting goes on where it waited.
    public mutating func justWorksConfirmed(_ accepted: Bool, now: Duration) -> [SMPAction] {
        guard !isClosed, var s = session, s.awaitingNumericConfirmation, s.method.model == .justWorks else { return [] }
        guard accepted else { return abort(Abort(.unspecifiedReason, "the user declined the Just Works pairing")) }
        s.awaitingNumericConfirmation = false
        if s.secureConnections {
            session = s
            do { return try numericComparisonAccepted(now: now) } catch { return abort(error) }
        }
        s.temporaryKey = [UInt8](repeating: 0, count: 16)
        session = s
        do { return try legacyTemporaryKeyKnown(now: now) } catch { return abort(error) }
    }

    /// The owner ends the pairing for a reason of its own: Pairing Failed with `reason` to the
    /// peer and `.failed(.local(reason, detail:))` (nothing when no pairing is under way but the
    /// Pairing Failed).
    public mutating func abandon(_ reason: SMPPairingFailedReason, detail: String) -> [SMPAction] {
        guard !isClosed else { return [] }
        return abort(Abort(reason, detail))
    }

    /// The application's answer to `.requestApproval`.
    public mutating func approve(_ approved: Bool, now: Duration) -> [SMPAction] {
        guard !isClosed, phase == .awaitingApproval, let s = session else { return [] }
        guard approved else { return abort(Abort(.pairingNotSupported, "the application declined to pair")) }
        do { return try respond(to: s.initiator, request: s.preq, now: now) } catch { return abort(error) }
    }

    /// The controller's Encryption Change or Encryption Key Refresh Complete for this link
    /// (Vol 4 Part E §7.7.8, §7.7.39): with the new key in place, keys are distributed.
    public mutating func encryptionChanged(status: UInt8, enabled: Bool, now: Duration) -> [SMPAction] {
        guard !isClosed, phase == .encrypting else { return [] }
        guard status == 0, enabled else {
            let error = SMPPairingError.encryptionFailed(status: status)
            reset()
            return [.failed(error)]
        }
        do {
            let early = session?.earlyKeys ?? []
            session?.earlyKeys = []
            var actions = try beginDistribution(now: now)
            for pdu in early where session != nil { actions += try receiveKey(pdu, now: now) }
            return actions
        } catch { return abort(error) }
    }

    /// Peripheral: the controller asks for the key of the link the central is encrypting
    /// (LE Long Term Key Request, Vol 4 Part E §7.7.65.5). During pairing that is the STK or the
    /// Secure Connections LTK (EDIV and Rand zero, §2.4.4.1); otherwise nil, and the owner asks
    /// its bond store.
    public func longTermKeyRequested(ediv: UInt16, rand: UInt64) -> [UInt8]? {
        guard role == .responder, phase == .encrypting, ediv == 0, rand == 0 else { return nil }
        return session?.linkKey
    }

    /// The SMP timer (§3.4): past the deadline the pairing fails and SMP closes on this link.
    public mutating func expire(now: Duration) -> [SMPAction] {
        guard let deadline = nextDeadline, now >= deadline else { return [] }
        reset()
        isClosed = true
        return [.failed(.timeout)]
    }

    // MARK: - Dispatch

    private mutating func handle(_ pdu: SMPPDU, now: Duration) throws(Abort) -> [SMPAction] {
        switch pdu {
        case let .pairingFailed(reason):
            return peerFailed(reason)
        case .keypressNotification:
            return []  // informational (§3.5.8); this stack shows no keypress progress
        case let .securityRequest(auth):
            guard role == .initiator else { throw Abort(.commandNotSupported, "a peripheral does not take Security Requests") }
            return phase == .idle ? [.securityRequested(auth)] : []
        case let .pairingRequest(features):
            guard role == .responder else { throw Abort(.commandNotSupported, "a central does not take Pairing Requests") }
            guard phase == .idle else { throw Abort(.unspecifiedReason, "Pairing Request during a pairing") }
            return try receiveRequest(features, now: now)
        case let .pairingResponse(features):
            guard role == .initiator, phase == .awaitingResponse, var s = session else {
                throw Abort(.unspecifiedReason, "unexpected Pairing Response")
            }
            s.pres = pdu.encode()
            s.responder = features
            session = s
            try negotiate()
            return try beginAuthentication(now: now)
        case let .pairingConfirm(value):
            return try (session?.secureConnections ?? false) ? receiveSCConfirm(value, now: now) : receiveLegacyConfirm(value, now: now)
        case let .pairingRandom(value):
            return try (session?.secureConnections ?? false) ? receiveSCRandom(value, now: now) : receiveLegacyRandom(value, now: now)
        case let .pairingPublicKey(x, y):
            return try receivePublicKey(x: x, y: y, now: now)
        case let .pairingDHKeyCheck(value):
            return try receiveDHKeyCheck(value, now: now)
        case .encryptionInformation, .centralIdentification, .identityInformation, .identityAddressInformation,
             .signingInformation:
            // The central's own Encryption Change can come after the peripheral's first keys:
            // events and ACL data travel apart over HCI. Hold them until it does.
            if role == .initiator, phase == .encrypting, var s = session {
                guard s.earlyKeys.count < 5 else { throw Abort(.unspecifiedReason, "more keys than §3.6.1 distributes, before encryption") }
                s.earlyKeys.append(pdu)
                session = s
                return []
            }
            return try receiveKey(pdu, now: now)
        case .unknown:
            // A reserved code is ignored (Core 5.2+ Vol 3 Part H §3.3); it ends nothing.
            return []
        }
    }

    // MARK: - Feature exchange (§2.3.1–2.3.4)

    private mutating func receiveRequest(_ features: SMPPairingFeatures, now: Duration) throws(Abort) -> [SMPAction] {
        let preq = SMPPDU.pairingRequest(features).encode()
        generation += 1
        session = SMPSession(preq: preq, initiator: features)
        phase = .featureExchange
        if settings.asksApproval {
            phase = .awaitingApproval
            touch(now)
            return [.requestApproval(features)]
        }
        return try respond(to: features, request: preq, now: now)
    }

    private mutating func respond(to request: SMPPairingFeatures, request preq: [UInt8], now: Duration) throws(Abort) -> [SMPAction] {
        try Self.validate(request, "Pairing Request")
        do { try settings.validate() } catch { throw Abort(.unspecifiedReason, "\(error)") }
        let sc = settings.secureConnections && request.authRequirements.contains(.secureConnections)
        let response = SMPPairingFeatures(
            ioCapability: settings.ioCapability,
            oobDataFlag: outOfBand.hasPeerData(secureConnections: sc) ? 1 : 0,
            authRequirements: settings.authRequirements, maximumEncryptionKeySize: settings.maximumKeySize,
            initiatorKeyDistribution: request.initiatorKeyDistribution.intersection(settings.requests).subtracting(.linkKey),
            responderKeyDistribution: request.responderKeyDistribution.intersection(settings.distributes).subtracting(.linkKey))
        let pres = SMPPDU.pairingResponse(response).encode()
        guard var s = session else { throw Abort(.unspecifiedReason, "no pairing") }
        s.pres = pres
        s.responder = response
        session = s
        try negotiate()
        var actions = [send(pres, now: now)]
        actions += try beginAuthentication(now: now)
        return actions
    }

    /// Refuses reserved values in the peer's features with Invalid Parameters (§3.5.1).
    private static func validate(_ f: SMPPairingFeatures, _ what: String) throws(Abort) {
        guard f.ioCapability.isDefined else { throw Abort(.invalidParameters, "\(what) has reserved IO capability 0x\(String(f.ioCapability.rawValue, radix: 16))") }
        guard f.oobDataFlag <= 1 else { throw Abort(.invalidParameters, "\(what) has reserved OOB data flag \(f.oobDataFlag)") }
        guard (7...16).contains(f.maximumEncryptionKeySize) else {
            throw Abort(.invalidParameters, "\(what) offers key size \(f.maximumEncryptionKeySize), outside 7...16")
        }
    }

    /// Both sides' features are known: fixes Secure Connections or legacy, the key size and the
    /// association model, refusing what our settings do not accept (§2.3.4, §2.3.5.1).
    private mutating func negotiate() throws(Abort) {
        guard var s = session, let responder = s.responder else { throw Abort(.unspecifiedReason, "no pairing") }
        let initiator = s.initiator
        try Self.validate(role == .initiator ? responder : initiator, role == .initiator ? "Pairing Response" : "Pairing Request")
        if role == .initiator {
            // The responder may only narrow what we asked for (§3.6.1).
            guard responder.initiatorKeyDistribution.isSubset(of: initiator.initiatorKeyDistribution),
                  responder.responderKeyDistribution.isSubset(of: initiator.responderKeyDistribution) else {
                throw Abort(.invalidParameters, "Pairing Response distributes keys that were not asked for")
            }
        }
        let sc = initiator.authRequirements.contains(.secureConnections) && responder.authRequirements.contains(.secureConnections)
            && settings.secureConnections
        let keySize = Int(min(initiator.maximumEncryptionKeySize, responder.maximumEncryptionKeySize))
        if settings.secureConnectionsOnly && !sc {
            throw Abort(.authenticationRequirements, "Secure Connections Only mode, and the peer offers only legacy pairing")
        }
        if keySize < Int(settings.minimumKeySize) || (settings.secureConnectionsOnly && keySize < 16) {
            throw Abort(.encryptionKeySize, "key size \(keySize) is below the \(settings.secureConnectionsOnly ? 16 : settings.minimumKeySize) required")
        }
        let method = SMPMethod.select(initiator: initiator, responder: responder, secureConnections: sc)
        if settings.secureConnectionsOnly && !method.model.isAuthenticated {
            // Secure Connections Only is mode 1 level 4 (Vol 3 Part C §10.2.4): authenticated.
            throw Abort(.authenticationRequirements, "Secure Connections Only mode needs an authenticated key, and the IO capabilities allow only Just Works")
        }
        if settings.mitm && !method.model.isAuthenticated {
            throw Abort(.authenticationRequirements, "MITM protection required, but the IO capabilities allow only Just Works")
        }
        if protectsExistingBond && !method.model.isAuthenticated {
            let why = "the peer is bonded, and an unauthenticated pairing it started does not replace the bond (remove the bond, or pair from this side, to replace it)"
            throw Abort(.authenticationRequirements, why, error: .existingBondKept(why))
        }
        if method.model == .outOfBand && !sc && outOfBand.legacyTemporaryKey?.count != 16 {
            throw Abort(.oobNotAvailable, "legacy OOB pairing chosen, but no 16-octet TK was given")
        }
        if method.model == .outOfBand && sc {
            // The peer's flag says it holds our OOB data; without any, it cannot, and its claim
            // would make an all-zero r stand in for the OOB secret (§2.3.5.6.4): refuse.
            let peerFlag = (role == .initiator ? responder : initiator).oobDataFlag == 1
            if peerFlag && outOfBand.local == nil {
                throw Abort(.oobNotAvailable, "the peer claims OOB data from us, and we gave none out")
            }
        }
        s.secureConnections = sc
        s.keySize = keySize
        s.method = method
        lastModel = method.model
        s.bonding = initiator.authRequirements.contains(.bonding) && responder.authRequirements.contains(.bonding)
        session = s
    }

    /// After the feature exchange: the first step of the chosen pairing's phase 2.
    private mutating func beginAuthentication(now: Duration) throws(Abort) -> [SMPAction] {
        guard let s = session else { throw Abort(.unspecifiedReason, "no pairing") }
        var actions = try preparePasskey()
        if s.secureConnections {
            actions += try beginSecureConnections(now: now)
        } else {
            actions += try beginLegacy(now: now)
        }
        return actions
    }

    /// For Passkey Entry: generates and shows the passkey on the displaying side, or asks the
    /// user for it on the typing side (§2.3.5.3).
    private mutating func preparePasskey() throws(Abort) -> [SMPAction] {
        guard var s = session, s.method.model == .passkeyEntry, let roles = s.method.passkeyRoles else { return [] }
        let displays: Bool
        switch roles {
        case .initiatorDisplays: displays = role == .initiator
        case .responderDisplays: displays = role == .responder
        case .bothInput: displays = false
        }
        if displays {
            let passkey: UInt32
            if let fixed = settings.displayedPasskey {
                guard fixed <= 999_999 else { throw Abort(.passkeyEntryFailed, "the configured passkey \(fixed) has more than six digits") }
                passkey = fixed
            } else {
                passkey = try randomPasskey()
            }
            s.passkey = passkey
            session = s
            return [.displayPasskey(passkey)]
        }
        s.awaitingPasskeyInput = true
        session = s
        return [.requestPasskey]
    }

    /// The passkey is known on this side now (typed by the user).
    private mutating func passkeyKnown(now: Duration) throws(Abort) -> [SMPAction] {
        guard let s = session else { return [] }
        return s.secureConnections ? try scPasskeyKnown(now: now) : try legacyTemporaryKeyKnown(now: now)
    }

    // MARK: - Helpers

    /// Queues a PDU and restarts the SMP timer (§3.4: reset whenever a command is queued).
    mutating func send(_ pdu: [UInt8], now: Duration) -> SMPAction {
        touch(now)
        return .send(pdu)
    }

    mutating func touch(_ now: Duration) {
        nextDeadline = now + Self.timeout
    }

    /// Ends the pairing on our side: Pairing Failed to the peer, the error to the owner.
    /// Outside a pairing only the PDU goes out: there is no procedure to report as failed (a
    /// straggler after a failure, a confirm value out of nowhere).
    mutating func abort(_ error: Abort) -> [SMPAction] {
        let wasPairing = phase != .idle
        reset()
        let reply = SMPAction.send(SMPPDU.pairingFailed(error.reason).encode())
        return wasPairing ? [reply, .failed(error.error ?? .local(error.reason, detail: error.detail))] : [reply]
    }

    private mutating func peerFailed(_ reason: SMPPairingFailedReason) -> [SMPAction] {
        guard phase != .idle else { return [] }
        reset()
        return [.failed(.peer(reason))]
    }

    mutating func reset() {
        phase = .idle
        session = nil
        nextDeadline = nil
    }

    /// Six decimal digits, uniformly (rejection sampling over 32 random bits).
    private func randomPasskey() throws(Abort) -> UInt32 {
        for _ in 0..<16 {
            let b = try random(4)
            let v = b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if v < 4_294_000_000 { return v % 1_000_000 }
        }
        throw Abort(.unspecifiedReason, "the random source keeps giving out-of-range values")
    }

    func random(_ count: Int) throws(Abort) -> [UInt8] {
        do { return try entropy.bytes(count) } catch { throw Abort(.unspecifiedReason, "random source: \(error)") }
    }

    /// Runs a crypto function; a library failure ends the pairing with Unspecified Reason.
    func crypto<T>(_ what: String, _ body: () throws(CryptoError) -> T) throws(Abort) -> T {
        do { return try body() } catch { throw Abort(.unspecifiedReason, "\(what): \(error)") }
    }

    /// A key shortened to the negotiated size by zeroing its most significant octets (§2.3.4);
    /// `key` is least significant octet first.
    static func masked(_ key: [UInt8], toSize size: Int) -> [UInt8] {
        key.enumerated().map { $0.offset < size ? $0.element : 0 }
    }
}

/// The values one pairing accumulates. Nonces, confirm values and keys are stored most
/// significant octet first, as `SMPCrypto` takes them; PDUs carry them reversed.
struct SMPSession: Sendable {
    var preq: [UInt8]
    var pres: [UInt8] = []
    var initiator: SMPPairingFeatures
    var responder: SMPPairingFeatures?
    var secureConnections = false
    var keySize = 16
    var method = SMPMethod.justWorks
    var bonding = false

    var passkey: UInt32?
    var awaitingPasskeyInput = false
    var awaitingNumericConfirmation = false

    // Legacy.
    var temporaryKey: [UInt8]?
    var localRandom: [UInt8] = []
    var peerConfirm: [UInt8]?
    /// Our own legacy confirm value (Mconfirm or Sconfirm), MSB-first, to refuse it reflected.
    var localConfirm: [UInt8]?
    /// Key distribution PDUs that arrived before our Encryption Change (initiator).
    var earlyKeys: [SMPPDU] = []
    var sentConfirm = false

    // Secure Connections.
    var keyPair: P256KeyPair?
    var peerPublicKeyX: [UInt8] = []
    var dhKey: [UInt8] = []
    var localNonce: [UInt8] = []
    var peerNonce: [UInt8] = []
    var passkeyRound = 0
    var initiatorNonce: [UInt8] = []
    var responderNonce: [UInt8] = []
    var macKey: [UInt8] = []
    var secureConnectionsLTK: [UInt8] = []
    var pendingPeerCheck: [UInt8]?
    var sentCheck = false

    /// The key the link gets encrypted with, least significant octet first.
    var linkKey: [UInt8]?

    // Key distribution.
    var expected: [SMPCode] = []
    var sent = SMPDistributedKeys()
    var received = SMPDistributedKeys()
}

extension DeviceAddress {
    /// 0x00 public, 0x01 random: the address-type octet of c1, f5 and f6.
    var smpTypeOctet: UInt8 { type == .public || type == .publicIdentity ? 0 : 1 }
    /// The six address octets, most significant first.
    var smpMSBFirst: [UInt8] { Array(address.littleEndianBytes.reversed()) }
    /// The 7-octet A1/A2 of f5 and f6: the type octet, then the address MSB-first.
    var smpF5Form: [UInt8] { [smpTypeOctet] + smpMSBFirst }
}

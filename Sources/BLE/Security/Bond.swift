import BLECrypto
import BLEHost
import BLEWire
import Synchronization

/// What the host keeps about a bonded peer (Core spec Vol 3 Part H §2.4.1, Vol 3 Part C §9.4.4):
/// the keys from pairing, what they are worth, and what the peer's GATT state was, so a
/// reconnection re-encrypts without pairing and finds its subscriptions as it left them.
/// Keys are least significant octet first, as HCI takes them.
public struct Bond: Sendable, Hashable {
    /// The peer's identity: its public or static random address (from Identity Address
    /// Information, or the address it connected with when it sent none).
    public var peer: DeviceAddress
    /// The address the peer used on the link it paired over, when that was not its identity
    /// (some stacks, Bumble among them, connect with a static random address and distribute
    /// their public one): a later connection from the same address finds the bond too.
    public var connectionAddress: DeviceAddress?
    /// LTK to encrypt with as central, and the EDIV/Rand that name it (zero for Secure
    /// Connections; the peer's distributed values for legacy pairing).
    public var peerLongTermKey: [UInt8]?
    /// The EDIV naming `peerLongTermKey`: the peer's Central Identification value
    /// (Vol 3 Part H §3.6.3) after legacy pairing, 0 under Secure Connections.
    public var peerEDIV: UInt16
    /// The Rand naming `peerLongTermKey`, from the same Central Identification
    /// (Vol 3 Part H §3.6.3); 0 under Secure Connections.
    public var peerRand: UInt64
    /// The LTK we gave (legacy) or derived (Secure Connections), to answer the controller's
    /// LE Long Term Key Request as peripheral, with its EDIV/Rand.
    public var localLongTermKey: [UInt8]?
    /// The EDIV we sent with `localLongTermKey` (legacy), 0 under Secure Connections: the
    /// controller's LE Long Term Key Request carries it back to say which key the central wants.
    public var localEDIV: UInt16
    /// The Rand we sent with `localLongTermKey` (legacy), 0 under Secure Connections; matched like
    /// `localEDIV`.
    public var localRand: UInt64
    /// The peer's IRK, to resolve its private addresses (Vol 6 Part B §1.3.2.3).
    public var peerIdentityResolvingKey: [UInt8]?
    /// The peer's CSRK (Signing Information, Vol 3 Part H §3.6.6), to verify the signed writes
    /// it sends us (§2.4.5).
    public var peerSignatureKey: [UInt8]?
    /// The peer's SignCounter in the last signed write we accepted from it, nil before any; a
    /// signed write whose counter is not above it is a replay (Vol 3 Part C §10.4.2). Stored
    /// before the write is applied.
    public var peerSignCounter: UInt32?
    /// The SignCounter our next signed write to this peer carries (Vol 3 Part C §10.4.1): it
    /// starts at 0 and is stored one higher before each signed write goes out, so no counter is
    /// ever used twice, across restarts too.
    public var localSignCounter: UInt32
    /// Our CSRK as we gave it to this peer in Signing Information (Vol 3 Part H §3.6.6): what
    /// our signed writes to it are signed with. Nil when we gave none (the peer did not ask for
    /// it), and for bonds stored before this was recorded: such a peer is paired again to sign.
    public var localSignatureKey: [UInt8]?
    /// The keys came from LE Secure Connections pairing; false for LE legacy pairing.
    public var secureConnections: Bool
    /// The key is authenticated: pairing used a MITM-protected association model (Passkey Entry,
    /// Numeric Comparison or OOB), not Just Works (Vol 3 Part H §2.3.5.1).
    public var authenticated: Bool
    /// The encryption key size negotiated in pairing, 7...16 octets (Vol 3 Part H §2.3.4); with
    /// `authenticated` and `secureConnections` it sets `securityLevel`.
    public var keySize: Int
    /// CCCD values this peer wrote to our server, by characteristic value handle (Vol 3 Part G
    /// §3.3.3.3: they persist for bonded clients).
    public var clientConfigurations: [UInt16: UInt16]
    /// The peer's GATT Database Hash when we last discovered it (for GATT caching).
    public var databaseHash: [UInt8]?
    /// Our server's Database Hash (Vol 3 Part G §7.3) when this peer, as a client, last knew the
    /// database as it was (change-aware at the end of a connection, §2.5.2.1): if it differs
    /// on its return, the peer is change-unaware and is sent Service Changed.
    public var servedDatabaseHash: [UInt8]?
    /// The Client Supported Features (Vol 3 Part G §7.2) this peer, as a client, enabled on our
    /// server: they persist across connections for a client with a trusted relationship, so a
    /// restarted server still answers a change-unaware client Database Out Of Sync (§2.5.2.1).
    /// Nil when it enabled none, and for bonds stored before this was recorded.
    public var clientSupportedFeatures: [UInt8]?

    /// A bond from its parts, as `DirectoryBondStore` reads one back. EDIV and Rand default to 0,
    /// as Secure Connections keys have them.
    public init(peer: DeviceAddress, connectionAddress: DeviceAddress? = nil, peerLongTermKey: [UInt8]? = nil, peerEDIV: UInt16 = 0, peerRand: UInt64 = 0,
                localLongTermKey: [UInt8]? = nil, localEDIV: UInt16 = 0, localRand: UInt64 = 0,
                peerIdentityResolvingKey: [UInt8]? = nil, peerSignatureKey: [UInt8]? = nil, peerSignCounter: UInt32? = nil,
                localSignCounter: UInt32 = 0, localSignatureKey: [UInt8]? = nil, secureConnections: Bool, authenticated: Bool, keySize: Int,
                clientConfigurations: [UInt16: UInt16] = [:], databaseHash: [UInt8]? = nil, servedDatabaseHash: [UInt8]? = nil,
                clientSupportedFeatures: [UInt8]? = nil) {
        self.peer = peer
        self.connectionAddress = connectionAddress
        self.peerLongTermKey = peerLongTermKey
        self.peerEDIV = peerEDIV
        self.peerRand = peerRand
        self.localLongTermKey = localLongTermKey
        self.localEDIV = localEDIV
        self.localRand = localRand
        self.peerIdentityResolvingKey = peerIdentityResolvingKey
        self.peerSignatureKey = peerSignatureKey
        self.peerSignCounter = peerSignCounter
        self.localSignCounter = localSignCounter
        self.localSignatureKey = localSignatureKey
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
        self.clientConfigurations = clientConfigurations
        self.databaseHash = databaseHash
        self.servedDatabaseHash = servedDatabaseHash
        self.clientSupportedFeatures = clientSupportedFeatures
    }

    /// The peer's IRK when it can resolve anything: not an all-zero one, which a device without
    /// an IRK of its own may distribute (Vol 3 Part H §3.6.4) and which resolves nothing.
    public var resolvingKey: [UInt8]? {
        peerIdentityResolvingKey.flatMap { ResolvablePrivateAddress.isUsable($0) ? $0 : nil }
    }

    /// Whether a device at `address` is this bond's peer: its identity, the address it paired
    /// from, or a resolvable private address its IRK resolves (Vol 6 Part B §1.3.2.3).
    public func matches(_ address: DeviceAddress) -> Bool {
        if peer.sameDevice(as: address) { return true }
        if let connectionAddress, connectionAddress.sameDevice(as: address) { return true }
        guard address.type.peerType == .random, address.address.randomKind == .resolvablePrivate,
              let irk = resolvingKey else { return false }
        return ResolvablePrivateAddress.resolves(address.address, irk: irk)
    }

    /// The level a link encrypted with this bond's key has.
    public var securityLevel: SecurityLevel {
        .of(authenticated: authenticated, secureConnections: secureConnections, keySize: keySize)
    }

    /// The bond a finished pairing makes, seen from the side in `role`.
    init(outcome: SMPPairingOutcome, connectedPeer: DeviceAddress, role: SMPPairing.Role) {
        let peer = outcome.received.identityAddress ?? connectedPeer
        let sc = outcome.secureConnectionsLongTermKey
        // Legacy: the central encrypts with the key the peripheral distributed; the peripheral
        // answers with the key it distributed. Secure Connections: both use the derived LTK.
        let asCentral = sc ?? outcome.received.longTermKey
        let asPeripheral = sc ?? outcome.sent.longTermKey
        // An RPA is not kept as the address it connects from: it identifies nothing once renewed,
        // and a replay of it must not match this bond (the IRK resolves the genuine ones).
        let privateAddress = connectedPeer.type.peerType == .random && connectedPeer.address.randomKind == .resolvablePrivate
        self.init(peer: peer, connectionAddress: peer.sameDevice(as: connectedPeer) || privateAddress ? nil : connectedPeer,
                  peerLongTermKey: asCentral, peerEDIV: sc == nil ? outcome.received.ediv : 0, peerRand: sc == nil ? outcome.received.rand : 0,
                  localLongTermKey: asPeripheral, localEDIV: sc == nil ? outcome.sent.ediv : 0, localRand: sc == nil ? outcome.sent.rand : 0,
                  peerIdentityResolvingKey: outcome.received.identityResolvingKey, peerSignatureKey: outcome.received.signatureKey,
                  localSignatureKey: outcome.sent.signatureKey, secureConnections: outcome.secureConnections, authenticated: outcome.authenticated, keySize: outcome.keySize)
    }

    /// The key to encrypt with in `role`, with its EDIV and Rand.
    func key(as role: SMPPairing.Role) -> (ltk: [UInt8], ediv: UInt16, rand: UInt64)? {
        switch role {
        case .initiator: return peerLongTermKey.map { ($0, peerEDIV, peerRand) }
        case .responder: return localLongTermKey.map { ($0, localEDIV, localRand) }
        }
    }
}

/// This host's own long-lived identity (Core spec Vol 3 Part H §2.4.2.1, Vol 3 Part C §10.7):
/// an IRK, a static random identity address and a CSRK, generated on first use and kept with
/// the bonds so a bonded peer recognises us on the next run, on any controller.
public struct LocalIdentity: Sendable, Hashable {
    /// Our IRK, given to peers in Identity Information (Vol 3 Part H §3.6.4) so they can resolve
    /// our resolvable private addresses (Vol 6 Part B §1.3.2.3).
    public var identityResolvingKey: [UInt8]
    /// The static random address we connect and advertise with when pairing or reconnecting
    /// to a bonded peer.
    public var address: BDAddress
    /// A CSRK kept with the identity file's format. Pairing does not distribute it: each
    /// pairing gives the peer a fresh CSRK of its own (Vol 3 Part H §3.6.6), kept in that bond
    /// as `Bond.localSignatureKey`, so no peer can sign as us towards another.
    public var signatureKey: [UInt8]

    /// An identity from stored keys; `generate()` makes a fresh one.
    public init(identityResolvingKey: [UInt8], address: BDAddress, signatureKey: [UInt8]) {
        self.identityResolvingKey = identityResolvingKey
        self.address = address
        self.signatureKey = signatureKey
    }

    /// A fresh identity from the system's secure random source: the static random address has
    /// its two top bits set and is neither all ones nor all zeros below them (Vol 6 Part B §1.3.2.1).
    public static func generate() throws -> LocalIdentity {
        let irk = try SecureRandom.bytes(count: 16)
        let csrk = try SecureRandom.bytes(count: 16)
        var address: BDAddress
        repeat {
            let raw = try SecureRandom.bytes(count: 6).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            address = BDAddress(rawValue: raw | 0xC000_0000_0000)
        } while address.rawValue == 0xFFFF_FFFF_FFFF || address.rawValue & 0x3FFF_FFFF_FFFF == 0
        return LocalIdentity(identityResolvingKey: irk, address: address, signatureKey: csrk)
    }
}

/// Where bonds live. `DirectoryBondStore` (BLETransport) keeps one file per bond; tests and
/// short-lived programs can use `InMemoryBondStore`. Implementations are safe to call from any
/// task; a corrupt entry is reported through `problems` and skipped, never a crash.
public protocol BondStore: Sendable {
    /// Every bond, in a stable order.
    func bonds() throws -> [Bond]
    /// Writes (replaces) the bond of `bond.peer`.
    func save(_ bond: Bond) throws
    /// Removes the bond of `peer`; true when there was one.
    @discardableResult func remove(_ peer: DeviceAddress) throws -> Bool
    /// The local identity, generated and stored on first use.
    func localIdentity() throws -> LocalIdentity
    /// Entries that could not be read, with why (for `ble bonds` and the logs).
    func problems() -> [String]
    /// Whether the fixed `passkey` was shown in a pairing before (`retirePasskey`): one recorded
    /// Passkey Entry pairing reveals it (Vol 3 Part H §2.3.5.6.3), so it is not used again.
    func isPasskeyRetired(_ passkey: UInt32) throws -> Bool
    /// Records, before it returns, that the fixed `passkey` was shown in a pairing. A store on
    /// disk keeps this beside the local identity, so a restart does not show it again.
    func retirePasskey(_ passkey: UInt32) throws
}

extension BondStore {
    /// Stores that keep no retirements: every fixed passkey counts as unused (the host still
    /// retires it for its own lifetime).
    public func isPasskeyRetired(_ passkey: UInt32) throws -> Bool { false }
    /// Keeps nothing.
    public func retirePasskey(_ passkey: UInt32) throws {}
}

extension BondStore {
    /// The bond of the device at `peer` (see `Bond.matches`).
    public func bond(for peer: DeviceAddress) throws -> Bond? {
        try bonds().first { $0.matches(peer) }
    }
}

extension DeviceAddress {
    /// The same address and kind (public or random), ignoring whether it was resolved.
    func sameDevice(as other: DeviceAddress) -> Bool {
        address == other.address && type.peerType == other.type.peerType
    }
}

/// Bonds in memory only: gone when the process ends.
public final class InMemoryBondStore: BondStore {
    private struct State {
        var stored: [DeviceAddress: Bond] = [:]
        var identity: LocalIdentity?
        var retiredPasskeys: Set<UInt32> = []
    }
    private let state: Mutex<State>

    /// An empty store; `identity` fixes the local identity instead of generating one.
    public init(identity: LocalIdentity? = nil) { state = Mutex(State(identity: identity)) }

    /// Every stored bond, ordered by peer address, then address type.
    public func bonds() throws -> [Bond] {
        state.withLock { s in s.stored.values.sorted { ($0.peer.address, $0.peer.type.rawValue) < ($1.peer.address, $1.peer.type.rawValue) } }
    }
    /// Stores `bond`, replacing any bond of the same peer.
    public func save(_ bond: Bond) throws { state.withLock { $0.stored[bond.peer] = bond } }
    /// Forgets the bond of `peer`; true when there was one.
    public func remove(_ peer: DeviceAddress) throws -> Bool { state.withLock { $0.stored.removeValue(forKey: peer) != nil } }
    /// The identity given to `init`, else one generated on the first call and kept for the store's
    /// life.
    public func localIdentity() throws -> LocalIdentity {
        if let existing = state.withLock({ $0.identity }) { return existing }
        let made = try LocalIdentity.generate()
        return state.withLock { s in
            if let raced = s.identity { return raced }
            s.identity = made
            return made
        }
    }
    /// Always empty: nothing in memory fails to parse.
    public func problems() -> [String] { [] }
    /// Whether `retirePasskey` was called with `passkey` on this store.
    public func isPasskeyRetired(_ passkey: UInt32) throws -> Bool { state.withLock { $0.retiredPasskeys.contains(passkey) } }
    /// Remembers `passkey` as used, for this store's (the process's) lifetime.
    public func retirePasskey(_ passkey: UInt32) throws { _ = state.withLock { $0.retiredPasskeys.insert(passkey) } }
}

import BLEHCI
import BLEHost
import BLEWire

/// One LE connection as the host keeps it: who and what it is, and the sans-IO state of both
/// sides of its ATT bearer. The continuations of callers waiting on the link live in the GATT
/// parts, keyed by its handle; what the API reads synchronously is published to `observation`.
struct Link {
    let id: UInt64
    let handle: UInt16
    let peer: DeviceAddress
    let role: ConnectionRole
    var parameters: LinkParameters
    /// Our GATT client's side of every ATT bearer of this link: the unenhanced one and each
    /// Enhanced ATT bearer (Vol 3 Part F §3.2.11), with the scheduler that runs procedures on
    /// whichever is free. Any change marks `clientsDeadline` stale.
    var clients: ATTClientBearerSet {
        _read { yield storedClients }
        set { storedClients = newValue; clientsDeadline = .stale }
        _modify { clientsDeadline = .stale; yield &storedClients }
    }
    /// Our GATT client's side of this link's unenhanced ATT bearer (fixed channel 0x0004): its
    /// MTU is the link's, commands go on it.
    var bearer: ATTClientBearer {
        _read { yield storedClients.unenhanced }
        _modify { clientsDeadline = .stale; yield &storedClients.unenhanced }
    }
    /// Our GATT server's side of this link's ATT bearer (CCCDs, MTU, queues are per connection).
    /// Any change marks `serversDeadline` stale.
    var server: ATTServer {
        _read { yield storedServer }
        set { storedServer = newValue; serversDeadline = .stale }
        _modify { serversDeadline = .stale; yield &storedServer }
    }
    /// Our GATT server's side of each Enhanced ATT bearer, by our local CID of its channel: its own
    /// ATT_MTU, request in progress, prepare queue and outstanding indication. What belongs to the
    /// client rather than a bearer (CCCDs, Client Supported Features, change awareness) stays in
    /// `server` and is shared with every bearer (GATTServerSessions+Enhanced.swift).
    var enhancedServers: [UInt16: ATTServer] {
        _read { yield storedEnhancedServers }
        set { storedEnhancedServers = newValue; serversDeadline = .stale }
        _modify { serversDeadline = .stale; yield &storedEnhancedServers }
    }
    private var storedClients: ATTClientBearerSet
    private var storedServer: ATTServer
    private var storedEnhancedServers: [UInt16: ATTServer] = [:]
    /// The earliest deadline of the client bearers and of the servers, as last computed: the
    /// host asks for the earliest deadline after every frame, and most frames change neither
    /// (a notification moves no transaction timer), so each is recomputed only after its part
    /// changed (through the accessors above, the only way to change them).
    private var clientsDeadline = CachedDeadline.stale
    private var serversDeadline = CachedDeadline.stale
    var security = LinkSecurity(encrypted: false, authenticated: false, authorized: false)
    /// The link is encrypted with the key of its peer's bond: a reconnection's encryption with
    /// the stored key, or the pairing that made the bond. Only then does what the client does
    /// on the link speak for the bonded client and go with its bond (CCCDs, Vol 3 Part G
    /// §3.3.3.3; features and change awareness, §7.2, §2.5.2.1); a pairing of its own by a
    /// device copying the bonded peer's address, unfinished or not kept, does not.
    /// (`security.hasLongTermKey` only says a bond for the peer exists.)
    var encryptedWithBondKey = false
    var maxTxOctets = 27
    var maxRxOctets = 27
    var txPHY: LEPHY = .le1M
    var rxPHY: LEPHY = .le1M
    /// LE PHY Update Complete events for the link so far: an LE Read PHY asked for before one
    /// came answers with older PHYs.
    var phyUpdates = 0
    /// The channel selection algorithm the link uses, 1 or 2 (LE Channel Selection Algorithm,
    /// Vol 4 Part E §7.7.65.20); nil when the controller did not say.
    var channelSelectionAlgorithm: Int?
    let observation: LinkObservation
    /// The addresses both ends used on the air when the link was made (an RPA the controller
    /// resolved for `peer`; our address then, before any renewal): what pairing's c1, f5 and f6
    /// take (Vol 3 Part H §2.2.3, §2.2.7, §2.2.8).
    var peerOnAir: DeviceAddress?
    var localOnAir: DeviceAddress?

    init(id: UInt64, handle: UInt16, peer: DeviceAddress, role: ConnectionRole, parameters: LinkParameters,
         clients: ATTClientBearerSet, server: ATTServer, observation: LinkObservation) {
        self.id = id
        self.handle = handle
        self.peer = peer
        self.role = role
        self.parameters = parameters
        self.storedClients = clients
        self.storedServer = server
        self.observation = observation
    }

    /// The earliest protocol deadline of this link: a client bearer's transaction timeout
    /// (Vol 3 Part F §3.3.3, every bearer, Enhanced ATT ones too) or a server's indication
    /// confirmation timeout. Recomputes only the parts changed since the last call.
    mutating func nextDeadline() -> Duration? {
        if case .stale = clientsDeadline { clientsDeadline = .known(storedClients.nextDeadline) }
        if case .stale = serversDeadline {
            var next = storedServer.nextDeadline
            if !storedEnhancedServers.isEmpty {
                for server in storedEnhancedServers.values { next = earliest(next, server.nextDeadline) }
            }
            serversDeadline = .known(next)
        }
        return earliest(clientsDeadline.value, serversDeadline.value)
    }

    /// A central's view of this link, for the peripheral manager's events.
    var central: ConnectedCentral { ConnectedCentral(id: id, address: peer) }

    /// Copies what the API shows (parameters, MTU, PHY, data length) to the observation.
    func publish() {
        let p = parameters
        // One ATT_MTU per bearer: whichever side exchanged last set it for both (Vol 3 Part F §3.4.2).
        let mtu = max(bearer.mtu, server.mtu)
        let (phy, tx, rx, csa) = (txPHY, maxTxOctets, maxRxOctets, channelSelectionAlgorithm)
        observation.update { s in
            s.parameters = p
            s.mtu = mtu
            s.phy = phy
            s.channelSelectionAlgorithm = csa
            s.maxTxOctets = tx
            s.maxRxOctets = rx
        }
    }
}

/// The host's links by connection handle. Links also have an id that is never reused, which the
/// API holds instead of the handle (a controller reuses handles once a link is gone).
///
/// An array sorted by handle, searched linearly (a host has a handful of links), not a hashed
/// dictionary: the notification path looks a link up about ten times per packet, and hashing
/// a handle costs more than scanning a few of them.
struct LinkTable {
    private var links: [Link] = []
    /// The handles of `links`, in the same (sorted) order: what the search scans, and what
    /// `handles` returns without building an array per call.
    private var sortedHandles: [UInt16] = []
    private var nextID: UInt64 = 1

    private func index(of handle: UInt16) -> Int? {
        var i = 0
        while i < sortedHandles.count {
            if sortedHandles[i] == handle { return i }
            i += 1
        }
        return nil
    }

    subscript(handle: UInt16) -> Link? {
        get { index(of: handle).map { links[$0] } }
        set {
            if let newValue {
                if let i = index(of: handle) {
                    links[i] = newValue
                } else {
                    let at = sortedHandles.firstIndex { $0 > handle } ?? sortedHandles.endIndex
                    sortedHandles.insert(handle, at: at)
                    links.insert(newValue, at: at)
                }
            } else {
                _ = remove(handle)
            }
        }
    }

    /// Handles of the open links, in order (so work over all links is deterministic).
    var handles: [UInt16] { sortedHandles }

    /// Whether a link with this handle is open (without copying it out of the table).
    func contains(_ handle: UInt16) -> Bool { index(of: handle) != nil }

    /// Every open link, in handle order.
    var all: [Link] { links }

    mutating func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    mutating func remove(_ handle: UInt16) -> Link? {
        guard let i = index(of: handle) else { return nil }
        sortedHandles.remove(at: i)
        return links.remove(at: i)
    }

    /// The handle of the link with this id, if it is still open.
    func handle(forID id: UInt64) -> UInt16? {
        var i = 0
        while i < links.count {
            if links[i].id == id { return sortedHandles[i] }
            i += 1
        }
        return nil
    }

    /// Reads from the link in place: `self[handle]` copies the whole link out (every buffer it
    /// holds retained, then released), which on a per-packet path shows in the profile.
    func read<R>(_ handle: UInt16, _ body: (borrowing Link) -> R) -> R? {
        guard let i = index(of: handle) else { return nil }
        // Through the buffer: `links[i]` (the array's getter) still made a copy to borrow.
        return links.withUnsafeBufferPointer { body($0[i]) }
    }

    /// Runs `body` on the link in place. A `var link = links[h]` … `links[h] = link` round trip
    /// copies the link, and its first mutation then copies every buffer it holds (the ATT
    /// server's queues, the bearer's state): on the notification path that was the largest cost.
    @discardableResult
    mutating func withLink<R>(_ handle: UInt16, _ body: (inout Link) -> R) -> R? {
        guard let i = index(of: handle) else { return nil }
        return body(&links[i])
    }

    /// The earliest protocol deadline of any link's bearer (transaction timeout) or server
    /// (indication confirmation timeout). Asked after every frame the host receives, so it
    /// allocates nothing and copies no link; each link recomputes only what changed
    /// (`Link.nextDeadline()`).
    mutating func nextDeadline() -> Duration? {
        // Through the buffer, each link used where it lies: indexing the array copied every link
        // out (all its buffers retained and released) on each call.
        links.withUnsafeMutableBufferPointer { buffer in
            var next: Duration?
            for i in buffer.indices { next = earliest(next, buffer[i].nextDeadline()) }
            return next
        }
    }
}

/// A deadline remembered until what it was computed from changes.
enum CachedDeadline {
    /// Not computed since the last change.
    case stale
    /// Computed: nil when nothing is pending.
    case known(Duration?)

    /// The deadline when known (nil when stale or when nothing is pending).
    var value: Duration? {
        if case let .known(d) = self { return d }
        return nil
    }
}

/// The earlier of two optional deadlines (nil when neither is set).
func earliest(_ a: Duration?, _ b: Duration?) -> Duration? {
    guard let a else { return b }
    guard let b else { return a }
    return min(a, b)
}

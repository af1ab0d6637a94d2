import BLEWire

// Robust caching on the server side, Core spec Vol 3 Part G §2.5.2.1: whether this connection's
// client knows the database as it is now (change-aware) or cached it before a change
// (change-unaware), and Database Out Of Sync (ATT error 0x12, Vol 3 Part F §3.4.1.1) to a
// change-unaware client that enabled robust caching (Client Supported Features bit 0, §7.2).
//
// - A client without a trusted relationship starts each connection change-aware; a bonded
//   client's state persists across connections (the owner restores it with
//   `restoreBondedState` as soon as it knows the client: at connection when the client's
//   address names a bond, else once the link is encrypted with the bond's key).
// - A change to the database makes every client change-unaware (`databaseChanged`).
// - A change-unaware client that enabled robust caching gets Database Out Of Sync for every
//   request except a read of the Database Hash, and its commands are ignored.
// - It becomes change-aware again when it confirms a Service Changed indication, when it
//   sends another request after being answered Database Out Of Sync, or when it sends another
//   request after reading the Database Hash.
extension ATTServer {
    /// Client Supported Features bit 0: the client enabled robust caching (§7.2).
    public var robustCachingEnabled: Bool { (client.features.first ?? 0) & 0x01 != 0 }

    /// The database changed since this client last knew it: it is change-unaware (§2.5.2.1).
    public mutating func databaseChanged() {
        client.changeAware = false
        client.outOfSyncSent = false
        client.hashReadWhileUnaware = false
    }

    /// Sets a returning bonded client's change awareness as it was left (§2.5.2.1: the state
    /// of a client with a trusted relationship persists across connections).
    public mutating func restoreChangeAwareness(_ aware: Bool) {
        if aware { client.changeAware = true } else { databaseChanged() }
    }

    /// Sets a returning bonded client's Client Supported Features as it left them (§7.2: for a
    /// client with a trusted relationship they persist across connections). Bits already set
    /// on this connection stay set (a client may not clear a bit it enabled). Only the defined
    /// bits are restored: a bond stored by a server that kept reserved bits holds them too.
    public mutating func restoreClientSupportedFeatures(_ features: [UInt8]) {
        let kept = Self.keptClientFeatures(features)
        guard let restored = kept.first else { return }
        client.features = [(client.features.first ?? 0) | restored]
    }

    /// Restores what a bonded client left on its last connection, once per connection: its
    /// Client Supported Features (§7.2) and change awareness (§2.5.2.1), which persist across
    /// connections for a client with a trusted relationship. Its CCCDs are restored apart
    /// (`restoreBondedSubscriptions`), once the link is encrypted with its bond's key.
    public mutating func restoreBondedState(changeAware aware: Bool, features: [UInt8]?) {
        client.bondedStateRestored = true
        if let features { restoreClientSupportedFeatures(features) }
        restoreChangeAwareness(aware)
    }

    /// Restores a bonded client's CCCDs (§3.3.3.3), once per connection: the owner calls it
    /// when the link is encrypted with the bond's key, so a device that only copies a bonded
    /// client's address neither sees nor receives its subscriptions. A CCCD the client wrote on
    /// this connection before then stays as it wrote it.
    public mutating func restoreBondedSubscriptions(_ values: [UInt16: UInt16]) {
        guard !client.bondedSubscriptionsRestored else { return }
        client.bondedSubscriptionsRestored = true
        restoreSubscriptions(values.filter { client.configurations[$0.key] == nil })
    }

    /// The client bonded anew (new keys): the Client Supported Features restored from its old
    /// bond are not this bond's, so only what it wrote on this connection stays.
    public mutating func forgetRestoredFeatures() {
        client.features = client.featuresWritten.map { [$0] } ?? []
    }

    /// True once `restoreBondedSubscriptions` ran on this connection: the link was encrypted
    /// with the bond's key, so its client proved it is that bond's.
    public var hasRestoredBondedSubscriptions: Bool { client.bondedSubscriptionsRestored }

    /// True once `restoreBondedState` ran on this connection.
    public var hasRestoredBondedState: Bool { client.bondedStateRestored }

    /// Whether the client has Enhanced ATT bearers open on the link besides the unenhanced one
    /// (Vol 3 Part G §5.3), set by the owner of the link's servers. While it has, a request after
    /// Database Out Of Sync does not make the client change-aware (§2.5.2.1): one it sent before
    /// it saw the error may still be in flight on another bearer. Service Changed's confirmation
    /// or a read of the Database Hash still do.
    public var enhancedBearersOpen: Bool {
        get { client.enhancedBearersOpen }
        set { client.enhancedBearersOpen = newValue }
    }

    /// True when the client knows the database as it is (§2.5.2.1).
    public var isChangeAware: Bool { client.changeAware }

    /// For a request or command from the client: nil to handle it as usual; otherwise what to
    /// answer instead (Database Out Of Sync for a request, nothing for a command). A `held`
    /// request waited while the application answered an earlier one: the client sent it before
    /// it saw any answer since, so it is not "another request" after an error or a hash read.
    mutating func changeAwarenessVerdict(_ bytes: [UInt8], database: GATTServerDatabase, held: Bool = false) -> [ServerAction]? {
        guard !client.changeAware, robustCachingEnabled, let first = bytes.first else { return nil }
        let opcode = ATTOpcode(first)
        if opcode.isCommand { return [] }
        if Self.readsDatabaseHash(bytes, database: database) {
            client.hashReadWhileUnaware = true
            return nil
        }
        // "The next request" only means "sent after the client saw the error" on a single
        // bearer, where requests go one at a time: the Out Of Sync must have gone on the
        // unenhanced bearer and no Enhanced ATT bearer may be open (as Zephyr does).
        if !held, client.outOfSyncSent && !client.enhancedBearersOpen && !isEnhanced || client.hashReadWhileUnaware {
            client.changeAware = true
            client.outOfSyncSent = false
            client.hashReadWhileUnaware = false
            return nil
        }
        if !isEnhanced { client.outOfSyncSent = true }
        return [Self.error(opcode, 0x0000, .databaseOutOfSync)]
    }

    /// A Read By Type for «Database Hash», or a Read of its value handle (§7.3).
    static func readsDatabaseHash(_ bytes: [UInt8], database: GATTServerDatabase) -> Bool {
        switch try? ATTPDU.decode(bytes) {
        case let .readByTypeRequest(_, _, type)?: return type == GATTUUID.databaseHash
        case let .readRequest(handle)?: return handle != 0 && handle == database.databaseHashHandle
        default: return false
        }
    }

    /// The confirmed indication was Service Changed: the client is change-aware (§2.5.2.1).
    mutating func confirmed(indication id: UInt64) {
        if id == client.serviceChangedIndicationID {
            client.serviceChangedIndicationID = nil
            client.changeAware = true
            client.outOfSyncSent = false
            client.hashReadWhileUnaware = false
        }
    }
}

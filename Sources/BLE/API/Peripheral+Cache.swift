import BLEHost
import BLEWire

/// Lookups through the attribute cache (Core spec Vol 3 Part G §2.5.2): a characteristic by
/// type, its descriptors, a subscription, each asking the server only for what the cache does
/// not know, and each ending in the cache (`HostConfiguration.gattCache` keeps it between
/// connections).
///
/// The cache is checked once per connection: an unbonded server's Database Hash (§7.3) is read
/// and the entry stored under it is used (one request); a bonded server's entry is used as it
/// is, since a bonded server tells its clients of changes (Service Changed, §7.1) and, once
/// they enable robust caching, refuses their requests with Database Out Of Sync until they
/// catch up (§2.5.2.1). On that error the cache is dropped, the hash read again (which makes
/// the client change-aware) and the lookup retried once.
extension Peripheral {
    // MARK: Lookups

    /// The first characteristic of `uuid` in handle order, nil when the server has none: from the
    /// cache, else by a search (`FindCharacteristicProcedure`) of just the handles the cache
    /// does not cover, usually one request for the whole database.
    public func characteristic(_ uuid: BluetoothUUID) async throws -> GATTCharacteristic? {
        try await syncing {
            // Each search covers at least one more handle range, so this ends; the bound only
            // guards against a server that keeps changing under us.
            for _ in 0..<64 {
                switch try await cache().firstCharacteristic(uuid) {
                case let .found(c):
                    showLookedUp(c)
                    return c
                case .absent: return nil
                case let .search(range):
                    guard case let .characteristicSearch(search) = try await run(FindCharacteristicProcedure(uuid: uuid, range: range)) else {
                        throw BLEError.unsupported("internal: unexpected output for a characteristic search")
                    }
                    await updateCache { $0.record(search) }
                }
            }
            throw BLEError.gatt(.protocolViolation("characteristic search for \(uuid) did not settle"))
        }
    }

    /// Records `c` as found by UUID with no service, for finding it again after a change
    /// (Peripheral+DatabaseChange.swift).
    private func showLookedUp(_ c: GATTCharacteristic) {
        observation.update { snapshot in
            snapshot.lookedUpCharacteristics.removeAll { $0.declarationHandle == c.declarationHandle }
            snapshot.lookedUpCharacteristics.append(c)
        }
    }

    /// The characteristic's descriptors (Vol 3 Part G §4.7.1), from the cache when known.
    public func cachedDescriptors(for characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        try await syncing {
            if let known = try await cache().descriptors(ofValueHandle: characteristic.valueHandle) { return known }
            let found = try await discoverDescriptors(for: characteristic)
            await updateCache { $0.record(descriptors: found, of: characteristic) }
            return found
        }
    }

    /// Turns on notifications (or indications when the characteristic only indicates) through
    /// the cache: the CCCD handle comes from it, and a bonded server that keeps CCCDs across
    /// connections (§3.3.3.3) is not written again when the cache says this client wrote the
    /// same bits, unless `force`. Returns true when the CCCD was written.
    @discardableResult
    public func enableUpdates(for characteristic: GATTCharacteristic, force: Bool = false) async throws -> Bool {
        let bits = try characteristic.updateBits()
        // Encrypted first on a bonded link, so the server keeps what is written (§3.3.3.3).
        let bonded = try await encryptedBondedLink()
        if !force, bonded, try await cache().subscriptions[characteristic.valueHandle] == bits { return false }
        let cccd = try characteristic.clientConfiguration(in: try await cachedDescriptors(for: characteristic))
        try await syncing { try await setNotifyValue(bits != 0, for: characteristic, cccdHandle: cccd.handle) }
        await updateCache { $0.recordSubscription(valueHandle: characteristic.valueHandle, bits: bits) }
        return true
    }

    /// True when the peer is bonded and the link is encrypted with the bond's key, encrypting
    /// it first when it is not (no ATT request): a bonded server keeps a client's CCCDs and
    /// Client Supported Features across connections only for links encrypted so (§3.3.3.3,
    /// §7.2). False for a peer that is not bonded, or that lost the key.
    func encryptedBondedLink(encryptingIfNeeded: Bool = true) async throws -> Bool {
        _ = try await cache()
        let linkID = self.linkID
        let state = await host.run { host -> (bonded: Bool, encrypted: Bool) in
            guard host.caches.entry(linkID: linkID)?.key?.bonded == true,
                  let handle = host.connections.links.handle(forID: linkID),
                  let link = host.connections.links[handle] else { return (false, false) }
            return (true, link.encryptedWithBondKey)
        }
        guard state.bonded else { return false }
        if state.encrypted { return true }
        guard encryptingIfNeeded else { return false }
        do {
            try await encrypt()
            return true
        } catch {
            HostDiagnostics.log("[host] re-encrypting with \(address) for its kept subscriptions: \(error)")
            return false
        }
    }

    /// Turns updates off through the cache (the CCCD handle from it), unless `keepingBonded`
    /// and the peer is bonded on an encrypted link: a bonded server keeps the CCCD for the next
    /// connection (§3.3.3.3), which then needs no request before its first value. Returns true
    /// when the CCCD was written.
    @discardableResult
    public func disableUpdates(for characteristic: GATTCharacteristic, keepingBonded: Bool = false) async throws -> Bool {
        if keepingBonded, try await encryptedBondedLink(encryptingIfNeeded: false) { return false }
        let descriptors = try await cachedDescriptors(for: characteristic)
        guard let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else { return false }
        try await syncing { try await setNotifyValue(false, for: characteristic, cccdHandle: cccd.handle) }
        await updateCache { $0.recordSubscription(valueHandle: characteristic.valueHandle, bits: 0) }
        return true
    }

    /// What the client does once the user's request is served, so that it costs no round trip
    /// before the first value: enables robust caching by writing Client Supported Features bit 0
    /// (§7.2, §2.5.2.1), and Service Changed indications (§7.1), both through the cache. A peer
    /// that refuses either, or has neither, leaves the link as it is. Client Supported Features
    /// never loses a bit the server holds: refused as Value Not Allowed (our record of what we
    /// wrote is gone), it is read and the union of its bits and ours written and recorded.
    public func completeCaching() async {
        do {
            if let sc = try await characteristic(GATTUUID.serviceChanged), sc.properties.contains(.indicate) {
                let linkID = self.linkID
                _ = await host.run { $0.client.noteServiceChangedHandle(sc.valueHandle, onLink: linkID, $0) }
                try await enableUpdates(for: sc)
            }
        } catch {
            HostDiagnostics.log("[host] enabling Service Changed indications on \(address): \(error)")
        }
        do {
            if let csf = try await characteristic(GATTUUID.clientSupportedFeatures), csf.properties.contains(.write) {
                let wanted = Self.clientSupportedFeatures(enhancedATTBearers: host.configuration.enhancedATTBearers)
                let written = try await cache().clientFeaturesWritten
                // A bonded server keeps them (§7.2): not written again when they hold ours.
                if written & wanted == wanted, try await encryptedBondedLink() { return }
                // A client never clears a bit it set (§7.2): what was written stays.
                let value = written | wanted
                do {
                    try await syncing { try await writeValue([value], handle: csf.valueHandle) }
                    await updateCache { $0.clientFeaturesWritten = value }
                } catch BLEError.gatt(.att(code: .valueNotAllowed, _, _)) {
                    // The server holds bits our record lacks (a bonded server keeps them, §7.2,
                    // and refuses a write that clears one): read them and add ours.
                    let held = try await syncing { try await readValue(handle: csf.valueHandle) }.first ?? 0
                    let merged = held | value
                    if merged != held { try await syncing { try await writeValue([merged], handle: csf.valueHandle) } }
                    await updateCache { $0.clientFeaturesWritten = merged }
                }
            }
        } catch {
            HostDiagnostics.log("[host] writing Client Supported Features on \(address): \(error)")
        }
    }

    /// The Client Supported Features octet this client writes (Vol 3 Part G §7.2): bit 0 robust
    /// caching, bit 2 Multiple Handle Value Notifications (the client takes ATT opcode 0x23 on
    /// every bearer), and bit 1 Enhanced ATT bearer unless `enhancedATTBearers` is 0.
    static func clientSupportedFeatures(enhancedATTBearers: Int) -> UInt8 {
        0x01 | 0x04 | (enhancedATTBearers > 0 ? 0x02 : 0x00)
    }

    // MARK: The link's cache

    /// The link's cache, prepared on first use (see the type's comment).
    func cache() async throws -> GATTAttributeCache {
        let linkID = self.linkID, peer = self.address
        if let entry = await host.run({ $0.caches.entry(linkID: linkID) }) {
            guard entry.needsHash else { return entry.cache }
            // Service Changed on an unbonded server: key what follows by the new hash (none
            // when it cannot be read: what follows is then not stored).
            let hash = try await databaseHashOrDiscovery()
            await host.run { $0.caches.rekey(linkID: linkID, peer: peer, databaseHash: hash, $0) }
            return await host.run { $0.caches.entry(linkID: linkID)?.cache } ?? entry.cache
        }
        let store = host.configuration.gattCache
        let identity = await host.run { $0.security.bond(for: peer, $0)?.peer }
        var key: GATTCacheKey?
        var cache: GATTAttributeCache?
        if let identity, let store {
            key = .bonded(identity)
            cache = load(key, from: store)
        }
        // Without a store the hash could only key what is never kept: not read.
        if cache == nil, store != nil {
            let hash = try await databaseHashOrDiscovery()
            if identity == nil, let store, let hash {
                key = .unbonded(peer, databaseHash: hash)
                cache = load(key, from: store)
            }
            if cache?.databaseHash != hash { cache = nil }
            cache = cache ?? GATTAttributeCache(databaseHash: hash)
        }
        let entry = GATTCacheSessions.Entry(key: key, cache: cache ?? GATTAttributeCache(), loaded: cache?.isEmpty == false)
        let scHandle = entry.cache.characteristics.first { $0.uuid == GATTUUID.serviceChanged }?.valueHandle
        await host.run { host in
            host.caches.install(entry, linkID: linkID, host)
            if let scHandle { _ = host.client.noteServiceChangedHandle(scHandle, onLink: linkID, host) }
        }
        return entry.cache
    }

    private func load(_ key: GATTCacheKey?, from store: any GATTCacheStore) -> GATTAttributeCache? {
        guard let key else { return nil }
        do {
            return try store.load(key)
        } catch {
            // Corrupt, hostile or unreadable: discover afresh and let the next save replace it.
            HostDiagnostics.log("[host] GATT cache \(key): ignored: \(error)")
            return nil
        }
    }

    /// The Database Hash for checking the cache: nil when the server has none, and when it
    /// answers the read with an ATT error or a malformed value, so the lookup falls back to
    /// discovery (an unbonded server's entry is then not stored, having no hash to be kept
    /// under). A timeout is thrown: nothing more may be asked on the bearer (Vol 3 Part F §3.3.3).
    func databaseHashOrDiscovery() async throws -> [UInt8]? {
        do {
            return try await readDatabaseHash()
        } catch let BLEError.gatt(error) where GATTCacheSessions.discoveryReplaces(error) {
            HostDiagnostics.log("[host] Database Hash of \(address) unreadable (\(error)): discovering instead")
            return nil
        }
    }

    /// The server's Database Hash (§7.3), nil when it has none.
    public func readDatabaseHash() async throws -> [UInt8]? {
        guard case let .handleValues(found) = try await run(ReadDatabaseHashProcedure()) else {
            throw BLEError.unsupported("internal: unexpected output for a Database Hash read")
        }
        return found.first?.value
    }

    private func updateCache(_ body: @Sendable @escaping (inout GATTAttributeCache) -> Void) async {
        let linkID = self.linkID
        await host.run { $0.caches.update(linkID: linkID, $0, body) }
    }

    /// Runs `body`; on Database Out Of Sync (§2.5.2.1), which made the host drop the link's
    /// cache (`GATTCacheSessions.outOfSync`), runs it once more: its lookups prepare the cache
    /// again, reading the Database Hash, which makes this client change-aware.
    func syncing<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch BLEError.gatt(.att(.databaseOutOfSync, _, _)) {
            return try await body()
        }
    }
}

extension Peripheral {
    /// Starts the ATT MTU exchange (Vol 3 Part G §4.3.1, asking for `preferred`, default 517)
    /// and returns at once: whatever is asked next queues behind it on the bearer and goes out
    /// as soon as the exchange ends, sized by the new ATT_MTU, which `mtu` shows from then on.
    /// A peer that refuses leaves 23. The exchange can be asked once per connection
    /// (Vol 3 Part F §3.4.2.1).
    public func startMTUExchange(_ preferred: Int? = nil) async {
        let procedure = AnyGATTProcedure(ExchangeMTUProcedure(clientMTU: preferred ?? host.configuration.preferredATTMTU))
        let linkID = self.linkID
        await host.run { $0.client.submitWithoutWaiting(procedure, onLink: linkID, $0) }
    }
}

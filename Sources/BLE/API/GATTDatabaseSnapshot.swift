import BLEHost
import BLEWire

/// A peer's whole GATT database as discovery found it: what `ble gatt` prints.
public struct GATTDatabaseSnapshot: Sendable {
    /// A discovered descriptor and, when values were read, its value.
    public struct Descriptor: Sendable {
        /// The descriptor as discovery found it: handle and type UUID.
        public var descriptor: GATTDescriptor
        /// The value read, or the ATT error the peer refused with (Vol 3 Part F §3.4.1.1); nil
        /// when the dump did not read values.
        public var value: Result<[UInt8], BLEError>?

        /// A descriptor entry (discovery makes these; `init` is for showing a fixed database).
        public init(descriptor: GATTDescriptor, value: Result<[UInt8], BLEError>? = nil) {
            self.descriptor = descriptor
            self.value = value
        }
    }

    /// A discovered characteristic with its value and descriptors.
    public struct Characteristic: Sendable {
        /// The characteristic declaration: UUID, properties and value handle.
        public var characteristic: GATTCharacteristic
        /// The value read, or the ATT error the peer refused with (Vol 3 Part F §3.4.1.1); nil
        /// when the dump did not read values or the characteristic lacks the read property.
        public var value: Result<[UInt8], BLEError>?
        /// The characteristic's descriptors, in handle order.
        public var descriptors: [Descriptor]

        /// A characteristic entry (discovery makes these; `init` is for showing a fixed database).
        public init(characteristic: GATTCharacteristic, value: Result<[UInt8], BLEError>? = nil, descriptors: [Descriptor] = []) {
            self.characteristic = characteristic
            self.value = value
            self.descriptors = descriptors
        }
    }

    /// A primary service with the services it includes and its characteristics.
    public struct Service: Sendable {
        /// The primary service: UUID and handle range.
        public var service: GATTService
        /// The services this one includes (Vol 3 Part G §4.5).
        public var includedServices: [GATTIncludedService]
        /// The service's characteristics, in handle order.
        public var characteristics: [Characteristic]

        /// A service entry (discovery makes these; `init` is for showing a fixed database).
        public init(service: GATTService, includedServices: [GATTIncludedService] = [], characteristics: [Characteristic] = []) {
            self.service = service
            self.includedServices = includedServices
            self.characteristics = characteristics
        }
    }

    /// Every primary service of the peer, in handle order.
    public var services: [Service]
    /// The link's ATT_MTU when the dump was taken; it bounds what a single read returned.
    public var mtu: Int
    /// True when the layout (services, includes, characteristics, descriptors) came from the
    /// attribute cache (Core Vol 3 Part G §2.5.2) rather than from discovery on this link.
    public var fromCache: Bool

    /// A snapshot of `services` taken at ATT_MTU `mtu` (`Peripheral.discoverDatabase` makes
    /// these; `init` is for showing a fixed database).
    public init(services: [Service], mtu: Int, fromCache: Bool = false) {
        self.services = services
        self.mtu = mtu
        self.fromCache = fromCache
    }
}

extension Peripheral {
    /// Discovers every primary service, its included services, characteristics and descriptors,
    /// and, with `readValues`, reads each readable value and descriptor. A read the peer refuses
    /// with an ATT error is recorded, not thrown: a dump shows what it could not read. Anything
    /// else (the link dropping, a timeout) ends the dump with that error.
    ///
    /// The layout goes through the attribute cache (Vol 3 Part G §2.5.2): when the cache holds
    /// the whole database (a dump on an earlier connection to a server with the same Database
    /// Hash, or a bonded server that announced no change), no discovery request is sent, only
    /// the value reads. A Database Out Of Sync answer to one of them (§2.5.2.1) means the cache
    /// was stale: the host drops it and the dump discovers afresh.
    public func discoverDatabase(readValues: Bool = true) async throws -> GATTDatabaseSnapshot {
        _ = try await cache()
        if try await checkBondedEntryHash(), let known = try await cache().database {
            // Service Changed first, as discovery does it (so the dump shows its CCCD set).
            if let sc = known.flatMap(\.characteristics).map(\.characteristic).first(where: { $0.uuid == GATTUUID.serviceChanged }),
               sc.properties.contains(.indicate) {
                do { try await enableUpdates(for: sc) } catch {
                    HostDiagnostics.log("[host] enabling Service Changed indications on \(address): \(error)")
                }
            }
            // Unless that write was answered Database Out Of Sync, which dropped the cache.
            if try await cache().database != nil {
                let cached = try await snapshot(of: known, readValues: readValues, fromCache: true)
                if !cached.anyOutOfSync {
                    showServices(known.map(\.service))
                    return cached
                }
            }
        }
        var found: [GATTAttributeCache.ServiceEntry] = []
        for service in try await discoverServices() {
            let included = try await discoverIncludedServices(for: service)
            var characteristics: [GATTAttributeCache.CharacteristicEntry] = []
            for c in try await discoverCharacteristics(for: service) {
                characteristics.append(.init(characteristic: c, descriptors: try await discoverDescriptors(for: c)))
            }
            found.append(.init(service: service, includedServices: included, characteristics: characteristics))
        }
        let discovered = found
        let linkID = self.linkID
        await host.run { $0.caches.update(linkID: linkID, $0) { $0.record(database: discovered) } }
        return try await snapshot(of: discovered, readValues: readValues, fromCache: false)
    }

    /// Makes the link's cache fit for a dump. An unbonded server's entry was found under the
    /// Database Hash read on this connection (or lives only in memory, for this connection). A
    /// bonded server's entry is checked against its Database Hash (§7.3), one read, since a
    /// dump asks for everything and the link may not be encrypted yet, which is when a bonded
    /// server would tell of a change: a different hash empties the entry and keys what the dump
    /// discovers by the new one. A server without a hash cannot be checked: the dump discovers
    /// (and keeps the rest of the entry). True when the cached layout may be used.
    private func checkBondedEntryHash() async throws -> Bool {
        let linkID = self.linkID
        let (bonded, stored) = await host.run { host in
            (host.caches.entry(linkID: linkID)?.key?.bonded == true, host.caches.entry(linkID: linkID)?.cache.databaseHash)
        }
        guard bonded else { return true }
        let current = try await databaseHashOrDiscovery()
        if stored == current { return current != nil }
        await host.run { $0.caches.update(linkID: linkID, $0) { $0.removeAll(keepingHash: current) } }
        return false
    }

    /// The dump of a known layout, reading the values when asked.
    private func snapshot(of layout: [GATTAttributeCache.ServiceEntry], readValues: Bool, fromCache: Bool) async throws -> GATTDatabaseSnapshot {
        var services: [GATTDatabaseSnapshot.Service] = []
        for entry in layout {
            var characteristics: [GATTDatabaseSnapshot.Characteristic] = []
            for c in entry.characteristics {
                var value: Result<[UInt8], BLEError>?
                if readValues, c.characteristic.properties.contains(.read) {
                    // By handle: the layout is what the dump shows, so a change under the read is
                    // recorded (and makes a cached layout be discovered again), not followed.
                    value = try await capture { try await self.readValue(handle: c.characteristic.valueHandle) }
                }
                var descriptors: [GATTDatabaseSnapshot.Descriptor] = []
                for d in c.descriptors {
                    let v: Result<[UInt8], BLEError>? = readValues ? try await capture { try await self.readValue(for: d) } : nil
                    descriptors.append(.init(descriptor: d, value: v))
                }
                characteristics.append(.init(characteristic: c.characteristic, value: value, descriptors: descriptors))
            }
            services.append(.init(service: entry.service, includedServices: entry.includedServices, characteristics: characteristics))
        }
        return GATTDatabaseSnapshot(services: services, mtu: mtu, fromCache: fromCache)
    }

    private func capture(_ body: () async throws -> [UInt8]) async throws -> Result<[UInt8], BLEError> {
        do {
            return .success(try await body())
        } catch let e as BLEError {
            switch e {
            case .gatt(.att), .gatt(.databaseChanged), .security: return .failure(e)
            default: throw e
            }
        }
    }
}

extension GATTDatabaseSnapshot {
    /// Whether a read was refused with Database Out Of Sync (Vol 3 Part G §2.5.2.1), or not used
    /// because a Service Changed indication covered it (§7.1): the layout read from is stale.
    var anyOutOfSync: Bool {
        func stale(_ r: Result<[UInt8], BLEError>?) -> Bool {
            switch r {
            case .failure(.gatt(.att(.databaseOutOfSync, _, _)))?, .failure(.gatt(.databaseChanged))?: return true
            default: return false
            }
        }
        return services.contains { s in
            s.characteristics.contains { c in stale(c.value) || c.descriptors.contains { stale($0.value) } }
        }
    }
}

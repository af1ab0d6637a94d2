import BLEWire

/// What a GATT client knows of one server's attribute database between discoveries: the
/// attribute cache of Core spec Vol 3 Part G §2.5.2, sans-IO (the owner loads and stores it).
///
/// It holds what discovery actually learned, not necessarily the whole database: the
/// characteristics whose declarations were seen, the handle ranges in which every declaration
/// is known (`covered`), each characteristic's descriptors once discovered, and the Database
/// Hash (§7.3) the server reported when it was filled, so a later connection can check with one
/// read that it still holds. A lookup the cache cannot answer says where discovery must look,
/// so a request that needs one characteristic asks only for the part that is missing, and a
/// Service Changed range (§7.1) or a Database Out Of Sync (§2.5.2.1) drops just what it covers.
public struct GATTAttributeCache: Hashable, Sendable {
    /// The server's Database Hash (§7.3) as read when the cache was filled; nil when unknown.
    public var databaseHash: [UInt8]?
    /// Known characteristics in handle order, each with its end handle.
    public private(set) var characteristics: [GATTCharacteristic] = []
    /// Disjoint ranges in ascending order in which every characteristic declaration is in
    /// `characteristics`.
    public private(set) var covered: [ClosedRange<UInt16>] = []
    /// All descriptors of a characteristic, by its value handle, once discovered.
    public private(set) var descriptors: [UInt16: [GATTDescriptor]] = [:]
    /// Client Characteristic Configuration values this client wrote, by characteristic value
    /// handle: a bonded server keeps them across connections (§3.3.3.3), so a reconnection need
    /// not write them again.
    public private(set) var subscriptions: [UInt16: UInt16] = [:]
    /// The Client Supported Features bits (§7.2) this client wrote to the server: bit 0 robust
    /// caching, bit 1 Enhanced ATT bearer, bit 2 Multiple Handle Value Notifications. A bonded
    /// server keeps them across connections, and a client may never clear one it set.
    public var clientFeaturesWritten: UInt8 = 0

    /// This client enabled robust caching on the server (Client Supported Features bit 0,
    /// §7.2), which a bonded server keeps across connections.
    public var enabledRobustCaching: Bool {
        get { clientFeaturesWritten & 0x01 != 0 }
        set { clientFeaturesWritten = newValue ? clientFeaturesWritten | 0x01 : clientFeaturesWritten & ~0x01 }
    }
    /// The server's Server Supported Features value (§7.4) as read, empty for a server without
    /// the characteristic; nil when not read. Kept so that a bonded reconnection does not read it
    /// again to learn whether Enhanced ATT is offered (no request to a bonded server).
    public var serverFeatures: [UInt8]?
    /// Every primary service of the server in handle order, once a whole-database discovery
    /// (§4.4.1) recorded them; nil while the list is not known in full.
    public private(set) var services: [GATTService]?
    /// The include declarations (§4.5.1) of each service in `services`, by its start handle.
    public private(set) var includedServices: [UInt16: [GATTIncludedService]] = [:]

    /// An empty cache, optionally for a server whose Database Hash is `databaseHash`.
    public init(databaseHash: [UInt8]? = nil) {
        self.databaseHash = databaseHash
    }

    /// A cache with these contents, as read back from storage; `GATTCacheFileFormat` checks them.
    init(databaseHash: [UInt8]?, characteristics: [GATTCharacteristic], covered: [ClosedRange<UInt16>],
         descriptors: [UInt16: [GATTDescriptor]], subscriptions: [UInt16: UInt16], clientFeaturesWritten: UInt8,
         services: [GATTService]? = nil, includedServices: [UInt16: [GATTIncludedService]] = [:],
         serverFeatures: [UInt8]? = nil) {
        self.databaseHash = databaseHash
        self.characteristics = characteristics
        self.covered = covered
        self.descriptors = descriptors
        self.subscriptions = subscriptions
        self.clientFeaturesWritten = clientFeaturesWritten
        self.services = services
        self.includedServices = includedServices
        self.serverFeatures = serverFeatures
    }

    /// True when nothing is known.
    public var isEmpty: Bool { characteristics.isEmpty && covered.isEmpty && subscriptions.isEmpty && services == nil }

    /// One characteristic as a whole-database discovery found it, with every descriptor it has.
    public struct CharacteristicEntry: Hashable, Sendable {
        /// The characteristic declaration.
        public var characteristic: GATTCharacteristic
        /// All its descriptors (§4.7.1), in handle order.
        public var descriptors: [GATTDescriptor]
        /// A characteristic and all its descriptors.
        public init(characteristic: GATTCharacteristic, descriptors: [GATTDescriptor]) {
            self.characteristic = characteristic
            self.descriptors = descriptors
        }
    }

    /// One primary service as a whole-database discovery found it: its includes, and its
    /// characteristics each with all its descriptors.
    public struct ServiceEntry: Hashable, Sendable {
        /// The service declaration.
        public var service: GATTService
        /// Its include declarations.
        public var includedServices: [GATTIncludedService]
        /// Its characteristics in handle order.
        public var characteristics: [CharacteristicEntry]

        /// A service, what it includes, and its characteristics with their descriptors.
        public init(service: GATTService, includedServices: [GATTIncludedService], characteristics: [CharacteristicEntry]) {
            self.service = service
            self.includedServices = includedServices
            self.characteristics = characteristics
        }
    }

    /// The whole database, when every part of it is known: the primary services, their
    /// includes, every characteristic declaration inside each service and every descriptor of
    /// each. Nil when any part is missing (never discovered, or cut out by a Service Changed
    /// range), so a dump must then discover.
    public var database: [ServiceEntry]? {
        guard let services else { return nil }
        var out: [ServiceEntry] = []
        for service in services {
            let range = service.handleRange
            guard let includes = includedServices[range.lowerBound],
                  covered.contains(where: { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }) else { return nil }
            var entries: [CharacteristicEntry] = []
            for c in characteristics where range.contains(c.declarationHandle) {
                guard let found = descriptors[c.valueHandle] else { return nil }
                entries.append(CharacteristicEntry(characteristic: c, descriptors: found))
            }
            out.append(ServiceEntry(service: service, includedServices: includes, characteristics: entries))
        }
        return out
    }

    // MARK: Lookups

    /// What the cache can say about the first characteristic of a type.
    public enum Lookup: Hashable, Sendable {
        /// The first characteristic of that type in handle order.
        case found(GATTCharacteristic)
        /// The whole database is known and has none.
        case absent
        /// Not known: declarations from this handle on must be searched (up to the next
        /// covered range, or the end of the database).
        case search(ClosedRange<UInt16>)
    }

    /// The first characteristic of `uuid` in handle order, if every declaration before it is known.
    public func firstCharacteristic(_ uuid: BluetoothUUID) -> Lookup {
        var next: UInt16 = 0x0001
        for range in covered {
            if range.lowerBound > next { return .search(next...(range.lowerBound - 1)) }
            if let c = characteristics.first(where: { $0.uuid == uuid && range.contains($0.declarationHandle) }) {
                return .found(c)
            }
            if range.upperBound == 0xFFFF { return .absent }
            next = max(next, range.upperBound + 1)
        }
        return .search(next...0xFFFF)
    }

    /// The characteristic whose value is at `valueHandle`, if known.
    public func characteristic(valueHandle: UInt16) -> GATTCharacteristic? {
        characteristics.first { $0.valueHandle == valueHandle }
    }

    /// The known descriptors of the characteristic whose value is at `valueHandle`.
    public func descriptors(ofValueHandle valueHandle: UInt16) -> [GATTDescriptor]? {
        descriptors[valueHandle]
    }

    // MARK: Learning

    /// Records a search's declarations: the range becomes covered, replacing what was known in it.
    public mutating func record(_ search: GATTCharacteristicSearch) {
        let range = search.covered
        characteristics.removeAll { range.contains($0.declarationHandle) }
        characteristics += search.characteristics.filter { range.contains($0.declarationHandle) }
        characteristics.sort { $0.declarationHandle < $1.declarationHandle }
        covered = Self.merging(covered + [range])
    }

    /// Records all descriptors of a characteristic. When they end before its recorded end handle
    /// (discovery stopped at the next service's declaration), the end handle is tightened.
    public mutating func record(descriptors found: [GATTDescriptor], of characteristic: GATTCharacteristic, end: UInt16? = nil) {
        guard let index = characteristics.firstIndex(where: { $0.valueHandle == characteristic.valueHandle }) else { return }
        descriptors[characteristic.valueHandle] = found
        if let end, end >= characteristics[index].valueHandle, end < characteristics[index].endHandle {
            characteristics[index].endHandle = end
        }
    }

    /// Records what a whole-database discovery found (§4.4.1, §4.5.1, §4.6.1, §4.7.1): the
    /// primary services replace any list known before, and each service's range becomes
    /// covered by its characteristics, each with its descriptors.
    public mutating func record(database: [ServiceEntry]) {
        for entry in database {
            let range = entry.service.handleRange
            characteristics.removeAll { range.contains($0.declarationHandle) }
            for c in entry.characteristics where range.contains(c.characteristic.declarationHandle) {
                characteristics.append(c.characteristic)
                descriptors[c.characteristic.valueHandle] = c.descriptors
            }
            covered = Self.merging(covered + [range])
            includedServices[range.lowerBound] = entry.includedServices
        }
        characteristics.sort { $0.declarationHandle < $1.declarationHandle }
        let list = database.map(\.service).sorted { $0.handleRange.lowerBound < $1.handleRange.lowerBound }
        includedServices = includedServices.filter { start in list.contains { $0.handleRange.lowerBound == start.key } }
        services = list
    }

    /// Records a CCCD value written (or 0 to forget it).
    public mutating func recordSubscription(valueHandle: UInt16, bits: UInt16) {
        subscriptions[valueHandle] = bits == 0 ? nil : bits
    }

    // MARK: Forgetting

    /// Forgets everything in `range` (a Service Changed range, §7.1): characteristics that
    /// overlap it, their descriptors and subscriptions, and the range's coverage.
    public mutating func invalidate(_ range: ClosedRange<UInt16>) {
        // The list of services is whole or nothing: one changed range makes it unknown.
        if services != nil {
            services = nil
            includedServices = [:]
        }
        let stale = characteristics.filter { $0.declarationHandle <= range.upperBound && $0.endHandle >= range.lowerBound }
        characteristics.removeAll { c in stale.contains(c) }
        for c in stale {
            descriptors[c.valueHandle] = nil
        }
        let staleValues = Set(stale.map(\.valueHandle))
        subscriptions = subscriptions.filter { !range.contains($0.key) && !staleValues.contains($0.key) }
        var left: [ClosedRange<UInt16>] = []
        for r in covered {
            if r.upperBound < range.lowerBound || r.lowerBound > range.upperBound {
                left.append(r)
                continue
            }
            if r.lowerBound < range.lowerBound { left.append(r.lowerBound...(range.lowerBound - 1)) }
            if r.upperBound > range.upperBound { left.append((range.upperBound + 1)...r.upperBound) }
        }
        // A characteristic that straddled the range's edge was dropped: its declaration is no
        // longer known, so neither is its part of the coverage.
        for c in stale {
            let span = c.declarationHandle...max(c.declarationHandle, c.endHandle)
            left = left.flatMap { r -> [ClosedRange<UInt16>] in
                guard r.overlaps(span) else { return [r] }
                var parts: [ClosedRange<UInt16>] = []
                if r.lowerBound < span.lowerBound { parts.append(r.lowerBound...(span.lowerBound - 1)) }
                if r.upperBound > span.upperBound { parts.append((span.upperBound + 1)...r.upperBound) }
                return parts
            }
        }
        covered = Self.merging(left)
    }

    /// Forgets everything (Database Out Of Sync with no range, a changed hash).
    public mutating func removeAll(keepingHash hash: [UInt8]? = nil) {
        self = GATTAttributeCache(databaseHash: hash)
    }

    /// Sorts and merges touching or overlapping ranges.
    static func merging(_ ranges: [ClosedRange<UInt16>]) -> [ClosedRange<UInt16>] {
        var out: [ClosedRange<UInt16>] = []
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = out.last, r.lowerBound <= last.upperBound || r.lowerBound == last.upperBound &+ 1 && last.upperBound != 0xFFFF {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return out
    }
}

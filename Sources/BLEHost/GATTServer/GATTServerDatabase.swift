import BLEWire

/// The attribute database of the GATT server: every service's attributes in handle order, the
/// stored values they hold (shared by all connections), and the lookups the ATT server needs.
/// Core spec Vol 3 Part G §3 (layout of services, includes, characteristics, descriptors) and
/// Vol 3 Part F §3.2 (attributes).
///
/// A value type: the host actor owns one and passes it `inout` to each connection's
/// `ATTServer`. Per-connection state (CCCDs, Client Supported Features, prepare queues) lives in
/// `ATTServer`, not here.
public struct GATTServerDatabase: Sendable {
    /// All attributes, sorted by handle.
    public private(set) var attributes: [GATTAttribute] = []
    /// All services, sorted by start handle.
    public private(set) var services: [GATTServiceHandles] = []
    /// Handles changed by `add`/`remove` since the owner last cleared this: the range to send
    /// in a Service Changed indication (Vol 3 Part G §7.1) to every connected client that
    /// enabled it. The owner sets it back to nil once indicated.
    public var serviceChangedRange: ClosedRange<UInt16>?

    /// Built-in GAP service (Vol 3 Part C §12) and GATT service (Vol 3 Part G §7) handles.
    public private(set) var deviceNameHandle: UInt16 = 0
    public private(set) var appearanceHandle: UInt16 = 0
    public private(set) var serviceChangedHandle: UInt16 = 0
    public private(set) var clientSupportedFeaturesHandle: UInt16 = 0
    public private(set) var databaseHashHandle: UInt16 = 0

    /// The Database Hash characteristic's value, recomputed on every structural change.
    private(set) var databaseHashValue: [UInt8]?

    /// Creates the database with the two mandatory services:
    /// - GAP 0x1800 (Vol 3 Part C §12): Device Name 0x2A00 (read; also write when
    ///   `deviceNameWritable`, stored so writes change it) and Appearance 0x2A01 (read).
    /// - GATT 0x1801 (Vol 3 Part G §7): Service Changed 0x2A05 (indicate, with its CCCD), Client
    ///   Supported Features 0x2B29 (read, write; per connection) and Database Hash 0x2B2A (read).
    /// Their handles are 0x0001–0x0005 and 0x0006–0x000D, the layout of the spec's Database
    /// Hash example (Vol 3 Part G Appendix B). With `serverSupportedFeatures`, the GATT service
    /// also has Server Supported Features 0x2B3A (read, this fixed value; §7.4, bit 0 "EATT
    /// Supported") at 0x000E–0x000F.
    public init(deviceName: String, appearance: UInt16, deviceNameWritable: Bool = false, serverSupportedFeatures: [UInt8]? = nil) {
        var w = ByteWriter()
        w.u16(appearance)
        let gap = GATTServiceDefinition(uuid: GATTUUID.genericAccessService, characteristics: [
            GATTCharacteristicDefinition(uuid: GATTUUID.deviceName,
                                         properties: deviceNameWritable ? [.read, .write] : [.read],
                                         permissions: deviceNameWritable ? [.read, .write] : [.read],
                                         value: Array(deviceName.utf8.prefix(248)), maximumLength: 248),
            GATTCharacteristicDefinition(uuid: GATTUUID.appearance, properties: [.read], permissions: [.read],
                                         value: w.bytes, maximumLength: 2),
        ])
        var gattCharacteristics = [
            GATTCharacteristicDefinition(uuid: GATTUUID.serviceChanged, properties: [.indicate], permissions: [],
                                         value: [], maximumLength: 4),
            GATTCharacteristicDefinition(uuid: GATTUUID.clientSupportedFeatures, properties: [.read, .write],
                                         permissions: [.read, .write], value: nil, maximumLength: 16),
            GATTCharacteristicDefinition(uuid: GATTUUID.databaseHash, properties: [.read], permissions: [.read],
                                         value: nil, maximumLength: 16),
        ]
        if let serverSupportedFeatures {
            gattCharacteristics.append(GATTCharacteristicDefinition(
                uuid: GATTUUID.serverSupportedFeatures, properties: [.read], permissions: [.read],
                value: Array(serverSupportedFeatures.prefix(16)), maximumLength: 16))
        }
        let gatt = GATTServiceDefinition(uuid: GATTUUID.genericAttributeService, characteristics: gattCharacteristics)
        // Neither can fail: 13 handles from 0x0001, no includes, no duplicate descriptors.
        if let gapHandles = try? insert(gap, at: nil) {
            deviceNameHandle = gapHandles[GATTUUID.deviceName]?.valueHandle ?? 0
            appearanceHandle = gapHandles[GATTUUID.appearance]?.valueHandle ?? 0
        }
        if let gattHandles = try? insert(gatt, at: nil) {
            serviceChangedHandle = gattHandles[GATTUUID.serviceChanged]?.valueHandle ?? 0
            clientSupportedFeaturesHandle = gattHandles[GATTUUID.clientSupportedFeatures]?.valueHandle ?? 0
            databaseHashHandle = gattHandles[GATTUUID.databaseHash]?.valueHandle ?? 0
        }
        for special in [(clientSupportedFeaturesHandle, GATTAttribute.Value.clientSupportedFeatures),
                        (databaseHashHandle, .databaseHash)] {
            if let index = index(of: special.0) { attributes[index].value = special.1 }
        }
        refreshHash()
    }

    // MARK: Changing the structure

    /// Adds a service after the last handle in use, or at `startHandle` when given (which must
    /// not overlap an existing service; fixed handles keep a database stable across restarts,
    /// Vol 3 Part G §2.5.2). Records the new range in `serviceChangedRange` and recomputes the
    /// Database Hash.
    @discardableResult
    public mutating func add(_ service: GATTServiceDefinition, startingAt startHandle: UInt16? = nil) throws -> GATTServiceHandles {
        let handles = try insert(service, at: startHandle)
        noteChange(handles.range)
        return handles
    }

    /// Removes the service whose declaration is at `serviceStartingAt`, records its range in
    /// `serviceChangedRange` and recomputes the hash. A service still included by another one
    /// cannot be removed (its include declaration would dangle, Vol 3 Part G §3.2).
    public mutating func remove(serviceStartingAt start: UInt16) throws {
        guard let index = services.firstIndex(where: { $0.range.lowerBound == start }) else {
            throw GATTDatabaseError(.noServiceAt(start))
        }
        let range = services[index].range
        for attribute in attributes where attribute.type == GATTUUID.include && !range.contains(attribute.handle) {
            if case let .fixed(value) = attribute.value, value.count >= 2,
               UInt16(value[0]) | UInt16(value[1]) << 8 == start {
                throw GATTDatabaseError(.serviceIsIncluded(start))
            }
        }
        services.remove(at: index)
        attributes.removeAll { range.contains($0.handle) }
        noteChange(range)
    }

    private mutating func noteChange(_ range: ClosedRange<UInt16>) {
        if let old = serviceChangedRange {
            serviceChangedRange = min(old.lowerBound, range.lowerBound)...max(old.upperBound, range.upperBound)
        } else {
            serviceChangedRange = range
        }
        refreshHash()
    }

    /// Recomputes the hash; a crypto failure leaves it nil and a read of the characteristic
    /// retries (and answers Unlikely Error if it fails again).
    private mutating func refreshHash() {
        databaseHashValue = try? databaseHashCharacteristicValue()
    }

    /// Lays out one service (§3.1 declaration, §3.2 includes, §3.3 characteristics).
    private mutating func insert(_ service: GATTServiceDefinition, at requested: UInt16?) throws -> GATTServiceHandles {
        var count = 1 + service.includes.count
        for c in service.characteristics {
            count += 2 + c.descriptors.count
            if !c.properties.intersection([.notify, .indicate]).isEmpty { count += 1 }
            if c.extendedProperties != nil { count += 1 }
            if c.userDescription != nil { count += 1 }
            if c.presentationFormat != nil { count += 1 }
            try Self.validate(c)
        }
        let start: Int
        if let requested {
            start = Int(requested)
        } else {
            start = Int(attributes.last?.handle ?? 0) + 1
        }
        let end = start + count - 1
        guard start >= 1, end <= 0xFFFF else {
            throw GATTDatabaseError(requested == nil ? .outOfHandles : .handlesInUse)
        }
        let range = UInt16(start)...UInt16(end)
        guard !attributes.contains(where: { range.contains($0.handle) }),
              !services.contains(where: { $0.range.overlaps(range) }) else {
            throw GATTDatabaseError(.handlesInUse)
        }

        var new: [GATTAttribute] = []
        var next = UInt16(start)
        func place(_ type: BluetoothUUID, _ permissions: AttributePermissions, _ value: GATTAttribute.Value,
                   max: Int = 512) -> UInt16 {
            let handle = next
            new.append(GATTAttribute(handle: handle, type: type, permissions: permissions, value: value, maximumLength: max))
            next &+= 1
            return handle
        }

        _ = place(service.isPrimary ? GATTUUID.primaryService : GATTUUID.secondaryService, [.read],
                  .fixed(service.uuid.attBytes))
        var includeHandles: [UInt16] = []
        for uuid in service.includes {
            guard let included = services.first(where: { $0.uuid == uuid }) else {
                throw GATTDatabaseError(.includedServiceNotFound(uuid))
            }
            // §3.2: included service handle, end group handle, and the UUID only when 16-bit.
            var w = ByteWriter()
            w.u16(included.range.lowerBound)
            w.u16(included.range.upperBound)
            if let short = uuid.uint16 { w.u16(short) }
            includeHandles.append(place(GATTUUID.include, [.read], .fixed(w.bytes)))
        }

        var characteristics: [GATTCharacteristicHandles] = []
        for c in service.characteristics {
            var properties = c.properties
            if c.extendedProperties != nil { properties.insert(.extendedProperties) }
            let declarationHandle = next
            // §3.3.1: properties, value handle (the next one), characteristic UUID.
            var w = ByteWriter()
            w.u8(properties.rawValue)
            w.u16(declarationHandle &+ 1)
            w.append(c.uuid.attBytes)
            _ = place(GATTUUID.characteristic, [.read], .fixed(w.bytes))
            let valueHandle = place(c.uuid, c.permissions, c.value.map { .stored($0) } ?? .dynamic, max: c.maximumLength)

            var handles = GATTCharacteristicHandles(uuid: c.uuid, declarationHandle: declarationHandle,
                                                    valueHandle: valueHandle, properties: properties,
                                                    descriptorHandles: [], endHandle: valueHandle)
            if !c.properties.intersection([.notify, .indicate]).isEmpty {
                handles.cccdHandle = place(GATTUUID.clientCharacteristicConfiguration,
                                           Self.cccdPermissions(for: c.permissions),
                                           .clientConfiguration(valueHandle: valueHandle, properties: properties), max: 2)
            }
            if let ext = c.extendedProperties {
                var e = ByteWriter()
                e.u16(ext.rawValue)
                handles.extendedPropertiesHandle = place(GATTUUID.characteristicExtendedProperties, [.read], .fixed(e.bytes))
            }
            if let text = c.userDescription {
                let writable = c.extendedProperties?.contains(.writableAuxiliaries) ?? false
                handles.userDescriptionHandle = place(GATTUUID.characteristicUserDescription,
                                                      writable ? [.read, .write] : [.read], .stored(Array(text.utf8)))
            }
            if let format = c.presentationFormat {
                handles.presentationFormatHandle = place(GATTUUID.characteristicPresentationFormat, [.read], .fixed(format.bytes))
            }
            for d in c.descriptors {
                handles.descriptorHandles.append(place(d.uuid, d.permissions, d.value.map { .stored($0) } ?? .dynamic,
                                                       max: d.maximumLength))
            }
            handles.endHandle = next &- 1
            characteristics.append(handles)
        }

        let record = GATTServiceHandles(uuid: service.uuid, isPrimary: service.isPrimary, range: range,
                                        includeHandles: includeHandles, characteristics: characteristics)
        let at = attributes.firstIndex(where: { $0.handle > range.upperBound }) ?? attributes.count
        attributes.insert(contentsOf: new, at: at)
        let serviceAt = services.firstIndex(where: { $0.range.lowerBound > range.upperBound }) ?? services.count
        services.insert(record, at: serviceAt)
        return record
    }

    private static let automaticDescriptors: [BluetoothUUID] = [
        GATTUUID.clientCharacteristicConfiguration, GATTUUID.characteristicExtendedProperties,
        GATTUUID.characteristicUserDescription, GATTUUID.characteristicPresentationFormat,
    ]

    private static func validate(_ c: GATTCharacteristicDefinition) throws {
        guard (0...512).contains(c.maximumLength), (c.value?.count ?? 0) <= c.maximumLength else {
            throw GATTDatabaseError(.invalidLength(c.uuid))
        }
        for d in c.descriptors {
            if automaticDescriptors.contains(d.uuid) { throw GATTDatabaseError(.duplicateDescriptor(d.uuid)) }
            guard (0...512).contains(d.maximumLength), (d.value?.count ?? 0) <= d.maximumLength else {
                throw GATTDatabaseError(.invalidLength(d.uuid))
            }
        }
    }

    /// A CCCD is readable and writable by anyone (Vol 3 Part G §3.3.3.3 leaves its write
    /// permissions to the profile); subscribing to a value that needs encryption,
    /// authentication or authorization to read needs the same (a refused subscription answers
    /// as the value's read would), so no one gets by notification what they could not read.
    /// The send side checks again (`ATTServer.deliverableSubscription`): a link's security can
    /// fall after the subscription, and bonded subscriptions are restored.
    static func cccdPermissions(for value: AttributePermissions) -> AttributePermissions {
        var p: AttributePermissions = [.read, .write]
        if value.contains(.readEncrypted) { p.insert(.writeEncrypted) }
        if value.contains(.readAuthenticated) { p.insert(.writeAuthenticated) }
        if value.contains(.readAuthorized) { p.insert(.writeAuthorized) }
        return p
    }

    // MARK: Values

    /// Replaces a stored value (one given as non-nil in its definition, or a built-in such as
    /// Device Name). Returns false, changing nothing, when the handle holds no stored value or the
    /// value is longer than the attribute's maximum length.
    @discardableResult
    public mutating func setValue(_ value: [UInt8], forHandle handle: UInt16) -> Bool {
        guard let index = index(of: handle), case .stored = attributes[index].value,
              value.count <= attributes[index].maximumLength else { return false }
        attributes[index].value = .stored(value)
        return true
    }

    /// Changes the GAP service's Device Name (cut to 248 octets, Vol 3 Part C §12.1) and
    /// Appearance values.
    public mutating func setDeviceName(_ name: String, appearance: UInt16) {
        setValue(Array(name.utf8.prefix(248)), forHandle: deviceNameHandle)
        setValue([UInt8(appearance & 0xFF), UInt8(appearance >> 8)], forHandle: appearanceHandle)
    }

    /// The value the database holds for `handle`: stored and fixed values, and the Database
    /// Hash. Nil for dynamic and per-connection values, and for unknown handles.
    public func value(forHandle handle: UInt16) -> [UInt8]? {
        guard let attribute = attribute(at: handle) else { return nil }
        switch attribute.value {
        case let .fixed(v), let .stored(v): return v
        case .databaseHash: return databaseHashValue
        case .dynamic, .clientConfiguration, .clientSupportedFeatures: return nil
        }
    }

    /// The Database Hash characteristic's value, from the cache or freshly computed.
    func currentDatabaseHashValue() throws -> [UInt8] {
        if let databaseHashValue { return databaseHashValue }
        return try databaseHashCharacteristicValue()
    }

    // MARK: Lookups

    /// The index of the attribute with `handle` (binary search), nil if none.
    func index(of handle: UInt16) -> Int? {
        let i = firstIndex(atOrAfter: handle)
        return i < attributes.count && attributes[i].handle == handle ? i : nil
    }

    /// The index of the first attribute whose handle is ≥ `handle` (count if none).
    func firstIndex(atOrAfter handle: UInt16) -> Int {
        var low = 0, high = attributes.count
        while low < high {
            let mid = (low + high) / 2
            if attributes[mid].handle < handle { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The attribute with `handle`.
    public func attribute(at handle: UInt16) -> GATTAttribute? {
        index(of: handle).map { attributes[$0] }
    }

    /// The permissions of the attribute with `handle` (Vol 3 Part F §3.2.5), without copying
    /// the attribute.
    func permissions(at handle: UInt16) -> AttributePermissions? {
        guard let i = index(of: handle) else { return nil }
        return attributes[i].permissions
    }

    /// The attributes whose handles lie in `range`, in handle order.
    public func attributes(in range: ClosedRange<UInt16>) -> ArraySlice<GATTAttribute> {
        let from = firstIndex(atOrAfter: range.lowerBound)
        var to = from
        while to < attributes.count && attributes[to].handle <= range.upperBound { to += 1 }
        return attributes[from..<to]
    }

    /// The attributes of `type` (compared as 128-bit UUIDs, Vol 3 Part F §3.4.4.1) in `range`.
    public func attributes(ofType type: BluetoothUUID, in range: ClosedRange<UInt16>) -> [GATTAttribute] {
        attributes(in: range).filter { $0.type == type }
    }

    /// The service whose range holds `handle`.
    public func service(containing handle: UInt16) -> GATTServiceHandles? {
        services.first { $0.range.contains(handle) }
    }

    /// The End Group Handle of the service declared at `declarationHandle` (Vol 3 Part G §4.4.1).
    public func groupEndHandle(forServiceAt declarationHandle: UInt16) -> UInt16? {
        services.first { $0.range.lowerBound == declarationHandle }?.range.upperBound
    }

    /// The characteristic whose value is at `valueHandle`.
    public func characteristic(valueHandle: UInt16) -> GATTCharacteristicHandles? {
        for service in services where service.range.contains(valueHandle) {
            return service.characteristics.first { $0.valueHandle == valueHandle }
        }
        return nil
    }

    /// The last handle in use, 0 for an empty database.
    public var lastHandle: UInt16 { attributes.last?.handle ?? 0 }
}

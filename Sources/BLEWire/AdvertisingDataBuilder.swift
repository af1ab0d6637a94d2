/// Encoding, building and merging advertising data. Core spec Vol 3 Part C §11.
extension AdvertisingData {
    /// Why advertising data could not be encoded.
    public enum EncodingError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The encoded data is `size` bytes, more than the `limit` (31 for legacy advertising and
        /// scan response PDUs, Core spec Vol 6 Part B §2.3.1).
        case exceedsLimit(size: Int, limit: Int)
        /// One structure's data cannot be described by its one-octet length (at most 254 bytes).
        case structureTooLong(type: ADType, dataLength: Int)

        /// What went wrong, with the sizes, for an error message.
        public var description: String {
            switch self {
            case let .exceedsLimit(size, limit):
                return "advertising data is \(size) bytes, over the limit of \(limit)"
            case let .structureTooLong(type, dataLength):
                return "AD structure \(type) has \(dataLength) data bytes, over the maximum of 254"
            }
        }
    }

    /// The largest data an AD structure can carry: its length octet counts the type octet too.
    public static let maximumStructureDataLength = 254

    /// Legacy advertising and scan response data limit. Core spec Vol 6 Part B §2.3.1.1.
    public static let legacyLimit = 31

    /// The number of bytes `encode()` produces.
    public var encodedCount: Int {
        structures.reduce(0) { $0 + 2 + min($1.data.count, Self.maximumStructureDataLength) }
    }

    /// The structures as bytes, in order. Data longer than 254 bytes is cut to 254 here; use
    /// `encode(limit:)` to be told instead.
    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: encodedCount)
        for s in structures {
            let data = s.data.prefix(Self.maximumStructureDataLength)
            w.u8(UInt8(data.count + 1))
            w.u8(s.type.rawValue)
            w.append(data)
        }
        return w.bytes
    }

    /// The structures as bytes, or an error if a structure is too long or the whole exceeds
    /// `limit` bytes (31 for legacy advertising; up to 1650 for extended advertising).
    public func encode(limit: Int) throws(EncodingError) -> [UInt8] {
        if let long = structures.first(where: { $0.data.count > Self.maximumStructureDataLength }) {
            throw .structureTooLong(type: long.type, dataLength: long.data.count)
        }
        let size = encodedCount
        guard size <= limit else { throw .exceedsLimit(size: size, limit: limit) }
        return encode()
    }

    /// A copy whose complete local name is turned into a shortened one, cut at a character
    /// boundary, so that the data fits in `limit` bytes (CSS Part A §1.2: a shortened name is a
    /// prefix of the complete one). Unchanged if it already fits or has no name to shorten; the
    /// result may still not fit if the name alone cannot make the room.
    public func shorteningLocalName(toFit limit: Int) -> AdvertisingData {
        let excess = encodedCount - limit
        guard excess > 0,
              let index = structures.firstIndex(where: { $0.type == .completeLocalName || $0.type == .shortenedLocalName })
        else { return self }
        let name = Self.decodeName(structures[index].data)
        let budget = max(0, structures[index].data.count - excess)
        var shortened = ""
        for c in name {
            if shortened.utf8.count + String(c).utf8.count > budget { break }
            shortened.append(c)
        }
        var copy = self
        copy.structures[index] = Structure(type: .shortenedLocalName, data: Array(shortened.utf8))
        return copy
    }

    // MARK: Merging

    /// The advertisement with its scan response merged in, as one view of the device.
    ///
    /// Lists are unioned: service UUID lists, solicitations and target addresses are appended
    /// (the accessors drop duplicates), Manufacturer Specific Data entries are appended unless
    /// identical, Service Data replaces an entry for the same UUID. The name comes from whichever
    /// side has a complete one (the scan response when both or neither do). Any other type in the
    /// scan response replaces that type in the advertisement. The first `malformed` is kept.
    public func merging(_ scanResponse: AdvertisingData) -> AdvertisingData {
        var out = self
        out.merge(scanResponse)
        return out
    }

    /// `merging(_:)` in place: the structures move into their larger array instead of being
    /// copied (and the originals released), which a scanner merging every changed device's scan
    /// response saves each time. Core spec Vol 3 Part C §11 (advertising and scan response data
    /// of one device).
    public mutating func merge(_ scanResponse: AdvertisingData) {
        // Linear passes over the few structures of each side, without building sets: this runs
        // for every changed device a scan reports.
        let response = scanResponse.structures
        let takeName = scanResponse.contains(.completeLocalName)
            || (scanResponse.contains(.shortenedLocalName) && !contains(.completeLocalName))
        var replacedServiceData: [BluetoothUUID] = []
        for s in response where Self.isServiceDataType(s.type) {
            if let uuid = Self.serviceDataUUID(s) { replacedServiceData.append(uuid) }
        }

        structures.reserveCapacity(structures.count + response.count)
        structures.removeAll { s in
            if Self.isNameType(s.type) { return takeName }
            if Self.isServiceDataType(s.type) {
                return !replacedServiceData.isEmpty && Self.serviceDataUUID(s).map(replacedServiceData.contains) ?? false
            }
            // A type the scan response replaces: any type but lists, names, manufacturer and
            // service data.
            return Self.isReplacedByScanResponse(s.type) && response.contains { $0.type == s.type }
        }
        for s in response {
            if Self.isNameType(s.type) {
                if takeName { structures.append(s) }
            } else if Self.isListType(s.type) || s.type == .manufacturerSpecificData {
                if !structures.contains(s) { structures.append(s) }
            } else {
                structures.append(s)
            }
        }
        malformed = malformed ?? scanResponse.malformed
    }

    /// `listTypes` as a switch (no hashing).
    private static func isListType(_ type: ADType) -> Bool {
        switch type.rawValue {
        case 0x02...0x07, 0x14, 0x15, 0x1F, 0x17, 0x18: return true
        default: return false
        }
    }

    private static func isNameType(_ type: ADType) -> Bool {
        type == .completeLocalName || type == .shortenedLocalName
    }

    private static func isServiceDataType(_ type: ADType) -> Bool {
        type == .serviceData16 || type == .serviceData32 || type == .serviceData128
    }

    /// Whether a structure of `type` in the scan response replaces those of the advertisement.
    private static func isReplacedByScanResponse(_ type: ADType) -> Bool {
        !isListType(type) && type != .manufacturerSpecificData && !isNameType(type) && !isServiceDataType(type)
    }

    /// Types whose data is a list that merging unions.
    static let listTypes: Set<ADType> = [
        .incompleteServiceUUIDs16, .completeServiceUUIDs16, .incompleteServiceUUIDs32,
        .completeServiceUUIDs32, .incompleteServiceUUIDs128, .completeServiceUUIDs128,
        .solicitedServiceUUIDs16, .solicitedServiceUUIDs32, .solicitedServiceUUIDs128,
        .publicTargetAddress, .randomTargetAddress,
    ]

    static func serviceDataUUID(_ s: Structure) -> BluetoothUUID? {
        guard let entry = ADType.serviceDataTypes.first(where: { $0.type == s.type }), s.data.count >= entry.width else {
            return nil
        }
        return try? BluetoothUUID(littleEndian: Array(s.data[0..<entry.width]))
    }

    // MARK: Building

    /// Builds advertising data for the peripheral role, one structure per call, in call order:
    ///
    ///     let data = try AdvertisingData.Builder()
    ///         .flags([.leGeneralDiscoverable, .brEdrNotSupported])
    ///         .serviceUUIDs(["180D"])
    ///         .localName("HRM")
    ///         .build()
    ///         .encode(limit: AdvertisingData.legacyLimit)
    public struct Builder: Sendable, Hashable {
        /// The structures added so far, in the order they will be sent.
        public private(set) var structures: [Structure] = []

        /// An empty builder; each method returns a copy with one more structure.
        public init() {}

        /// The advertising data with the structures added. It is not checked against a size limit
        /// here: `encode(limit:)` does that (31 bytes for legacy advertising).
        public func build() -> AdvertisingData { AdvertisingData(structures: structures) }

        /// Any structure, e.g. a type this builder has no method for.
        public func adding(_ type: ADType, _ data: [UInt8]) -> Builder {
            var copy = self
            copy.structures.append(Structure(type: type, data: data))
            return copy
        }

        /// The Flags structure (CSS Part A §1.3): required in connectable or discoverable advertising
        /// (Core spec Vol 3 Part C §11.1.3), e.g. `[.leGeneralDiscoverable, .brEdrNotSupported]`.
        public func flags(_ flags: Flags) -> Builder { adding(.flags, [flags.rawValue]) }

        /// The name, complete (0x09) or shortened (0x08). CSS Part A §1.2.
        public func localName(_ name: String, complete: Bool = true) -> Builder {
            adding(complete ? .completeLocalName : .shortenedLocalName, Array(name.utf8))
        }

        /// Service UUIDs in one list per size (16-bit aliases, 32-bit aliases, 128-bit), each
        /// marked complete or incomplete. CSS Part A §1.1.
        public func serviceUUIDs(_ uuids: [BluetoothUUID], complete: Bool = true) -> Builder {
            addingUUIDLists(uuids, types: complete
                ? (.completeServiceUUIDs16, .completeServiceUUIDs32, .completeServiceUUIDs128)
                : (.incompleteServiceUUIDs16, .incompleteServiceUUIDs32, .incompleteServiceUUIDs128))
        }

        /// Service Solicitation lists. CSS Part A §1.10.
        public func solicitedServiceUUIDs(_ uuids: [BluetoothUUID]) -> Builder {
            addingUUIDLists(uuids, types: (.solicitedServiceUUIDs16, .solicitedServiceUUIDs32, .solicitedServiceUUIDs128))
        }

        private func addingUUIDLists(_ uuids: [BluetoothUUID], types: (ADType, ADType, ADType)) -> Builder {
            var b16: [UInt8] = [], b32: [UInt8] = [], b128: [UInt8] = []
            var seen: Set<BluetoothUUID> = []
            for u in uuids where seen.insert(u).inserted {
                if let s = u.uint16 {
                    b16 += [UInt8(s & 0xFF), UInt8(s >> 8)]
                } else if let s = u.uint32 {
                    var w = ByteWriter(capacity: 4)
                    w.u32(s)
                    b32 += w.bytes
                } else {
                    b128 += u.littleEndian128
                }
            }
            var copy = self
            if !b16.isEmpty { copy = copy.adding(types.0, b16) }
            if !b32.isEmpty { copy = copy.adding(types.1, b32) }
            if !b128.isEmpty { copy = copy.adding(types.2, b128) }
            return copy
        }

        /// The TX Power Level in dBm, so a scanner can estimate path loss as TX power − RSSI
        /// (CSS Part A §1.5).
        public func txPowerLevel(_ dBm: Int8) -> Builder { adding(.txPowerLevel, [UInt8(bitPattern: dBm)]) }

        /// The Appearance, a category and subcategory from Assigned Numbers §2.6, e.g. 0x0341 for a
        /// heart rate belt (CSS Part A §1.12).
        public func appearance(_ value: UInt16) -> Builder { adding(.appearance, [UInt8(value & 0xFF), UInt8(value >> 8)]) }

        /// Manufacturer Specific Data: the company identifier (Assigned Numbers), little-endian, then
        /// `data` in that company's format (CSS Part A §1.4).
        public func manufacturerData(companyID: UInt16, data: [UInt8]) -> Builder {
            adding(.manufacturerSpecificData, [UInt8(companyID & 0xFF), UInt8(companyID >> 8)] + data)
        }

        /// Service Data with the shortest UUID form. CSS Part A §1.11.
        public func serviceData(_ uuid: BluetoothUUID, _ data: [UInt8]) -> Builder {
            if let s = uuid.uint16 { return adding(.serviceData16, [UInt8(s & 0xFF), UInt8(s >> 8)] + data) }
            if let s = uuid.uint32 {
                var w = ByteWriter(capacity: 4 + data.count)
                w.u32(s)
                w.append(data)
                return adding(.serviceData32, w.bytes)
            }
            return adding(.serviceData128, uuid.littleEndian128 + data)
        }

        /// Preferred connection interval range in 1.25 ms units; nil for "no specific" (0xFFFF).
        public func peripheralConnectionIntervalRange(minimum: UInt16?, maximum: UInt16?) -> Builder {
            var w = ByteWriter(capacity: 4)
            w.u16(minimum ?? 0xFFFF)
            w.u16(maximum ?? 0xFFFF)
            return adding(.peripheralConnectionIntervalRange, w.bytes)
        }

        /// Advertising interval in 0.625 ms units: 0x1A when it fits in 16 bits, else 0x2F.
        public func advertisingInterval(_ units: UInt32) -> Builder {
            var w = ByteWriter(capacity: 4)
            if units <= 0xFFFF {
                w.u16(UInt16(units))
                return adding(.advertisingInterval, w.bytes)
            }
            if units <= 0xFF_FFFF { w.u24(units) } else { w.u32(units) }
            return adding(.advertisingIntervalLong, w.bytes)
        }

        /// The LE Role: which roles the device supports and prefers (CSS Part A §1.17).
        public func leRole(_ role: LERole) -> Builder { adding(.leRole, [role.rawValue]) }

        /// A URI, its scheme compressed to a code point when this encoder knows it.
        public func uri(_ uri: String) -> Builder { adding(.uri, URI.compress(uri).encoded) }

        /// The public addresses this advertisement is meant for, six octets each (CSS Part A §1.13).
        public func publicTargetAddresses(_ addresses: [BDAddress]) -> Builder {
            adding(.publicTargetAddress, addresses.flatMap(\.littleEndianBytes))
        }

        /// The random addresses this advertisement is meant for, six octets each (CSS Part A §1.14).
        public func randomTargetAddresses(_ addresses: [BDAddress]) -> Builder {
            adding(.randomTargetAddress, addresses.flatMap(\.littleEndianBytes))
        }

        /// The device's LE address and whether it is random (CSS Part A §1.16), as out-of-band
        /// pairing data carries it.
        public func leDeviceAddress(_ address: DeviceAddress) -> Builder {
            let random: Bool = address.type == .random || address.type == .randomIdentity
            return adding(.leBluetoothDeviceAddress, address.address.littleEndianBytes + [random ? 1 : 0])
        }
    }
}

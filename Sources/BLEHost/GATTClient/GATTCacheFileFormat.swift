import BLEWire

/// Why a stored attribute cache could not be read. A cache file is not trusted: it may be
/// truncated by a crash of another tool, corrupted, or written by someone hostile, so every
/// fault is this typed error and the owner discovers afresh (never a crash).
public struct GATTCacheFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong, for logs.
    public var reason: String
    /// A fault described by `reason`.
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "GATT cache file: \(reason)" }
}

/// The bytes of a stored `GATTAttributeCache` (Core spec Vol 3 Part G §2.5.2), sans-IO.
///
/// Layout, little-endian like the rest of Bluetooth: the magic `BLEGATTC`, version 2, a flags
/// octet (the Client Supported Features bits written, §7.2: bit 0 robust caching, bit 1 Enhanced
/// ATT, bit 2 Multiple Handle Value Notifications), the hash length (0 or 16) and the hash, then counted lists: covered ranges (start, end); characteristics
/// (declaration, value, end handle, properties, UUID length 2 or 16, UUID, descriptor count or
/// 0xFFFF when not discovered, then each descriptor's handle, UUID length and UUID); CCCD values
/// written (value handle, bits); then, from version 2, the primary services when the whole
/// list is known (count, or 0xFFFF when it is not: start, end, flags with bit 0 primary, UUID
/// length and UUID, then the include declarations: count, each declaration handle, the included
/// service's start and end and its UUID); then, from version 3, the Server Supported Features
/// value read (§7.4: its length, at most 16, or 0xFF when not read, and its octets). Versions 1
/// (no services) and 2 (no server features) are still read. Decoding checks everything a client later relies on (handles
/// ordered and non-zero, descriptors inside their characteristic, no trailing bytes) and counts
/// are bounded by what is left to read, so a hostile file cannot make it allocate much.
public enum GATTCacheFileFormat {
    /// `BLEGATTC`.
    public static let magic: [UInt8] = Array("BLEGATTC".utf8)
    /// The current layout.
    public static let version: UInt8 = 3
    /// The layout before services were kept, still read.
    static let versionWithoutServices: UInt8 = 1
    /// The layout before the Server Supported Features value was kept, still read.
    static let versionWithoutServerFeatures: UInt8 = 2
    /// The longest Server Supported Features value kept (one octet is defined, §7.4).
    static let maximumServerFeaturesLength = 16
    /// The Client Supported Features bits the flags octet may hold (Vol 3 Part G §7.2).
    public static let knownClientFeatures: UInt8 = 0x07
    /// The largest file accepted (a full database of 16-bit attributes is far below this).
    public static let maximumLength = 1 << 20

    /// The cache's bytes.
    public static func encode(_ cache: GATTAttributeCache) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + cache.characteristics.count * 16)
        w.append(magic)
        w.u8(version)
        w.u8(cache.clientFeaturesWritten & GATTCacheFileFormat.knownClientFeatures)
        let hash = cache.databaseHash ?? []
        w.u8(UInt8(truncatingIfNeeded: hash.count))
        w.append(hash)
        w.u16(UInt16(truncatingIfNeeded: cache.covered.count))
        for r in cache.covered {
            w.u16(r.lowerBound)
            w.u16(r.upperBound)
        }
        w.u16(UInt16(truncatingIfNeeded: cache.characteristics.count))
        for c in cache.characteristics {
            w.u16(c.declarationHandle)
            w.u16(c.valueHandle)
            w.u16(c.endHandle)
            w.u8(c.properties.rawValue)
            uuid(c.uuid, &w)
            if let descriptors = cache.descriptors(ofValueHandle: c.valueHandle) {
                w.u16(UInt16(truncatingIfNeeded: descriptors.count))
                for d in descriptors {
                    w.u16(d.handle)
                    uuid(d.uuid, &w)
                }
            } else {
                w.u16(0xFFFF)
            }
        }
        let subscriptions = cache.subscriptions.sorted { $0.key < $1.key }
        w.u16(UInt16(truncatingIfNeeded: subscriptions.count))
        for (handle, bits) in subscriptions {
            w.u16(handle)
            w.u16(bits)
        }
        if let services = cache.services {
            w.u16(UInt16(truncatingIfNeeded: services.count))
            for service in services {
                w.u16(service.handleRange.lowerBound)
                w.u16(service.handleRange.upperBound)
                w.u8(service.isPrimary ? 0x01 : 0x00)
                uuid(service.uuid, &w)
                let includes = cache.includedServices[service.handleRange.lowerBound] ?? []
                w.u16(UInt16(truncatingIfNeeded: includes.count))
                for include in includes {
                    w.u16(include.declarationHandle)
                    w.u16(include.serviceHandleRange.lowerBound)
                    w.u16(include.serviceHandleRange.upperBound)
                    uuid(include.uuid, &w)
                }
            }
        } else {
            w.u16(0xFFFF)
        }
        if let features = cache.serverFeatures {
            let kept = features.prefix(maximumServerFeaturesLength)
            w.u8(UInt8(kept.count))
            w.append(Array(kept))
        } else {
            w.u8(0xFF)
        }
        return w.bytes
    }

    private static func uuid(_ uuid: BluetoothUUID, _ w: inout ByteWriter) {
        let bytes = uuid.attBytes
        w.u8(UInt8(truncatingIfNeeded: bytes.count))
        w.append(bytes)
    }

    /// Reads a cache back, or says what is wrong with the bytes.
    public static func decode(_ bytes: [UInt8]) throws(GATTCacheFileError) -> GATTAttributeCache {
        guard bytes.count <= maximumLength else { throw GATTCacheFileError("\(bytes.count) bytes is too long") }
        var r = ByteReader(bytes)
        do {
            guard try r.readBytes(magic.count) == magic else { throw GATTCacheFileError("not a GATT cache (bad magic)") }
            let v = try r.readU8()
            guard v == version || v == versionWithoutServices || v == versionWithoutServerFeatures else {
                throw GATTCacheFileError("version \(v) is not \(version)")
            }
            let flags = try r.readU8()
            guard flags & ~GATTCacheFileFormat.knownClientFeatures == 0 else { throw GATTCacheFileError("flags 0x\(String(flags, radix: 16))") }
            let hashLength = Int(try r.readU8())
            guard hashLength == 0 || hashLength == 16 else { throw GATTCacheFileError("Database Hash of \(hashLength) octets") }
            let hash = hashLength == 0 ? nil : try r.readBytes(hashLength)

            let rangeCount = try count(&r, each: 4)
            var covered: [ClosedRange<UInt16>] = []
            for _ in 0..<rangeCount {
                let start = try r.readU16(), end = try r.readU16()
                guard start != 0, start <= end, start > (covered.last?.upperBound ?? 0) else {
                    throw GATTCacheFileError("covered range 0x\(attHex16(start))...0x\(attHex16(end)) out of order")
                }
                covered.append(start...end)
            }

            let characteristicCount = try count(&r, each: 12)
            var characteristics: [GATTCharacteristic] = []
            var descriptors: [UInt16: [GATTDescriptor]] = [:]
            for _ in 0..<characteristicCount {
                let declaration = try r.readU16(), value = try r.readU16(), end = try r.readU16()
                let properties = CharacteristicProperties(rawValue: try r.readU8())
                let type = try uuid(&r)
                guard declaration != 0, declaration < value, value <= end,
                      declaration > (characteristics.last?.endHandle ?? 0) else {
                    throw GATTCacheFileError("characteristic 0x\(attHex16(declaration))/0x\(attHex16(value))...0x\(attHex16(end)) out of order")
                }
                guard covered.contains(where: { $0.contains(declaration) }) else {
                    throw GATTCacheFileError("characteristic 0x\(attHex16(declaration)) outside every covered range")
                }
                let c = GATTCharacteristic(uuid: type, declarationHandle: declaration, valueHandle: value, properties: properties, endHandle: end)
                characteristics.append(c)
                let descriptorCount = try r.readU16()
                guard descriptorCount != 0xFFFF else { continue }
                guard Int(descriptorCount) * 5 <= r.remaining else { throw GATTCacheFileError("\(descriptorCount) descriptors do not fit") }
                var found: [GATTDescriptor] = []
                for _ in 0..<descriptorCount {
                    let handle = try r.readU16()
                    let type = try uuid(&r)
                    guard handle > (found.last?.handle ?? value), handle <= end else {
                        throw GATTCacheFileError("descriptor 0x\(attHex16(handle)) outside its characteristic 0x\(attHex16(value))...0x\(attHex16(end))")
                    }
                    found.append(GATTDescriptor(handle: handle, uuid: type))
                }
                descriptors[value] = found
            }

            let subscriptionCount = try count(&r, each: 4)
            var subscriptions: [UInt16: UInt16] = [:]
            for _ in 0..<subscriptionCount {
                let handle = try r.readU16(), bits = try r.readU16()
                guard handle != 0, bits & ~0x0003 == 0, bits != 0, subscriptions[handle] == nil else {
                    throw GATTCacheFileError("subscription 0x\(attHex16(bits)) on 0x\(attHex16(handle))")
                }
                subscriptions[handle] = bits
            }
            let (services, includes) = v == versionWithoutServices ? (nil, [:]) : try readServices(&r)
            var serverFeatures: [UInt8]?
            if v == version {
                let n = try r.readU8()
                if n != 0xFF {
                    guard Int(n) <= maximumServerFeaturesLength else { throw GATTCacheFileError("Server Supported Features of \(n) octets") }
                    serverFeatures = try r.readBytes(Int(n))
                }
            }
            guard r.isAtEnd else { throw GATTCacheFileError("\(r.remaining) bytes after the end") }
            return GATTAttributeCache(databaseHash: hash, characteristics: characteristics, covered: covered,
                                      descriptors: descriptors, subscriptions: subscriptions,
                                      clientFeaturesWritten: flags,
                                      services: services, includedServices: includes, serverFeatures: serverFeatures)
        } catch let error as GATTCacheFileError {
            throw error
        } catch {
            throw GATTCacheFileError("truncated (\(error))")
        }
    }

    /// The services section: nil when the list was not known. Services are in handle order
    /// without overlap, and each include declaration lies inside its service.
    private static func readServices(_ r: inout ByteReader) throws -> ([GATTService]?, [UInt16: [GATTIncludedService]]) {
        let n = try r.readU16()
        guard n != 0xFFFF else { return (nil, [:]) }
        guard Int(n) * 10 <= r.remaining else { throw GATTCacheFileError("\(n) services do not fit in \(r.remaining) bytes") }
        var services: [GATTService] = []
        var includes: [UInt16: [GATTIncludedService]] = [:]
        for _ in 0..<n {
            let start = try r.readU16(), end = try r.readU16()
            let flags = try r.readU8()
            let type = try uuid(&r)
            guard start != 0, start <= end, start > (services.last?.handleRange.upperBound ?? 0), flags & ~0x01 == 0 else {
                throw GATTCacheFileError("service 0x\(attHex16(start))...0x\(attHex16(end)) out of order")
            }
            let includeCount = try count(&r, each: 9)
            var found: [GATTIncludedService] = []
            for _ in 0..<includeCount {
                let declaration = try r.readU16(), first = try r.readU16(), last = try r.readU16()
                let included = try uuid(&r)
                guard declaration > start, declaration <= end, declaration > (found.last?.declarationHandle ?? 0),
                      first != 0, first <= last else {
                    throw GATTCacheFileError("include 0x\(attHex16(declaration)) outside its service 0x\(attHex16(start))...0x\(attHex16(end))")
                }
                found.append(GATTIncludedService(declarationHandle: declaration, serviceHandleRange: first...last, uuid: included))
            }
            services.append(GATTService(uuid: type, isPrimary: flags & 0x01 != 0, handleRange: start...end))
            includes[start] = found
        }
        return (services, includes)
    }

    /// A list count whose entries (at least `each` bytes) must fit in what is left.
    private static func count(_ r: inout ByteReader, each: Int) throws -> Int {
        let n = Int(try r.readU16())
        guard n * each <= r.remaining else { throw GATTCacheFileError("\(n) entries do not fit in \(r.remaining) bytes") }
        return n
    }

    private static func uuid(_ r: inout ByteReader) throws -> BluetoothUUID {
        let length = Int(try r.readU8())
        guard length == 2 || length == 16 else { throw GATTCacheFileError("UUID of \(length) octets") }
        return try BluetoothUUID(littleEndian: r.readBytes(length))
    }
}

/// Typed views of the AD structures. Each accessor cites its CSS Part A section; single-valued
/// fields read the first structure of their type (a data type that "shall not appear more than
/// once" is not rejected when it does).
extension AdvertisingData {
    // MARK: Flags (CSS Part A §1.3)

    /// The Flags data type. Only the first octet is defined; bits 5–7 are reserved and kept.
    public struct Flags: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The Flags octet as sent.
        public var rawValue: UInt8
        /// Flags from their octet, reserved bits included.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Bit 0: LE Limited Discoverable Mode, discoverable for a limited time only (Core spec Vol 3
        /// Part C §9.2.3).
        public static let leLimitedDiscoverable = Flags(rawValue: 0x01)
        /// Bit 1: LE General Discoverable Mode, discoverable until told otherwise (Core spec Vol 3
        /// Part C §9.2.4).
        public static let leGeneralDiscoverable = Flags(rawValue: 0x02)
        /// Bit 2: BR/EDR Not Supported, an LE-only device (what every LE-only peripheral sets).
        public static let brEdrNotSupported = Flags(rawValue: 0x04)
        /// Simultaneous LE and BR/EDR to the same device capable (controller).
        public static let simultaneousLEBrEdrController = Flags(rawValue: 0x08)
        /// Simultaneous LE and BR/EDR to the same device capable (host); reserved since Core 5.3
        /// but still sent by older devices.
        public static let simultaneousLEBrEdrHost = Flags(rawValue: 0x10)

        static let names: [(Flags, String)] = [
            (.leLimitedDiscoverable, "LE Limited"), (.leGeneralDiscoverable, "LE General"),
            (.brEdrNotSupported, "BR/EDR Not Supported"),
            (.simultaneousLEBrEdrController, "LE+BR/EDR Controller"),
            (.simultaneousLEBrEdrHost, "LE+BR/EDR Host"),
        ]

        /// "LE General,BR/EDR Not Supported"; "none" for no bits.
        public var description: String {
            var parts = Self.names.filter { contains($0.0) }.map(\.1)
            let reserved = rawValue & 0xE0
            if reserved != 0 { parts.append("0x" + ADHex.byte(reserved)) }
            return parts.isEmpty ? "none" : parts.joined(separator: ",")
        }
    }

    /// The flags, or nil if the data has no Flags structure (scan responses and non-discoverable
    /// advertisements normally have none). A Flags structure with no data reads as no bits set.
    public var flags: Flags? {
        guard let d = firstData(of: .flags) else { return nil }
        return Flags(rawValue: d.first ?? 0)
    }

    // MARK: Service UUIDs (CSS Part A §1.1) and solicitation (§1.10)

    /// Every advertised service UUID from the complete and incomplete 16-, 32- and 128-bit lists,
    /// in order of appearance, without duplicates.
    public var serviceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        for s in structures {
            guard let entry = ADType.serviceListTypes.first(where: { $0.type == s.type }) else { continue }
            Self.appendUUIDs(from: s.data, width: entry.width, to: &out)
        }
        return out
    }

    /// True when the data has at least one service UUID list and every list it has is marked
    /// complete: the advertiser claims to have listed all its services of those sizes.
    public var serviceUUIDsComplete: Bool {
        let present = ADType.serviceListTypes.filter { contains($0.type) }
        return !present.isEmpty && present.allSatisfy(\.complete)
    }

    /// Service UUIDs the advertiser solicits (wants a peer to offer), 16/32/128-bit, deduplicated.
    public var solicitedServiceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        for s in structures {
            guard let entry = ADType.solicitationTypes.first(where: { $0.type == s.type }) else { continue }
            Self.appendUUIDs(from: s.data, width: entry.width, to: &out)
        }
        return out
    }

    static func appendUUIDs(from data: [UInt8], width: Int, to out: inout [BluetoothUUID]) {
        var i = 0
        while i + width <= data.count {
            if let uuid = try? BluetoothUUID(littleEndian: Array(data[i..<(i + width)])), !out.contains(uuid) {
                out.append(uuid)
            }
            i += width
        }
    }

    // MARK: Local name (CSS Part A §1.2)

    /// The device name: the complete name if present, else the shortened one. Invalid UTF-8 is
    /// replaced (U+FFFD) rather than rejected, and trailing NUL padding, which some devices send,
    /// is dropped.
    public var localName: String? {
        guard let d = firstData(of: .completeLocalName) ?? firstData(of: .shortenedLocalName) else { return nil }
        return Self.decodeName(d)
    }

    /// True when the only name present is a shortened one.
    public var isNameShortened: Bool {
        !contains(.completeLocalName) && contains(.shortenedLocalName)
    }

    static func decodeName(_ bytes: [UInt8]) -> String {
        var end = bytes.count
        while end > 0 && bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    // MARK: Tx power (CSS Part A §1.5)

    /// The transmitted power level in dBm (-127...127), for path-loss estimates.
    public var txPowerLevel: Int8? {
        guard let b = firstData(of: .txPowerLevel)?.first else { return nil }
        return Int8(bitPattern: b)
    }

    // MARK: Manufacturer data (CSS Part A §1.4)

    /// One Manufacturer Specific Data structure: a company identifier (little-endian) and the
    /// company-defined bytes after it.
    public struct ManufacturerData: Sendable, Hashable {
        /// The company identifier from Assigned Numbers, e.g. 0x004C for Apple; it says how to read
        /// `data`.
        public var companyID: UInt16
        /// The bytes after the company identifier, in that company's own format.
        public var data: [UInt8]

        /// Manufacturer data of company `companyID`.
        public init(companyID: UInt16, data: [UInt8]) {
            self.companyID = companyID
            self.data = data
        }

        /// The company's registered name, e.g. "Apple, Inc." for 0x004C.
        public var companyName: String? { AssignedNumbers.companyName(companyID) }
    }

    /// Every Manufacturer Specific Data structure, in order (a device may send several). Structures
    /// too short for the company identifier are skipped.
    public var manufacturerData: [ManufacturerData] {
        data(of: .manufacturerSpecificData).compactMap { d in
            guard d.count >= 2 else { return nil }
            return ManufacturerData(companyID: UInt16(d[0]) | UInt16(d[1]) << 8, data: Array(d[2...]))
        }
    }

    // MARK: Service data (CSS Part A §1.11)

    /// One Service Data structure: the service UUID and the data for it.
    public struct ServiceData: Sendable, Hashable {
        /// The service the data belongs to.
        public var uuid: BluetoothUUID
        /// The bytes after the UUID, in the format that service defines.
        public var data: [UInt8]

        /// Service data for `uuid`.
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    /// Every Service Data structure (16-, 32- and 128-bit UUID forms), in order.
    public var serviceData: [ServiceData] {
        structures.compactMap { s in
            guard let entry = ADType.serviceDataTypes.first(where: { $0.type == s.type }),
                  s.data.count >= entry.width,
                  let uuid = try? BluetoothUUID(littleEndian: Array(s.data[0..<entry.width]))
            else { return nil }
            return ServiceData(uuid: uuid, data: Array(s.data[entry.width...]))
        }
    }

    // MARK: Appearance (CSS Part A §1.12)

    /// The external appearance value: a 10-bit category (`value >> 6`) and a 6-bit subcategory
    /// (`value & 0x3F`).
    public var appearance: UInt16? {
        guard let d = firstData(of: .appearance), d.count >= 2 else { return nil }
        return UInt16(d[0]) | UInt16(d[1]) << 8
    }

    /// The appearance's name, e.g. "Heart Rate Sensor: Heart Rate Belt", or the category alone;
    /// nil without an appearance or for an unknown category.
    public var appearanceName: String? { appearance.flatMap(AssignedNumbers.appearanceName) }

    // MARK: Peripheral connection interval range (CSS Part A §1.9)

    /// The connection interval range the peripheral prefers, in units of 1.25 ms (valid values
    /// 0x0006...0x0C80). nil stands for 0xFFFF, "no specific minimum/maximum".
    public struct ConnectionIntervalRange: Sendable, Hashable, CustomStringConvertible {
        /// The shortest interval wanted, in 1.25 ms units; nil for no specific minimum.
        public var minimum: UInt16?
        /// The longest interval wanted, in 1.25 ms units; nil for no specific maximum.
        public var maximum: UInt16?

        /// A range from `minimum` to `maximum` (1.25 ms units; nil for an open end).
        public init(minimum: UInt16?, maximum: UInt16?) {
            self.minimum = minimum
            self.maximum = maximum
        }

        /// `minimum` in milliseconds.
        public var minimumMilliseconds: Double? { minimum.map { Double($0) * 1.25 } }
        /// `maximum` in milliseconds.
        public var maximumMilliseconds: Double? { maximum.map { Double($0) * 1.25 } }

        /// "7.5-30ms", with "any" for an open end.
        public var description: String {
            let lo = minimumMilliseconds.map(ADHex.milliseconds) ?? "any"
            let hi = maximumMilliseconds.map(ADHex.milliseconds) ?? "any"
            return "\(lo)-\(hi)ms"
        }
    }

    /// The Peripheral Connection Interval Range (0x12), nil when absent or shorter than 4 octets.
    public var peripheralConnectionIntervalRange: ConnectionIntervalRange? {
        guard let d = firstData(of: .peripheralConnectionIntervalRange), d.count >= 4 else { return nil }
        let lo = UInt16(d[0]) | UInt16(d[1]) << 8, hi = UInt16(d[2]) | UInt16(d[3]) << 8
        return ConnectionIntervalRange(minimum: lo == 0xFFFF ? nil : lo, maximum: hi == 0xFFFF ? nil : hi)
    }

    // MARK: Advertising interval (CSS Part A §1.15, §1.22)

    /// The advertising interval in units of 0.625 ms: from Advertising Interval (0x1A, 2 octets)
    /// or Advertising Interval - long (0x2F, 3 or 4 octets).
    public var advertisingInterval: UInt32? {
        if let d = firstData(of: .advertisingInterval), d.count >= 2 {
            return UInt32(d[0]) | UInt32(d[1]) << 8
        }
        if let d = firstData(of: .advertisingIntervalLong), d.count >= 3 {
            var v: UInt32 = 0
            for (i, b) in d.prefix(4).enumerated() { v |= UInt32(b) << (8 * UInt32(i)) }
            return v
        }
        return nil
    }

    /// `advertisingInterval` in milliseconds.
    public var advertisingIntervalMilliseconds: Double? { advertisingInterval.map { Double($0) * 0.625 } }

    // MARK: LE role (CSS Part A §1.17)

    /// The LE Role data type's value (CSS Part A §1.17): which roles the device can take, and which
    /// it prefers when it can take both.
    public enum LERole: Sendable, Hashable, CustomStringConvertible {
        /// 0x00: only the peripheral role.
        case peripheralOnly
        /// 0x01: only the central role.
        case centralOnly
        /// 0x02: both roles, peripheral preferred for connection establishment.
        case bothPeripheralPreferred
        /// 0x03: both roles, central preferred for connection establishment.
        case bothCentralPreferred
        /// A value the spec reserves (0x04–0xFF), kept as sent.
        case reserved(UInt8)

        /// The role an octet encodes; never fails (reserved values are kept).
        public init(rawValue: UInt8) {
            switch rawValue {
            case 0x00: self = .peripheralOnly
            case 0x01: self = .centralOnly
            case 0x02: self = .bothPeripheralPreferred
            case 0x03: self = .bothCentralPreferred
            default: self = .reserved(rawValue)
            }
        }

        /// The octet this role is sent as.
        public var rawValue: UInt8 {
            switch self {
            case .peripheralOnly: return 0x00
            case .centralOnly: return 0x01
            case .bothPeripheralPreferred: return 0x02
            case .bothCentralPreferred: return 0x03
            case let .reserved(v): return v
            }
        }

        /// "peripheral", "both (central preferred)", ...
        public var description: String {
            switch self {
            case .peripheralOnly: return "peripheral"
            case .centralOnly: return "central"
            case .bothPeripheralPreferred: return "both (peripheral preferred)"
            case .bothCentralPreferred: return "both (central preferred)"
            case let .reserved(v): return "reserved 0x" + ADHex.byte(v)
            }
        }
    }

    /// The LE Role (0x1C), nil when absent.
    public var leRole: LERole? {
        firstData(of: .leRole)?.first.map(LERole.init(rawValue:))
    }

    // MARK: Addresses (CSS Part A §1.13, §1.16)

    /// Addresses the advertiser directs itself at (public device addresses), 6 octets each.
    public var publicTargetAddresses: [BDAddress] { Self.addresses(in: data(of: .publicTargetAddress)) }

    /// Addresses the advertiser directs itself at (random device addresses), 6 octets each.
    public var randomTargetAddresses: [BDAddress] { Self.addresses(in: data(of: .randomTargetAddress)) }

    static func addresses(in lists: [[UInt8]]) -> [BDAddress] {
        var out: [BDAddress] = []
        for d in lists {
            var i = 0
            while i + 6 <= d.count {
                let a = BDAddress(littleEndian: Array(d[i..<(i + 6)]))
                if !out.contains(a) { out.append(a) }
                i += 6
            }
        }
        return out
    }

    /// The device's own LE address as carried in OOB data: 6 octets and a flags octet whose bit 0
    /// says random (1) or public (0).
    public var leDeviceAddress: DeviceAddress? {
        guard let d = firstData(of: .leBluetoothDeviceAddress), d.count >= 7 else { return nil }
        return DeviceAddress(BDAddress(littleEndian: Array(d[0..<6])), type: d[6] & 0x01 == 0 ? .public : .random)
    }

    // MARK: URI (CSS Part A §1.18)

    /// A URI whose scheme is compressed to one code point from the Assigned Numbers "URI Scheme
    /// Name String Mapping" (the first character, UTF-8 encoded); code point U+0001 means the
    /// scheme is written out in the rest.
    public struct URI: Sendable, Hashable, CustomStringConvertible {
        /// The scheme's code point (U+0001 for "no compressed scheme").
        public var schemeCode: UInt32
        /// Everything after the scheme code point, e.g. "//example.com".
        public var remainder: String

        /// A URI from its scheme code point and the text after it.
        public init(schemeCode: UInt32, remainder: String) {
            self.schemeCode = schemeCode
            self.remainder = remainder
        }

        /// Schemes this decoder expands; others keep only their code.
        static let schemes: [UInt32: String] = [
            0x01: "", 0x0C: "data:", 0x10: "file:", 0x11: "ftp:", 0x12: "geo:", 0x16: "http:",
            0x17: "https:", 0x26: "mailto:", 0x45: "tel:", 0x4E: "urn:", 0x50: "ws:", 0x51: "wss:",
            0xBB: "bluetooth:",
        ]

        /// The scheme prefix ("https:"), "" when written out in the remainder, nil if not known here.
        public var scheme: String? { Self.schemes[schemeCode] }

        /// The full URI, or nil when the scheme code is not one this decoder knows.
        public var string: String? { scheme.map { $0 + remainder } }

        /// The full URI, or the unknown scheme's code point and the remainder.
        public var description: String {
            string ?? "<scheme U+\(String(schemeCode, radix: 16, uppercase: true))>\(remainder)"
        }

        /// The scheme code for the start of `uri`, and the rest; U+0001 and the whole text if the
        /// scheme is not in the table.
        static func compress(_ uri: String) -> URI {
            var best: (UInt32, String)?
            for (code, prefix) in schemes where !prefix.isEmpty && uri.hasPrefix(prefix) {
                if best.map({ prefix.count > $0.1.count }) ?? true { best = (code, prefix) }
            }
            guard let (code, prefix) = best else { return URI(schemeCode: 0x01, remainder: uri) }
            return URI(schemeCode: code, remainder: String(uri.dropFirst(prefix.count)))
        }

        var encoded: [UInt8] {
            var s = String.UnicodeScalarView()
            if let scalar = Unicode.Scalar(schemeCode) { s.append(scalar) }
            return Array(String(s).utf8) + Array(remainder.utf8)
        }
    }

    /// The URI (0x24), nil when absent or empty.
    public var uri: URI? {
        guard let d = firstData(of: .uri) else { return nil }
        let text = String(decoding: d, as: UTF8.self)
        guard let first = text.unicodeScalars.first else { return nil }
        return URI(schemeCode: first.value, remainder: String(text.unicodeScalars.dropFirst()))
    }
}

extension ADHex {
    /// "7.5", "30": milliseconds without a trailing ".0".
    static func milliseconds(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}

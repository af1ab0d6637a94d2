/// Advertising and scan response data: a sequence of AD structures, each `length, AD type, data`.
/// Core spec Vol 3 Part C §11; the data types themselves are in the Core Specification Supplement
/// (CSS) Part A §1.
///
/// The value keeps every structure as it came (`structures`, unknown types included, order kept) and
/// decodes the typed fields on demand, so nothing a peer sent is lost and equality is on the bytes'
/// meaning. Decoding never fails: `init(bytes:)` keeps what is well-formed and records the first
/// framing problem in `malformed`. Field decoders are lenient in the same spirit: a list whose
/// length is not a multiple of its element size yields the whole elements, a field that is too
/// short to hold its value reads as absent.
public struct AdvertisingData: Sendable, Hashable {
    /// One AD structure: its type and the data after the type octet.
    public struct Structure: Sendable, Hashable {
        public var type: ADType
        public var data: [UInt8]

        public init(type: ADType, data: [UInt8]) {
            self.type = type
            self.data = data
        }
    }

    /// The structures in the order they appeared.
    public var structures: [Structure]

    /// Why parsing stopped early, if it did: a structure whose length ran past the end of the data.
    /// The structures before it are kept.
    public var malformed: WireError?

    public init(structures: [Structure] = []) {
        self.structures = structures
        self.malformed = nil
    }

    /// Splits raw AD bytes into structures. Core spec Vol 3 Part C §11: a length octet of zero
    /// ends the significant part (what follows is padding and is ignored); a length that runs past
    /// the end stops parsing and is reported in `malformed`.
    public init(bytes: [UInt8]) {
        self.init()
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            if length == 0 { break }
            let end = offset + 1 + length
            guard end <= bytes.count else {
                let type = offset + 1 < bytes.count ? " type 0x" + ADHex.byte(bytes[offset + 1]) : ""
                malformed = WireError.truncated(
                    needed: length, remaining: bytes.count - offset - 1,
                    "AD structure\(type) at offset \(offset)")
                break
            }
            structures.append(Structure(type: ADType(rawValue: bytes[offset + 1]),
                                        data: Array(bytes[(offset + 2)..<end])))
            offset = end
        }
    }

    /// The data of every structure of `type`, in order.
    public func data(of type: ADType) -> [[UInt8]] {
        structures.compactMap { $0.type == type ? $0.data : nil }
    }

    /// The data of the first structure of `type`.
    public func firstData(of type: ADType) -> [UInt8]? {
        structures.first { $0.type == type }?.data
    }

    public func contains(_ type: ADType) -> Bool {
        structures.contains { $0.type == type }
    }

    public var isEmpty: Bool { structures.isEmpty }
}

extension AdvertisingData {
    /// An AD type code (CSS Part A §1, Assigned Numbers §2.3). An open set: unknown codes are
    /// kept as they are.
    public struct ADType: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public init(_ rawValue: UInt8) { self.rawValue = rawValue }

        public static let flags = ADType(0x01)
        public static let incompleteServiceUUIDs16 = ADType(0x02)
        public static let completeServiceUUIDs16 = ADType(0x03)
        public static let incompleteServiceUUIDs32 = ADType(0x04)
        public static let completeServiceUUIDs32 = ADType(0x05)
        public static let incompleteServiceUUIDs128 = ADType(0x06)
        public static let completeServiceUUIDs128 = ADType(0x07)
        public static let shortenedLocalName = ADType(0x08)
        public static let completeLocalName = ADType(0x09)
        public static let txPowerLevel = ADType(0x0A)
        public static let classOfDevice = ADType(0x0D)
        public static let simplePairingHashC192 = ADType(0x0E)
        public static let simplePairingRandomizerR192 = ADType(0x0F)
        /// Also "Device ID" (same code, BR/EDR EIR context).
        public static let securityManagerTKValue = ADType(0x10)
        public static let securityManagerOOBFlags = ADType(0x11)
        public static let peripheralConnectionIntervalRange = ADType(0x12)
        public static let solicitedServiceUUIDs16 = ADType(0x14)
        public static let solicitedServiceUUIDs128 = ADType(0x15)
        public static let serviceData16 = ADType(0x16)
        public static let publicTargetAddress = ADType(0x17)
        public static let randomTargetAddress = ADType(0x18)
        public static let appearance = ADType(0x19)
        public static let advertisingInterval = ADType(0x1A)
        public static let leBluetoothDeviceAddress = ADType(0x1B)
        public static let leRole = ADType(0x1C)
        public static let simplePairingHashC256 = ADType(0x1D)
        public static let simplePairingRandomizerR256 = ADType(0x1E)
        public static let solicitedServiceUUIDs32 = ADType(0x1F)
        public static let serviceData32 = ADType(0x20)
        public static let serviceData128 = ADType(0x21)
        public static let leSecureConnectionsConfirmation = ADType(0x22)
        public static let leSecureConnectionsRandom = ADType(0x23)
        public static let uri = ADType(0x24)
        public static let indoorPositioning = ADType(0x25)
        public static let transportDiscoveryData = ADType(0x26)
        public static let leSupportedFeatures = ADType(0x27)
        public static let channelMapUpdateIndication = ADType(0x28)
        public static let pbADV = ADType(0x29)
        public static let meshMessage = ADType(0x2A)
        public static let meshBeacon = ADType(0x2B)
        public static let bigInfo = ADType(0x2C)
        public static let broadcastCode = ADType(0x2D)
        public static let resolvableSetIdentifier = ADType(0x2E)
        public static let advertisingIntervalLong = ADType(0x2F)
        public static let broadcastName = ADType(0x30)
        public static let encryptedAdvertisingData = ADType(0x31)
        public static let periodicAdvertisingResponseTimingInformation = ADType(0x32)
        public static let electronicShelfLabel = ADType(0x34)
        public static let threeDInformationData = ADType(0x3D)
        public static let manufacturerSpecificData = ADType(0xFF)

        /// The service UUID list types with their UUID width in bytes and completeness.
        static let serviceListTypes: [(type: ADType, width: Int, complete: Bool)] = [
            (.incompleteServiceUUIDs16, 2, false), (.completeServiceUUIDs16, 2, true),
            (.incompleteServiceUUIDs32, 4, false), (.completeServiceUUIDs32, 4, true),
            (.incompleteServiceUUIDs128, 16, false), (.completeServiceUUIDs128, 16, true),
        ]
        static let solicitationTypes: [(type: ADType, width: Int)] = [
            (.solicitedServiceUUIDs16, 2), (.solicitedServiceUUIDs32, 4), (.solicitedServiceUUIDs128, 16),
        ]
        static let serviceDataTypes: [(type: ADType, width: Int)] = [
            (.serviceData16, 2), (.serviceData32, 4), (.serviceData128, 16),
        ]

        /// A short name for display, e.g. "Flags"; "0x2A" style for codes without one here.
        public var name: String? {
            switch rawValue {
            case 0x01: return "Flags"
            case 0x02, 0x04, 0x06: return "Incomplete List of Service UUIDs"
            case 0x03, 0x05, 0x07: return "Complete List of Service UUIDs"
            case 0x08: return "Shortened Local Name"
            case 0x09: return "Complete Local Name"
            case 0x0A: return "Tx Power Level"
            case 0x0D: return "Class of Device"
            case 0x12: return "Peripheral Connection Interval Range"
            case 0x14, 0x15, 0x1F: return "Service Solicitation"
            case 0x16, 0x20, 0x21: return "Service Data"
            case 0x17: return "Public Target Address"
            case 0x18: return "Random Target Address"
            case 0x19: return "Appearance"
            case 0x1A: return "Advertising Interval"
            case 0x1B: return "LE Bluetooth Device Address"
            case 0x1C: return "LE Role"
            case 0x24: return "URI"
            case 0x27: return "LE Supported Features"
            case 0x2F: return "Advertising Interval - long"
            case 0x30: return "Broadcast Name"
            case 0xFF: return "Manufacturer Specific Data"
            default: return nil
            }
        }

        public var description: String { "0x" + ADHex.byte(rawValue) }

        public static func < (a: ADType, b: ADType) -> Bool { a.rawValue < b.rawValue }
    }
}

/// Hex formatting shared by the advertising-data files.
enum ADHex {
    /// Two upper-case hex digits.
    static func byte(_ v: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(v >> 4)], digits[Int(v & 0x0F)]])
    }

    /// Four upper-case hex digits.
    static func word(_ v: UInt16) -> String { byte(UInt8(v >> 8)) + byte(UInt8(v & 0xFF)) }
}

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
        /// The AD type octet: what `data` holds.
        public var type: ADType
        /// The structure's data, after the type octet (its length is the length octet minus one).
        public var data: [UInt8]

        /// A structure of `type` holding `data` (at most 29 octets fit in legacy advertising data).
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

    /// Advertising data made of `structures`, in that order (empty by default). `Builder` makes
    /// typed ones.
    public init(structures: [Structure] = []) {
        self.structures = structures
        self.malformed = nil
    }

    /// Splits raw AD bytes into structures. Core spec Vol 3 Part C §11: a length octet of zero
    /// ends the significant part (what follows is padding and is ignored); a length that runs past
    /// the end stops parsing and is reported in `malformed`.
    public init(bytes: [UInt8]) {
        self.init()
        // Count the structures first, so their array is allocated once.
        var count = 0
        var offset = 0
        while offset < bytes.count, bytes[offset] != 0, offset + 1 + Int(bytes[offset]) <= bytes.count {
            count += 1
            offset += 1 + Int(bytes[offset])
        }
        if count > 0 { structures.reserveCapacity(count) }
        offset = 0
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

    /// Whether any structure is of `type`.
    public func contains(_ type: ADType) -> Bool {
        structures.contains { $0.type == type }
    }

    /// True when there are no structures (an advertiser may send empty data).
    public var isEmpty: Bool { structures.isEmpty }
}

extension AdvertisingData {
    /// An AD type code (CSS Part A §1, Assigned Numbers §2.3). An open set: unknown codes are
    /// kept as they are.
    public struct ADType: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The code as it appears in the AD structure.
        public var rawValue: UInt8
        /// The type with code `rawValue`, known here or not.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The type with code `rawValue` (unlabelled, for tables of codes).
        public init(_ rawValue: UInt8) { self.rawValue = rawValue }

        /// 0x01 Flags: discoverability and BR/EDR support (CSS Part A §1.3).
        public static let flags = ADType(0x01)
        /// 0x02: some of the device's 16-bit service UUIDs; it has more (CSS Part A §1.1).
        public static let incompleteServiceUUIDs16 = ADType(0x02)
        /// 0x03: all of the device's 16-bit service UUIDs (CSS Part A §1.1).
        public static let completeServiceUUIDs16 = ADType(0x03)
        /// 0x04: some of the device's 32-bit service UUIDs; it has more (CSS Part A §1.1).
        public static let incompleteServiceUUIDs32 = ADType(0x04)
        /// 0x05: all of the device's 32-bit service UUIDs (CSS Part A §1.1).
        public static let completeServiceUUIDs32 = ADType(0x05)
        /// 0x06: some of the device's 128-bit service UUIDs; it has more (CSS Part A §1.1).
        public static let incompleteServiceUUIDs128 = ADType(0x06)
        /// 0x07: all of the device's 128-bit service UUIDs (CSS Part A §1.1).
        public static let completeServiceUUIDs128 = ADType(0x07)
        /// 0x08: the start of the device name, when the whole does not fit (CSS Part A §1.2).
        public static let shortenedLocalName = ADType(0x08)
        /// 0x09: the whole device name, UTF-8 (CSS Part A §1.2).
        public static let completeLocalName = ADType(0x09)
        /// 0x0A: the transmit power in dBm, for estimating path loss from the RSSI (CSS Part A §1.5).
        public static let txPowerLevel = ADType(0x0A)
        /// 0x0D: the BR/EDR Class of Device, in out-of-band pairing data (CSS Part A §1.6).
        public static let classOfDevice = ADType(0x0D)
        /// 0x0E: Secure Simple Pairing hash C-192, out-of-band data (CSS Part A §1.6).
        public static let simplePairingHashC192 = ADType(0x0E)
        /// 0x0F: Secure Simple Pairing randomizer R-192, out-of-band data (CSS Part A §1.6).
        public static let simplePairingRandomizerR192 = ADType(0x0F)
        /// Also "Device ID" (same code, BR/EDR EIR context).
        public static let securityManagerTKValue = ADType(0x10)
        /// 0x11: Security Manager out-of-band flags: OOB data present, LE supported, address type
        /// (CSS Part A §1.8).
        public static let securityManagerOOBFlags = ADType(0x11)
        /// 0x12: the connection interval range the peripheral prefers (CSS Part A §1.9).
        public static let peripheralConnectionIntervalRange = ADType(0x12)
        /// 0x14: 16-bit UUIDs of services the device wants a central to offer (CSS Part A §1.10).
        public static let solicitedServiceUUIDs16 = ADType(0x14)
        /// 0x15: 128-bit UUIDs of services the device wants a central to offer (CSS Part A §1.10).
        public static let solicitedServiceUUIDs128 = ADType(0x15)
        /// 0x16: data for a service named by a 16-bit UUID, the UUID first (CSS Part A §1.11).
        public static let serviceData16 = ADType(0x16)
        /// 0x17: public addresses of the devices this advertisement is meant for (CSS Part A §1.13).
        public static let publicTargetAddress = ADType(0x17)
        /// 0x18: random addresses of the devices this advertisement is meant for (CSS Part A §1.14).
        public static let randomTargetAddress = ADType(0x18)
        /// 0x19: the device's external appearance, an Assigned Numbers category (CSS Part A §1.12).
        public static let appearance = ADType(0x19)
        /// 0x1A: the advertising interval in units of 0.625 ms, 16 bits (CSS Part A §1.15).
        public static let advertisingInterval = ADType(0x1A)
        /// 0x1B: the device's LE address and its type, e.g. in out-of-band data (CSS Part A §1.16).
        public static let leBluetoothDeviceAddress = ADType(0x1B)
        /// 0x1C: which LE roles the device supports and prefers (CSS Part A §1.17).
        public static let leRole = ADType(0x1C)
        /// 0x1D: Secure Simple Pairing hash C-256, out-of-band data (CSS Part A §1.6).
        public static let simplePairingHashC256 = ADType(0x1D)
        /// 0x1E: Secure Simple Pairing randomizer R-256, out-of-band data (CSS Part A §1.6).
        public static let simplePairingRandomizerR256 = ADType(0x1E)
        /// 0x1F: 32-bit UUIDs of services the device wants a central to offer (CSS Part A §1.10).
        public static let solicitedServiceUUIDs32 = ADType(0x1F)
        /// 0x20: data for a service named by a 32-bit UUID, the UUID first (CSS Part A §1.11).
        public static let serviceData32 = ADType(0x20)
        /// 0x21: data for a service named by a 128-bit UUID, the UUID first (CSS Part A §1.11).
        public static let serviceData128 = ADType(0x21)
        /// 0x22: LE Secure Connections confirmation value, out-of-band pairing data (CSS Part A §1.6).
        public static let leSecureConnectionsConfirmation = ADType(0x22)
        /// 0x23: LE Secure Connections random value, out-of-band pairing data (CSS Part A §1.6).
        public static let leSecureConnectionsRandom = ADType(0x23)
        /// 0x24: a URI, its scheme as an Assigned Numbers code point (CSS Part A §1.18).
        public static let uri = ADType(0x24)
        /// 0x25: Indoor Positioning data (Indoor Positioning Service specification).
        public static let indoorPositioning = ADType(0x25)
        /// 0x26: Transport Discovery Data (Transport Discovery Service specification).
        public static let transportDiscoveryData = ADType(0x26)
        /// 0x27: the device's LE supported features, as in the Link Layer's feature set (CSS Part A §1.19).
        public static let leSupportedFeatures = ADType(0x27)
        /// 0x28: a coming channel map change for periodic advertising (CSS Part A §1.20).
        public static let channelMapUpdateIndication = ADType(0x28)
        /// 0x29: PB-ADV, the Mesh provisioning bearer over advertising (Mesh Protocol specification).
        public static let pbADV = ADType(0x29)
        /// 0x2A: a Mesh network PDU (Mesh Protocol specification).
        public static let meshMessage = ADType(0x2A)
        /// 0x2B: a Mesh beacon (Mesh Protocol specification).
        public static let meshBeacon = ADType(0x2B)
        /// 0x2C: BIGInfo, how to synchronise to a broadcast isochronous group (CSS Part A §1.21).
        public static let bigInfo = ADType(0x2C)
        /// 0x2D: the Broadcast_Code that encrypts a broadcast isochronous group (CSS Part A §1.22).
        public static let broadcastCode = ADType(0x2D)
        /// 0x2E: a Resolvable Set Identifier, naming a coordinated set's members (Coordinated Set
        /// Identification Profile).
        public static let resolvableSetIdentifier = ADType(0x2E)
        /// 0x2F: the advertising interval in units of 0.625 ms, 24 or 32 bits (CSS Part A §1.15).
        public static let advertisingIntervalLong = ADType(0x2F)
        /// 0x30: the name of an audio broadcast (Public Broadcast Profile).
        public static let broadcastName = ADType(0x30)
        /// 0x31: AD structures encrypted with the Encrypted Data Key (CSS Part A §1.23).
        public static let encryptedAdvertisingData = ADType(0x31)
        /// 0x32: when to send periodic advertising responses (CSS Part A §1.24).
        public static let periodicAdvertisingResponseTimingInformation = ADType(0x32)
        /// 0x34: an Electronic Shelf Label's identity (CSS Part A §1.25).
        public static let electronicShelfLabel = ADType(0x34)
        /// 0x3D: 3D synchronisation information (3D Synchronization Profile).
        public static let threeDInformationData = ADType(0x3D)
        /// 0xFF: data in a company's own format, its 16-bit company identifier first (CSS Part A §1.4).
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

        /// The code in hex, "0x09".
        public var description: String { "0x" + ADHex.byte(rawValue) }

        /// Orders types by their code.
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

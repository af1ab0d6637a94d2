import BLEWire

/// The attribute types GATT builds its database from. Core spec Vol 3 Part G §3 (Table 3.1 lists
/// the declarations), §3.3.3 (descriptors) and §7.1 (Service Changed).
public enum GATTUUID {
    /// Generic Access service (Vol 3 Part C §12).
    public static let genericAccessService = BluetoothUUID(0x1800)
    /// Generic Attribute service, which holds Service Changed (Vol 3 Part G §7).
    public static let genericAttributeService = BluetoothUUID(0x1801)
    /// «Primary Service» declaration, §3.1.
    public static let primaryService = BluetoothUUID(0x2800)
    /// «Secondary Service» declaration, §3.1.
    public static let secondaryService = BluetoothUUID(0x2801)
    /// «Include» declaration, §3.2.
    public static let include = BluetoothUUID(0x2802)
    /// «Characteristic» declaration, §3.3.1.
    public static let characteristic = BluetoothUUID(0x2803)
    /// Characteristic Extended Properties descriptor, §3.3.3.1.
    public static let characteristicExtendedProperties = BluetoothUUID(0x2900)
    /// Characteristic User Description descriptor, §3.3.3.2.
    public static let characteristicUserDescription = BluetoothUUID(0x2901)
    /// Client Characteristic Configuration descriptor, §3.3.3.3.
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    /// Service Changed characteristic, §7.1.
    public static let serviceChanged = BluetoothUUID(0x2A05)
}

/// Characteristic Properties, the first octet of a characteristic declaration's value.
/// Core spec Vol 3 Part G §3.3.1.1 (Table 3.5).
public struct CharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The properties octet as declared.
    public var rawValue: UInt8
    /// Properties from their octet.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01: the value may be broadcast in advertising data (Server Characteristic Configuration).
    public static let broadcast = CharacteristicProperties(rawValue: 0x01)
    /// 0x02: the value may be read (§4.8).
    public static let read = CharacteristicProperties(rawValue: 0x02)
    /// 0x04: the value may be written with Write Command, unacknowledged (§4.9.1).
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    /// 0x08: the value may be written with Write Request, acknowledged (§4.9.3).
    public static let write = CharacteristicProperties(rawValue: 0x08)
    /// 0x10: the server may notify the value, unacknowledged (§4.10); it has a CCCD.
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    /// 0x20: the server may indicate the value, acknowledged by the client (§4.11); it has a CCCD.
    public static let indicate = CharacteristicProperties(rawValue: 0x20)
    /// 0x40: the value may be written with Signed Write Command (§4.9.2).
    public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
    /// The characteristic has a Characteristic Extended Properties descriptor (§3.3.3.1).
    public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)

    private static let named: [(CharacteristicProperties, String)] = [
        (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"),
        (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
        (.authenticatedSignedWrites, "authenticatedSignedWrites"), (.extendedProperties, "extendedProperties"),
    ]

    /// The set properties' names, lowest bit first.
    public var names: [String] { Self.named.filter { contains($0.0) }.map(\.1) }

    /// "[read, notify]".
    public var description: String { "[" + names.joined(separator: ", ") + "]" }
}

/// A service found by discovery: its declaration handle through its last attribute.
/// Core spec Vol 3 Part G §3.1, §4.4.
public struct GATTService: Hashable, Sendable, CustomStringConvertible {
    /// The service type, e.g. 180D for Heart Rate.
    public var uuid: BluetoothUUID
    /// Primary (found by discovery) or secondary (only reached through an include).
    public var isPrimary: Bool
    /// Declaration handle ... End Group Handle.
    public var handleRange: ClosedRange<UInt16>

    /// A service of type `uuid` spanning `handleRange`.
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, handleRange: ClosedRange<UInt16>) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.handleRange = handleRange
    }

    /// The service declaration's handle.
    public var startHandle: UInt16 { handleRange.lowerBound }
    /// The service's last handle (End Group Handle).
    public var endHandle: UInt16 { handleRange.upperBound }

    /// "primary service 180D 0x0010...0x0016".
    public var description: String {
        "\(isPrimary ? "primary" : "secondary") service \(uuid) 0x\(attHex16(startHandle))...0x\(attHex16(endHandle))"
    }
}

/// An «Include» declaration found by §4.5.1: the including attribute and the included service.
/// Core spec Vol 3 Part G §3.2.
public struct GATTIncludedService: Hashable, Sendable {
    /// The handle of the include declaration itself.
    public var declarationHandle: UInt16
    /// The included service's declaration handle ... end group handle.
    public var serviceHandleRange: ClosedRange<UInt16>
    /// The included service's UUID (read back from its declaration for 128-bit UUIDs, §4.5.1).
    public var uuid: BluetoothUUID

    /// An include at `declarationHandle` of the service `uuid` spanning `serviceHandleRange`.
    public init(declarationHandle: UInt16, serviceHandleRange: ClosedRange<UInt16>, uuid: BluetoothUUID) {
        self.declarationHandle = declarationHandle
        self.serviceHandleRange = serviceHandleRange
        self.uuid = uuid
    }

    /// The included service's declaration handle.
    public var serviceStartHandle: UInt16 { serviceHandleRange.lowerBound }
    /// The included service's last handle.
    public var serviceEndHandle: UInt16 { serviceHandleRange.upperBound }
}

/// A characteristic found by §4.6: its declaration, value handle and properties.
/// Core spec Vol 3 Part G §3.3.
public struct GATTCharacteristic: Hashable, Sendable, CustomStringConvertible {
    /// The characteristic type, e.g. 2A37 for Heart Rate Measurement.
    public var uuid: BluetoothUUID
    /// The handle of the «Characteristic» declaration itself.
    public var declarationHandle: UInt16
    /// The handle of the value: what reads, writes and notifications name.
    public var valueHandle: UInt16
    /// What the server says may be done with the value (§3.3.1.1); permissions may still refuse.
    public var properties: CharacteristicProperties
    /// The last handle belonging to this characteristic: the next characteristic declaration's
    /// handle minus one, or the service's end handle for the last one (§3.3). Descriptors live in
    /// `valueHandle + 1 ... endHandle` (§4.7.1).
    public var endHandle: UInt16

    /// A characteristic as discovery reports it.
    public init(uuid: BluetoothUUID, declarationHandle: UInt16, valueHandle: UInt16,
                properties: CharacteristicProperties, endHandle: UInt16) {
        self.uuid = uuid
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.properties = properties
        self.endHandle = endHandle
    }

    /// Where descriptor discovery looks, nil if the characteristic has no room for descriptors.
    public var descriptorRange: ClosedRange<UInt16>? {
        guard valueHandle < endHandle else { return nil }
        return (valueHandle + 1)...endHandle
    }

    /// "characteristic 2A37 decl 0x0011 value 0x0012 [notify]".
    public var description: String {
        "characteristic \(uuid) decl 0x\(attHex16(declarationHandle)) value 0x\(attHex16(valueHandle)) \(properties)"
    }
}

/// A characteristic descriptor found by §4.7.1. Core spec Vol 3 Part G §3.3.3.
public struct GATTDescriptor: Hashable, Sendable {
    /// The descriptor's handle, for reading and writing it.
    public var handle: UInt16
    /// The descriptor type, e.g. 2902 for Client Characteristic Configuration.
    public var uuid: BluetoothUUID
    /// A descriptor at `handle` of type `uuid`.
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// The value of a Client Characteristic Configuration descriptor. Core spec Vol 3 Part G
/// §3.3.3.3 (Table 3.11): a 16-bit little-endian bit field.
public struct ClientCharacteristicConfiguration: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let notifications = ClientCharacteristicConfiguration(rawValue: 0x0001)
    public static let indications = ClientCharacteristicConfiguration(rawValue: 0x0002)
    /// Both bits clear: the server sends neither.
    public static let off: ClientCharacteristicConfiguration = []

    public var bytes: [UInt8] { [UInt8(rawValue & 0xFF), UInt8(rawValue >> 8)] }
}

/// The value of a Service Changed indication. Core spec Vol 3 Part G §7.1: the start and end of
/// the affected handle range. An owner that sees an indication on the Service Changed
/// characteristic's value handle decodes it with this and drops its cached attributes in the range.
public enum GATTServiceChanged {
    public static func affectedRange(_ value: [UInt8]) throws(WireError) -> ClosedRange<UInt16> {
        var r = ByteReader(value)
        let start = try r.readU16()
        let end = try r.readU16()
        guard r.isAtEnd else { throw WireError.invalid("Service Changed value of \(value.count) octets") }
        guard start <= end, start != 0 else { throw WireError.invalid("Service Changed range 0x\(attHex16(start))...0x\(attHex16(end))") }
        return start...end
    }
}

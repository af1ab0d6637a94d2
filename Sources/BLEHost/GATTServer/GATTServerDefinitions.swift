import BLEWire

// What an application writes to describe its GATT server: services, characteristics, descriptors
// and their permissions. Core spec Vol 3 Part G §3 (service, include and characteristic
// definitions) and Vol 3 Part F §3.2.5 (attribute permissions). The database
// (GATTServerDatabase.swift) turns these into attributes with handles.

/// Attribute permissions, Core spec Vol 3 Part F §3.2.5: whether the value may be read or written,
/// and what the link must provide first (encryption, an authenticated key, the application's
/// authorization).
///
/// Any `read…` flag makes the attribute readable and any `write…` flag writable; the
/// `…Encrypted`, `…Authenticated` and `…Authorized` flags add requirements on top. An attribute
/// with no `read…` flag answers reads with Read Not Permitted, one with no `write…` flag answers
/// writes with Write Not Permitted.
public struct AttributePermissions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The permission bits (this stack's own encoding; permissions never go over the air).
    public var rawValue: UInt16
    /// Permissions from their bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The value may be read on any link.
    public static let read = AttributePermissions(rawValue: 0x0001)
    /// The value may be written on any link.
    public static let write = AttributePermissions(rawValue: 0x0002)
    /// Reading needs an encrypted link (Vol 3 Part C §10.3.1).
    public static let readEncrypted = AttributePermissions(rawValue: 0x0004)
    /// Writing needs an encrypted link.
    public static let writeEncrypted = AttributePermissions(rawValue: 0x0008)
    /// Reading needs a link encrypted with an authenticated (MITM-protected) key.
    public static let readAuthenticated = AttributePermissions(rawValue: 0x0010)
    /// Writing needs a link encrypted with an authenticated key.
    public static let writeAuthenticated = AttributePermissions(rawValue: 0x0020)
    /// Reading needs the application's authorization (Vol 3 Part C §10.5).
    public static let readAuthorized = AttributePermissions(rawValue: 0x0040)
    /// Writing needs the application's authorization.
    public static let writeAuthorized = AttributePermissions(rawValue: 0x0080)
    /// The value may be written with a Signed Write Command (Vol 3 Part G §4.9.2) over an
    /// unencrypted link, by a bonded client whose CSRK we hold: LE security mode 2 (Vol 3 Part C
    /// §10.2.2). A valid signature stands in for the encryption the other flags ask for:
    /// `.writeEncrypted` is met by any bonded CSRK, `.writeAuthenticated` only by one from an
    /// authenticated pairing (mode 2 level 2), and the key-size policy applies to the pairing
    /// that distributed it; `.writeAuthorized` still needs the application's authorization.
    /// Other writes to such a value need an encrypted link (mode 1 level 2 meets mode 2 level
    /// 1's requirements, Vol 3 Part C §10.2.3), so a client on an encrypted link writes it
    /// with a plain Write Command, as §4.9.2 tells it to. Give the characteristic the
    /// `.authenticatedSignedWrites` property too, so clients know to sign.
    public static let writeSigned = AttributePermissions(rawValue: 0x0100)

    static let anyRead: AttributePermissions = [.read, .readEncrypted, .readAuthenticated, .readAuthorized]
    static let anyWrite: AttributePermissions = [.write, .writeEncrypted, .writeAuthenticated, .writeAuthorized, .writeSigned]

    /// True when some `read…` flag is set.
    public var isReadable: Bool { !intersection(Self.anyRead).isEmpty }
    /// True when some `write…` flag is set.
    public var isWritable: Bool { !intersection(Self.anyWrite).isEmpty }

    private static let named: [(AttributePermissions, String)] = [
        (.read, "read"), (.write, "write"), (.readEncrypted, "readEncrypted"), (.writeEncrypted, "writeEncrypted"),
        (.readAuthenticated, "readAuthenticated"), (.writeAuthenticated, "writeAuthenticated"),
        (.readAuthorized, "readAuthorized"), (.writeAuthorized, "writeAuthorized"), (.writeSigned, "writeSigned"),
    ]

    /// "[read, writeEncrypted]".
    public var description: String {
        "[" + Self.named.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}

/// The security the link currently has, which decides permission errors.
/// Core spec Vol 3 Part C §10.3.1 (LE security mode 1) and §10.5 (authorization).
public struct LinkSecurity: Hashable, Sendable {
    /// The link is encrypted.
    public var encrypted: Bool
    /// The encryption key was generated with MITM protection (an authenticated pairing).
    public var authenticated: Bool
    /// The application has authorized this peer.
    public var authorized: Bool
    /// A Long Term Key exists for this peer (it is bonded), so the client could simply start
    /// encryption. Decides between Insufficient Encryption and Insufficient Authentication on an
    /// unencrypted link (see `ATTServer`'s permission rules).
    public var hasLongTermKey: Bool
    /// The encryption key's size in octets (7...16); meaningful only while `encrypted`.
    public var keySize: Int
    /// The key came from LE Secure Connections pairing.
    public var secureConnections: Bool
    /// The server's policy: attributes that need encryption answer Insufficient Encryption Key
    /// Size on a link whose key is shorter (Vol 3 Part F §3.4.1.1, error 0x0C).
    public var requiredKeySize: Int

    public init(encrypted: Bool = false, authenticated: Bool = false, authorized: Bool = false,
                hasLongTermKey: Bool = false, keySize: Int = 16, secureConnections: Bool = false, requiredKeySize: Int = 7) {
        self.encrypted = encrypted
        self.authenticated = authenticated
        self.authorized = authorized
        self.hasLongTermKey = hasLongTermKey
        self.keySize = keySize
        self.secureConnections = secureConnections
        self.requiredKeySize = requiredKeySize
    }

    /// A fresh, unencrypted, unbonded link.
    public static let none = LinkSecurity()
}

/// A descriptor the application adds to a characteristic. Core spec Vol 3 Part G §3.3.3.
public struct GATTDescriptorDefinition: Hashable, Sendable {
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// Who may read and write the descriptor.
    public var permissions: AttributePermissions
    /// The stored value, or nil for a dynamic one that the application answers
    /// (`ServerAction.read` / `.write`).
    public var value: [UInt8]?
    /// The longest value a write may leave (Vol 3 Part F §3.2.9 caps attribute values at 512).
    public var maximumLength: Int

    /// A descriptor of type `uuid` with a stored `value`, or nil for a dynamic one.
    public init(uuid: BluetoothUUID, permissions: AttributePermissions, value: [UInt8]?, maximumLength: Int = 512) {
        self.uuid = uuid
        self.permissions = permissions
        self.value = value
        self.maximumLength = maximumLength
    }
}

/// A characteristic the application adds to a service. Core spec Vol 3 Part G §3.3.
///
/// The database lays it out as: declaration, value, then (in this order, each when present)
/// the Client Characteristic Configuration descriptor (added automatically when `properties`
/// contains notify or indicate), Characteristic Extended Properties, User Description,
/// Presentation Format, and `descriptors`. §3.3.3 lets descriptors come in any order; this one
/// matches the database of the Database Hash worked example (Vol 3 Part G Appendix B).
public struct GATTCharacteristicDefinition: Hashable, Sendable {
    /// The value of a Characteristic Extended Properties descriptor (0x2900), Vol 3 Part G
    /// §3.3.3.1 (Table 3.10).
    public struct ExtendedProperties: OptionSet, Hashable, Sendable {
        /// The descriptor's 16-bit value.
        public var rawValue: UInt16
        /// Extended properties from their bits.
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// The characteristic takes the Reliable Writes procedure (§4.9.5).
        public static let reliableWrite = ExtendedProperties(rawValue: 0x0001)
        /// The User Description descriptor is writable (§3.3.3.2).
        public static let writableAuxiliaries = ExtendedProperties(rawValue: 0x0002)
    }

    /// The value of a Characteristic Presentation Format descriptor (0x2904), Vol 3 Part G
    /// §3.3.3.5 (Table 3.16): seven octets.
    public struct PresentationFormat: Hashable, Sendable {
        /// Format (Assigned Numbers §2.4.1), e.g. 0x04 = uint8, 0x06 = uint16.
        public var format: UInt8
        /// Base-10 exponent applied to the value.
        public var exponent: Int8
        /// Unit UUID (Assigned Numbers), e.g. 0x27AD = percentage.
        public var unit: UInt16
        /// Name space of `description`, 0x01 = Bluetooth SIG.
        public var namespace: UInt8
        /// Description, from the name space, e.g. 0x0000 = unknown.
        public var description: UInt16

        /// A presentation format; unit 0x2700 is "unitless", description 0 "unknown".
        public init(format: UInt8, exponent: Int8 = 0, unit: UInt16 = 0x2700, namespace: UInt8 = 0x01, description: UInt16 = 0) {
            self.format = format
            self.exponent = exponent
            self.unit = unit
            self.namespace = namespace
            self.description = description
        }

        /// The descriptor value, little-endian fields.
        public var bytes: [UInt8] {
            var w = ByteWriter()
            w.u8(format)
            w.i8(exponent)
            w.u16(unit)
            w.u8(namespace)
            w.u16(description)
            return w.bytes
        }
    }

    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// The declared properties (§3.3.1.1). `.extendedProperties` is set automatically when
    /// `extendedProperties` is non-nil.
    public var properties: CharacteristicProperties
    /// Who may read and write the value; the properties only advertise.
    public var permissions: AttributePermissions
    /// The stored value, or nil for a dynamic one answered by the application.
    public var value: [UInt8]?
    /// The longest value a write may leave, at most 512 (Vol 3 Part F §3.2.9).
    public var maximumLength: Int
    /// Adds a Characteristic Extended Properties descriptor with these bits.
    public var extendedProperties: ExtendedProperties?
    /// Adds a Characteristic User Description descriptor (UTF-8), writable when
    /// `extendedProperties` contains `.writableAuxiliaries`.
    public var userDescription: String?
    /// Adds a Characteristic Presentation Format descriptor.
    public var presentationFormat: PresentationFormat?
    /// Further descriptors, after the automatic ones.
    public var descriptors: [GATTDescriptorDefinition]

    /// A characteristic of type `uuid`; the descriptors it needs are added by the database.
    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, permissions: AttributePermissions,
                value: [UInt8]?, maximumLength: Int = 512, extendedProperties: ExtendedProperties? = nil,
                userDescription: String? = nil, presentationFormat: PresentationFormat? = nil,
                descriptors: [GATTDescriptorDefinition] = []) {
        self.uuid = uuid
        self.properties = properties
        self.permissions = permissions
        self.value = value
        self.maximumLength = maximumLength
        self.extendedProperties = extendedProperties
        self.userDescription = userDescription
        self.presentationFormat = presentationFormat
        self.descriptors = descriptors
    }
}

/// A service the application adds. Core spec Vol 3 Part G §3.1 (declaration) and §3.2 (includes).
public struct GATTServiceDefinition: Hashable, Sendable {
    /// The service type.
    public var uuid: BluetoothUUID
    /// Primary (discoverable on its own) or secondary (only reachable through an include).
    public var isPrimary: Bool
    /// Services already in the database that this one includes, found by UUID (the lowest-handle
    /// service with that UUID). Their include declarations follow the service declaration (§3.2).
    public var includes: [BluetoothUUID]
    /// The service's characteristics, laid out in this order.
    public var characteristics: [GATTCharacteristicDefinition]

    /// A service of type `uuid` (primary unless said otherwise).
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, includes: [BluetoothUUID] = [],
                characteristics: [GATTCharacteristicDefinition]) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includes = includes
        self.characteristics = characteristics
    }
}

/// The handles a characteristic received. Core spec Vol 3 Part G §3.3.
public struct GATTCharacteristicHandles: Hashable, Sendable {
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// The handle of its «Characteristic» declaration.
    public var declarationHandle: UInt16
    /// The value's handle: what `updateValue` and the read and write events name.
    public var valueHandle: UInt16
    /// The properties as declared (including `.extendedProperties` when that descriptor exists).
    public var properties: CharacteristicProperties
    /// Client Characteristic Configuration descriptor, present with notify or indicate.
    public var cccdHandle: UInt16?
    /// The Characteristic Extended Properties descriptor, when defined.
    public var extendedPropertiesHandle: UInt16?
    /// The Characteristic User Description descriptor, when defined.
    public var userDescriptionHandle: UInt16?
    /// The Characteristic Presentation Format descriptor, when defined.
    public var presentationFormatHandle: UInt16?
    /// The application's own descriptors, in definition order.
    public var descriptorHandles: [UInt16]
    /// The last handle that belongs to this characteristic.
    public var endHandle: UInt16
}

/// What `GATTServerDatabase.add` assigned: the service's handle range and, in definition order,
/// each characteristic's handles.
public struct GATTServiceHandles: Hashable, Sendable {
    /// The service type.
    public var uuid: BluetoothUUID
    /// Whether it was added as a primary service.
    public var isPrimary: Bool
    /// Service declaration ... last attribute of the service.
    public var range: ClosedRange<UInt16>
    /// The include declarations' handles, in definition order.
    public var includeHandles: [UInt16]
    /// Each characteristic's handles, in definition order.
    public var characteristics: [GATTCharacteristicHandles]

    /// The first characteristic with `uuid`, in definition order.
    public subscript(uuid: BluetoothUUID) -> GATTCharacteristicHandles? {
        characteristics.first { $0.uuid == uuid }
    }
}

/// Why a database change was refused.
public struct GATTDatabaseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which change was refused, and why.
    public enum Kind: Hashable, Sendable {
        /// Not enough free handles for the service (handles end at 0xFFFF, Vol 3 Part F §3.2.2).
        case outOfHandles
        /// The requested start handle overlaps an existing service or is 0x0000.
        case handlesInUse
        /// An included service UUID is not in the database.
        case includedServiceNotFound(BluetoothUUID)
        /// No service starts at the given handle.
        case noServiceAt(UInt16)
        /// The service is included by another service; remove that one first.
        case serviceIsIncluded(UInt16)
        /// A descriptor the database adds itself (CCCD, extended properties, user description,
        /// presentation format) was also listed in `descriptors`.
        case duplicateDescriptor(BluetoothUUID)
        /// A maximum length outside 0...512 or an initial value longer than it.
        case invalidLength(BluetoothUUID)
    }
    /// What was refused.
    public var kind: Kind
    /// An error of `kind`.
    public init(_ kind: Kind) { self.kind = kind }

    /// The refusal in words, naming the UUID or handle concerned.
    public var description: String {
        switch kind {
        case .outOfHandles: return "GATT database: out of attribute handles"
        case .handlesInUse: return "GATT database: handles already in use"
        case let .includedServiceNotFound(uuid): return "GATT database: included service \(uuid) not found"
        case let .noServiceAt(handle): return "GATT database: no service starts at handle \(handle)"
        case let .serviceIsIncluded(handle): return "GATT database: service at handle \(handle) is included by another service"
        case let .duplicateDescriptor(uuid): return "GATT database: descriptor \(uuid) is added automatically"
        case let .invalidLength(uuid): return "GATT database: invalid maximum length or value length for \(uuid)"
        }
    }
}

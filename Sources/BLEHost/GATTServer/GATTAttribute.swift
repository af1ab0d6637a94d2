import BLEWire

/// Attribute types the GATT server lays out beyond the ones the client side names
/// (GATTClient/GATTTypes.swift). Core spec Vol 3 Part G §3.3.3 (descriptors), §7 (the GATT
/// service's characteristics) and Vol 3 Part C §12 (the GAP service's).
extension GATTUUID {
    /// Server Characteristic Configuration descriptor, Vol 3 Part G §3.3.3.4.
    public static let serverCharacteristicConfiguration = BluetoothUUID(0x2903)
    /// Characteristic Presentation Format descriptor, §3.3.3.5.
    public static let characteristicPresentationFormat = BluetoothUUID(0x2904)
    /// Characteristic Aggregate Format descriptor, §3.3.3.6.
    public static let characteristicAggregateFormat = BluetoothUUID(0x2905)
    /// Device Name, Vol 3 Part C §12.1.
    public static let deviceName = BluetoothUUID(0x2A00)
    /// Appearance, Vol 3 Part C §12.2.
    public static let appearance = BluetoothUUID(0x2A01)
    /// Client Supported Features, Vol 3 Part G §7.2.
    public static let clientSupportedFeatures = BluetoothUUID(0x2B29)
    /// Database Hash, Vol 3 Part G §7.3.
    public static let databaseHash = BluetoothUUID(0x2B2A)
    /// Server Supported Features, Vol 3 Part G §7.4 (bit 0: EATT Supported).
    public static let serverSupportedFeatures = BluetoothUUID(0x2B3A)
}

/// One attribute of the server's database: handle, type, permissions and where its value lives.
/// Core spec Vol 3 Part F §3.2 (attribute = handle, type, value, permissions).
public struct GATTAttribute: Hashable, Sendable {
    /// Where the value comes from when a client reads it.
    public enum Value: Hashable, Sendable {
        /// Defined by the server's structure (declarations, Extended Properties, Presentation
        /// Format): read-only and of fixed length, so Read Blob answers Attribute Not Long
        /// (Vol 3 Part F §3.4.4.5).
        case fixed([UInt8])
        /// An application value the database holds, shared by all connections.
        case stored([UInt8])
        /// An application value answered per request (`ServerAction.read` / `.write`).
        case dynamic
        /// A Client Characteristic Configuration descriptor: two octets kept per connection
        /// (Vol 3 Part G §3.3.3.3) for the characteristic whose value is at `valueHandle`.
        case clientConfiguration(valueHandle: UInt16, properties: CharacteristicProperties)
        /// Client Supported Features, kept per connection (Vol 3 Part G §7.2).
        case clientSupportedFeatures
        /// The Database Hash (Vol 3 Part G §7.3), computed by the database.
        case databaseHash
    }

    public var handle: UInt16
    public var type: BluetoothUUID
    public var permissions: AttributePermissions
    public var value: Value
    /// The longest value a write may leave.
    public var maximumLength: Int

    public init(handle: UInt16, type: BluetoothUUID, permissions: AttributePermissions, value: Value, maximumLength: Int = 512) {
        self.handle = handle
        self.type = type
        self.permissions = permissions
        self.value = value
        self.maximumLength = maximumLength
    }

    /// Values whose length the server fixes (Vol 3 Part F §3.4.4.5, §3.4.5.1): declarations,
    /// fixed descriptors, the CCCD and the hash.
    public var hasFixedLength: Bool {
        switch value {
        case .fixed, .clientConfiguration, .databaseHash: return true
        case .stored, .dynamic, .clientSupportedFeatures: return false
        }
    }

    /// True for a service declaration (primary or secondary), the GATT grouping attribute
    /// (Vol 3 Part G §2.5.1).
    public var isServiceDeclaration: Bool {
        type == GATTUUID.primaryService || type == GATTUUID.secondaryService
    }
}

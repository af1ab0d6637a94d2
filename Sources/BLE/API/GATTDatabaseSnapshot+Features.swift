import BLEHost
import BLEWire

extension GATTDatabaseSnapshot {
    /// Server Supported Features, the GATT service's characteristic that says which optional
    /// server features the peer has (Core spec Vol 3 Part G §7.4).
    public static let serverSupportedFeaturesUUID = BluetoothUUID(0x2B3A)
    /// Client Supported Features, where a client tells the server which of its features it
    /// may use (Vol 3 Part G §7.2).
    public static let clientSupportedFeaturesUUID = BluetoothUUID(0x2B29)
    /// The LE SPSM of Enhanced ATT bearers (Vol 3 Part G §5.3.1; SIG-assigned 0x0027).
    public static let eattSPSM: UInt16 = 0x0027

    /// The value of the peer's Server Supported Features characteristic, when it has one and
    /// the snapshot read it (Vol 3 Part G §7.4).
    public var serverSupportedFeatures: [UInt8]? {
        for service in services {
            for c in service.characteristics where c.characteristic.uuid == Self.serverSupportedFeaturesUUID {
                if case let .success(value)? = c.value { return value }
            }
        }
        return nil
    }

    /// Whether the peer offers Enhanced ATT bearers: bit 0 ("EATT Supported") of Server
    /// Supported Features (Vol 3 Part G §7.4). False when the peer has no such characteristic
    /// (a server without it supports none of those features); nil when it has one whose value
    /// was not read.
    public var offersEATT: Bool? {
        let present = services.contains { $0.characteristics.contains { $0.characteristic.uuid == Self.serverSupportedFeaturesUUID } }
        guard present else { return false }
        return serverSupportedFeatures.map { ($0.first ?? 0) & 0x01 != 0 }
    }
}

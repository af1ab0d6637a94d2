import BLEWire

/// One command a gateway takes on `P/NAME/cmd` (docs/GATEWAY.md), decoded and checked:
/// what to do, to which device, and the caller's `id` to answer with.
public struct GatewayRequest: Sendable, Equatable {
    /// The caller's identifier, echoed in the reply (a JSON string, or a number turned to text).
    public var id: String?
    public var operation: GatewayOperation

    public init(id: String?, operation: GatewayOperation) {
        self.id = id
        self.operation = operation
    }
}

/// A characteristic named by its UUID, and by its service's where the UUID alone is ambiguous.
public struct GatewayCharacteristic: Sendable, Equatable, CustomStringConvertible {
    public var characteristic: BluetoothUUID
    public var service: BluetoothUUID?

    public init(_ characteristic: BluetoothUUID, service: BluetoothUUID? = nil) {
        self.characteristic = characteristic
        self.service = service
    }

    public var description: String { service.map { "\($0)/\(characteristic)" } ?? characteristic.description }
}

/// A device as a command names it: its address, and the type when given
/// (`AA:BB:CC:DD:EE:FF/random`); without one the gateway uses the type it heard.
public struct GatewayDevice: Sendable, Equatable, CustomStringConvertible {
    public var address: BDAddress
    public var type: AddressType?

    public init(_ address: BDAddress, type: AddressType?) {
        self.address = address
        self.type = type
    }

    public var description: String { type.map { "\(address)/\($0)" } ?? address.description }
}

/// The operations of the command topic.
public enum GatewayOperation: Sendable, Equatable {
    /// Connect (and exchange the MTU) and keep the link until `disconnect` or the peer leaves.
    case connect(GatewayDevice)
    case disconnect(GatewayDevice)
    /// The device's whole GATT database: services, characteristics, descriptors.
    case gatt(GatewayDevice)
    case read(GatewayDevice, GatewayCharacteristic)
    /// A write with response, or a Write Command when `withResponse` is false.
    case write(GatewayDevice, GatewayCharacteristic, value: [UInt8], withResponse: Bool)
    /// Notifications (or indications) of the characteristic, published on `dev/ADDRESS/UUID`.
    case subscribe(GatewayDevice, GatewayCharacteristic)
    case unsubscribe(GatewayDevice, GatewayCharacteristic)

    /// The `op` name.
    public var name: String {
        switch self {
        case .connect: return "connect"
        case .disconnect: return "disconnect"
        case .gatt: return "gatt"
        case .read: return "read"
        case .write: return "write"
        case .subscribe: return "subscribe"
        case .unsubscribe: return "unsubscribe"
        }
    }

    /// The device the operation is about.
    public var device: GatewayDevice {
        switch self {
        case let .connect(d), let .disconnect(d), let .gatt(d), let .read(d, _), let .write(d, _, _, _),
             let .subscribe(d, _), let .unsubscribe(d, _):
            return d
        }
    }
}

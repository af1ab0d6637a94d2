import Synchronization
import BLE
import Foundation

/// A service the app publishes with `CBPeripheralManager.add(_:)`.
open class CBMutableService: CBService, @unchecked Sendable {
    /// A service of `type`, primary or secondary (reached through an include).
    public init(type UUID: CBUUID, primary isPrimary: Bool) {
        super.init(localUUID: UUID, isPrimary: isPrimary)
    }

    /// Its characteristics (`CBMutableCharacteristic`s), set before `add(_:)`.
    open override var characteristics: [CBCharacteristic]? {
        get { inner.withLock { $0.characteristics } }
        set { inner.withLock { $0.characteristics = newValue } }
    }

    /// Services (already added) that it includes.
    open override var includedServices: [CBService]? {
        get { inner.withLock { $0.includedServices } }
        set { inner.withLock { $0.includedServices = newValue } }
    }
}

/// A characteristic the app publishes. A non-nil `value` is static: the stack answers reads with
/// it (Apple requires such a characteristic to be read-only). A nil `value` is dynamic: reads and
/// writes come to the delegate as `CBATTRequest`s. A Client Characteristic Configuration
/// descriptor is added to notify and indicate characteristics by the stack.
open class CBMutableCharacteristic: CBCharacteristic, @unchecked Sendable {
    struct Local {
        var properties: CBCharacteristicProperties
        var permissions: CBAttributePermissions
        var subscribed: [CBCentral] = []
        /// Where the characteristic sits once added.
        var valueHandle: UInt16?
        weak var manager: CBPeripheralManager?
    }

    let local: Mutex<Local>

    /// A characteristic of `type` with these properties, static value (nil: dynamic) and permissions.
    public init(type UUID: CBUUID, properties: CBCharacteristicProperties, value: Data?, permissions: CBAttributePermissions) {
        local = Mutex(Local(properties: properties, permissions: permissions))
        super.init(localUUID: UUID, value: value)
    }

    /// What it allows; set before `add(_:)`.
    open override var properties: CBCharacteristicProperties {
        get { local.withLock { $0.properties } }
        set { local.withLock { $0.properties = newValue } }
    }

    /// Who may read and write it; set before `add(_:)`.
    open var permissions: CBAttributePermissions {
        get { local.withLock { $0.permissions } }
        set { local.withLock { $0.permissions = newValue } }
    }

    /// The static value (nil: dynamic); set before `add(_:)`.
    open override var value: Data? {
        get { inner.withLock { $0.value } }
        set { inner.withLock { $0.value = newValue } }
    }

    /// Its descriptors (`CBMutableDescriptor`s: a User Description or a Presentation Format, as
    /// Apple allows); set before `add(_:)`.
    open override var descriptors: [CBDescriptor]? {
        get { inner.withLock { $0.descriptors } }
        set { inner.withLock { $0.descriptors = newValue } }
    }

    /// The centrals subscribed to its notifications or indications now.
    open var subscribedCentrals: [CBCentral]? { local.withLock { $0.subscribed } }

    /// `<CBMutableCharacteristic: 0x…, UUID = …, Value = …, Properties = 0x12, Permissions = 0x1, Descriptors = (null), SubscribedCentrals = ()>`.
    open override var description: String {
        let l = local.current
        return "<CBMutableCharacteristic: \(pointerText(self)), UUID = \(uuid), Value = \(dataText(value)), Properties = 0x\(String(l.properties.rawValue, radix: 16)), Permissions = 0x\(String(l.permissions.rawValue, radix: 16)), Descriptors = \(descriptors.map { "\($0)" } ?? "(null)"), SubscribedCentrals = (\(l.subscribed.map(\.description).joined(separator: ", ")))>"
    }
}

/// A descriptor the app publishes: a User Description (`String` value) or a Presentation Format
/// (`Data`), as Apple allows; other types are published with their `Data` or `String` value too.
open class CBMutableDescriptor: CBDescriptor, @unchecked Sendable {
    /// A descriptor of `type` with a static value.
    public init(type UUID: CBUUID, value: Any?) {
        super.init(localUUID: UUID, value: value)
    }
}

/// A central connected to a `CBPeripheralManager`.
open class CBCentral: CBPeer, @unchecked Sendable {
    let address: DeviceAddress
    let mtu = Mutex(23)
    let connection = Mutex<ConnectedCentral?>(nil)

    init(address: DeviceAddress) {
        self.address = address
        super.init(identifier: CBIdentifiers.uuid(for: address))
    }

    /// The longest value one notification or indication can carry to this central: ATT_MTU − 3.
    open var maximumUpdateValueLength: Int { mtu.current - 3 }

    /// `<CBCentral: 0x…, identifier = …, MTU = 23>`.
    open override var description: String {
        "<CBCentral: \(pointerText(self)), identifier = \(identifier.uuidString), MTU = \(mtu.current)>"
    }
}

/// A read or write a central made of a dynamic characteristic, answered with
/// `CBPeripheralManager.respond(to:withResult:)`.
open class CBATTRequest: NSObject, @unchecked Sendable {
    enum Origin {
        case read(GATTReadRequest)
        case write(GATTWriteRequest)
    }

    private let requestCentral: CBCentral
    private let requestCharacteristic: CBCharacteristic
    private let requestOffset: Int
    private let stored: Mutex<Data?>
    let origin: Origin

    init(central: CBCentral, characteristic: CBCharacteristic, offset: Int, value: Data?, origin: Origin) {
        self.requestCentral = central
        self.requestCharacteristic = characteristic
        self.requestOffset = offset
        self.stored = Mutex(value)
        self.origin = origin
        super.init()
    }

    /// The central that made it.
    open var central: CBCentral { requestCentral }
    /// The characteristic read or written.
    open var characteristic: CBCharacteristic { requestCharacteristic }
    /// Where in the value the read or write starts.
    open var offset: Int { requestOffset }
    /// For a write, the bytes written; for a read, set it (from `offset` on) before responding.
    open var value: Data? {
        get { stored.current }
        set { stored.withLock { $0 = newValue } }
    }
}

/// How quickly a central's link should answer (`setDesiredConnectionLatency(_:for:)`), with
/// Apple's raw values.
public enum CBPeripheralManagerConnectionLatency: Int, Sendable {
    /// Rapid communication over battery life: a 15–30 ms connection interval.
    case low = 0
    /// A balance of the two: 30–60 ms.
    case medium = 1
    /// Battery life over rapid communication: 150–300 ms, and the peripheral may skip two
    /// connection events in three.
    case high = 2

    /// The connection parameters asked for: intervals in 1.25 ms units, the timeout in 10 ms.
    /// Apple does not publish the values it uses; these keep to the rules of Apple's Accessory
    /// Design Guidelines (interval minimum a multiple of 15 ms and at least 15 ms, maximum at
    /// least 15 ms above it, maximum × (latency + 1) at most 2 s, timeout at most 6 s and more
    /// than three times that), so an iPhone central would accept them too.
    var parameters: (intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) {
        switch self {
        case .low: return (12, 24, 0, 200)
        case .medium: return (24, 48, 0, 400)
        case .high: return (120, 240, 2, 600)
        }
    }
}

/// Peripheral manager option: show a power alert (iOS UI; ignored on Linux).
public let CBPeripheralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"
/// Peripheral manager option: the state-restoration identifier (ignored on Linux).
public let CBPeripheralManagerOptionRestoreIdentifierKey = "kCBInitOptionRestoreIdentifier"
/// Restored state: services (never delivered on Linux).
public let CBPeripheralManagerRestoredStateServicesKey = "kCBRestoredServices"
/// Restored state: advertisement data (never delivered on Linux).
public let CBPeripheralManagerRestoredStateAdvertisementDataKey = "kCBRestoredAdvertisement"

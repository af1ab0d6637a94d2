import Synchronization
import BLE
import Foundation

/// A GATT attribute: service, characteristic or descriptor. As on Apple platforms, attribute
/// objects compare and hash by identity: the same attribute of a peripheral is the same object
/// in every callback, for as long as the connection's discovery keeps it.
open class CBAttribute: NSObject, @unchecked Sendable {
    private let attributeUUID: CBUUID

    init(uuid: CBUUID) {
        self.attributeUUID = uuid
        super.init()
    }

    /// The attribute's type.
    open var uuid: CBUUID { attributeUUID }
}

/// A service of a peripheral, as discovery found it.
open class CBService: CBAttribute, @unchecked Sendable {
    struct State {
        var characteristics: [CBCharacteristic]?
        var includedServices: [CBService]?
    }

    let gatt: GATTService?
    let primary: Bool
    private let owner: WeakReference<CBPeripheral>
    let inner = Mutex(State())

    init(gatt: GATTService, isPrimary: Bool, peripheral: CBPeripheral) {
        self.gatt = gatt
        self.primary = isPrimary
        self.owner = WeakReference(peripheral)
        super.init(uuid: CBUUID(gatt.uuid))
    }

    /// For the peripheral role's mutable services (no remote handles).
    init(localUUID: CBUUID, isPrimary: Bool) {
        self.gatt = nil
        self.primary = isPrimary
        self.owner = WeakReference(nil)
        super.init(uuid: localUUID)
    }

    /// The peripheral the service belongs to.
    open var peripheral: CBPeripheral? { owner.value }
    /// Whether it is a primary service (else secondary, reached through an include).
    open var isPrimary: Bool { primary }
    /// Its characteristics, once `discoverCharacteristics(_:for:)` has reported them (nil before).
    open var characteristics: [CBCharacteristic]? { inner.withLock { $0.characteristics } }
    /// The services it includes, once `discoverIncludedServices(_:for:)` has reported them.
    open var includedServices: [CBService]? { inner.withLock { $0.includedServices } }

    /// `<CBService: 0x…, isPrimary = YES, UUID = Heart Rate>`, as Apple prints it.
    open override var description: String {
        "<\(type(of: self)): \(pointerText(self)), isPrimary = \(isPrimary ? "YES" : "NO"), UUID = \(uuid)>"
    }
}

/// A characteristic of a peripheral's service.
open class CBCharacteristic: CBAttribute, @unchecked Sendable {
    struct State {
        var value: Data?
        var descriptors: [CBDescriptor]?
        var isNotifying = false
        /// Set while notifications are wanted (from `setNotifyValue(true)` until
        /// `setNotifyValue(false)`), so none arriving just after the CCCD write is dropped.
        var acceptsNotifications = false
        /// Values that arrived after the CCCD write but before its callback ran: delivered right
        /// after `didUpdateNotificationStateFor`, as the wire had them.
        var held: [Data] = []
        var listener: Task<Void, Never>?
    }

    let gatt: GATTCharacteristic?
    private let owner: WeakReference<CBService>
    let inner = Mutex(State())

    init(gatt: GATTCharacteristic, service: CBService) {
        self.gatt = gatt
        self.owner = WeakReference(service)
        super.init(uuid: CBUUID(gatt.uuid))
    }

    /// For the peripheral role's mutable characteristics.
    init(localUUID: CBUUID, value: Data?) {
        self.gatt = nil
        self.owner = WeakReference(nil)
        super.init(uuid: localUUID)
        inner.withLock { $0.value = value }
    }

    /// The service it belongs to.
    open var service: CBService? { owner.value }
    /// What it allows (the GATT properties).
    open var properties: CBCharacteristicProperties { CBCharacteristicProperties(rawValue: UInt(gatt?.properties.rawValue ?? 0)) }
    /// The last value read or notified (a fresh `Data`, set on the delegate queue just before
    /// `didUpdateValueFor`; kept when a read fails).
    open var value: Data? { inner.withLock { $0.value } }
    /// Its descriptors, once `discoverDescriptors(for:)` has reported them.
    open var descriptors: [CBDescriptor]? { inner.withLock { $0.descriptors } }
    /// Whether notifications or indications are on.
    open var isNotifying: Bool { inner.withLock { $0.isNotifying } }
    /// Deprecated on Apple platforms; always false.
    open var isBroadcasted: Bool { false }

    /// `<CBCharacteristic: 0x…, UUID = 2A37, properties = 0x10, value = {length = 2, bytes = 0x0645}, notifying = NO>`.
    open override var description: String {
        let p = String(properties.rawValue, radix: 16, uppercase: true)
        return "<\(type(of: self)): \(pointerText(self)), UUID = \(uuid), properties = 0x\(p), value = \(dataText(value)), notifying = \(isNotifying ? "YES" : "NO")>"
    }
}

/// A descriptor of a peripheral's characteristic.
open class CBDescriptor: CBAttribute, @unchecked Sendable {
    let gatt: GATTDescriptor?
    private let owner: WeakReference<CBCharacteristic>
    let stored = Mutex(StoredValue())

    /// The value as Apple types it. Only immutable Foundation values go in (`Data`, `String`,
    /// `NSNumber`, or what the app gave a mutable descriptor, which CoreBluetooth keeps as
    /// given), so handing it across threads is safe though `Any` is not `Sendable`.
    struct StoredValue: @unchecked Sendable {
        var value: Any?
    }

    init(gatt: GATTDescriptor, characteristic: CBCharacteristic) {
        self.gatt = gatt
        self.owner = WeakReference(characteristic)
        super.init(uuid: CBUUID(gatt.uuid))
    }

    /// For the peripheral role's mutable descriptors.
    init(localUUID: CBUUID, value: Any?) {
        self.gatt = nil
        self.owner = WeakReference(nil)
        super.init(uuid: localUUID)
        stored.withLock { $0.value = value }
    }

    /// The characteristic it belongs to.
    open var characteristic: CBCharacteristic? { owner.value }
    /// The last value read, typed as Apple types it: `NSNumber` for Extended Properties (2900),
    /// Client and Server Characteristic Configuration (2902, 2903); `String` for the User
    /// Description (2901); `Data` for everything else.
    open var value: Any? { stored.current.value }

    /// `<CBDescriptor: 0x…, UUID = Client Characteristic Configuration, value = 1>`.
    open override var description: String {
        let text: String
        switch value {
        case nil: text = "(null)"
        case let data as Data: text = dataText(data)
        case let other?: text = "\(other)"
        }
        return "<\(type(of: self)): \(pointerText(self)), UUID = \(uuid), value = \(text)>"
    }

    /// A descriptor value as Apple types it (see `value`).
    static func typedValue(_ bytes: [UInt8], uuid: BluetoothUUID) -> Any {
        switch uuid.uint16 {
        case 0x2900, 0x2902, 0x2903:
            let n = bytes.prefix(2).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            return NSNumber(value: n)
        case 0x2901:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return Data(bytes)
        }
    }
}

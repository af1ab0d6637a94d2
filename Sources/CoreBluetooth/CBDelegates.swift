import Foundation

// Apple's delegate protocols are Objective-C protocols with `@optional` methods. Linux Swift has
// no `@objc`, so here they are Swift protocols whose optional methods have empty default
// implementations in protocol extensions: a conforming class implements only what it needs and
// each method it implements is called. One consequence of the difference: the method must be
// implemented by the class that declares the conformance (a subclass's override of a method the
// superclass does not implement is not seen), and its signature must match exactly (argument
// labels and types), or the default is used silently.

/// What a `CBCentralManager` tells its delegate: its state, discoveries, connections.
public protocol CBCentralManagerDelegate: NSObjectProtocol {
    /// The manager's state changed (first from `.unknown`, once the controller is open or failed
    /// to open). Required, as on Apple platforms.
    func centralManagerDidUpdateState(_ central: CBCentralManager)
    /// State restoration (iOS background relaunch): never called on Linux.
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any])
    /// A scan heard a peripheral: `advertisementData` keyed by the `CBAdvertisementData…Key`s and
    /// `kCBAdvDataTimestamp`; `RSSI` in dBm (127 when unknown).
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber)
    /// A `connect` succeeded.
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral)
    /// A `connect` failed.
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?)
    /// A link ended: `error` is nil after `cancelPeripheralConnection`, `CBError.connectionTimeout`
    /// when the link was lost, `CBError.peripheralDisconnected` when the peer ended it.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?)
    /// iOS 17's form of the disconnect callback; when a delegate implements it, it is called
    /// instead of `didDisconnectPeripheral:error:` (its default calls that one). `isReconnecting`
    /// is always false on Linux.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?)
    /// Connection events (`registerForConnectionEvents`, iOS only): never called on Linux.
    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral)
    /// ANCS authorization changes (iOS only): never called on Linux.
    func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral)
}

/// The empty defaults that make the optional methods optional.
extension CBCentralManagerDelegate {
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {}
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {}
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {}
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {}
    /// Calls `centralManager(_:didDisconnectPeripheral:error:)` unless implemented.
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?) {
        centralManager(central, didDisconnectPeripheral: peripheral, error: error)
    }
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {}
    /// Does nothing unless implemented.
    public func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral) {}
}

/// What a `CBPeripheral` tells its delegate: discoveries, values, writes, notification states.
public protocol CBPeripheralDelegate: NSObjectProtocol {
    /// The peripheral's name changed (a new advertised local name, or a GAP Device Name read that
    /// differs): `peripheral.name` is already the new one.
    func peripheralDidUpdateName(_ peripheral: CBPeripheral)
    /// Services were invalidated by a Service Changed indication (they are gone from
    /// `services`; discover again).
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService])
    /// The deprecated RSSI callback (before `didReadRSSI`).
    func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?)
    /// `readRSSI()` finished.
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?)
    /// `discoverServices(_:)` finished: the services are in `peripheral.services`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?)
    /// `discoverIncludedServices(_:for:)` finished: they are in `service.includedServices`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?)
    /// `discoverCharacteristics(_:for:)` finished: they are in `service.characteristics`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?)
    /// A read finished or a notification or indication arrived: the value is in `characteristic.value`.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A write with response finished.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?)
    /// `setNotifyValue(_:for:)` finished: `characteristic.isNotifying` says the state.
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?)
    /// `discoverDescriptors(for:)` finished: they are in `characteristic.descriptors`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A descriptor read finished: the value is in `descriptor.value`.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?)
    /// A descriptor write finished.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?)
    /// `canSendWriteWithoutResponse` became true again after it was false.
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral)
    /// `openL2CAPChannel(_:)` finished: the open channel, or why not (nil channel).
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

/// The empty defaults that make every `CBPeripheralDelegate` method optional.
extension CBPeripheralDelegate {
    /// Does nothing unless implemented.
    public func peripheralDidUpdateName(_ peripheral: CBPeripheral) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {}
    /// Does nothing unless implemented.
    public func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    /// Does nothing unless implemented.
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {}
}

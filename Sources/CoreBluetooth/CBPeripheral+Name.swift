import BLE
import Foundation

extension CBPeripheral {
    /// Sets the name the peripheral is known by, on the delegate queue; when it changed,
    /// `peripheralDidUpdateName(_:)` follows with the new name already in `name` (Apple's
    /// `CBPeripheralDelegate`: "the peripheral's name changed"). Called with each advertised local
    /// name (before `didDiscover`) and with each GAP Device Name read (before `didUpdateValueFor`).
    func updateName(_ new: String) {
        let changed = inner.withLock { s -> Bool in
            guard s.name != new else { return false }
            s.name = new
            return true
        }
        if changed { delegate?.peripheralDidUpdateName(self) }
    }

    /// The name a read of `characteristic` carries: the GAP Device Name (Core spec Vol 3 Part C
    /// §12.1, UTF-8, not terminated), nil for any other characteristic or bytes that are not UTF-8.
    static func deviceName(in bytes: [UInt8], of characteristic: GATTCharacteristic) -> String? {
        guard characteristic.uuid == GATTUUID.deviceName else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

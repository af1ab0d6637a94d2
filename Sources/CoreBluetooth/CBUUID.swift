import BLE
import Foundation

/// A Bluetooth UUID as CoreBluetooth has it: 16-, 32- or 128-bit, equal across its forms
/// (`CBUUID(string: "180D") == CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")`), hashed
/// by value, and described by its SIG name when it has one (`Heart Rate`).
public final class CBUUID: NSObject, NSCopying, @unchecked Sendable {
    /// The stack's value of this UUID (immutable).
    let value: BluetoothUUID

    init(_ value: BluetoothUUID) {
        self.value = value
        super.init()
    }

    /// A UUID from its string: 4 or 8 hex digits for the SIG's short forms, or the 36-character
    /// form. A string that is none of these is a programming error, as on Apple platforms
    /// (where it raises an exception); this traps with the string in the message.
    public convenience init(string theString: String) {
        guard let parsed = BluetoothUUID(string: theString), !theString.hasPrefix("0x"), !theString.hasPrefix("0X") else {
            preconditionFailure("CBUUID(string:): \"\(theString)\" is not a valid UUID string")
        }
        self.init(parsed)
    }

    /// A UUID from 2, 4 or 16 bytes, most significant first (as `data` gives them). Other lengths
    /// are a programming error, as on Apple platforms.
    public convenience init(data theData: Data) {
        let bytes = [UInt8](theData)
        guard [2, 4, 16].contains(bytes.count), let parsed = try? BluetoothUUID(littleEndian: bytes.reversed()) else {
            preconditionFailure("CBUUID(data:): \(bytes.count) bytes is not a UUID (2, 4 or 16)")
        }
        self.init(parsed)
    }

    /// A UUID from a Foundation `UUID` (128-bit; a SIG base UUID compares equal to its short form).
    public convenience init(nsuuid theUUID: UUID) {
        let t = theUUID.uuid
        let b = [t.0, t.1, t.2, t.3, t.4, t.5, t.6, t.7, t.8, t.9, t.10, t.11, t.12, t.13, t.14, t.15]
        let high = b[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = b[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self.init(BluetoothUUID(high: high, low: low))
    }

    /// The shortest form, upper case: `180D`, `0000FEAA`-style 8 digits for 32-bit, else the
    /// 36-character form (`6E400001-B5A3-F393-E0A9-E50E24DCCA9E`).
    public var uuidString: String { value.description.uppercased() }

    /// The UUID's bytes, most significant first: 2 for a 16-bit UUID, 4 for 32-bit, else 16.
    public var data: Data {
        let bytes: [UInt8]
        if let s = value.uint16 {
            bytes = [UInt8(s >> 8), UInt8(s & 0xFF)]
        } else if let s = value.uint32 {
            bytes = [UInt8(s >> 24), UInt8((s >> 16) & 0xFF), UInt8((s >> 8) & 0xFF), UInt8(s & 0xFF)]
        } else {
            bytes = value.littleEndian128.reversed()
        }
        return Data(bytes)
    }

    /// The SIG name Apple prints (`Heart Rate`, `Battery Level`, `Client Characteristic
    /// Configuration`), else `uuidString`.
    public override var description: String {
        guard value.uint32 != nil else { return uuidString }  // vendor UUIDs print as themselves
        return AssignedNumbers.name(for: value) ?? uuidString
    }

    /// Equal when the 128-bit values are: the short forms are aliases in the Bluetooth Base UUID.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBUUID else { return false }
        return other.value == value
    }

    /// Hashes the 128-bit value, so equal UUIDs in any form share a set or dictionary slot.
    public override var hash: Int { value.hashValue }

    /// UUIDs are immutable: the copy is the object itself.
    public func copy(with zone: NSZone? = nil) -> Any { self }
}

// The descriptor UUID strings CoreBluetooth names (CBUUID.h).

/// `2900`: Characteristic Extended Properties.
public let CBUUIDCharacteristicExtendedPropertiesString = "2900"
/// `2901`: Characteristic User Description.
public let CBUUIDCharacteristicUserDescriptionString = "2901"
/// `2902`: Client Characteristic Configuration (set through `setNotifyValue(_:for:)`).
public let CBUUIDClientCharacteristicConfigurationString = "2902"
/// `2903`: Server Characteristic Configuration.
public let CBUUIDServerCharacteristicConfigurationString = "2903"
/// `2904`: Characteristic Presentation Format.
public let CBUUIDCharacteristicFormatString = "2904"
/// `2905`: Characteristic Aggregate Format.
public let CBUUIDCharacteristicAggregateFormatString = "2905"
/// `2906`: Valid Range.
public let CBUUIDCharacteristicValidRangeString = "2906"
/// The characteristic Apple uses to publish an L2CAP PSM.
public let CBUUIDL2CAPPSMCharacteristicString = "ABDD3056-28FA-441D-A470-55A75A52553A"

import Foundation

/// The state of a manager (`CBManager.state`), with Apple's raw values.
public enum CBManagerState: Int, Sendable, CustomStringConvertible {
    /// Not known yet: every manager starts here and reports the real state through its delegate.
    case unknown = 0
    /// The connection to the controller was lost and is being re-established.
    case resetting = 1
    /// No controller can be used: none was found or it cannot do LE (the reason is on stderr).
    case unsupported = 2
    /// The process may not use the controller (on Linux: the HCI user channel needs
    /// `CAP_NET_ADMIN`).
    case unauthorized = 3
    /// The controller is off, failed, or its transport closed.
    case poweredOff = 4
    /// The controller is up: scanning, connecting and advertising work.
    case poweredOn = 5

    /// `poweredOn`, `unknown`, …: the case's name.
    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .resetting: return "resetting"
        case .unsupported: return "unsupported"
        case .unauthorized: return "unauthorized"
        case .poweredOff: return "poweredOff"
        case .poweredOn: return "poweredOn"
        }
    }
}

/// Whether the app may use Bluetooth. On Linux there is no per-app permission: always `allowedAlways`.
public enum CBManagerAuthorization: Int, Sendable {
    /// The user has not been asked.
    case notDetermined = 0
    /// Restricted by policy.
    case restricted = 1
    /// Refused by the user.
    case denied = 2
    /// Allowed; what Linux reports.
    case allowedAlways = 3
}

/// A peripheral's connection state, with Apple's raw values.
public enum CBPeripheralState: Int, Sendable, CustomStringConvertible {
    /// Not connected.
    case disconnected = 0
    /// `connect` has been called and the link is not up yet (it never times out).
    case connecting = 1
    /// The link is up.
    case connected = 2
    /// `cancelPeripheralConnection` has been called and the link is not down yet.
    case disconnecting = 3

    /// `connected`, `disconnected`, …: the word Apple's `CBPeripheral` description uses.
    public var description: String {
        switch self {
        case .disconnected: return "disconnected"
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .disconnecting: return "disconnecting"
        }
    }
}

/// What a characteristic allows (its GATT properties, plus Apple's two encryption flags).
public struct CBCharacteristicProperties: OptionSet, Sendable, Hashable {
    /// The bits, Apple's values (the low eight are the GATT properties octet).
    public var rawValue: UInt
    /// Properties from their bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// The value may be broadcast in advertising data.
    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    /// The value may be read.
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    /// The value may be written without response.
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    /// The value may be written with response.
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    /// The value may be notified.
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    /// The value may be indicated.
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    /// The value may be written with signed writes.
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    /// More properties are in the Extended Properties descriptor.
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    /// Peripheral role: only trusted (encrypted) centrals may enable notifications.
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    /// Peripheral role: only trusted (encrypted) centrals may enable indications.
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)
}

/// How `writeValue(_:for:type:)` writes a characteristic.
public enum CBCharacteristicWriteType: Int, Sendable {
    /// A Write Request (a long write when the value does not fit one); `didWriteValueFor` follows.
    case withResponse = 0
    /// A Write Command: no response, no callback; pace with `canSendWriteWithoutResponse`.
    case withoutResponse = 1
}

/// Read and write permissions of a local attribute (peripheral role).
public struct CBAttributePermissions: OptionSet, Sendable, Hashable {
    /// The bits, Apple's values.
    public var rawValue: UInt
    /// Permissions from their bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Any central may read.
    public static let readable = CBAttributePermissions(rawValue: 0x01)
    /// Any central may write.
    public static let writeable = CBAttributePermissions(rawValue: 0x02)
    /// Only over an encrypted link.
    public static let readEncryptionRequired = CBAttributePermissions(rawValue: 0x04)
    /// Only over an encrypted link.
    public static let writeEncryptionRequired = CBAttributePermissions(rawValue: 0x08)
}

/// Events `registerForConnectionEvents` would report (iOS only; never reported on Linux).
public enum CBConnectionEvent: Int, Sendable {
    /// A matching peer disconnected.
    case peerDisconnected = 0
    /// A matching peer connected.
    case peerConnected = 1
}

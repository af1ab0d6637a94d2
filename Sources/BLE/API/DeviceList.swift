import BLEHost
import BLEWire

/// A change to a live list of nearby devices (`Central.watch`).
public enum DeviceListChange: Sendable, Hashable {
    /// First heard (or heard again after dropping off).
    case appeared(ScannedDevice)
    /// Heard again: a new RSSI, advertisement or time.
    case updated(ScannedDevice)
    /// Not heard for the list's maximum age.
    case disappeared(ScannedDevice)
}

/// The list behind `Central.watch`: devices keyed by address, each dropped when not heard for
/// `maximumAge` (the seed heart-rate app's 10 s rule). Sans-IO: fed scan results and the time.
public struct DeviceList: Sendable {
    /// How long a device may go unheard before `expire(now:)` drops it.
    public let maximumAge: Duration
    /// The devices heard and not yet expired, keyed by address, each as last heard.
    public private(set) var devices: [DeviceAddress: ScannedDevice] = [:]

    /// Makes an empty list that drops devices not heard for `maximumAge`.
    public init(maximumAge: Duration) { self.maximumAge = maximumAge }

    /// A scan result arrived.
    public mutating func heard(_ device: ScannedDevice) -> DeviceListChange {
        let known = devices[device.address] != nil
        devices[device.address] = device
        return known ? .updated(device) : .appeared(device)
    }

    /// Removes the devices not heard for longer than `maximumAge` as of `now`.
    public mutating func expire(now: Duration) -> [DeviceListChange] {
        let stale = devices.values.filter { now - $0.lastSeen > maximumAge }.sorted { $0.lastSeen < $1.lastSeen }
        for d in stale { devices[d.address] = nil }
        return stale.map { .disappeared($0) }
    }

    /// The devices, strongest signal first.
    public var sorted: [ScannedDevice] {
        devices.values.sorted { (Int($0.rssi ?? -127), $1.address.description) > (Int($1.rssi ?? -127), $0.address.description) }
    }
}

import BLE
import BLEProfiles
import BLEWire

/// How the heart-rate monitor of docs/SYSTEMS.md S3 runs (`ble heart-rate`, `ble demo`).
public struct HeartRateMonitorOptions: Sendable {
    /// Connect to this device only (any address type when `targetType` is nil).
    public var target: BDAddress?
    /// The target's address type, when given (`/public`, `/random`).
    public var targetType: AddressType?
    /// The RSSI gate: a monitor heard weaker than this is refused (the article's −70 dBm).
    public var minimumRSSI = -70
    /// Stop after this many measurements (over all connections); nil runs until cancelled.
    public var count: Int?
    /// A monitor not heard for this long drops off the list (docs/SYSTEMS.md S3: 10 s).
    public var maximumAge: Duration = .seconds(10)
    /// The window a monitor's RSSI is judged over: the strongest reading of the last this-long
    /// counts (`MonitorList`), and a monitor is judged only once it has been listed this long
    /// (without a target, so that one heard a moment later is not passed over).
    public var selectionDelay: Duration = .seconds(1)
    /// How often the list is refreshed (ages count up, silent monitors drop off) between reports.
    public var refreshInterval: Duration = .milliseconds(500)
    /// How long a connection attempt may take (docs/SYSTEMS.md S3: 10 s).
    public var connectTimeout: Duration = .seconds(10)
    /// Once subscribed, how long the monitor may send nothing before the flow ends with
    /// `CentralFlowError.silent` (a monitor measures about once a second).
    public var silenceLimit: Duration = .seconds(10)
    /// The ATT MTU to ask for after connecting (23 skips the exchange).
    public var mtu = 517

    /// The defaults above; set the fields that differ.
    public init() {}
}

/// What the monitor reports, in order, to whatever renders it (a live screen, plain lines,
/// JSON lines, a test).
public enum HeartRateMonitorEvent: Sendable {
    /// Scanning for 180D (again, after a disconnect).
    case scanning
    /// The live list changed: a monitor appeared, was heard again, or dropped off.
    case device(DeviceListChange)
    /// Time passed with no report (ages count up).
    case tick(now: Duration)
    /// The strongest (or the named) monitor is weaker than the RSSI gate: not connected to.
    case refused(ScannedDevice, minimumRSSI: Int)
    case connecting(ScannedDevice)
    case connected(DeviceAddress, name: String?, mtu: Int)
    /// Body Sensor Location (HRS §3.2), by name ("Chest", or "reserved (0x07)").
    case bodySensorLocation(String)
    /// Notifications of Heart Rate Measurement are on.
    case subscribed
    case measurement(HeartRateMeasurement, at: Duration)
    /// A notified value that does not decode (counted as nothing, shown as a warning).
    case malformed([UInt8], HeartRateError)
    /// The link went down (or connecting failed); the monitor scans again.
    case disconnected(DeviceAddress, reason: String)
}

/// Why the monitor stops with an error.
public enum HeartRateMonitorError: Error, CustomStringConvertible {
    /// The monitor named on the command line is weaker than the RSSI gate.
    case tooWeak(ScannedDevice, minimumRSSI: Int)
    /// The device connected to has no Heart Rate service or no Heart Rate Measurement.
    case notAHeartRateMonitor(DeviceAddress, missing: BluetoothUUID)
    /// The scan ended by itself (the controller went away).
    case scanEnded

    /// The message shown to the user.
    public var description: String {
        switch self {
        case let .tooWeak(device, minimum):
            return "refusing to connect to \(HeartRateMonitorLines.name(of: device)) (\(device.address)): "
                + "RSSI \(device.rssi.map { "\($0) dBm" } ?? "unknown") is weaker than \(minimum) dBm (--min-rssi)"
        case let .notAHeartRateMonitor(address, missing):
            return "\(address) has no \(missing) (\(AssignedNumbers.name(for: missing) ?? "Heart Rate")): not a heart-rate monitor"
        case .scanEnded:
            return "the scan ended: the controller went away"
        }
    }
}

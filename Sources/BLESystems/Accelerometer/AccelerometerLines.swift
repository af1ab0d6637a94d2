import BLE
import BLEProfiles
import BLEWire

/// The charting central's output: plain lines, JSON objects, the live chart screen and the
/// session's SVG. Pure functions and values, for tests.
public enum AccelerometerLines {
    /// `{"x":0.1,"y":-0.2,"z":0.98}`: each Float32 as the Double it converts to exactly.
    public static func json(_ s: AccelerometerSample) -> String {
        JSON.object([("x", .number(Double(s.x))), ("y", .number(Double(s.y))), ("z", .number(Double(s.z)))]).text
    }

    /// "x  0.123  y -0.456  z  0.987 g"
    public static func sample(_ s: AccelerometerSample) -> String {
        "x " + NumberText.right(NumberText.fixed(Double(s.x), 3), 7) + "  y " + NumberText.right(NumberText.fixed(Double(s.y), 3), 7)
            + "  z " + NumberText.right(NumberText.fixed(Double(s.z), 3), 7) + " g"
    }

    /// "BLE001 C0:11:22:33:44:55/random": a device as the lines name it.
    public static func device(_ d: ScannedDevice) -> String {
        "\(d.advertisement.localName ?? "unnamed device") \(d.address)"
    }

    /// The plain lines for one event.
    public static func lines(for event: AccelerometerCentralEvent) -> [String] {
        switch event {
        case let .scanning(duration):
            return ["scanning    \(NumberText.seconds(duration)) for devices whose name contains \"ble\""]
        case let .found(devices):
            return ["found       \(devices.count) device(s)"] + AccelerometerDeviceChoice.menu(devices)
        case let .chose(d):
            return ["chose       \(device(d))"]
        case let .connecting(address):
            return ["connecting  \(address)"]
        case let .connected(address, mtu):
            return ["connected   \(address), ATT MTU \(mtu)"]
        case .subscribed:
            return ["subscribed  0012 (x, y, z as Float32)"]
        case let .sample(s, _):
            return ["sample      " + sample(s)]
        case let .malformed(value, error):
            return ["malformed   \(value.hexString): \(error)"]
        }
    }
}

import BLE

/// The live table `ble scan` draws on a terminal: every device heard within `maximumAge`,
/// strongest first, one `ScanLines.text` row each. Pure: it returns the screen's text.
public struct ScanTable: Sendable {
    private var devices: [DeviceAddress: ScannedDevice] = [:]
    /// A device not heard for this long drops off the table.
    public static let maximumAge: Duration = .seconds(10)

    /// An empty table.
    public init() {}

    /// Records the latest state of `d` (a new device, or a fresher report of one).
    public mutating func update(_ d: ScannedDevice) { devices[d.address] = d }

    /// Drops the devices not heard for `maximumAge` by `now`, then returns the whole screen:
    /// cursor home and clear (ANSI, ECMA-48), the header, a row per device by falling RSSI (equal
    /// RSSIs by address, so rows keep their places between redraws), and the count.
    public mutating func render(now: Duration) -> String {
        devices = devices.filter { now - $0.value.lastSeen <= Self.maximumAge }
        var out = "\u{1B}[H\u{1B}[2J"
        out += "NAME                 ADDRESS                  RSSI  AGE   ADVERTISEMENT\n"
        let rows = devices.values.sorted {
            let (a, b) = ($0.rssi ?? -128, $1.rssi ?? -128)
            return a != b ? a > b : $0.address.address.rawValue < $1.address.address.rawValue
        }
        for d in rows {
            out += ScanLines.text(d, now: now) + "\n"
        }
        out += "\n\(devices.count) device(s); Ctrl-C to stop\n"
        return out
    }
}

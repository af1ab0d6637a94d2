import BLE
import BLEWire

/// The monitors heard, and the rule that picks one (pure, so it is tested on its own).
///
/// A monitor is judged by the strongest RSSI heard from it over the last `window` (one second),
/// and only once it has been on the list that long: one reading is noise (real RSSI swings by
/// 10 dB from one advertisement to the next, rootcanal draws it at random), the best of a
/// second's worth is what the link can do now. The window slides, so a monitor carried away
/// is judged by where it is now, not by how close it once was, and one brought closer passes
/// as soon as it is heard strongly enough. The latest reading always counts, however old (a
/// monitor that advertises less than once a second). Without a target the strongest such
/// monitor is chosen.
public struct MonitorList: Sendable {
    /// What to do about the monitors heard so far.
    public enum Decision: Equatable, Sendable {
        case wait
        /// Too weak to connect to; tell the user (once per monitor while it is in the list).
        /// The device carries the RSSI it was judged by.
        case refuse(ScannedDevice)
        /// The named monitor is too weak: stop.
        case fail(ScannedDevice)
        case connect(ScannedDevice)
    }

    private struct Reading: Sendable {
        let at: Duration
        let rssi: Int
    }

    /// How far back readings count (`HeartRateMonitorOptions.selectionDelay`).
    public let window: Duration
    /// The monitors on the list, by address, as last heard.
    public private(set) var devices: [DeviceAddress: ScannedDevice] = [:]
    /// Each listed device's readings within `window` of its latest, oldest first (the latest
    /// always kept).
    private var readings: [DeviceAddress: [Reading]] = [:]
    private var refused: Set<DeviceAddress> = []

    /// An empty list judging RSSI over `window`.
    public init(window: Duration = .seconds(1)) {
        self.window = window
    }

    /// Follows the scan: a monitor appeared, was heard again, or dropped off.
    public mutating func apply(_ change: DeviceListChange) {
        switch change {
        case let .appeared(d), let .updated(d):
            devices[d.address] = d
            var kept = readings[d.address] ?? []
            kept.append(Reading(at: d.lastSeen, rssi: Int(d.rssi ?? -127)))
            kept.removeAll { d.lastSeen - $0.at > window }
            readings[d.address] = kept
        case let .disappeared(d):
            devices[d.address] = nil
            readings[d.address] = nil
            refused.remove(d.address)
        }
    }

    /// Strongest (latest RSSI) first, as `DeviceList.sorted`: the order the list is shown in.
    public var sorted: [ScannedDevice] {
        devices.values.sorted { (Int($0.rssi ?? -127), $1.address.description) > (Int($1.rssi ?? -127), $0.address.description) }
    }

    /// `device` with the RSSI it is judged by at `now`: the strongest within the window, or
    /// the latest reading when the window holds none.
    private func judged(_ device: ScannedDevice, now: Duration) -> (device: ScannedDevice, rssi: Int) {
        let heard = readings[device.address] ?? []
        let recent = heard.filter { now - $0.at <= window }.map(\.rssi)
        let best = recent.max() ?? heard.last?.rssi ?? Int(device.rssi ?? -127)
        var d = device
        d.rssi = Int8(clamping: best)
        return (d, best)
    }

    /// The rule above at `now`: wait, refuse (once per monitor), fail on a too-weak target, or connect.
    public mutating func decide(_ options: HeartRateMonitorOptions, now: Duration) -> Decision {
        let heardLongEnough = devices.values.filter { now - $0.firstSeen >= window }.map { judged($0, now: now) }
        if let target = options.target {
            let type = options.targetType?.peerType
            guard let (device, rssi) = heardLongEnough.first(where: { d, _ in d.address.address == target && (type == nil || type == d.address.type.peerType) }) else { return .wait }
            return rssi >= options.minimumRSSI ? .connect(device) : .fail(device)
        }
        guard let (best, rssi) = heardLongEnough.max(by: { ($0.rssi, $1.device.address.description) < ($1.rssi, $0.device.address.description) }) else { return .wait }
        if rssi >= options.minimumRSSI { return .connect(best) }
        guard refused.insert(best.address).inserted else { return .wait }
        return .refuse(best)
    }
}

import BLE
import BLEProfiles
import BLEWire

/// The live screen `ble heart-rate` draws on a terminal: the list of monitors while scanning
/// (name or "unnamed device", RSSI, age, decoded advertisement), then the connected monitor's
/// rate, contact, energy and RR intervals with a sparkline of recent bpm. A pure state machine:
/// fed the monitor's events, it returns the lines to draw, so it is tested without a terminal.
public struct HeartRateMonitorScreen: Sendable {
    /// The monitor connected to, as far as the screen knows it.
    public struct Connection: Sendable {
        /// Its address.
        public var address: DeviceAddress
        /// Its advertised name, if any.
        public var name: String?
        /// The ATT MTU of the link.
        public var mtu: Int
        /// Body Sensor Location as read (nil before the read).
        public var location: String?
        /// The latest measurement.
        public var last: HeartRateMeasurement?
        /// Measurements on this connection.
        public var count = 0
    }

    /// The RSSI gate the header states.
    public let minimumRSSI: Int
    /// How many recent rates the sparkline shows.
    public let history: Int
    /// The monitors heard while scanning.
    public private(set) var list = MonitorList()
    /// The monitor connected to, nil while scanning.
    public private(set) var connection: Connection?
    /// The last `history` rates, for the sparkline.
    public private(set) var recentBPM: [Double] = []
    /// The last notice worth keeping on screen (a refusal, a disconnect).
    public private(set) var notice: String?
    /// The host clock's time of the last event: what ages are counted to.
    public private(set) var now: Duration = .zero

    /// An empty screen for the gate `minimumRSSI`, keeping `history` rates.
    public init(minimumRSSI: Int, history: Int = 60) {
        self.minimumRSSI = minimumRSSI
        self.history = history
    }

    /// Takes the monitor's next event, at `now` on the host clock.
    public mutating func apply(_ event: HeartRateMonitorEvent, now: Duration) {
        self.now = now
        switch event {
        case .scanning:
            connection = nil
            list = MonitorList()
        case let .device(change):
            list.apply(change)
        case .tick:
            break
        case let .refused(d, minimum):
            notice = "refused \(HeartRateMonitorLines.name(of: d)) \(d.address.address): RSSI \(d.rssi.map { "\($0) dBm" } ?? "unknown") is weaker than \(minimum) dBm"
        case let .connecting(d):
            notice = "connecting to \(HeartRateMonitorLines.name(of: d)) \(d.address.address)…"
        case let .connected(address, name, mtu):
            connection = Connection(address: address, name: name, mtu: mtu)
            notice = nil
        case let .bodySensorLocation(location):
            connection?.location = location
        case .subscribed:
            break
        case let .measurement(m, _):
            connection?.last = m
            connection?.count += 1
            recentBPM.append(Double(m.beatsPerMinute))
            if recentBPM.count > history { recentBPM.removeFirst(recentBPM.count - history) }
        case let .malformed(value, error):
            notice = "malformed measurement \(value.hexString): \(error)"
        case let .disconnected(address, reason):
            connection = nil
            notice = "\(address.address) disconnected: \(reason)"
        }
    }

    /// The screen, top to bottom, cut to `width` columns.
    public func lines(width: Int = 100) -> [String] {
        var out: [String]
        if let c = connection {
            out = connected(c, width: width)
        } else {
            out = ["Heart-rate monitors (service 180D); connecting to the strongest at \(minimumRSSI) dBm or better", ""]
            out.append(NumberText.left("NAME", 20) + " " + NumberText.left("ADDRESS", 21) + " " + NumberText.right("RSSI", 8) + " " + NumberText.right("AGE", 6) + "  ADVERTISEMENT")
            let devices = list.sorted
            if devices.isEmpty { out.append("(none heard yet)") }
            out += devices.map { HeartRateMonitorLines.device($0, now: now) }
        }
        if let notice { out += ["", notice] }
        out += ["", "Ctrl-C to stop"]
        return out.map { $0.count > width ? String($0.prefix(width)) : $0 }
    }

    private func connected(_ c: Connection, width: Int) -> [String] {
        var out = ["\(c.name ?? "unnamed device")  \(c.address)  ATT MTU \(c.mtu)  sensor location: \(c.location ?? "unknown")", ""]
        if let m = c.last {
            out.append("  " + NumberText.right("\(m.beatsPerMinute)", 3) + " bpm    contact " + HeartRateMonitorLines.contact(m.sensorContact)
                       + "    energy " + (m.energyExpended.map { "\($0) kJ" } ?? "—"))
            out.append("  RR intervals: " + (m.rrIntervals.isEmpty ? "—" : m.rrIntervalSeconds.map { NumberText.fixed($0, 3) + " s" }.joined(separator: ", ")))
        } else {
            out.append("  waiting for the first measurement…")
        }
        if let low = recentBPM.min(), let high = recentBPM.max() {
            let spark = Sparkline.render(recentBPM, width: min(history, max(10, width - 30)))
            out.append("  " + spark + "  \(Int(low))–\(Int(high)) bpm, last \(recentBPM.count)")
        }
        out.append("  \(c.count) measurement\(c.count == 1 ? "" : "s") on this connection")
        return out
    }
}

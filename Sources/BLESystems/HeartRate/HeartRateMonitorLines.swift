import BLE
import BLEProfiles
import BLEWire

/// The heart-rate monitor's output when stdout is not a terminal: one plain line per event,
/// or with `--json` one object per measurement. Pure functions of the event, for tests.
public enum HeartRateMonitorLines {
    /// The name the article shows: the advertised local name, or "unnamed device".
    public static func name(of device: ScannedDevice) -> String {
        device.advertisement.localName ?? "unnamed device"
    }

    /// "detected", "not detected", "not supported" (HRS §3.1 flags bits 1–2).
    public static func contact(_ contact: HeartRateMeasurement.SensorContact) -> String {
        switch contact {
        case .detected: return "detected"
        case .notDetected: return "not detected"
        case .notSupported: return "not supported"
        }
    }

    /// The JSON name of a contact state, as the Bumble peers print it.
    public static func contactKey(_ contact: HeartRateMeasurement.SensorContact) -> String {
        switch contact {
        case .detected: return "detected"
        case .notDetected: return "notDetected"
        case .notSupported: return "notSupported"
        }
    }

    /// "72 bpm  contact detected  energy 15 kJ  RR 0.833 s 0.829 s"; absent fields are left out.
    public static func measurement(_ m: HeartRateMeasurement) -> String {
        var parts = ["\(m.beatsPerMinute) bpm", "contact \(contact(m.sensorContact))"]
        if let energy = m.energyExpended { parts.append("energy \(energy) kJ") }
        if !m.rrIntervals.isEmpty {
            parts.append("RR " + m.rrIntervalSeconds.map { NumberText.fixed($0, 3) + " s" }.joined(separator: " "))
        }
        return parts.joined(separator: "  ")
    }

    /// `{"bpm":72,"contact":"detected","energyKJ":15,"rrIntervals":[0.8330078125]}`: RR intervals
    /// in seconds (exact: n/1024), Energy Expended null when the measurement has none.
    public static func json(_ m: HeartRateMeasurement) -> String {
        JSON.object(jsonFields(m)).text
    }

    /// The fields of `json(_:)`, for objects that carry more (`ble ui`'s events).
    static func jsonFields(_ m: HeartRateMeasurement) -> [(String, JSON)] {
        [
            ("bpm", .int(Int(m.beatsPerMinute))),
            ("contact", .string(contactKey(m.sensorContact))),
            ("energyKJ", m.energyExpended.map { .int(Int($0)) } ?? .null),
            ("rrIntervals", .array(m.rrIntervalSeconds.map { .number($0) })),
        ]
    }

    /// A device line of the list: name, address and type, RSSI, age, decoded advertisement.
    public static func device(_ d: ScannedDevice, now: Duration) -> String {
        let type = d.address.type.peerType == .public ? "pub" : "rnd"
        return NumberText.left(name(of: d), 20) + " " + NumberText.left("\(d.address.address) \(type)", 21) + " "
            + NumberText.right(d.rssi.map { "\($0)" } ?? "?", 4) + " dBm " + NumberText.right(NumberText.seconds(now - d.lastSeen), 6)
            + "  " + d.advertisement.summary
    }

    /// The line for a monitor refused for its RSSI (also a stderr note with `--json`).
    public static func refusal(_ d: ScannedDevice, minimumRSSI: Int) -> String {
        "refused     \(name(of: d)) \(d.address): RSSI \(d.rssi.map { "\($0) dBm" } ?? "unknown") is weaker than \(minimumRSSI) dBm; waiting for a stronger monitor"
    }

    /// The plain lines for one event (none for ticks and repeated hearings).
    public static func lines(for event: HeartRateMonitorEvent) -> [String] {
        switch event {
        case .scanning:
            return ["scanning    for heart-rate monitors (180D)"]
        case let .device(.appeared(d)):
            return ["found       " + device(d, now: d.lastSeen)]
        case let .device(.disappeared(d)):
            return ["lost        \(name(of: d)) \(d.address): not heard for 10 s"]
        case .device(.updated), .tick:
            return []
        case let .refused(d, minimum):
            return [refusal(d, minimumRSSI: minimum)]
        case let .connecting(d):
            return ["connecting  \(name(of: d)) \(d.address) (RSSI \(d.rssi.map { "\($0) dBm" } ?? "unknown"))"]
        case let .connected(address, _, mtu):
            return ["connected   \(address), ATT MTU \(mtu)"]
        case let .bodySensorLocation(location):
            return ["location    \(location)"]
        case .subscribed:
            return ["subscribed  Heart Rate Measurement (2A37)"]
        case let .measurement(m, _):
            return ["measurement " + measurement(m)]
        case let .malformed(value, error):
            return ["malformed   \(value.hexString): \(error)"]
        case let .disconnected(address, reason):
            return ["disconnected \(address): \(reason); scanning again"]
        }
    }
}

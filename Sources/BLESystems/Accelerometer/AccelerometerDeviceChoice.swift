import BLE
import BLEProfiles
import BLEWire

/// Which devices the S4 charting central lists and which it takes on its own (docs/SYSTEMS.md S4).
/// Pure, so the rule is tested by itself.
///
/// The article's central scans 5 s without a service filter and lists devices whose advertised
/// local name contains "ble" in any case (`AccelerometerProfile.isCandidate`); the user picks
/// one. Without a user (stdout or stdin not a terminal), the first listed device that
/// advertises the accelerometer service 0011 is taken: a name alone ("Bumble…" contains "ble")
/// does not make a device an accelerometer.
public enum AccelerometerDeviceChoice {
    /// The devices to list, in the order they were first heard. Only connectable ones: the
    /// central connects to what it lists.
    public static func candidates(_ devices: [ScannedDevice]) -> [ScannedDevice] {
        devices.filter { $0.isConnectable && AccelerometerProfile.isCandidate(localName: $0.advertisement.localName) }
            .sorted { ($0.firstSeen, $0.address.description) < ($1.firstSeen, $1.address.description) }
    }

    /// The choice made without a user: the first candidate advertising service 0011.
    public static func automatic(_ candidates: [ScannedDevice]) -> ScannedDevice? {
        candidates.first { advertisesService($0) }
    }

    /// Whether `device` advertises service 0011.
    public static func advertisesService(_ device: ScannedDevice) -> Bool {
        device.advertisement.serviceUUIDs.contains(AccelerometerProfile.service)
    }

    /// The numbered list the user picks from: "  1) BLE001  C0:11:22:33:44:55 rnd  -45 dBm  services=[0011]".
    public static func menu(_ candidates: [ScannedDevice]) -> [String] {
        candidates.enumerated().map { index, d in
            let type = d.address.type.peerType == .public ? "pub" : "rnd"
            let services = d.advertisement.serviceUUIDs.map(\.description).joined(separator: ", ")
            return NumberText.right("\(index + 1)", 3) + ") " + NumberText.left(d.advertisement.localName ?? "", 20) + " \(d.address.address) \(type)  "
                + NumberText.right(d.rssi.map { "\($0)" } ?? "?", 4) + " dBm  services=[\(services)]"
                + (advertisesService(d) ? "" : "  (no 0011 advertised)")
        }
    }

    /// The user's answer: a number from the menu (Enter alone takes the first).
    public static func parsePick(_ answer: String, count: Int) -> Int? {
        let trimmed = answer.trimmingSpaces
        if trimmed.isEmpty { return count > 0 ? 0 : nil }
        guard let n = Int(trimmed), n >= 1, n <= count else { return nil }
        return n - 1
    }
}

extension String {
    /// Without leading and trailing whitespace.
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}

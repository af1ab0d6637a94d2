import BLE
import BLEWire

/// The sample central's steps as `ble sample` and `ble demo` print them: one line per event,
/// numbered as docs/SYSTEMS.md S2 numbers the steps. Pure, so the wording is tested without a radio.
public enum SampleCentralLines {
    /// The line for one step: its number, a label and what happened ("1 state          poweredOn").
    public static func line(for event: SampleCentralEvent) -> String {
        let (n, label, text) = parts(of: event)
        return (n.map { "\($0) " } ?? "  ") + (text.isEmpty ? label : NumberText.left(label, 15) + text)
    }

    /// One step as its number (nil for the closing "disconnected"), label and text: what
    /// `line(for:)` lays out for a terminal and `ble ui`'s /sample screen shows in columns.
    public static func parts(of event: SampleCentralEvent) -> (step: Int?, label: String, text: String) {
        switch event {
        case let .managerState(state):
            return (1, "state", state.rawValue)
        case let .found(name, address, rssi):
            return (2, "found", "\(name ?? "(unnamed)")  \(address)  rssi \(rssi.map(String.init) ?? "?")")
        case let .connected(address, connected):
            return (3, "connected", "\(address): \(connected ? "yes" : "no")")
        case let .service(s):
            return (4, "service", "\(s.uuid) [0x\(String(format4: s.startHandle))–0x\(String(format4: s.endHandle))]")
        case let .characteristic(c):
            let bits = String(c.properties.rawValue, radix: 16, uppercase: true)
            return (5, "characteristic", "\(c.uuid) [0x\(String(format4: c.valueHandle))] properties 0x\(bits.count < 2 ? "0" + bits : bits) \(c.properties)")
        case let .value(uuid, bytes):
            return (6, "read", "\(uuid): \(bytesAndText(bytes))")
        case let .wrote(uuid, bytes, back):
            return (7, "wrote", "\(uuid): \(bytesAndText(bytes)) with response; reads back \(bytesAndText(back))")
        case let .notificationState(uuid, on):
            return (8, "notifying", "\(uuid): \(on)")
        case let .notification(n, uuid, bytes):
            return (9, "notification", "#\(n) \(uuid): \(bytesAndText(bytes))")
        case .disconnected:
            return (nil, "disconnected", "")
        }
    }

    /// Bytes as hex and, when they are UTF-8, as text (docs/SYSTEMS.md S2 prints both).
    /// A value as hex and, when it is UTF-8, as text: the article prints both.
    public static func bytesAndText(_ bytes: [UInt8]) -> String {
        let text = String(validating: bytes, as: UTF8.self).map { " \"\($0)\"" } ?? " (not UTF-8)"
        return (bytes.isEmpty ? "(empty)" : bytes.hexString) + text
    }
}

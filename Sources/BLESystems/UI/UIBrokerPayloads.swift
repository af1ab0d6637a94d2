import BLEWire
import Foundation

/// What `ble ui --broker` reads out of the gateways' payloads (docs/GATEWAY.md#payloads),
/// sans-IO and total: any bytes give a value or `nil`, never a crash, and every string and list
/// kept is cut to a bound, so one odd message cannot grow the page or the process.
enum UIBrokerPayloads {
    /// The longest device name kept (an advertisement's name is at most 248 octets).
    static let maximumNameLength = 248
    /// The most service UUIDs kept of one advertisement.
    static let maximumServiceUUIDs = 32
    /// The most RR intervals kept of one measurement.
    static let maximumRRIntervals = 32

    /// `adv/ADDRESS`: what the page shows of a device.
    struct Advertisement: Equatable {
        /// `public` or `random`; nil when missing or anything else.
        var addressType: String?
        /// The name, cut to `maximumNameLength`.
        var name: String?
        /// dBm, -127 to 20.
        var rssi: Int?
        /// Whether connectable, when a boolean says.
        var connectable: Bool?
        /// The UUIDs that are UUIDs, at most `maximumServiceUUIDs`.
        var serviceUUIDs: [String]
        /// Unix milliseconds (`time`).
        var time: Int?
    }

    /// The payload as a JSON object, or nil (not JSON, not an object).
    static func object(_ payload: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(payload), options: [])) as? [String: Any]
    }

    /// `adv/ADDRESS`'s fields, or nil when the payload is not a JSON object.
    static func advertisement(_ payload: [UInt8]) -> Advertisement? {
        guard let o = object(payload) else { return nil }
        let type = string(o["addressType"]).flatMap { $0 == "public" || $0 == "random" ? $0 : nil }
        let uuids = (o["serviceUUIDs"] as? [Any] ?? []).prefix(maximumServiceUUIDs).compactMap { value -> String? in
            guard let s = string(value), s.count <= 36, BluetoothUUID(string: s) != nil else { return nil }
            return s
        }
        return Advertisement(addressType: type, name: string(o["name"]).map { cut($0, maximumNameLength) },
                             rssi: integer(o["rssi"]).flatMap { (-127...20).contains($0) ? $0 : nil },
                             connectable: boolean(o["connectable"]), serviceUUIDs: uuids, time: time(o["time"]))
    }

    /// `dev/ADDRESS/CHARACTERISTIC` with a `heartRate` object (0x2A37), or nil.
    static func heartRate(_ o: [String: Any], gateway: String, now: Int) -> UIBrokerModel.HeartRate? {
        guard let hr = o["heartRate"] as? [String: Any], let bpm = integer(hr["bpm"]), (0...65535).contains(bpm) else { return nil }
        let contact: Bool? = hr["contact"].flatMap { boolean($0) }
        let energy = integer(hr["energyKJ"]).flatMap { (0...65535).contains($0) ? $0 : nil }
        let rr = (hr["rr"] as? [Any] ?? []).prefix(maximumRRIntervals).compactMap { number($0) }.filter { $0 >= 0 && $0 < 64 }
        return UIBrokerModel.HeartRate(bpm: bpm, contact: contact, energyKJ: energy, rrIntervals: rr, gateway: gateway, time: time(o["time"]) ?? now)
    }

    /// `dev/ADDRESS/CHARACTERISTIC` with an `accelerometer` object (0x0012), or nil.
    static func acceleration(_ o: [String: Any], gateway: String, now: Int) -> UIBrokerModel.Acceleration? {
        guard let a = o["accelerometer"] as? [String: Any],
              let x = number(a["x"]), let y = number(a["y"]), let z = number(a["z"]) else { return nil }
        return UIBrokerModel.Acceleration(x: x, y: y, z: z, gateway: gateway, time: time(o["time"]) ?? now)
    }

    /// `status/stats`: the counts a summary shows, in a fixed order; nil when not an object.
    static func statistics(_ payload: [UInt8]) -> [(String, Int)]? {
        guard let o = object(payload) else { return nil }
        var out: [(String, Int)] = []
        for key in ["uptime", "devices", "links", "subscriptions", "notifications", "published", "reconnections"] {
            if let v = integer(o[key]) { out.append((key, v)) }
        }
        if let dropped = o["dropped"] as? [String: Any] {
            out.append(("dropped", dropped.values.compactMap { integer($0) }.reduce(0) { $0 &+ $1 }))
        }
        if let commands = o["commands"] as? [String: Any], let received = integer(commands["received"]) {
            out.append(("commands", received))
        }
        if let t = time(o["time"]) { out.append(("time", t)) }
        return out
    }

    /// A decoded value as `JSON` (object keys sorted), at most 16 levels deep.
    static func json(_ value: Any, depth: Int = 0) -> JSON {
        guard depth < 16 else { return .null }
        switch value {
        case let s as String: return .string(s)
        case let n as NSNumber:
            if isBoolean(n) { return .bool(n.boolValue) }
            return integer(n).map { .int($0) } ?? .number(n.doubleValue)
        case let a as [Any]: return .array(a.map { json($0, depth: depth + 1) })
        case let o as [String: Any]: return .object(o.sorted { $0.key < $1.key }.map { ($0.key, json($0.value, depth: depth + 1)) })
        default: return .null
        }
    }

    // MARK: Values of a decoded object

    /// A string, and only a string.
    static func string(_ value: Any?) -> String? { value as? String }

    /// A whole number, not a boolean (Foundation gives both as NSNumber) and not a fraction.
    static func integer(_ value: Any?) -> Int? {
        guard let n = value as? NSNumber, !isBoolean(n) else { return nil }
        let d = n.doubleValue
        guard d.isFinite, d == d.rounded(), abs(d) < 9e15 else { return nil }
        return Int(d)
    }

    /// A finite number, not a boolean.
    static func number(_ value: Any?) -> Double? {
        guard let n = value as? NSNumber, !isBoolean(n) else { return nil }
        return n.doubleValue.isFinite ? n.doubleValue : nil
    }

    /// `true` or `false`, not a number.
    static func boolean(_ value: Any?) -> Bool? {
        guard let n = value as? NSNumber, isBoolean(n) else { return nil }
        return n.boolValue
    }

    /// Unix milliseconds, from the year 2000 to 2200 (anything else is no time).
    static func time(_ value: Any?) -> Int? {
        integer(value).flatMap { (946_684_800_000...7_258_118_400_000).contains($0) ? $0 : nil }
    }

    /// Whether `n` is one of Foundation's JSON booleans.
    static func isBoolean(_ n: NSNumber) -> Bool {
        // Foundation's JSON booleans are the NSNumber singletons of `true` and `false`, whose
        // Objective-C type is 'c' (char); numbers 0 and 1 are not.
        String(cString: n.objCType) == "c"
    }

    /// `text` cut to `limit` characters.
    static func cut(_ text: String, _ limit: Int) -> String {
        text.count > limit ? String(text.prefix(limit)) : text
    }
}

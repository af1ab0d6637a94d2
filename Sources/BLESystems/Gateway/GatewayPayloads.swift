import BLE
import BLEProfiles
import Foundation

/// The JSON a gateway publishes (docs/GATEWAY.md#payloads). Times are Unix milliseconds
/// (`time`), the gateway's wall clock when it heard or received the thing.
public enum GatewayPayloads {
    /// `adv/ADDRESS`: the device as `ble scan --json` prints it, with the gateway's name and
    /// when it was heard.
    public static func advertisement(_ d: ScannedDevice, gateway: String, time: Date) -> JSON {
        guard case var .object(fields) = ScanLines.json(d) else { return ScanLines.json(d) }
        fields.append(("gateway", .string(gateway)))
        fields.append(("time", .int(milliseconds(time))))
        return .object(fields)
    }

    /// `dev/ADDRESS/CHARACTERISTIC`: one value: where it came from, hex and UTF-8 (`valueJSON`),
    /// and for the seed profiles their decoding: `heartRate` for Heart Rate Measurement (0x2A37),
    /// `accelerometer` for the accelerometer sample (docs/SYSTEMS.md).
    public static func value(_ bytes: [UInt8], of characteristic: BluetoothUUID, at address: DeviceAddress,
                             gateway: String, time: Date) -> JSON {
        var fields: [(String, JSON)] = [
            ("address", .string(address.address.description)),
            ("addressType", .string(address.type.peerType == .public ? "public" : "random")),
            ("characteristic", .string(characteristic.description)),
        ]
        fields += valueJSON(bytes)
        fields += decoded(bytes, of: characteristic)
        fields.append(("gateway", .string(gateway)))
        fields.append(("time", .int(milliseconds(time))))
        return .object(fields)
    }

    /// The seed profiles' reading of a value, or nothing (also when it does not decode).
    public static func decoded(_ bytes: [UInt8], of characteristic: BluetoothUUID) -> [(String, JSON)] {
        if characteristic == HeartRateProfile.measurement, let m = try? HeartRateMeasurement(decoding: bytes) {
            var hr: [(String, JSON)] = [("bpm", .int(Int(m.beatsPerMinute)))]
            switch m.sensorContact {
            case .notSupported: hr.append(("contact", .null))
            case .notDetected: hr.append(("contact", .bool(false)))
            case .detected: hr.append(("contact", .bool(true)))
            }
            if let e = m.energyExpended { hr.append(("energyKJ", .int(Int(e)))) }
            hr.append(("rr", .array(m.rrIntervalSeconds.map { .number(($0 * 1000).rounded() / 1000) })))
            return [("heartRate", .object(hr))]
        }
        if characteristic == AccelerometerProfile.sample, let s = try? AccelerometerSample(decoding: bytes) {
            return [("accelerometer", .object([("x", rounded(s.x)), ("y", rounded(s.y)), ("z", rounded(s.z))]))]
        }
        return []
    }

    /// A command's answer: `{"id", "ok": true, …result}`.
    public static func success(id: String?, _ result: [(String, JSON)]) -> JSON {
        .object([("id", .optional(id)), ("ok", .bool(true))] + result)
    }

    /// A refused or failed command: `{"id", "ok": false, "code", "error"}`.
    public static func failure(id: String?, code: String, message: String) -> JSON {
        .object([("id", .optional(id)), ("ok", .bool(false)), ("code", .string(code)), ("error", .string(message))])
    }

    /// A sample's component to 5 decimals (a 32-bit float carries about 7 digits).
    private static func rounded(_ v: Float) -> JSON {
        .number((Double(v) * 100_000).rounded() / 100_000)
    }

    static func milliseconds(_ time: Date) -> Int {
        Int((time.timeIntervalSince1970 * 1000).rounded())
    }
}

import BLE

/// How `ble scan` shows one device: a table row for people (also the line it prints when stdout
/// is not a terminal), or one JSON object for programs (`--json`).
public enum ScanLines {
    /// Name, address and type (with ` = IDENTITY type` after a bonded device's RPA, ` bonded` after its identity), RSSI, age (`now` minus when it was last heard) and the
    /// advertisement's summary, in the columns of `ScanTable`'s header.
    public static func text(_ d: ScannedDevice, now: Duration) -> String {
        let name = NumberText.left(d.advertisement.localName ?? "(unnamed)", 20)
        var shown = "\(d.address.address) \(typeText(d.address.type))"
        if let identity = d.identity {
            // A bonded device's RPA and the identity its IRK resolves it to; or its identity
            // itself (it advertises with it, or the controller resolved the RPA).
            shown += identity.address != d.address.address ? " = \(identity.address) \(typeText(identity.type))" : " bonded"
        }
        let address = NumberText.left(shown, max(24, shown.count))
        let rssi = NumberText.left(d.rssi.map { "\($0)" } ?? "?", 5)
        let age = NumberText.left(NumberText.seconds(now - d.lastSeen), 5)
        return "\(name) \(address) \(rssi) \(age) \(d.advertisement.summary)\(extendedText(d))"
    }

    /// After the summary of an extended advertisement: its set and PHYs, and whether the
    /// controller cut it short (nothing for a legacy one, whose line stays as it was).
    private static func extendedText(_ d: ScannedDevice) -> String {
        var parts: [String] = []
        if let e = d.extended {
            var phys = phyName(e.primaryPHY)
            if let secondary = e.secondaryPHY { phys += "/" + phyName(secondary) }
            parts.append(e.advertisingSID.map { "SID \($0) \(phys)" } ?? phys)
            if e.isAnonymous { parts.append("anonymous") }
            if let raw = e.periodicAdvertisingInterval {
                let ms = Double(raw) * 1.25
                parts.append("periodic \(NumberText.fixed(ms, ms == ms.rounded() ? 0 : 2)) ms")
            }
        }
        if d.isTruncated { parts.append("truncated") }
        return parts.isEmpty ? "" : " [" + parts.joined(separator: ", ") + "]"
    }

    /// "1M", "2M", "Coded".
    private static func phyName(_ phy: LEPHY) -> String {
        phy.description.hasPrefix("LE ") ? String(phy.description.dropFirst(3)) : phy.description
    }

    /// "1M", "2M", "coded": the JSON's PHY names.
    private static func jsonPHYName(_ phy: LEPHY) -> String {
        phy == .leCoded ? "coded" : phyName(phy)
    }

    private static func typeText(_ type: AddressType) -> String {
        type == .public || type == .publicIdentity ? "pub" : "rnd"
    }

    /// The device as one JSON object: address and type, the bonded identity behind an RPA
    /// (when there is one), name, RSSI, connectability, service
    /// UUIDs and the first manufacturer data (company ID little-endian, then the data, as on the
    /// air: Core Supplement Part A §1.4); TX power, service data and appearance when advertised;
    /// the whole advertising data (with the scan response merged in) as hex; whether it came as
    /// an extended advertisement and, for one, its SID, PHYs, the advertiser's TX power and
    /// periodic interval in ms (when it has periodic advertising); `"truncated": true` when the
    /// controller cut the data short.
    public static func json(_ d: ScannedDevice) -> JSON {
        let ad = d.advertisement
        var fields: [(String, JSON)] = [
            ("address", .string(d.address.address.description)),
            ("addressType", .string(d.address.type == .public || d.address.type == .publicIdentity ? "public" : "random")),
            ("name", .optional(ad.localName)),
            ("rssi", d.rssi.map { .int(Int($0)) } ?? .null),
            ("connectable", .bool(d.isConnectable)),
            ("serviceUUIDs", .array(ad.serviceUUIDs.map { .string($0.description) })),
            ("manufacturerData", ad.manufacturerData.first.map { .string(([UInt8($0.companyID & 0xFF), UInt8($0.companyID >> 8)] + $0.data).hexString) } ?? .null),
        ]
        if let identity = d.identity {
            fields.insert(contentsOf: [("identity", .string(identity.address.description)),
                                       ("identityType", .string(identity.type.peerType == .public ? "public" : "random"))], at: 2)
        }
        if let m = ad.manufacturerData.first {
            fields.append(("manufacturer", .optional(AssignedNumbers.companyName(m.companyID))))
        }
        if let tx = ad.txPowerLevel { fields.append(("txPower", .int(Int(tx)))) }
        if !ad.serviceData.isEmpty {
            fields.append(("serviceData", .object(ad.serviceData.map { ($0.uuid.description, .string($0.data.hexString)) })))
        }
        if let a = ad.appearance { fields.append(("appearance", .int(Int(a)))) }
        fields.append(("data", .string(ad.encode().hexString)))
        fields.append(("extended", .bool(d.extended != nil)))
        if let e = d.extended {
            // Bluetooth 5's extended advertising (Core spec Vol 4 Part E §7.7.65.13).
            fields.append(("sid", e.advertisingSID.map { .int(Int($0)) } ?? .null))
            fields.append(("primaryPHY", .string(jsonPHYName(e.primaryPHY))))
            fields.append(("secondaryPHY", e.secondaryPHY.map { .string(jsonPHYName($0)) } ?? .null))
            fields.append(("advertiserTxPower", e.txPower.map { .int(Int($0)) } ?? .null))
            if let raw = e.periodicAdvertisingInterval { fields.append(("periodicInterval", .number(Double(raw) * 1.25))) }
            // No address was sent: the one shown is a placeholder, not a device to connect to.
            if e.isAnonymous { fields.append(("anonymous", .bool(true))) }
        }
        if d.isTruncated { fields.append(("truncated", .bool(true))) }
        return .object(fields)
    }
}

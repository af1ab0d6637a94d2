/// A one-line summary for logs and the `ble` tool, e.g.
/// `flags=LE General,BR/EDR Not Supported services=[180D] name="HRM" tx=4dBm mfr=Apple, Inc.(0x004C):0215…`.
/// Fields appear in a fixed order; types without a typed accessor are shown as `ad[0xNN]=hex`.
extension AdvertisingData: CustomStringConvertible {
    /// The same as `description`.
    public var summary: String { description }

    /// The one-line summary: typed fields in a fixed order, the rest as `ad[0xNN]=hex`.
    public var description: String {
        var parts: [String] = []
        if let flags { parts.append("flags=\(flags)") }
        let services = serviceUUIDs
        if !services.isEmpty {
            let list = services.map(\.description).joined(separator: ", ")
            parts.append("services=[\(list)\(serviceUUIDsComplete ? "" : ", …")]")
        }
        let solicited = solicitedServiceUUIDs
        if !solicited.isEmpty { parts.append("solicited=[\(solicited.map(\.description).joined(separator: ", "))]") }
        if let name = localName { parts.append("\(isNameShortened ? "shortName" : "name")=\"\(name)\"") }
        if let tx = txPowerLevel { parts.append("tx=\(tx)dBm") }
        if let appearance {
            parts.append("appearance=" + (appearanceName.map { $0 + " " } ?? "") + "(0x" + ADHex.word(appearance) + ")")
        }
        for m in manufacturerData {
            let company = (m.companyName ?? "company") + "(0x" + ADHex.word(m.companyID) + ")"
            parts.append("mfr=\(company):\(m.data.hexString)")
        }
        for d in serviceData { parts.append("serviceData=\(d.uuid):\(d.data.hexString)") }
        if let range = peripheralConnectionIntervalRange { parts.append("connInterval=\(range)") }
        if let ms = advertisingIntervalMilliseconds { parts.append("advInterval=\(ADHex.milliseconds(ms))ms") }
        if let leRole { parts.append("role=\(leRole)") }
        if let uri { parts.append("uri=\"\(uri)\"") }
        let publicTargets = publicTargetAddresses
        if !publicTargets.isEmpty { parts.append("publicTargets=[\(publicTargets.map(\.description).joined(separator: ", "))]") }
        let randomTargets = randomTargetAddresses
        if !randomTargets.isEmpty { parts.append("randomTargets=[\(randomTargets.map(\.description).joined(separator: ", "))]") }
        if let leDeviceAddress { parts.append("leAddress=\(leDeviceAddress)") }
        // Types without a typed view, and structures too short for theirs, are shown raw.
        for s in structures where !Self.describedTypes.contains(s.type) || Self.tooShortForView(s) {
            parts.append("ad[\(s.type)]=\(s.data.hexString)")
        }
        if let malformed { parts.append("malformed(\(malformed))") }
        return parts.isEmpty ? "empty" : parts.joined(separator: " ")
    }

    static func tooShortForView(_ s: Structure) -> Bool {
        switch s.type {
        case .manufacturerSpecificData, .appearance, .serviceData16: return s.data.count < 2
        case .serviceData32: return s.data.count < 4
        case .serviceData128: return s.data.count < 16
        case .txPowerLevel, .leRole: return s.data.isEmpty
        case .peripheralConnectionIntervalRange: return s.data.count < 4
        case .leBluetoothDeviceAddress: return s.data.count < 7
        default: return false
        }
    }

    /// Types the summary shows through their typed accessor.
    static let describedTypes: Set<ADType> = listTypes.union([
        .flags, .shortenedLocalName, .completeLocalName, .txPowerLevel, .appearance,
        .manufacturerSpecificData, .serviceData16, .serviceData32, .serviceData128,
        .peripheralConnectionIntervalRange, .advertisingInterval, .advertisingIntervalLong, .leRole,
        .uri, .leBluetoothDeviceAddress,
    ])
}

import BLEWire

/// One report of an LE Advertising Report or LE Extended Advertising Report event read where it
/// lies in the event's bytes (Core spec Vol 4 Part E §7.7.65.2, §7.7.65.13): the fields a scanner
/// acts on, with the data as a pointer into the event instead of an array of its own. Valid only
/// inside the call of `HCIEvent.scanAdvertisingReports` that hands it out.
public struct LEAdvertisingReportRef {
    /// Event_Type: legacy reports carry the bits of their PDU type (the §7.7.65.13 table), as
    /// `LEAdvertisingReport` decodes them.
    public var properties: AdvertisingEventProperties
    /// The advertiser; given type public for an anonymous extended report (Address_Type 0xFF),
    /// as `LEAdvertisingReport` decodes it.
    public var address: DeviceAddress
    /// dBm, or 127 (`LEAdvertisingReport.unavailable`).
    public var rssi: Int8
    /// The advertising or scan response data, inside the event.
    public var data: UnsafeBufferPointer<UInt8>
    /// Address_Type 0xFF: an anonymous extended advertisement (no address sent).
    public var isAnonymous: Bool
    /// Primary_PHY (LE 1M for a legacy report).
    public var primaryPHY: LEPHY
    /// Secondary_PHY; nil for a legacy report and for an extended one without auxiliary packets
    /// (0x00).
    public var secondaryPHY: LEPHY?
    /// Advertising_SID; nil for a legacy report and when no ADI field was sent (0xFF).
    public var advertisingSID: UInt8?
    /// TX_Power in dBm, or 127 (`LEAdvertisingReport.unavailable`; always for a legacy report).
    public var txPower: Int8
    /// Periodic_Advertising_Interval in 1.25 ms units; 0 when there is no periodic advertising
    /// (always for a legacy report).
    public var periodicAdvertisingInterval: UInt16

    /// A report's fields around `data` (which must stay valid while the report is used).
    public init(properties: AdvertisingEventProperties, address: DeviceAddress, rssi: Int8,
                data: UnsafeBufferPointer<UInt8>, isAnonymous: Bool = false, primaryPHY: LEPHY = .le1M,
                secondaryPHY: LEPHY? = nil, advertisingSID: UInt8? = nil,
                txPower: Int8 = LEAdvertisingReport.unavailable, periodicAdvertisingInterval: UInt16 = 0) {
        self.properties = properties
        self.address = address
        self.rssi = rssi
        self.data = data
        self.isAnonymous = isAnonymous
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
    }
}

extension HCIEvent {
    /// Reads an LE Advertising Report or LE Extended Advertising Report event in place, without
    /// building an `HCIEvent`: when `payload` (event code, length, parameters) is one of them and
    /// `decode` would accept it, hands each report to `body` in order and returns true. Returns
    /// false, having called `body` for none, for any other event and for a malformed report
    /// event, so the caller decodes it as usual (and gets the typed error `decode` gives).
    ///
    /// The event is checked whole before the first report goes out, as `decode` rejects the whole
    /// event for one bad report: the Event_Type and address types must be valid, every field must
    /// lie inside the parameters (§7.7.65.2, §7.7.65.13), and the parameter length must match the
    /// bytes present (§5.4.4). Bytes after the last report are ignored, as `decode` does.
    public static func scanAdvertisingReports(_ payload: [UInt8], _ body: (LEAdvertisingReportRef) -> Void) -> Bool {
        payload.withUnsafeBufferPointer { p -> Bool in
            guard p.count >= 4, p[0] == Code.leMeta, Int(p[1]) == p.count - 2 else { return false }
            switch p[2] {
            case LEMetaEvent.Subevent.advertisingReport:
                guard validLegacy(p) else { return false }
                forEachLegacy(p, body)
                return true
            case LEMetaEvent.Subevent.extendedAdvertisingReport:
                guard validExtended(p) else { return false }
                forEachExtended(p, body)
                return true
            default:
                return false
            }
        }
    }

    // Legacy: Num_Reports at 3, then per report Event_Type, Address_Type, Address (6),
    // Data_Length, Data, RSSI: 10 bytes and the data.

    private static func validLegacy(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 4
        for _ in 0..<Int(p[3]) {
            guard i + 9 <= p.count, p[i] <= LegacyAdvertisingEventType.scanRsp.rawValue,
                  p[i + 1] <= AddressType.randomIdentity.rawValue else { return false }
            let end = i + 10 + Int(p[i + 8])
            guard end <= p.count else { return false }
            i = end
        }
        return true
    }

    private static func forEachLegacy(_ p: UnsafeBufferPointer<UInt8>, _ body: (LEAdvertisingReportRef) -> Void) {
        var i = 4
        for _ in 0..<Int(p[3]) {
            // Both checked by `validLegacy`.
            let type = LegacyAdvertisingEventType(rawValue: p[i]) ?? .advInd
            let addressType = AddressType(rawValue: p[i + 1]) ?? .public
            let length = Int(p[i + 8])
            body(LEAdvertisingReportRef(
                properties: type.properties, address: DeviceAddress(address(p, at: i + 2), type: addressType),
                rssi: Int8(bitPattern: p[i + 9 + length]),
                data: UnsafeBufferPointer(rebasing: p[(i + 9)..<(i + 9 + length)])))
            i += 10 + length
        }
    }

    // Extended: Num_Reports at 3, then per report Event_Type (2), Address_Type, Address (6),
    // Primary_PHY, Secondary_PHY, Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval
    // (2), Direct_Address_Type, Direct_Address (6), Data_Length, Data: 24 bytes and the data.

    private static func validExtended(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 4
        for _ in 0..<Int(p[3]) {
            guard i + 24 <= p.count else { return false }
            let addressType = p[i + 2]
            guard addressType == 0xFF || addressType <= AddressType.randomIdentity.rawValue else { return false }
            let properties = AdvertisingEventProperties(rawValue: UInt16(p[i]) | UInt16(p[i + 1]) << 8)
            let directType = p[i + 16]
            if properties.contains(.directed), directType != 0xFE, directType > AddressType.randomIdentity.rawValue {
                return false
            }
            let end = i + 24 + Int(p[i + 23])
            guard end <= p.count else { return false }
            i = end
        }
        return true
    }

    private static func forEachExtended(_ p: UnsafeBufferPointer<UInt8>, _ body: (LEAdvertisingReportRef) -> Void) {
        var i = 4
        for _ in 0..<Int(p[3]) {
            let rawType = p[i + 2]
            let anonymous = rawType == 0xFF
            let length = Int(p[i + 23])
            body(LEAdvertisingReportRef(
                properties: AdvertisingEventProperties(rawValue: UInt16(p[i]) | UInt16(p[i + 1]) << 8),
                address: DeviceAddress(address(p, at: i + 3), type: anonymous ? .public : AddressType(rawValue: rawType) ?? .public),
                rssi: Int8(bitPattern: p[i + 13]),
                data: UnsafeBufferPointer(rebasing: p[(i + 24)..<(i + 24 + length)]),
                isAnonymous: anonymous,
                primaryPHY: LEPHY(rawValue: p[i + 9]),
                secondaryPHY: p[i + 10] == 0 ? nil : LEPHY(rawValue: p[i + 10]),
                advertisingSID: p[i + 11] == 0xFF ? nil : p[i + 11],
                txPower: Int8(bitPattern: p[i + 12]),
                periodicAdvertisingInterval: UInt16(p[i + 14]) | UInt16(p[i + 15]) << 8))
            i += 24 + length
        }
    }

    /// The 6-byte little-endian BD_ADDR at `offset` (Vol 4 Part E §5.2).
    private static func address(_ p: UnsafeBufferPointer<UInt8>, at offset: Int) -> BDAddress {
        var value: UInt64 = 0
        for k in (0..<6).reversed() { value = value << 8 | UInt64(p[offset + k]) }
        return BDAddress(rawValue: value)
    }
}

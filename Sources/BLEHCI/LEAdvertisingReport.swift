import BLEWire

/// The legacy advertising PDU types of LE Advertising Report's Event_Type. Core spec Vol 4 Part E
/// §7.7.65.2.
public enum LegacyAdvertisingEventType: UInt8, Hashable, Sendable {
    /// ADV_IND: connectable, scannable, undirected.
    case advInd = 0x00
    /// ADV_DIRECT_IND: connectable, directed.
    case advDirectInd = 0x01
    /// ADV_SCAN_IND: scannable, undirected.
    case advScanInd = 0x02
    /// ADV_NONCONN_IND: non-connectable, non-scannable.
    case advNonconnInd = 0x03
    /// SCAN_RSP.
    case scanRsp = 0x04

    /// The Event_Type bits the extended report uses for the same legacy PDU (§7.7.65.13 table).
    /// A legacy SCAN_RSP does not say whether it answered ADV_IND or ADV_SCAN_IND; it maps to the
    /// latter (scannable, not claimed connectable).
    public var properties: AdvertisingEventProperties {
        switch self {
        case .advInd: return [.legacy, .connectable, .scannable]
        case .advDirectInd: return [.legacy, .connectable, .directed]
        case .advScanInd: return [.legacy, .scannable]
        case .advNonconnInd: return [.legacy]
        case .scanRsp: return [.legacy, .scannable, .scanResponse]
        }
    }
}

/// Event_Type of LE Extended Advertising Report: what kind of PDU was received. §7.7.65.13.
/// Bits 0-4 are flags; bits 5-6 are the data status.
public struct AdvertisingEventProperties: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = AdvertisingEventProperties(rawValue: 1 << 0)
    public static let scannable = AdvertisingEventProperties(rawValue: 1 << 1)
    public static let directed = AdvertisingEventProperties(rawValue: 1 << 2)
    public static let scanResponse = AdvertisingEventProperties(rawValue: 1 << 3)
    /// A legacy advertising PDU (as opposed to an extended one).
    public static let legacy = AdvertisingEventProperties(rawValue: 1 << 4)

    /// Whether `legacy` is set: a test the scanner makes on every report, written out so it
    /// costs no access to the static constant.
    @inlinable
    public var isLegacy: Bool { rawValue & 1 << 4 != 0 }

    /// Whether this report holds all of the advertiser's data. Bits 5-6.
    public var dataStatus: AdvertisingDataStatus {
        get { AdvertisingDataStatus(rawValue: UInt8((rawValue >> 5) & 0x3)) ?? .reserved }
        set { rawValue = (rawValue & ~0x0060) | UInt16(newValue.rawValue & 0x3) << 5 }
    }
}

/// Data_Status bits of an extended advertising report. §7.7.65.13.
public enum AdvertisingDataStatus: UInt8, Hashable, Sendable {
    case complete = 0
    /// More reports with the rest of the data follow.
    case incompleteMoreToCome = 1
    /// The controller gave up; the data is truncated.
    case incompleteTruncated = 2
    case reserved = 3
}

/// One received advertising or scan response PDU, from either LE Advertising Report (legacy) or
/// LE Extended Advertising Report. §7.7.65.2, §7.7.65.13.
///
/// Both subevents decode into this one shape so the scanner above need not care which one the
/// controller uses; fields only the extended report carries have the values the spec uses for
/// "not available" when a legacy report is decoded.
public struct LEAdvertisingReport: Hashable, Sendable {
    /// RSSI and TX power value meaning "not available".
    public static let unavailable: Int8 = 127

    public var properties: AdvertisingEventProperties
    /// The advertiser. With controller privacy, an identity address (type 0x02/0x03).
    public var address: DeviceAddress
    /// Extended advertising without an address (Address_Type 0xFF); `address` is then zero.
    public var isAnonymous: Bool
    /// PHY of the primary advertising channel (LE 1M or LE Coded).
    public var primaryPHY: LEPHY
    /// PHY of the secondary channel, nil when no packets used it (legacy PDUs).
    public var secondaryPHY: LEPHY?
    /// Advertising_SID 0x00...0x0F, nil when the PDU had no ADI field (0xFF).
    public var advertisingSID: UInt8?
    /// dBm, or 127 (`unavailable`).
    public var txPower: Int8
    /// dBm, -127...+20, or 127 (`unavailable`).
    public var rssi: Int8
    /// In 1.25 ms units; 0 when there is no periodic advertising.
    public var periodicAdvertisingInterval: UInt16
    /// Target of directed advertising (only when `properties` contains `.directed`). A target
    /// reported as 0xFE ("RPA the controller could not resolve") is given type `.random`.
    public var directAddress: DeviceAddress?
    public var data: [UInt8]

    public init(
        properties: AdvertisingEventProperties, address: DeviceAddress, isAnonymous: Bool = false,
        primaryPHY: LEPHY = .le1M, secondaryPHY: LEPHY? = nil, advertisingSID: UInt8? = nil,
        txPower: Int8 = LEAdvertisingReport.unavailable, rssi: Int8, periodicAdvertisingInterval: UInt16 = 0,
        directAddress: DeviceAddress? = nil, data: [UInt8]
    ) {
        self.properties = properties
        self.address = address
        self.isAnonymous = isAnonymous
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.rssi = rssi
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
        self.directAddress = directAddress
        self.data = data
    }

    /// A report of a legacy PDU, as LE Advertising Report carries it.
    public init(legacy type: LegacyAdvertisingEventType, address: DeviceAddress, data: [UInt8], rssi: Int8) {
        self.init(properties: type.properties, address: address, rssi: rssi, data: data)
    }

    /// The legacy PDU type, or nil for an extended advertising PDU.
    public var legacyEventType: LegacyAdvertisingEventType? {
        guard properties.contains(.legacy) else { return nil }
        if properties.contains(.scanResponse) { return .scanRsp }
        if properties.contains(.directed) { return .advDirectInd }
        if properties.contains(.connectable) { return .advInd }
        if properties.contains(.scannable) { return .advScanInd }
        return .advNonconnInd
    }

    public var isConnectable: Bool { properties.contains(.connectable) }
    public var isScannable: Bool { properties.contains(.scannable) }
    public var isDirected: Bool { properties.contains(.directed) }
    public var isScanResponse: Bool { properties.contains(.scanResponse) }
    public var isLegacy: Bool { properties.contains(.legacy) }
    public var dataStatus: AdvertisingDataStatus { properties.dataStatus }
    /// RSSI, or nil when the controller could not measure it.
    public var rssiValue: Int8? { rssi == Self.unavailable ? nil : rssi }

    // MARK: Legacy report (subevent 0x02)

    /// Num_Reports, then per report: Event_Type, Address_Type, Address, Data_Length, Data, RSSI
    /// (entries interleaved per report, as controllers send them).
    static func decodeLegacyReports(_ r: inout ByteReader) throws(WireError) -> [LEAdvertisingReport] {
        let count = Int(try r.readU8())
        var reports: [LEAdvertisingReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            let rawType = try r.readU8()
            guard let type = LegacyAdvertisingEventType(rawValue: rawType) else {
                throw WireError.invalid("advertising event type 0x\(hex2(rawType))")
            }
            let addressType = try r.readAddressType()
            let address = try r.readBDADDRess()
            let length = Int(try r.readU8())
            let data = try r.readBytes(length)
            let rssi = try r.readI8()
            reports.append(LEAdvertisingReport(legacy: type, address: DeviceAddress(address, type: addressType), data: data, rssi: rssi))
        }
        return reports
    }

    static func encodeLegacyReports(_ reports: [LEAdvertisingReport], into w: inout ByteWriter) {
        let list = reports.prefix(Int(UInt8.max))
        w.u8(UInt8(list.count))
        for report in list {
            w.u8((report.legacyEventType ?? .advInd).rawValue)
            w.u8(report.address.type.rawValue)
            w.append(report.address.address.littleEndianBytes)
            let data = report.data.prefix(Int(UInt8.max))
            w.u8(UInt8(data.count))
            w.append(data)
            w.i8(report.rssi)
        }
    }

    // MARK: Extended report (subevent 0x0D)

    /// Num_Reports, then per report: Event_Type (2), Address_Type, Address, Primary_PHY,
    /// Secondary_PHY, Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval (2),
    /// Direct_Address_Type, Direct_Address, Data_Length, Data.
    static func decodeExtendedReports(_ r: inout ByteReader) throws(WireError) -> [LEAdvertisingReport] {
        let count = Int(try r.readU8())
        var reports: [LEAdvertisingReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            let properties = AdvertisingEventProperties(rawValue: try r.readU16())
            let rawAddressType = try r.readU8()
            let address = try r.readBDADDRess()
            let anonymous = rawAddressType == 0xFF
            let addressType: AddressType
            if anonymous {
                addressType = .public
            } else if let t = AddressType(rawValue: rawAddressType) {
                addressType = t
            } else {
                throw WireError.invalid("advertiser address type 0x\(hex2(rawAddressType))")
            }
            let primary = LEPHY(rawValue: try r.readU8())
            let rawSecondary = try r.readU8()
            let rawSID = try r.readU8()
            let txPower = try r.readI8()
            let rssi = try r.readI8()
            let periodic = try r.readU16()
            let rawDirectType = try r.readU8()
            let directAddress = try r.readBDADDRess()
            var direct: DeviceAddress?
            if properties.contains(.directed) {
                if rawDirectType == 0xFE {
                    direct = DeviceAddress(directAddress, type: .random)
                } else if let t = AddressType(rawValue: rawDirectType) {
                    direct = DeviceAddress(directAddress, type: t)
                } else {
                    throw WireError.invalid("direct address type 0x\(hex2(rawDirectType))")
                }
            }
            let length = Int(try r.readU8())
            let data = try r.readBytes(length)
            reports.append(LEAdvertisingReport(
                properties: properties, address: DeviceAddress(address, type: addressType), isAnonymous: anonymous,
                primaryPHY: primary, secondaryPHY: rawSecondary == 0 ? nil : LEPHY(rawValue: rawSecondary),
                advertisingSID: rawSID == 0xFF ? nil : rawSID, txPower: txPower, rssi: rssi,
                periodicAdvertisingInterval: periodic, directAddress: direct, data: data))
        }
        return reports
    }

    static func encodeExtendedReports(_ reports: [LEAdvertisingReport], into w: inout ByteWriter) {
        let list = reports.prefix(Int(UInt8.max))
        w.u8(UInt8(list.count))
        for report in list {
            w.u16(report.properties.rawValue)
            w.u8(report.isAnonymous ? 0xFF : report.address.type.rawValue)
            w.append(report.address.address.littleEndianBytes)
            w.u8(report.primaryPHY.rawValue)
            w.u8(report.secondaryPHY?.rawValue ?? 0)
            w.u8(report.advertisingSID ?? 0xFF)
            w.i8(report.txPower)
            w.i8(report.rssi)
            w.u16(report.periodicAdvertisingInterval)
            w.u8(report.directAddress?.type.rawValue ?? 0)
            w.append((report.directAddress?.address ?? .zero).littleEndianBytes)
            let data = report.data.prefix(Int(UInt8.max))
            w.u8(UInt8(data.count))
            w.append(data)
        }
    }
}

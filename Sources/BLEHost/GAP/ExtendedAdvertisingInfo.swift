import BLEHCI

/// What an advertisement sent with Bluetooth 5's extended advertising PDUs says beyond a legacy
/// one, as the controller reports it in LE Extended Advertising Report (Core spec Vol 4 Part E
/// §7.7.65.13): the advertising set, the PHYs it was heard on, the advertiser's transmit power
/// and whether it also advertises periodically.
public struct ExtendedAdvertisingInfo: Sendable, Hashable {
    /// Advertising_SID: which of the advertiser's sets this is (0–15); nil when the advertiser
    /// sent no ADI field.
    public var advertisingSID: UInt8?
    /// The PHY of the primary advertising channels: LE 1M or LE Coded (long range).
    public var primaryPHY: LEPHY
    /// The PHY of the auxiliary packets that carried the data (LE 1M, 2M or Coded); nil when
    /// there were none.
    public var secondaryPHY: LEPHY?
    /// The advertiser's transmit power in dBm, when it sent it.
    public var txPower: Int8?
    /// The interval of the set's periodic advertising in 1.25 ms units (Vol 6 Part B §4.4.2.12),
    /// when it has one: a scanner can then sync to it by address and `advertisingSID`.
    public var periodicAdvertisingInterval: UInt16?
    /// The advertiser sent no address (an anonymous advertisement, Vol 6 Part B §2.3.4.9).
    public var isAnonymous: Bool

    /// The fields as a report gives them (tests and code that show devices build these). The
    /// values a report uses for "none" mean none here too: a SID beyond 0x0F (0xFF), TX power
    /// 127, secondary PHY 0, periodic interval 0 (§7.7.65.13).
    public init(advertisingSID: UInt8?, primaryPHY: LEPHY, secondaryPHY: LEPHY? = nil, txPower: Int8? = nil,
                periodicAdvertisingInterval: UInt16? = nil, isAnonymous: Bool = false) {
        self.advertisingSID = advertisingSID.flatMap { $0 <= 0x0F ? $0 : nil }
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY.flatMap { $0.rawValue == 0 ? nil : $0 }
        self.txPower = txPower.flatMap { $0 == LEAdvertisingReport.unavailable ? nil : $0 }
        self.periodicAdvertisingInterval = periodicAdvertisingInterval.flatMap { $0 == 0 ? nil : $0 }
        self.isAnonymous = isAnonymous
    }

    /// The periodic advertising interval as a duration.
    public var periodicInterval: Duration? {
        periodicAdvertisingInterval.map { .microseconds(Int64($0) * 1250) }
    }
}

extension ExtendedAdvertisingInfo {
    // Packed into one word for the scan's hot path, which stores and compares it per report
    // (an optional struct of optionals costs calls into the runtime there): bits 0-7 the primary
    // PHY, 8-15 the secondary (0: none), 16-23 the SID (0xFF: none), 24-31 the TX power's bit
    // pattern (127: unavailable), 32-47 the periodic interval (0: none), bit 48 anonymous, bit
    // 56 set for every extended advertisement; 0 is a legacy one.

    /// The extended fields of `report` packed; 0 for a report of a legacy PDU.
    @inline(__always)
    static func packed(_ report: LEAdvertisingReportRef) -> UInt64 {
        guard !report.properties.isLegacy else { return 0 }
        return UInt64(report.primaryPHY.rawValue) | UInt64(report.secondaryPHY?.rawValue ?? 0) << 8
            | UInt64(report.advertisingSID ?? 0xFF) << 16 | UInt64(UInt8(bitPattern: report.txPower)) << 24
            | UInt64(report.periodicAdvertisingInterval) << 32 | (report.isAnonymous ? 1 << 48 : 0) | 1 << 56
    }

    /// These fields packed (never 0).
    var packed: UInt64 {
        UInt64(primaryPHY.rawValue) | UInt64(secondaryPHY?.rawValue ?? 0) << 8 | UInt64(advertisingSID ?? 0xFF) << 16
            | UInt64(UInt8(bitPattern: txPower ?? LEAdvertisingReport.unavailable)) << 24
            | UInt64(periodicAdvertisingInterval ?? 0) << 32 | (isAnonymous ? 1 << 48 : 0) | 1 << 56
    }

    /// The fields `packed` holds; nil for 0 (a legacy advertisement).
    init?(packed: UInt64) {
        guard packed != 0 else { return nil }
        let byte = { (shift: UInt64) in UInt8(truncatingIfNeeded: packed >> shift) }
        let interval = UInt16(truncatingIfNeeded: packed >> 32)
        let tx = Int8(bitPattern: byte(24))
        self.init(advertisingSID: byte(16) == 0xFF ? nil : byte(16), primaryPHY: LEPHY(rawValue: byte(0)),
                  secondaryPHY: byte(8) == 0 ? nil : LEPHY(rawValue: byte(8)),
                  txPower: tx == LEAdvertisingReport.unavailable ? nil : tx,
                  periodicAdvertisingInterval: interval == 0 ? nil : interval, isAnonymous: packed >> 48 & 1 == 1)
    }
}

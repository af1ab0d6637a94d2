import BLEWire

/// The parameters of one advertising set, as LE Set Extended Advertising Parameters [v1] lays
/// them out. Core spec Vol 4 Part E §7.8.53.
///
/// Units are the spec's: intervals in 0.625 ms (24 bits on the wire, 0x000020 at least). The
/// Advertising_Event_Properties reuse `AdvertisingEventProperties`: connectable (bit 0),
/// scannable (1), directed (2), high duty cycle directed (3), legacy PDUs (4), anonymous (5),
/// include TX power (6).
public struct ExtendedAdvertisingParameters: Hashable, Sendable {
    /// Advertising_Handle: which set, 0x00...0xEF.
    public var handle: UInt8
    /// Advertising_Event_Properties.
    public var properties: AdvertisingEventProperties
    /// Primary_Advertising_Interval_Min, 0.625 ms units (24 bits).
    public var intervalMin: UInt32
    /// Primary_Advertising_Interval_Max, 0.625 ms units (24 bits).
    public var intervalMax: UInt32
    /// Primary_Advertising_Channel_Map.
    public var channelMap: AdvertisingChannelMap
    /// Own_Address_Type; `.random` is the set's own random address (LE Set Advertising Set
    /// Random Address), not the one LE Set Random Address gives.
    public var ownAddressType: OwnAddressType
    /// The peer of directed advertising (or the resolving-list entry for types 2/3).
    public var peer: DeviceAddress
    /// Advertising_Filter_Policy.
    public var filterPolicy: AdvertisingFilterPolicy
    /// Advertising_TX_Power in dBm, -127...+20, or 0x7F (`noPreference`).
    public var txPower: Int8
    /// Primary_Advertising_PHY: LE 1M or LE Coded.
    public var primaryPHY: LEPHY
    /// Secondary_Advertising_Max_Skip: advertising events the auxiliary packets may skip.
    public var secondaryMaxSkip: UInt8
    /// Secondary_Advertising_PHY: LE 1M, LE 2M or LE Coded.
    public var secondaryPHY: LEPHY
    /// Advertising_SID, 0x0...0xF: tells this set's advertisements apart from the device's others.
    public var sid: UInt8
    /// Scan_Request_Notification_Enable: report each scan request (LE Scan Request Received).
    public var scanRequestNotifications: Bool

    /// Advertising_TX_Power value meaning "the host has no preference".
    public static let noPreference: Int8 = 0x7F

    /// A set with the given handle and properties; the rest default to what a general-purpose
    /// advertiser uses (100 ms interval, all three primary channels, public address, no filter,
    /// no TX power preference, LE 1M both ways, SID 0).
    public init(handle: UInt8, properties: AdvertisingEventProperties,
                intervalMin: UInt32 = 0xA0, intervalMax: UInt32 = 0xA0, channelMap: AdvertisingChannelMap = .all,
                ownAddressType: OwnAddressType = .public, peer: DeviceAddress = DeviceAddress(.zero, type: .public),
                filterPolicy: AdvertisingFilterPolicy = .acceptAll, txPower: Int8 = ExtendedAdvertisingParameters.noPreference,
                primaryPHY: LEPHY = .le1M, secondaryMaxSkip: UInt8 = 0, secondaryPHY: LEPHY = .le1M,
                sid: UInt8 = 0, scanRequestNotifications: Bool = false) {
        self.handle = handle
        self.properties = properties
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.channelMap = channelMap
        self.ownAddressType = ownAddressType
        self.peer = peer
        self.filterPolicy = filterPolicy
        self.txPower = txPower
        self.primaryPHY = primaryPHY
        self.secondaryMaxSkip = secondaryMaxSkip
        self.secondaryPHY = secondaryPHY
        self.sid = sid
        self.scanRequestNotifications = scanRequestNotifications
    }
}

extension AdvertisingEventProperties {
    /// High duty cycle directed connectable advertising (Advertising_Event_Properties bit 3).
    public static let highDutyCycleDirected = AdvertisingEventProperties(rawValue: 1 << 3)
    /// Omit the advertiser's address from all PDUs (bit 5).
    public static let anonymous = AdvertisingEventProperties(rawValue: 1 << 5)
    /// Include TX power in the extended header of at least one PDU (bit 6).
    public static let includeTxPower = AdvertisingEventProperties(rawValue: 1 << 6)
}

/// Operation of LE Set Extended Advertising Data, Scan Response Data and Periodic Advertising
/// Data: where this command's fragment sits in the set's data. §7.8.54, §7.8.55, §7.8.62.
public enum AdvertisingDataOperation: UInt8, Hashable, Sendable {
    /// An intermediate fragment.
    case intermediate = 0x00
    /// The first fragment of several.
    case first = 0x01
    /// The last fragment of several.
    case last = 0x02
    /// The whole data in one command.
    case complete = 0x03
    /// No new data: the controller only changes the Advertising DID (extended advertising data
    /// only).
    case unchanged = 0x04
}

/// One command's share of a set's data: its operation and its bytes.
public struct AdvertisingDataFragment: Hashable, Sendable {
    public var operation: AdvertisingDataOperation
    public var bytes: [UInt8]

    public init(operation: AdvertisingDataOperation, bytes: [UInt8]) {
        self.operation = operation
        self.bytes = bytes
    }

    /// The most data octets one LE Set Extended Advertising Data or Scan Response Data command
    /// carries (its parameters must fit in 255 octets with 4 of header). §7.8.54.
    public static let extendedLimit = 251
    /// The most one LE Set Periodic Advertising Data command carries (3 octets of header). §7.8.62.
    public static let periodicLimit = 252

    /// `data` cut into commands of at most `limit` octets, with the operations the spec asks for:
    /// one `.complete` when it fits (also for empty data, which clears the set's data), else
    /// `.first`, `.intermediate`..., `.last`.
    public static func fragments(of data: [UInt8], limit: Int) -> [AdvertisingDataFragment] {
        let size = max(1, limit)
        guard data.count > size else { return [AdvertisingDataFragment(operation: .complete, bytes: data)] }
        var result: [AdvertisingDataFragment] = []
        var start = 0
        while start < data.count {
            let end = min(start + size, data.count)
            let operation: AdvertisingDataOperation = start == 0 ? .first : end == data.count ? .last : .intermediate
            result.append(AdvertisingDataFragment(operation: operation, bytes: Array(data[start..<end])))
            start = end
        }
        return result
    }
}

/// One set's entry in LE Set Extended Advertising Enable. §7.8.56.
public struct AdvertisingSetEnable: Hashable, Sendable {
    /// Advertising_Handle.
    public var handle: UInt8
    /// Duration in 10 ms units; 0: until disabled.
    public var duration: UInt16
    /// Max_Extended_Advertising_Events; 0: no limit.
    public var maxEvents: UInt8

    public init(handle: UInt8, duration: UInt16 = 0, maxEvents: UInt8 = 0) {
        self.handle = handle
        self.duration = duration
        self.maxEvents = maxEvents
    }
}

/// One PHY's entry in LE Set Extended Scan Parameters. §7.8.64.
public struct ExtendedScanPHYParameters: Hashable, Sendable {
    /// Scan_Type.
    public var type: LEScanType
    /// Scan_Interval, 0.625 ms units.
    public var interval: UInt16
    /// Scan_Window, 0.625 ms units.
    public var window: UInt16

    public init(type: LEScanType, interval: UInt16 = 0x0060, window: UInt16 = 0x0030) {
        self.type = type
        self.interval = interval
        self.window = window
    }
}

/// One PHY's entry in LE Extended Create Connection [v1]. §7.8.66.
public struct ExtendedConnectionPHYParameters: Hashable, Sendable {
    /// Scan_Interval and Scan_Window, 0.625 ms units (ignored for LE 2M, which is not scanned).
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    /// Connection_Interval_Min/Max, 1.25 ms units.
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// Max_Latency, in connection events.
    public var latency: UInt16
    /// Supervision_Timeout, 10 ms units.
    public var supervisionTimeout: UInt16
    /// Min_CE_Length/Max_CE_Length, 0.625 ms units.
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, intervalMin: UInt16 = 0x0018,
                intervalMax: UInt16 = 0x0028, latency: UInt16 = 0, supervisionTimeout: UInt16 = 0x01F4,
                minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }
}

/// Options of LE Periodic Advertising Create Sync. §7.8.67.
public struct PeriodicSyncOptions: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Sync to any advertiser in the Periodic Advertiser List (the address and SID are ignored).
    public static let useAdvertiserList = PeriodicSyncOptions(rawValue: 1 << 0)
    /// Reports start disabled (LE Set Periodic Advertising Receive Enable turns them on).
    public static let reportingInitiallyDisabled = PeriodicSyncOptions(rawValue: 1 << 1)
    /// Duplicate filtering initially enabled.
    public static let duplicateFiltering = PeriodicSyncOptions(rawValue: 1 << 2)
}

/// Mode of LE Set (Default) Periodic Advertising Sync Transfer Parameters: what the controller
/// does with a sync transferred over a connection. §7.8.91.
public enum PeriodicSyncTransferMode: UInt8, Hashable, Sendable {
    /// Ignore transfers (no event).
    case off = 0x00
    /// Sync, reports disabled.
    case syncWithoutReports = 0x01
    /// Sync, reports enabled, duplicate filtering off.
    case syncWithReports = 0x02
    /// Sync, reports enabled, duplicate filtering on.
    case syncWithReportsFilteringDuplicates = 0x03
}

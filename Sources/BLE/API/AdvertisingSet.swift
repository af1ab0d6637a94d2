import BLEHCI
import BLEWire

/// How one Bluetooth 5 advertising set advertises (Core spec Vol 4 Part E §7.8.53, Vol 6 Part B
/// §4.4.2): extended PDUs by default (data up to the controller's maximum, the LE Coded PHY),
/// or legacy PDUs sent through the extended commands.
public struct AdvertisingSetParameters: Sendable, Hashable {
    /// Connectable, scannable or neither. Extended advertising is one or the other, never both
    /// (Vol 6 Part B §2.3.1.4: AUX_ADV_IND is connectable or scannable); with `legacyPDUs`,
    /// `.connectable` is ADV_IND, both at once, as in legacy advertising.
    public var kind: AdvertisingParameters.Kind
    /// Send legacy PDUs (ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND): heard by Bluetooth 4 scanners,
    /// data and scan response at most 31 octets each, LE 1M only.
    public var legacyPDUs: Bool
    /// The primary advertising interval range, 20 ms ... 10,485.759375 s (24 bits of 0.625 ms).
    public var intervalMin: Duration
    /// The upper end of the interval range (equal to `intervalMin` for a fixed interval).
    public var intervalMax: Duration
    /// The PHY of the primary channel packets (ADV_EXT_IND): LE 1M or LE Coded.
    public var primaryPHY: LEPHY
    /// The PHY of the auxiliary packets that carry the data: LE 1M, LE 2M or LE Coded.
    public var secondaryPHY: LEPHY
    /// The TX power the host would like, in dBm (-127 ... +20); nil: the controller chooses.
    /// What it chose is `AdvertisingSet.txPower`.
    public var txPower: Int8?
    /// Put the TX power in the advertisements' extended header (scanners then see it).
    public var includeTxPower: Bool
    /// Advertising_SID, 0...15; nil: the lowest not used by another set of this host.
    public var sid: UInt8?
    /// Omit the advertiser's address from the PDUs (non-connectable, non-scannable sets only).
    public var anonymous: Bool
    /// The address the set advertises from.
    public var address: AdvertisingSetAddress
    /// Stop after this long (10 ms ... 655.35 s); nil: until stopped. The set then ends with
    /// `AdvertisingSetTermination.Reason.timeout`.
    public var duration: Duration?
    /// Stop after this many extended advertising events (1 ... 255); nil: no limit.
    public var maxEvents: Int?
    /// For a connectable set: advertise again as soon as a connection is made from it (the
    /// controller ends a connectable set at each connection, §7.7.65.18), so more centrals can
    /// connect.
    public var continueWhileConnected: Bool
    /// For a connectable set: advertise again when a connection made from it ends.
    public var restartAfterDisconnect: Bool

    /// Parameters for a set advertising every `interval` (100 ms by default) on LE 1M with
    /// extended PDUs, from the host's own address.
    public init(kind: AdvertisingParameters.Kind = .nonConnectable, legacyPDUs: Bool = false,
                interval: Duration = .milliseconds(100), intervalMax: Duration? = nil,
                primaryPHY: LEPHY = .le1M, secondaryPHY: LEPHY = .le1M, txPower: Int8? = nil, includeTxPower: Bool = false,
                sid: UInt8? = nil, anonymous: Bool = false, address: AdvertisingSetAddress = .host,
                duration: Duration? = nil, maxEvents: Int? = nil,
                continueWhileConnected: Bool = false, restartAfterDisconnect: Bool = true) {
        self.kind = kind
        self.legacyPDUs = legacyPDUs
        self.intervalMin = interval
        self.intervalMax = intervalMax ?? interval
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.txPower = txPower
        self.includeTxPower = includeTxPower
        self.sid = sid
        self.anonymous = anonymous
        self.address = address
        self.duration = duration
        self.maxEvents = maxEvents
        self.continueWhileConnected = continueWhileConnected
        self.restartAfterDisconnect = restartAfterDisconnect
    }

    /// Advertising_Event_Properties (§7.8.53).
    var properties: AdvertisingEventProperties {
        if legacyPDUs {
            switch kind {
            case .connectable: return [.legacy, .connectable, .scannable]
            case .scannable: return [.legacy, .scannable]
            case .nonConnectable: return [.legacy]
            }
        }
        var p: AdvertisingEventProperties = []
        switch kind {
        case .connectable: p.insert(.connectable)
        case .scannable: p.insert(.scannable)
        case .nonConnectable: break
        }
        if anonymous { p.insert(.anonymous) }
        if includeTxPower { p.insert(.includeTxPower) }
        return p
    }

    /// Whether the set sends a scan response: scannable, or legacy connectable (ADV_IND).
    public var isScannable: Bool { kind == .scannable || (legacyPDUs && kind == .connectable) }

    /// The interval in 0.625 ms units and the enable entry's duration and event count, checked
    /// against §7.8.53 and §7.8.56; every mistake is an `.invalidArgument` naming the field.
    func validated(handle: UInt8, sid: UInt8, ownAddressType: OwnAddressType) throws(BLEError) -> (ExtendedAdvertisingParameters, AdvertisingSetEnable) {
        let lo = Self.units(intervalMin, 625), hi = Self.units(intervalMax, 625)
        guard (0x20...0xFF_FFFF).contains(lo), (0x20...0xFF_FFFF).contains(hi), lo <= hi else {
            throw .invalidArgument("advertising interval must be 20 ms ... 10,485 s with min ≤ max")
        }
        guard primaryPHY == .le1M || primaryPHY == .leCoded else {
            throw .invalidArgument("the primary advertising PHY is LE 1M or LE Coded, not \(primaryPHY)")
        }
        guard [LEPHY.le1M, .le2M, .leCoded].contains(secondaryPHY) else {
            throw .invalidArgument("the secondary advertising PHY is LE 1M, LE 2M or LE Coded, not \(secondaryPHY)")
        }
        if legacyPDUs {
            guard primaryPHY == .le1M, !anonymous, !includeTxPower else {
                throw .invalidArgument("legacy PDUs go on LE 1M, with the address and without TX power (Vol 4 Part E §7.8.53)")
            }
        }
        guard !anonymous || kind == .nonConnectable else {
            throw .invalidArgument("only a non-connectable, non-scannable set can be anonymous")
        }
        if let txPower, !(-127...20).contains(txPower) { throw .invalidArgument("TX power \(txPower) dBm is outside -127 ... +20") }
        guard sid <= 15 else { throw .invalidArgument("advertising SID \(sid) is outside 0 ... 15") }
        var enable = AdvertisingSetEnable(handle: handle)
        if let duration {
            let units = Self.units(duration, 10_000)
            guard (1...0xFFFF).contains(units) else { throw .invalidArgument("advertising duration must be 10 ms ... 655.35 s") }
            enable.duration = UInt16(units)
        }
        if let maxEvents {
            guard (1...255).contains(maxEvents) else { throw .invalidArgument("maximum advertising events must be 1 ... 255") }
            enable.maxEvents = UInt8(maxEvents)
        }
        let parameters = ExtendedAdvertisingParameters(
            handle: handle, properties: properties, intervalMin: UInt32(lo), intervalMax: UInt32(hi),
            ownAddressType: ownAddressType, txPower: txPower ?? ExtendedAdvertisingParameters.noPreference,
            primaryPHY: primaryPHY, secondaryPHY: legacyPDUs ? .le1M : secondaryPHY, sid: sid)
        return (parameters, enable)
    }

    /// `d` in units of `microseconds`, rounded to the nearest.
    /// -1 (outside every field's range) for a negative duration or one past a day.
    static func units(_ d: Duration, _ microseconds: Int) -> Int {
        let parts = d.components
        guard parts.seconds >= 0, parts.seconds < 86_400 else { return -1 }
        let us = parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
        return Int((Double(us) / Double(microseconds)).rounded())
    }
}

/// Where an advertising set's address comes from. A set's random address is its own (LE Set
/// Advertising Set Random Address, Vol 4 Part E §7.8.52), so several sets can look like
/// several devices.
public enum AdvertisingSetAddress: Sendable, Hashable {
    /// The host's own address: public, its static random address, or privacy's current
    /// resolvable private address (renewed with the host's, the set paused meanwhile).
    case host
    /// A random address of the set's own: a static random address (top two bits 11) or a
    /// non-resolvable private one (top two bits 00).
    case random(BDAddress)
}

/// Periodic advertising on a set (Vol 6 Part B §4.4.2.12, HCI Vol 4 Part E §7.8.61–§7.8.63):
/// AUX_SYNC_IND at a fixed interval that a scanner synced to the set receives.
public struct PeriodicAdvertisingParameters: Sendable, Hashable {
    /// The periodic interval range, 7.5 ms ... 81.91875 s (1.25 ms units).
    public var intervalMin: Duration
    /// The upper end of the range (equal to `intervalMin` for a fixed interval).
    public var intervalMax: Duration
    /// Put the TX power in the periodic PDUs.
    public var includeTxPower: Bool

    /// Periodic advertising every `interval` (or within `interval ... intervalMax`).
    public init(interval: Duration, intervalMax: Duration? = nil, includeTxPower: Bool = false) {
        self.intervalMin = interval
        self.intervalMax = intervalMax ?? interval
        self.includeTxPower = includeTxPower
    }

    /// The range in 1.25 ms units (§7.8.61).
    func units() throws(BLEError) -> (min: UInt16, max: UInt16) {
        let lo = AdvertisingSetParameters.units(intervalMin, 1_250), hi = AdvertisingSetParameters.units(intervalMax, 1_250)
        guard (0x0006...0xFFFF).contains(lo), (0x0006...0xFFFF).contains(hi), lo <= hi else {
            throw .invalidArgument("periodic advertising interval must be 7.5 ms ... 81.9 s with min ≤ max")
        }
        return (UInt16(lo), UInt16(hi))
    }
}

/// A running advertising set, as `PeripheralManager.startAdvertisingSet` started it.
public struct AdvertisingSet: Sendable, Hashable, CustomStringConvertible {
    /// Advertising_Handle: names the set to the controller and in `stopAdvertisingSet`.
    public let handle: UInt8
    /// Advertising_SID: how scanners tell this set from the device's others.
    public let sid: UInt8
    /// The address it advertises from (nil for an anonymous set).
    public let address: DeviceAddress?
    /// The TX power the controller chose, in dBm (§7.8.53's return parameter).
    public let txPower: Int8
    /// Whether it sends extended PDUs (not legacy ones).
    public let extended: Bool

    /// "set 1 SID 1 C0:11:22:33:44:55/random", as `ble advertise` prints it.
    public var description: String {
        "set \(handle) SID \(sid) \(address.map { "\($0)" } ?? "anonymous")"
    }
}

/// How an advertising set ended by itself (LE Advertising Set Terminated, Vol 4 Part E
/// §7.7.65.18).
public struct AdvertisingSetTermination: Sendable, Hashable {
    /// Why it ended.
    public enum Reason: Sendable, Hashable {
        /// A central connected to it; the connection belongs to this set.
        case connected(ConnectedCentral)
        /// Its duration ran out (Advertising Timeout, 0x3C).
        case timeout
        /// It sent its maximum number of events (Limit Reached, 0x43).
        case limitReached
        /// Another status from the controller.
        case failed(HCIStatus)

        /// Whether a central connected (the set did not end for good).
        public var isConnection: Bool {
            if case .connected = self { return true }
            return false
        }
    }

    /// The set that ended.
    public let set: UInt8
    /// Why.
    public let reason: Reason
    /// Extended advertising events it completed (Num_Completed_Extended_Advertising_Events).
    public let completedEvents: Int
    /// Whether the host turned it back on (`continueWhileConnected`).
    public let restarting: Bool
}

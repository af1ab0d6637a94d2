import BLEWire

/// What kind of advertising PDU a report came from. Core spec Vol 4 Part E §7.7.65.2 (legacy
/// Event_Type) and Vol 6 Part B §2.3.
public enum AdvertisingEventKind: Sendable, Hashable {
    /// ADV_IND: connectable and scannable undirected.
    case connectableUndirected
    /// ADV_DIRECT_IND: connectable directed.
    case connectableDirected
    /// ADV_SCAN_IND: scannable, not connectable.
    case scannableUndirected
    /// ADV_NONCONN_IND: neither.
    case nonConnectable
    /// SCAN_RSP: the answer to our scan request.
    case scanResponse

    /// Whether the advertiser accepts a connection request (ADV_IND, ADV_DIRECT_IND).
    public var isConnectable: Bool { self == .connectableUndirected || self == .connectableDirected }
    /// Whether an active scanner may send a scan request for a scan response (ADV_IND, ADV_SCAN_IND).
    public var isScannable: Bool { self == .connectableUndirected || self == .scannableUndirected }
}

/// One advertising report as the GAP layer needs it, independent of which HCI event carried it.
public struct AdvertisingReportInput: Sendable, Hashable {
    public var kind: AdvertisingEventKind
    public var address: DeviceAddress
    public var data: [UInt8]
    /// nil when the controller could not measure it (127, Vol 4 Part E §7.7.65.2).
    public var rssi: Int8?

    public init(kind: AdvertisingEventKind, address: DeviceAddress, data: [UInt8], rssi: Int8?) {
        self.kind = kind
        self.address = address
        self.data = data
        self.rssi = rssi
    }
}

/// Which advertisements a scan reports.
public struct ScanFilter: Sendable, Hashable {
    /// Report only devices advertising at least one of these services (empty: any).
    public var serviceUUIDs: [BluetoothUUID]
    /// Report only devices whose name contains this text, case-insensitively.
    public var nameContains: String?
    /// Report only devices heard at this RSSI (dBm) or stronger.
    public var minimumRSSI: Int?
    /// Report a device again every time it is heard, not only when its data changes.
    public var allowDuplicates: Bool

    /// A filter; with the defaults it lets every device through, once per change of its data.
    /// All the conditions given must hold.
    public init(serviceUUIDs: [BluetoothUUID] = [], nameContains: String? = nil, minimumRSSI: Int? = nil, allowDuplicates: Bool = false) {
        self.serviceUUIDs = serviceUUIDs
        self.nameContains = nameContains
        self.minimumRSSI = minimumRSSI
        self.allowDuplicates = allowDuplicates
    }

    /// Whether `device` passes: one of `serviceUUIDs` advertised (in a service list or as service
    /// data), the name containing `nameContains`, the RSSI at least `minimumRSSI`. A device with
    /// no name or no RSSI fails the conditions on them. `allowDuplicates` is not checked here.
    public func matches(_ device: ScannedDevice) -> Bool {
        if !serviceUUIDs.isEmpty {
            let advertised = Set(device.advertisement.serviceUUIDs + device.advertisement.serviceData.map(\.uuid))
            if !serviceUUIDs.contains(where: advertised.contains) { return false }
        }
        if let text = nameContains, !text.isEmpty {
            guard let name = device.advertisement.localName, name.lowercased().contains(text.lowercased()) else { return false }
        }
        if let minimum = minimumRSSI {
            guard let rssi = device.rssi, Int(rssi) >= minimum else { return false }
        }
        return true
    }
}

/// A device as a scan knows it: the advertisement merged with its scan response, the last RSSI,
/// and when it was last heard, so a list can age out devices that went quiet.
public struct ScannedDevice: Sendable, Hashable {
    /// The advertiser's address and type (identifies the device in `connect`).
    public var address: DeviceAddress
    /// Advertising data merged with the latest scan response.
    public var advertisement: AdvertisingData
    /// The signal strength of the last report in dBm; nil when the controller could not measure it.
    public var rssi: Int8?
    /// Whether the last advertisement accepted connections.
    public var isConnectable: Bool
    /// Time of the last report (the host clock's `now`, from its origin).
    public var lastSeen: Duration
    /// Time of the first report in this scan (the host clock's `now`).
    public var firstSeen: Duration
    /// True once a scan response has been merged in.
    public var hasScanResponse: Bool
    /// The identity address of the bonded device behind `address`, when `address` is a
    /// resolvable private address one of its IRKs resolves (Core spec Vol 3 Part C §10.8.2), or
    /// the controller resolved it; nil otherwise. Connecting to it reaches the device.
    public var identity: DeviceAddress?

    /// A device as a scan reports it. Scans make these; the initializer is for code that shows
    /// devices to be tried on fixed input.
    public init(address: DeviceAddress, advertisement: AdvertisingData, rssi: Int8?, isConnectable: Bool,
                lastSeen: Duration, firstSeen: Duration, hasScanResponse: Bool) {
        self.address = address
        self.advertisement = advertisement
        self.rssi = rssi
        self.isConnectable = isConnectable
        self.lastSeen = lastSeen
        self.firstSeen = firstSeen
        self.hasScanResponse = hasScanResponse
    }
}

/// Merges advertising reports into devices and decides which to report. Sans-IO: the owner feeds
/// reports with the time and gets back the devices to deliver.
///
/// Active scanning (Core spec Vol 6 Part B §4.4.3.2): for a scannable advertisement the report is
/// held until the scan response arrives, so the user sees one merged advertisement; if the next
/// advertisement from that device comes first (the scan response was lost), the held one is
/// reported without it. Passive scanning and non-scannable PDUs are reported at once.
public struct ScanAggregator: Sendable {
    public let active: Bool
    public var filter: ScanFilter
    public private(set) var devices: [DeviceAddress: ScannedDevice] = [:]
    private var rawAdvertising: [DeviceAddress: [UInt8]] = [:]
    private var rawScanResponse: [DeviceAddress: [UInt8]] = [:]
    private var awaitingScanResponse: Set<DeviceAddress> = []
    private var reported: [DeviceAddress: AdvertisingData] = [:]

    public init(active: Bool, filter: ScanFilter) {
        self.active = active
        self.filter = filter
    }

    /// Takes one report; returns the devices to deliver now (zero, one, or — when a held report
    /// is flushed — two entries for the same device).
    public mutating func receive(_ report: AdvertisingReportInput, now: Duration) -> [ScannedDevice] {
        let key = report.address
        var out: [ScannedDevice] = []
        if report.kind == .scanResponse {
            rawScanResponse[key] = report.data
            awaitingScanResponse.remove(key)
            guard devices[key] != nil else {
                // A scan response without its advertisement: keep it for when the advertisement comes.
                return []
            }
            update(key, report: report, now: now, scanResponse: true)
            if let d = devices[key], let emitted = emitIfWanted(d) { out.append(emitted) }
            return out
        }
        if awaitingScanResponse.contains(key), let held = devices[key], let emitted = emitIfWanted(held) {
            out.append(emitted)
        }
        rawAdvertising[key] = report.data
        update(key, report: report, now: now, scanResponse: false)
        if active && report.kind.isScannable {
            awaitingScanResponse.insert(key)
            return out
        }
        awaitingScanResponse.remove(key)
        if let d = devices[key], let emitted = emitIfWanted(d) { out.append(emitted) }
        return out
    }

    /// Devices not heard for `maximumAge` as of `now`, removed from the table.
    public mutating func removeStale(olderThan maximumAge: Duration, now: Duration) -> [ScannedDevice] {
        let stale = devices.values.filter { now - $0.lastSeen > maximumAge }
        for d in stale {
            devices[d.address] = nil
            rawAdvertising[d.address] = nil
            rawScanResponse[d.address] = nil
            awaitingScanResponse.remove(d.address)
            reported[d.address] = nil
        }
        return stale
    }

    private mutating func update(_ key: DeviceAddress, report: AdvertisingReportInput, now: Duration, scanResponse: Bool) {
        var merged = AdvertisingData(bytes: rawAdvertising[key] ?? [])
        let response = rawScanResponse[key]
        if let response { merged = merged.merging(AdvertisingData(bytes: response)) }
        if var existing = devices[key] {
            existing.advertisement = merged
            if let r = report.rssi { existing.rssi = r }
            existing.lastSeen = now
            if !scanResponse { existing.isConnectable = report.kind.isConnectable }
            existing.hasScanResponse = response != nil
            devices[key] = existing
        } else {
            devices[key] = ScannedDevice(
                address: key, advertisement: merged, rssi: report.rssi,
                isConnectable: report.kind.isConnectable, lastSeen: now, firstSeen: now,
                hasScanResponse: response != nil)
        }
    }

    private mutating func emitIfWanted(_ device: ScannedDevice) -> ScannedDevice? {
        guard filter.matches(device) else { return nil }
        if !filter.allowDuplicates, reported[device.address] == device.advertisement { return nil }
        reported[device.address] = device.advertisement
        return device
    }
}

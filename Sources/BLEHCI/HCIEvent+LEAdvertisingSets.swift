import BLEWire

/// LE Periodic Advertising Sync Established. Core spec Vol 4 Part E §7.7.65.14: a sync started
/// with LE Periodic Advertising Create Sync is up (or failed, or was cancelled: then only
/// `status` is meaningful).
public struct LEPeriodicSyncEstablished: Hashable, Sendable {
    public var status: HCIStatus
    /// Sync_Handle, 0x0000...0x0EFF: names the sync in its reports and in Terminate Sync.
    public var syncHandle: UInt16
    /// Advertising_SID of the set synced to.
    public var sid: UInt8
    /// The advertiser (an identity address, types 0x02/0x03, when the controller resolved it).
    public var advertiser: DeviceAddress
    /// Advertiser_PHY: the PHY of the periodic train.
    public var phy: LEPHY
    /// Periodic_Advertising_Interval in 1.25 ms units.
    public var interval: UInt16
    /// Advertiser_Clock_Accuracy code (0 = 500 ppm ... 7 = 20 ppm).
    public var clockAccuracy: UInt8

    public init(status: HCIStatus, syncHandle: UInt16, sid: UInt8, advertiser: DeviceAddress, phy: LEPHY,
                interval: UInt16, clockAccuracy: UInt8) {
        self.status = status
        self.syncHandle = syncHandle
        self.sid = sid
        self.advertiser = advertiser
        self.phy = phy
        self.interval = interval
        self.clockAccuracy = clockAccuracy
    }
}

/// LE Periodic Advertising Report [v1]. §7.7.65.15: one AUX_SYNC_IND (or AUX_CHAIN_IND) of a
/// synced train. Data longer than one report comes in several, each `incompleteMoreToCome` but
/// the last.
public struct LEPeriodicAdvertisingReport: Hashable, Sendable {
    public var syncHandle: UInt16
    /// dBm, or 127 (`LEAdvertisingReport.unavailable`).
    public var txPower: Int8
    /// dBm, or 127 (`LEAdvertisingReport.unavailable`).
    public var rssi: Int8
    /// CTE_Type: 0x00-0x02 a Constant Tone Extension's type, 0xFF none.
    public var cteType: UInt8
    public var dataStatus: AdvertisingDataStatus
    public var data: [UInt8]

    public init(syncHandle: UInt16, txPower: Int8 = LEAdvertisingReport.unavailable, rssi: Int8, cteType: UInt8 = 0xFF,
                dataStatus: AdvertisingDataStatus = .complete, data: [UInt8]) {
        self.syncHandle = syncHandle
        self.txPower = txPower
        self.rssi = rssi
        self.cteType = cteType
        self.dataStatus = dataStatus
        self.data = data
    }
}

/// LE Advertising Set Terminated. §7.7.65.18: a set stopped on its own: its duration or event
/// limit ran out (status 0x3C Advertising Timeout or 0x43 Limit Reached), or a connection was
/// made from it (status 0, `connectionHandle` that connection's).
public struct LEAdvertisingSetTerminated: Hashable, Sendable {
    public var status: HCIStatus
    public var advertisingHandle: UInt8
    public var connectionHandle: UInt16
    /// Num_Completed_Extended_Advertising_Events.
    public var completedEvents: UInt8

    public init(status: HCIStatus, advertisingHandle: UInt8, connectionHandle: UInt16, completedEvents: UInt8) {
        self.status = status
        self.advertisingHandle = advertisingHandle
        self.connectionHandle = connectionHandle
        self.completedEvents = completedEvents
    }
}

/// LE Periodic Advertising Sync Transfer Received [v1]. §7.7.65.24: the peer of a connection
/// handed us a sync (PAST); on success the controller is synced as if by Create Sync.
public struct LEPeriodicSyncTransferReceived: Hashable, Sendable {
    public var connectionHandle: UInt16
    /// Service_Data the peer's host gave with the transfer.
    public var serviceData: UInt16
    /// The sync, as LE Periodic Advertising Sync Established would report it.
    public var sync: LEPeriodicSyncEstablished

    public init(connectionHandle: UInt16, serviceData: UInt16, sync: LEPeriodicSyncEstablished) {
        self.connectionHandle = connectionHandle
        self.serviceData = serviceData
        self.sync = sync
    }
}

extension LEMetaEvent {
    /// §7.7.65.14's fields after Status and Sync_Handle (shared with §7.7.65.24).
    static func decodeSyncFields(_ r: inout ByteReader, status: HCIStatus, syncHandle: UInt16) throws(WireError) -> LEPeriodicSyncEstablished {
        let sid = try r.readU8()
        let rawType = try r.readU8()
        let address = try r.readBDADDRess()
        let type: AddressType
        if let known = AddressType(rawValue: rawType) {
            type = known
        } else if status.isSuccess {
            throw WireError.invalid("advertiser address type 0x\(hex2(rawType))")
        } else {
            type = .public
        }
        return LEPeriodicSyncEstablished(status: status, syncHandle: syncHandle, sid: sid, advertiser: DeviceAddress(address, type: type),
                                         phy: LEPHY(rawValue: try r.readU8()), interval: try r.readU16(), clockAccuracy: try r.readU8())
    }

    static func encodeSyncFields(_ s: LEPeriodicSyncEstablished, into w: inout ByteWriter) {
        w.u8(s.sid)
        w.u8(s.advertiser.type.rawValue)
        w.append(s.advertiser.address.littleEndianBytes)
        w.u8(s.phy.rawValue)
        w.u16(s.interval)
        w.u8(s.clockAccuracy)
    }

    /// §7.7.65.15. A Data_Length beyond what the event holds is an error; Data_Status 3
    /// (reserved) is kept as `.reserved`.
    static func decodePeriodicReport(_ r: inout ByteReader) throws(WireError) -> LEPeriodicAdvertisingReport {
        let handle = try r.readHandle()
        let txPower = try r.readI8()
        let rssi = try r.readI8()
        let cte = try r.readU8()
        let status = AdvertisingDataStatus(rawValue: try r.readU8() & 0x03) ?? .reserved
        let length = Int(try r.readU8())
        return LEPeriodicAdvertisingReport(syncHandle: handle, txPower: txPower, rssi: rssi, cteType: cte,
                                           dataStatus: status, data: try r.readBytes(length))
    }

    static func encodePeriodicReport(_ p: LEPeriodicAdvertisingReport, into w: inout ByteWriter) {
        let data = p.data.prefix(Int(UInt8.max))
        w.u16(p.syncHandle)
        w.i8(p.txPower)
        w.i8(p.rssi)
        w.u8(p.cteType)
        w.u8(p.dataStatus.rawValue)
        w.u8(UInt8(data.count))
        w.append(data)
    }

    /// §7.7.65.18.
    static func decodeSetTerminated(_ r: inout ByteReader) throws(WireError) -> LEAdvertisingSetTerminated {
        LEAdvertisingSetTerminated(status: HCIStatus(try r.readU8()), advertisingHandle: try r.readU8(),
                                   connectionHandle: try r.readHandle(), completedEvents: try r.readU8())
    }

    /// §7.7.65.19: Advertising_Handle, Scanner_Address_Type, Scanner_Address.
    static func decodeScanRequest(_ r: inout ByteReader) throws(WireError) -> LEMetaEvent {
        let handle = try r.readU8()
        let rawType = try r.readU8()
        guard let type = AddressType(rawValue: rawType) else { throw WireError.invalid("scanner address type 0x\(hex2(rawType))") }
        return .scanRequestReceived(advertisingHandle: handle, scanner: DeviceAddress(try r.readBDADDRess(), type: type))
    }

    /// §7.7.65.24: Status, Connection_Handle, Service_Data, Sync_Handle, then §7.7.65.14's fields.
    static func decodeSyncTransferReceived(_ r: inout ByteReader) throws(WireError) -> LEPeriodicSyncTransferReceived {
        let status = HCIStatus(try r.readU8())
        let connection = try r.readHandle()
        let serviceData = try r.readU16()
        let syncHandle = try r.readHandle()
        return LEPeriodicSyncTransferReceived(connectionHandle: connection, serviceData: serviceData,
                                              sync: try decodeSyncFields(&r, status: status, syncHandle: syncHandle))
    }
}

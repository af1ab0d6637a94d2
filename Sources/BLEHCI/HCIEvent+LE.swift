import BLEWire

/// The role of the local device on a connection. Core spec Vol 4 Part E §7.7.65.1.
public enum LERole: UInt8, Hashable, Sendable {
    case central = 0x00
    case peripheral = 0x01
}

/// One LE PHY as events report it (1 = LE 1M, 2 = LE 2M, 3 = LE Coded). §7.7.65.12, §7.8.47.
/// A struct so that a value from a newer controller still decodes.
public struct LEPHY: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The PHY code as HCI carries it.
    public var rawValue: UInt8
    /// The PHY `rawValue` names, known here or not.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LE 1M: 1 Msym/s, the PHY every LE device has and every link starts on.
    public static let le1M = LEPHY(rawValue: 0x01)
    /// LE 2M: 2 Msym/s, about twice the throughput at somewhat shorter range.
    public static let le2M = LEPHY(rawValue: 0x02)
    /// LE Coded: 1 Msym/s with forward error correction, for long range.
    public static let leCoded = LEPHY(rawValue: 0x03)

    /// "LE 1M", "LE 2M", "LE Coded", or "PHY 0xNN" for a code not known here.
    public var description: String {
        switch self {
        case .le1M: return "LE 1M"
        case .le2M: return "LE 2M"
        case .leCoded: return "LE Coded"
        default: return "PHY 0x\(hex2(rawValue))"
        }
    }
}

/// A new connection (or a failed attempt), from any of the three connection-complete subevents.
/// Core spec Vol 4 Part E §7.7.65.1 (0x01), §7.7.65.10 (0x0A v1, 0x29 v2).
///
/// On a failed attempt (`status` non-zero, e.g. Unknown Connection Identifier after LE Create
/// Connection Cancel) the other fields carry no information; the decoder then accepts any role
/// and address type byte rather than rejecting the event.
public struct LEConnectionComplete: Hashable, Sendable {
    /// Which subevent carried it (and so how `encode()` writes it back).
    public enum Format: Hashable, Sendable {
        /// LE Connection Complete, 0x01: no RPA fields.
        case legacy
        /// LE Enhanced Connection Complete [v1], 0x0A.
        case enhanced
        /// LE Enhanced Connection Complete [v2], 0x29: adds the advertising set and periodic sync
        /// that led to the connection (0xFF / 0xFFFF when none).
        case enhancedV2(advertisingHandle: UInt8, syncHandle: UInt16)
    }

    public var status: HCIStatus
    public var handle: UInt16
    public var role: LERole
    /// The peer's address as the controller knows it: with privacy, its identity address and an
    /// identity address type (0x02/0x03).
    public var peer: DeviceAddress
    /// The RPA the local controller used, if it generated one (enhanced formats only).
    public var localResolvablePrivateAddress: BDAddress?
    /// The RPA the peer used, if the controller resolved it (enhanced formats only).
    public var peerResolvablePrivateAddress: BDAddress?
    /// Connection interval in 1.25 ms units.
    public var interval: UInt16
    /// Peripheral latency in connection events.
    public var latency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeout: UInt16
    /// Central_Clock_Accuracy code 0...7 (500 ppm ... 20 ppm); only meaningful for a peripheral.
    public var centralClockAccuracy: UInt8
    public var format: Format

    public init(
        status: HCIStatus = .success, handle: UInt16, role: LERole, peer: DeviceAddress,
        localResolvablePrivateAddress: BDAddress? = nil, peerResolvablePrivateAddress: BDAddress? = nil,
        interval: UInt16, latency: UInt16, supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0,
        format: Format = .legacy
    ) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peer = peer
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.format = format
    }

    /// The subevent code `format` corresponds to.
    public var subevent: UInt8 {
        switch format {
        case .legacy: return LEMetaEvent.Subevent.connectionComplete
        case .enhanced: return LEMetaEvent.Subevent.enhancedConnectionComplete
        case .enhancedV2: return LEMetaEvent.Subevent.enhancedConnectionCompleteV2
        }
    }
}

/// The LE Meta event's subevents. Core spec Vol 4 Part E §7.7.65.
///
/// An unknown subevent decodes to `.unknown` with its raw parameters, never an error.
public enum LEMetaEvent: Hashable, Sendable {
    /// LE Connection Complete (0x01), LE Enhanced Connection Complete v1 (0x0A) or v2 (0x29).
    /// §7.7.65.1, §7.7.65.10.
    case connectionComplete(LEConnectionComplete)
    /// LE Advertising Report (0x02), §7.7.65.2: legacy PDUs only.
    case advertisingReport([LEAdvertisingReport])
    /// LE Connection Update Complete (0x03), §7.7.65.3. Interval in 1.25 ms, timeout in 10 ms.
    case connectionUpdateComplete(status: HCIStatus, handle: UInt16, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16)
    /// LE Read Remote Features Complete (0x04), §7.7.65.4.
    case readRemoteFeaturesComplete(status: HCIStatus, handle: UInt16, features: LESupportedFeatures)
    /// LE Long Term Key Request (0x05), §7.7.65.5. Both values are zero for LE Secure Connections.
    case longTermKeyRequest(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16)
    /// LE Remote Connection Parameter Request (0x06), §7.7.65.6: the peer asks for new parameters;
    /// the host answers with the (Negative) Reply command. Timeout in 10 ms units.
    case remoteConnectionParameterRequest(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16, timeout: UInt16)
    /// LE Data Length Change (0x07), §7.7.65.7: link-layer payload sizes (octets) and times (µs).
    case dataLengthChange(handle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16)
    /// LE PHY Update Complete (0x0C), §7.7.65.12.
    case phyUpdateComplete(status: HCIStatus, handle: UInt16, txPHY: LEPHY, rxPHY: LEPHY)
    /// LE Extended Advertising Report (0x0D), §7.7.65.13.
    case extendedAdvertisingReport([LEAdvertisingReport])
    /// LE Periodic Advertising Sync Established (0x0E), §7.7.65.14.
    case periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished)
    /// LE Periodic Advertising Report (0x0F), §7.7.65.15.
    case periodicAdvertisingReport(LEPeriodicAdvertisingReport)
    /// LE Periodic Advertising Sync Lost (0x10), §7.7.65.16: the train was not received for the
    /// sync timeout; the handle is free again.
    case periodicAdvertisingSyncLost(syncHandle: UInt16)
    /// LE Scan Timeout (0x11), §7.7.65.17: an extended scan's Duration ran out (Period 0).
    case scanTimeout
    /// LE Advertising Set Terminated (0x12), §7.7.65.18.
    case advertisingSetTerminated(LEAdvertisingSetTerminated)
    /// LE Scan Request Received (0x13), §7.7.65.19: a scanner asked set `advertisingHandle`
    /// for its scan response.
    case scanRequestReceived(advertisingHandle: UInt8, scanner: DeviceAddress)
    /// LE Channel Selection Algorithm (0x14), §7.7.65.20: 0 for algorithm #1, 1 for #2.
    case channelSelectionAlgorithm(handle: UInt16, algorithm: UInt8)
    /// LE Periodic Advertising Sync Transfer Received (0x18), §7.7.65.24.
    case periodicAdvertisingSyncTransferReceived(LEPeriodicSyncTransferReceived)
    /// A subevent this decoder does not know.
    case unknown(subevent: UInt8, parameters: [UInt8])

    /// Subevent codes. §7.7.65.
    public enum Subevent {
        public static let connectionComplete: UInt8 = 0x01
        public static let advertisingReport: UInt8 = 0x02
        public static let connectionUpdateComplete: UInt8 = 0x03
        public static let readRemoteFeaturesComplete: UInt8 = 0x04
        public static let longTermKeyRequest: UInt8 = 0x05
        public static let remoteConnectionParameterRequest: UInt8 = 0x06
        public static let dataLengthChange: UInt8 = 0x07
        public static let enhancedConnectionComplete: UInt8 = 0x0A
        public static let phyUpdateComplete: UInt8 = 0x0C
        public static let extendedAdvertisingReport: UInt8 = 0x0D
        public static let periodicAdvertisingSyncEstablished: UInt8 = 0x0E
        public static let periodicAdvertisingReport: UInt8 = 0x0F
        public static let periodicAdvertisingSyncLost: UInt8 = 0x10
        public static let scanTimeout: UInt8 = 0x11
        public static let advertisingSetTerminated: UInt8 = 0x12
        public static let scanRequestReceived: UInt8 = 0x13
        public static let channelSelectionAlgorithm: UInt8 = 0x14
        public static let periodicAdvertisingSyncTransferReceived: UInt8 = 0x18
        public static let enhancedConnectionCompleteV2: UInt8 = 0x29
    }

    /// The subevent code this event is sent with.
    public var subevent: UInt8 {
        switch self {
        case let .connectionComplete(c): return c.subevent
        case .advertisingReport: return Subevent.advertisingReport
        case .connectionUpdateComplete: return Subevent.connectionUpdateComplete
        case .readRemoteFeaturesComplete: return Subevent.readRemoteFeaturesComplete
        case .longTermKeyRequest: return Subevent.longTermKeyRequest
        case .remoteConnectionParameterRequest: return Subevent.remoteConnectionParameterRequest
        case .dataLengthChange: return Subevent.dataLengthChange
        case .phyUpdateComplete: return Subevent.phyUpdateComplete
        case .extendedAdvertisingReport: return Subevent.extendedAdvertisingReport
        case .periodicAdvertisingSyncEstablished: return Subevent.periodicAdvertisingSyncEstablished
        case .periodicAdvertisingReport: return Subevent.periodicAdvertisingReport
        case .periodicAdvertisingSyncLost: return Subevent.periodicAdvertisingSyncLost
        case .scanTimeout: return Subevent.scanTimeout
        case .advertisingSetTerminated: return Subevent.advertisingSetTerminated
        case .scanRequestReceived: return Subevent.scanRequestReceived
        case .channelSelectionAlgorithm: return Subevent.channelSelectionAlgorithm
        case .periodicAdvertisingSyncTransferReceived: return Subevent.periodicAdvertisingSyncTransferReceived
        case let .unknown(subevent, _): return subevent
        }
    }

    /// Decodes the LE Meta parameters: subevent code, then the subevent's parameters.
    static func decode(_ r: inout ByteReader) throws(WireError) -> LEMetaEvent {
        let subevent = try r.reading("LE Meta") { (r: inout ByteReader) throws(WireError) -> UInt8 in try r.readU8() }
        typealias S = Subevent
        switch subevent {
        case S.connectionComplete, S.enhancedConnectionComplete, S.enhancedConnectionCompleteV2:
            return try r.reading("LE Connection Complete") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .connectionComplete(try decodeConnectionComplete(&r, subevent: subevent))
            }
        case S.advertisingReport:
            return try r.reading("LE Advertising Report") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .advertisingReport(try LEAdvertisingReport.decodeLegacyReports(&r))
            }
        case S.extendedAdvertisingReport:
            return try r.reading("LE Extended Advertising Report") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .extendedAdvertisingReport(try LEAdvertisingReport.decodeExtendedReports(&r))
            }
        case S.connectionUpdateComplete:
            return try r.reading("LE Connection Update Complete") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .connectionUpdateComplete(status: HCIStatus(try r.readU8()), handle: try r.readHandle(), interval: try r.readU16(),
                                          latency: try r.readU16(), supervisionTimeout: try r.readU16())
            }
        case S.readRemoteFeaturesComplete:
            return try r.reading("LE Read Remote Features Complete") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .readRemoteFeaturesComplete(status: HCIStatus(try r.readU8()), handle: try r.readHandle(),
                                            features: LESupportedFeatures(rawValue: try r.readU64()))
            }
        case S.longTermKeyRequest:
            return try r.reading("LE Long Term Key Request") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .longTermKeyRequest(handle: try r.readHandle(), randomNumber: try r.readU64(), encryptedDiversifier: try r.readU16())
            }
        case S.remoteConnectionParameterRequest:
            return try r.reading("LE Remote Connection Parameter Request") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .remoteConnectionParameterRequest(handle: try r.readHandle(), intervalMin: try r.readU16(), intervalMax: try r.readU16(),
                                                  maxLatency: try r.readU16(), timeout: try r.readU16())
            }
        case S.dataLengthChange:
            return try r.reading("LE Data Length Change") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .dataLengthChange(handle: try r.readHandle(), maxTxOctets: try r.readU16(), maxTxTime: try r.readU16(),
                                  maxRxOctets: try r.readU16(), maxRxTime: try r.readU16())
            }
        case S.phyUpdateComplete:
            return try r.reading("LE PHY Update Complete") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .phyUpdateComplete(status: HCIStatus(try r.readU8()), handle: try r.readHandle(),
                                   txPHY: LEPHY(rawValue: try r.readU8()), rxPHY: LEPHY(rawValue: try r.readU8()))
            }
        case S.periodicAdvertisingSyncEstablished:
            return try r.reading("LE Periodic Advertising Sync Established") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                let status = HCIStatus(try r.readU8())
                return .periodicAdvertisingSyncEstablished(try decodeSyncFields(&r, status: status, syncHandle: try r.readHandle()))
            }
        case S.periodicAdvertisingReport:
            return try r.reading("LE Periodic Advertising Report") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .periodicAdvertisingReport(try decodePeriodicReport(&r))
            }
        case S.periodicAdvertisingSyncLost:
            return try r.reading("LE Periodic Advertising Sync Lost") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .periodicAdvertisingSyncLost(syncHandle: try r.readHandle())
            }
        case S.scanTimeout:
            return .scanTimeout
        case S.advertisingSetTerminated:
            return try r.reading("LE Advertising Set Terminated") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .advertisingSetTerminated(try decodeSetTerminated(&r))
            }
        case S.scanRequestReceived:
            return try r.reading("LE Scan Request Received") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                try decodeScanRequest(&r)
            }
        case S.channelSelectionAlgorithm:
            return try r.reading("LE Channel Selection Algorithm") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .channelSelectionAlgorithm(handle: try r.readHandle(), algorithm: try r.readU8())
            }
        case S.periodicAdvertisingSyncTransferReceived:
            return try r.reading("LE Periodic Advertising Sync Transfer Received") { (r: inout ByteReader) throws(WireError) -> LEMetaEvent in
                .periodicAdvertisingSyncTransferReceived(try decodeSyncTransferReceived(&r))
            }
        default:
            return .unknown(subevent: subevent, parameters: r.readRemaining())
        }
    }

    /// §7.7.65.1 / §7.7.65.10 layouts: the enhanced forms insert the two RPAs after the peer
    /// address; v2 appends Advertising_Handle and Sync_Handle.
    static func decodeConnectionComplete(_ r: inout ByteReader, subevent: UInt8) throws(WireError) -> LEConnectionComplete {
        let status = HCIStatus(try r.readU8())
        let handle = try r.readHandle()
        let rawRole = try r.readU8()
        let rawType = try r.readU8()
        let address = try r.readBDADDRess()
        let role: LERole
        let type: AddressType
        if let ro = LERole(rawValue: rawRole), let ty = AddressType(rawValue: rawType) {
            role = ro
            type = ty
        } else if status.isSuccess {
            throw WireError.invalid("role 0x\(hex2(rawRole)) / peer address type 0x\(hex2(rawType))")
        } else {
            role = LERole(rawValue: rawRole) ?? .central
            type = AddressType(rawValue: rawType) ?? .public
        }
        var localRPA: BDAddress?
        var peerRPA: BDAddress?
        if subevent != Subevent.connectionComplete {
            let l = try r.readBDADDRess()
            let p = try r.readBDADDRess()
            localRPA = l == .zero ? nil : l
            peerRPA = p == .zero ? nil : p
        }
        let interval = try r.readU16()
        let latency = try r.readU16()
        let timeout = try r.readU16()
        let accuracy = try r.readU8()
        let format: LEConnectionComplete.Format
        switch subevent {
        case Subevent.connectionComplete: format = .legacy
        case Subevent.enhancedConnectionComplete: format = .enhanced
        default: format = .enhancedV2(advertisingHandle: try r.readU8(), syncHandle: try r.readU16())
        }
        return LEConnectionComplete(
            status: status, handle: handle, role: role, peer: DeviceAddress(address, type: type),
            localResolvablePrivateAddress: localRPA, peerResolvablePrivateAddress: peerRPA,
            interval: interval, latency: latency, supervisionTimeout: timeout,
            centralClockAccuracy: accuracy, format: format)
    }

    /// Writes the subevent code and its parameters.
    func encode(into w: inout ByteWriter) {
        w.u8(subevent)
        switch self {
        case let .connectionComplete(c):
            w.u8(c.status.rawValue)
            w.u16(c.handle)
            w.u8(c.role.rawValue)
            w.u8(c.peer.type.rawValue)
            w.append(c.peer.address.littleEndianBytes)
            if c.format != .legacy {
                w.append((c.localResolvablePrivateAddress ?? .zero).littleEndianBytes)
                w.append((c.peerResolvablePrivateAddress ?? .zero).littleEndianBytes)
            }
            w.u16(c.interval)
            w.u16(c.latency)
            w.u16(c.supervisionTimeout)
            w.u8(c.centralClockAccuracy)
            if case let .enhancedV2(advertisingHandle, syncHandle) = c.format {
                w.u8(advertisingHandle)
                w.u16(syncHandle)
            }
        case let .advertisingReport(reports):
            LEAdvertisingReport.encodeLegacyReports(reports, into: &w)
        case let .extendedAdvertisingReport(reports):
            LEAdvertisingReport.encodeExtendedReports(reports, into: &w)
        case let .connectionUpdateComplete(status, handle, interval, latency, timeout):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u16(interval)
            w.u16(latency)
            w.u16(timeout)
        case let .readRemoteFeaturesComplete(status, handle, features):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u64(features.rawValue)
        case let .longTermKeyRequest(handle, randomNumber, encryptedDiversifier):
            w.u16(handle)
            w.u64(randomNumber)
            w.u16(encryptedDiversifier)
        case let .remoteConnectionParameterRequest(handle, intervalMin, intervalMax, maxLatency, timeout):
            w.u16(handle)
            w.u16(intervalMin)
            w.u16(intervalMax)
            w.u16(maxLatency)
            w.u16(timeout)
        case let .dataLengthChange(handle, maxTxOctets, maxTxTime, maxRxOctets, maxRxTime):
            w.u16(handle)
            w.u16(maxTxOctets)
            w.u16(maxTxTime)
            w.u16(maxRxOctets)
            w.u16(maxRxTime)
        case let .phyUpdateComplete(status, handle, tx, rx):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u8(tx.rawValue)
            w.u8(rx.rawValue)
        case let .periodicAdvertisingSyncEstablished(sync):
            w.u8(sync.status.rawValue)
            w.u16(sync.syncHandle)
            Self.encodeSyncFields(sync, into: &w)
        case let .periodicAdvertisingReport(report):
            Self.encodePeriodicReport(report, into: &w)
        case let .periodicAdvertisingSyncLost(syncHandle):
            w.u16(syncHandle)
        case .scanTimeout:
            break
        case let .advertisingSetTerminated(t):
            w.u8(t.status.rawValue)
            w.u8(t.advertisingHandle)
            w.u16(t.connectionHandle)
            w.u8(t.completedEvents)
        case let .scanRequestReceived(handle, scanner):
            w.u8(handle)
            w.u8(scanner.type.rawValue)
            w.append(scanner.address.littleEndianBytes)
        case let .channelSelectionAlgorithm(handle, algorithm):
            w.u16(handle)
            w.u8(algorithm)
        case let .periodicAdvertisingSyncTransferReceived(t):
            w.u8(t.sync.status.rawValue)
            w.u16(t.connectionHandle)
            w.u16(t.serviceData)
            w.u16(t.sync.syncHandle)
            Self.encodeSyncFields(t.sync, into: &w)
        case let .unknown(_, parameters):
            w.append(parameters)
        }
    }
}

import BLEWire

/// One HCI event, decoded. Core spec Vol 4 Part E §5.4.4 (packet) and §7.7 (events).
///
/// Decoding never throws for an event or LE subevent this stack does not know: those come back as
/// `.unknown` / `.le(.unknown)` with their raw parameters, because controllers send vendor and newer
/// events freely. Only a known event whose parameters are too short (or hold a value the spec
/// forbids, such as an address type of 7) throws. Bytes beyond a known event's fields are ignored,
/// as later spec versions append parameters.
///
/// Every case can be encoded again (`encode()`), which the virtual controller uses to produce
/// events; `decode(encode(e)) == e` for every event built from in-range values.
public enum HCIEvent: Hashable, Sendable {
    /// Command Complete (0x0E), §7.7.14. `returnParameters` usually starts with a status byte;
    /// the return-parameter types in ReturnParameters.swift check it.
    case commandComplete(numHCICommandPackets: UInt8, opcode: HCIOpcode, returnParameters: [UInt8])
    /// Command Status (0x0F), §7.7.15.
    case commandStatus(status: HCIStatus, numHCICommandPackets: UInt8, opcode: HCIOpcode)
    /// Disconnection Complete (0x05), §7.7.5.
    case disconnectionComplete(status: HCIStatus, handle: UInt16, reason: HCIStatus)
    /// Encryption Change v1 (0x08), §7.7.8. On LE, `enabled` means AES-CCM is on.
    case encryptionChange(status: HCIStatus, handle: UInt16, enabled: Bool)
    /// Encryption Key Refresh Complete (0x30), §7.7.39.
    case encryptionKeyRefreshComplete(status: HCIStatus, handle: UInt16)
    /// Read Remote Version Information Complete (0x0C), §7.7.12.
    case readRemoteVersionInformationComplete(RemoteVersionInformation)
    /// Hardware Error (0x10), §7.7.16. The code is vendor specific.
    case hardwareError(code: UInt8)
    /// Data Buffer Overflow (0x1A), §7.7.26. Link type 0x00 synchronous, 0x01 ACL.
    case dataBufferOverflow(linkType: UInt8)
    /// Number Of Completed Packets (0x13), §7.7.19: ACL buffer credits returned per handle.
    case numberOfCompletedPackets([CompletedPackets])

    /// LE Meta (0x3E), §7.7.65: every LE subevent, decoded in `LEMetaEvent`.
    case le(LEMetaEvent)
    /// An event this decoder does not know (including vendor events, 0xFF).
    case unknown(code: UInt8, parameters: [UInt8])

    /// Event codes. §7.7.
    public enum Code {
        public static let disconnectionComplete: UInt8 = 0x05
        public static let encryptionChange: UInt8 = 0x08
        public static let readRemoteVersionInformationComplete: UInt8 = 0x0C
        public static let commandComplete: UInt8 = 0x0E
        public static let commandStatus: UInt8 = 0x0F
        public static let hardwareError: UInt8 = 0x10
        public static let numberOfCompletedPackets: UInt8 = 0x13
        public static let dataBufferOverflow: UInt8 = 0x1A
        public static let encryptionKeyRefreshComplete: UInt8 = 0x30
        public static let leMeta: UInt8 = 0x3E
    }

    // MARK: Decoding

    /// Decodes an event packet without its H4 indicator: event code, parameter length, parameters.
    /// The length byte must match the bytes present.
    public static func decode(_ payload: [UInt8]) throws(WireError) -> HCIEvent {
        var r = ByteReader(payload)
        let (code, params) = try r.reading("HCI event") { (r: inout ByteReader) throws(WireError) -> (UInt8, [UInt8]) in
            let code = try r.readU8()
            let length = Int(try r.readU8())
            let params = try r.readBytes(length)
            guard r.isAtEnd else { throw WireError.invalid("HCI event 0x\(hex2(code)): \(r.remaining) bytes beyond its length") }
            return (code, params)
        }
        return try decode(code: code, parameters: params)
    }

    /// Decodes an event from its code and parameter bytes. More than 255 parameter octets is
    /// no event (Vol 4 Part E §5.4.4: one length octet) and is refused, so that decoding and
    /// `encode()` stay exact inverses.
    public static func decode(code: UInt8, parameters: [UInt8]) throws(WireError) -> HCIEvent {
        guard parameters.count <= 255 else {
            throw WireError.invalid("HCI event 0x\(hex2(code)): \(parameters.count) parameter bytes, at most 255")
        }
        var r = ByteReader(parameters)
        switch code {
        case Code.commandComplete:
            return try r.reading("Command Complete") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                let n = try r.readU8()
                let opcode = HCIOpcode(rawValue: try r.readU16())
                return .commandComplete(numHCICommandPackets: n, opcode: opcode, returnParameters: r.readRemaining())
            }
        case Code.commandStatus:
            return try r.reading("Command Status") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                let status = HCIStatus(try r.readU8())
                let n = try r.readU8()
                return .commandStatus(status: status, numHCICommandPackets: n, opcode: HCIOpcode(rawValue: try r.readU16()))
            }
        case Code.disconnectionComplete:
            return try r.reading("Disconnection Complete") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                let status = HCIStatus(try r.readU8())
                let handle = try r.readHandle()
                return .disconnectionComplete(status: status, handle: handle, reason: HCIStatus(try r.readU8()))
            }
        case Code.encryptionChange:
            return try r.reading("Encryption Change") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                let status = HCIStatus(try r.readU8())
                let handle = try r.readHandle()
                return .encryptionChange(status: status, handle: handle, enabled: try r.readU8() != 0)
            }
        case Code.encryptionKeyRefreshComplete:
            return try r.reading("Encryption Key Refresh Complete") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                let status = HCIStatus(try r.readU8())
                return .encryptionKeyRefreshComplete(status: status, handle: try r.readHandle())
            }
        case Code.readRemoteVersionInformationComplete:
            return try r.reading("Read Remote Version Information Complete") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                .readRemoteVersionInformationComplete(RemoteVersionInformation(
                    status: HCIStatus(try r.readU8()), handle: try r.readHandle(), version: try r.readU8(),
                    companyIdentifier: try r.readU16(), subversion: try r.readU16()))
            }
        case Code.hardwareError:
            return try r.reading("Hardware Error") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                .hardwareError(code: try r.readU8())
            }
        case Code.dataBufferOverflow:
            return try r.reading("Data Buffer Overflow") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                .dataBufferOverflow(linkType: try r.readU8())
            }
        case Code.numberOfCompletedPackets:
            // Handle/count pairs are interleaved per entry (§5.2 array layout; what every
            // controller sends).
            return try r.reading("Number Of Completed Packets") { (r: inout ByteReader) throws(WireError) -> HCIEvent in
                let n = Int(try r.readU8())
                var entries: [CompletedPackets] = []
                entries.reserveCapacity(n)
                for _ in 0..<n {
                    let handle = try r.readHandle()
                    entries.append(CompletedPackets(handle: handle, count: try r.readU16()))
                }
                return .numberOfCompletedPackets(entries)
            }
        case Code.leMeta:
            return .le(try LEMetaEvent.decode(&r))
        default:
            return .unknown(code: code, parameters: parameters)
        }
    }

    // MARK: Encoding

    /// The event code this event is sent with.
    public var code: UInt8 {
        switch self {
        case .commandComplete: return Code.commandComplete
        case .commandStatus: return Code.commandStatus
        case .disconnectionComplete: return Code.disconnectionComplete
        case .encryptionChange: return Code.encryptionChange
        case .encryptionKeyRefreshComplete: return Code.encryptionKeyRefreshComplete
        case .readRemoteVersionInformationComplete: return Code.readRemoteVersionInformationComplete
        case .hardwareError: return Code.hardwareError
        case .dataBufferOverflow: return Code.dataBufferOverflow
        case .numberOfCompletedPackets: return Code.numberOfCompletedPackets
        case .le: return Code.leMeta
        case let .unknown(code, _): return code
        }
    }

    /// The event parameters (for LE Meta: subevent code first).
    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case let .commandComplete(n, opcode, returnParameters):
            w.u8(n)
            w.u16(opcode.rawValue)
            w.append(returnParameters)
        case let .commandStatus(status, n, opcode):
            w.u8(status.rawValue)
            w.u8(n)
            w.u16(opcode.rawValue)
        case let .disconnectionComplete(status, handle, reason):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u8(reason.rawValue)
        case let .encryptionChange(status, handle, enabled):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u8(enabled ? 1 : 0)
        case let .encryptionKeyRefreshComplete(status, handle):
            w.u8(status.rawValue)
            w.u16(handle)
        case let .readRemoteVersionInformationComplete(info):
            w.u8(info.status.rawValue)
            w.u16(info.handle)
            w.u8(info.version)
            w.u16(info.companyIdentifier)
            w.u16(info.subversion)
        case let .hardwareError(code):
            w.u8(code)
        case let .dataBufferOverflow(linkType):
            w.u8(linkType)
        case let .numberOfCompletedPackets(entries):
            // At most what the length byte describes; more go in several events
            // (`numberOfCompletedPacketsEvents`).
            let list = entries.prefix(Self.maximumCompletedPacketsEntries)
            w.u8(UInt8(list.count))
            for e in list {
                w.u16(e.handle)
                w.u16(e.count)
            }
        case let .le(meta):
            meta.encode(into: &w)
        case let .unknown(_, parameters):
            w.append(parameters)
        }
        return w.bytes
    }

    /// The event packet without the H4 indicator. Parameters beyond 255 bytes (only possible with
    /// oversized advertising reports built by hand) are cut off so the length byte stays true.
    public func encode() -> [UInt8] {
        if case let .numberOfCompletedPackets(entries) = self, entries.count <= Self.maximumCompletedPacketsEntries {
            // One per batch of ACL packets a controller sent (§7.7.19): written straight into
            // the packet, the same bytes as through `parameters`, without its writer and copies.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(3 + 4 * entries.count)
            bytes.append(Code.numberOfCompletedPackets)
            bytes.append(UInt8(1 + 4 * entries.count))
            bytes.append(UInt8(entries.count))
            for e in entries {
                bytes.append(UInt8(e.handle & 0xFF))
                bytes.append(UInt8(e.handle >> 8))
                bytes.append(UInt8(e.count & 0xFF))
                bytes.append(UInt8(e.count >> 8))
            }
            return bytes
        }
        let params = parameters.prefix(255)
        return [code, UInt8(params.count)] + params
    }

    /// The packet with its H4 indicator.
    public var h4Frame: H4Frame { H4Frame(type: .event, payload: encode()) }

    /// The most handle entries a Number Of Completed Packets event can carry whole: its
    /// parameters (one count byte and four bytes per entry) fit the one-byte length (§7.7.19).
    public static let maximumCompletedPacketsEntries = (255 - 1) / 4

    /// Number Of Completed Packets events (Core Vol 4 Part E §7.7.19) reporting `entries`, as
    /// many as the one-byte parameter length needs: 63 entries each, in order; none for none.
    public static func numberOfCompletedPacketsEvents(_ entries: [CompletedPackets]) -> [HCIEvent] {
        guard entries.count > maximumCompletedPacketsEntries else {
            return entries.isEmpty ? [] : [.numberOfCompletedPackets(entries)]
        }
        return stride(from: 0, to: entries.count, by: maximumCompletedPacketsEntries).map {
            .numberOfCompletedPackets(Array(entries[$0..<min($0 + maximumCompletedPacketsEntries, entries.count)]))
        }
    }
}

/// One entry of Number Of Completed Packets: how many ACL packets of `handle` the controller has
/// finished with (sent or flushed), returning that many buffer credits. §7.7.19.
public struct CompletedPackets: Hashable, Sendable {
    public var handle: UInt16
    public var count: UInt16

    public init(handle: UInt16, count: UInt16) {
        self.handle = handle
        self.count = count
    }
}

/// Read Remote Version Information Complete parameters. §7.7.12.
public struct RemoteVersionInformation: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    /// Link Layer version of the peer (same numbering as HCI versions: 0x09 = 5.0, ...).
    public var version: UInt8
    /// Bluetooth SIG company identifier of the peer's controller maker.
    public var companyIdentifier: UInt16
    public var subversion: UInt16

    public init(status: HCIStatus = .success, handle: UInt16, version: UInt8, companyIdentifier: UInt16, subversion: UInt16) {
        self.status = status
        self.handle = handle
        self.version = version
        self.companyIdentifier = companyIdentifier
        self.subversion = subversion
    }
}

extension ByteReader {
    /// A connection handle: 12 bits, the upper four are reserved (§5.4.2) and ignored.
    mutating func readHandle() throws(WireError) -> UInt16 {
        try readU16() & 0x0FFF
    }

    /// A BD_ADDR, six octets least significant first, read without an intermediate array.
    mutating func readBDADDRess() throws(WireError) -> BDAddress {
        let low = try readU32()
        return BDAddress(rawValue: UInt64(low) | UInt64(try readU16()) << 32)
    }

    /// An LE address type byte (0...3). Anything else is a garbled event.
    mutating func readAddressType() throws(WireError) -> AddressType {
        let raw = try readU8()
        guard let t = AddressType(rawValue: raw) else { throw WireError.invalid("address type 0x\(hex2(raw))") }
        return t
    }
}

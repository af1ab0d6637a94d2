import BLEWire

/// One HCI command packet: opcode and parameters. Core spec Vol 4 Part E §5.4.1.
///
/// Layout (without the H4 indicator): opcode (2 bytes, little-endian), parameter total length
/// (1 byte), parameters. The typed builders (`HCICommand.reset`, `.leCreateConnection(...)`, in
/// HCICommand+Builders.swift) lay out each command's parameters as §7 specifies; the struct keeps
/// them as raw bytes so that any command, including a vendor one, can be sent and logged.
public struct HCICommand: Hashable, Sendable, CustomStringConvertible {
    public var opcode: HCIOpcode
    public var parameters: [UInt8]

    public init(opcode: HCIOpcode, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.parameters = parameters
    }

    /// The largest parameter block the one-byte length field can describe.
    public static let maxParameterLength = 255

    /// The packet without the H4 indicator. Parameters beyond 255 bytes cannot be described by
    /// the length field; they are cut off rather than producing an inconsistent packet.
    public func encode() -> [UInt8] {
        let params = parameters.prefix(Self.maxParameterLength)
        var w = ByteWriter(capacity: 3 + params.count)
        w.u16(opcode.rawValue)
        w.u8(UInt8(params.count))
        w.append(params)
        return w.bytes
    }

    /// The packet with its H4 indicator, ready for a UART/TCP/user-channel transport.
    public var h4Frame: H4Frame { H4Frame(type: .command, payload: encode()) }

    /// Parses a command packet (without the H4 indicator), e.g. in a virtual controller. The
    /// length byte must match the bytes present exactly.
    public static func decode(_ payload: [UInt8]) throws(WireError) -> HCICommand {
        var r = ByteReader(payload)
        return try r.reading("HCI command") { (r: inout ByteReader) throws(WireError) -> HCICommand in
            let opcode = HCIOpcode(rawValue: try r.readU16())
            let length = Int(try r.readU8())
            let params = try r.readBytes(length)
            guard r.isAtEnd else { throw WireError.invalid("HCI command \(opcode): \(r.remaining) bytes beyond its length") }
            return HCICommand(opcode: opcode, parameters: params)
        }
    }

    public var description: String {
        parameters.isEmpty ? "\(opcode)" : "\(opcode) [\(parameters.hexString)]"
    }
}

// MARK: - Parameter types used by the builders (Core spec Vol 4 Part E §7.8)

/// LE_Scan_Type. §7.8.10.
public enum LEScanType: UInt8, Sendable, Hashable {
    /// Listen only; no SCAN_REQ is sent.
    case passive = 0x00
    /// Send SCAN_REQ to scannable advertisers to get their scan response.
    case active = 0x01
}

/// Scanning_Filter_Policy. §7.8.10. A struct (with integer literals) so that values added by
/// later spec versions can be sent without a change here.
public struct ScanFilterPolicy: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt8) { self.rawValue = value }

    /// Accept all advertising (directed ones only when addressed to us).
    public static let acceptAll: ScanFilterPolicy = 0x00
    /// Only devices on the Filter Accept List.
    public static let filterAcceptListOnly: ScanFilterPolicy = 0x01
    /// As `acceptAll`, also reporting directed advertising whose target is an unresolved RPA.
    public static let acceptAllExtended: ScanFilterPolicy = 0x02
    /// As `filterAcceptListOnly`, with the same extension.
    public static let filterAcceptListOnlyExtended: ScanFilterPolicy = 0x03
}

/// Own_Address_Type in scan, advertising and connection commands. §7.8.5, §7.8.10, §7.8.12.
public enum OwnAddressType: UInt8, Sendable, Hashable {
    case `public` = 0x00
    /// The address set with LE Set Random Address.
    case random = 0x01
    /// Controller-generated RPA if the resolving list has the peer, else the public address.
    case resolvableOrPublic = 0x02
    /// Controller-generated RPA if the resolving list has the peer, else the random address.
    case resolvableOrRandom = 0x03
}

/// Initiator_Filter_Policy. §7.8.12.
public struct InitiatorFilterPolicy: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt8) { self.rawValue = value }

    /// Connect to the peer address given in the command.
    public static let usePeerAddress: InitiatorFilterPolicy = 0x00
    /// Connect to any device on the Filter Accept List (peer address is ignored).
    public static let useFilterAcceptList: InitiatorFilterPolicy = 0x01
}

/// Advertising_Type for legacy advertising. §7.8.5.
public enum AdvertisingType: UInt8, Sendable, Hashable {
    /// ADV_IND: connectable and scannable undirected.
    case connectableUndirected = 0x00
    /// ADV_DIRECT_IND, high duty cycle.
    case connectableDirectedHighDuty = 0x01
    /// ADV_SCAN_IND: scannable undirected.
    case scannableUndirected = 0x02
    /// ADV_NONCONN_IND: non-connectable undirected.
    case nonConnectableUndirected = 0x03
    /// ADV_DIRECT_IND, low duty cycle.
    case connectableDirectedLowDuty = 0x04
}

/// Advertising_Filter_Policy. §7.8.5.
public struct AdvertisingFilterPolicy: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt8) { self.rawValue = value }

    public static let acceptAll: AdvertisingFilterPolicy = 0x00
    /// Scan requests only from the Filter Accept List.
    public static let filterScanRequests: AdvertisingFilterPolicy = 0x01
    /// Connection requests only from the Filter Accept List.
    public static let filterConnectionRequests: AdvertisingFilterPolicy = 0x02
    public static let filterBoth: AdvertisingFilterPolicy = 0x03
}

/// Advertising_Channel_Map: which of the three primary channels to use. §7.8.5.
public struct AdvertisingChannelMap: OptionSet, Sendable, Hashable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let channel37 = AdvertisingChannelMap(rawValue: 0x01)
    public static let channel38 = AdvertisingChannelMap(rawValue: 0x02)
    public static let channel39 = AdvertisingChannelMap(rawValue: 0x04)
    public static let all: AdvertisingChannelMap = [.channel37, .channel38, .channel39]
}

/// A set of LE PHYs as the PHY-preference, scanning and initiating commands encode them
/// (TX_PHYs/RX_PHYs, Scanning_PHYs, Initiating_PHYs bit fields). §7.8.48, §7.8.49, §7.8.64, §7.8.66.
public struct LEPHYSet: OptionSet, Sendable, Hashable {
    /// The bit field: bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded.
    public var rawValue: UInt8
    /// The PHYs of a bit field.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE 1M, the PHY every LE controller has.
    public static let le1M = LEPHYSet(rawValue: 0x01)
    /// LE 2M (Bluetooth 5): twice the rate, for connections and auxiliary advertising packets.
    public static let le2M = LEPHYSet(rawValue: 0x02)
    /// LE Coded (Bluetooth 5): long range at 125 or 500 kb/s.
    public static let leCoded = LEPHYSet(rawValue: 0x04)
}

/// PHY_Options of LE Set PHY: the preferred Coded PHY coding. §7.8.49.
public enum LECodedPHYOptions: UInt16, Sendable, Hashable {
    case noPreference = 0x0000
    case s2 = 0x0001
    case s8 = 0x0002
}

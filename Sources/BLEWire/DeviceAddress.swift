/// A 48-bit Bluetooth device address (BD_ADDR). Core spec Vol 6 Part B §1.3.
///
/// Stored as an integer; on the wire it is six bytes, least significant first.
/// Written as upper-case colon hex, most significant byte first: `C0:11:22:33:44:55`.
public struct BDAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The address as a 48-bit integer, most significant byte highest (the top 16 bits are zero).
    public var rawValue: UInt64

    /// The address `rawValue` names; bits above the 48th are dropped.
    public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// From six bytes in wire (little-endian) order.
    public init(littleEndian bytes: [UInt8]) {
        var v: UInt64 = 0
        for (i, b) in bytes.prefix(6).enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        self.init(rawValue: v)
    }

    /// Parses `XX:XX:XX:XX:XX:XX` (also with `-`), most significant byte first.
    public init?(string: String) {
        let parts = string.split(whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else { return nil }
        var v: UInt64 = 0
        for p in parts {
            guard p.count == 2, let b = UInt8(p, radix: 16) else { return nil }
            v = v << 8 | UInt64(b)
        }
        self.init(rawValue: v)
    }

    /// 00:00:00:00:00:00, what HCI sends where no address applies.
    public static let zero = BDAddress(rawValue: 0)

    /// The six bytes in wire order, least significant first (as HCI and the advertising data carry it).
    public var littleEndianBytes: [UInt8] { (0..<6).map { UInt8((rawValue >> (8 * UInt64($0))) & 0xFF) } }

    /// Upper-case colon hex, most significant byte first: "C0:11:22:33:44:55".
    public var description: String {
        (0..<6).reversed().map { i -> String in
            let b = UInt8((rawValue >> (8 * UInt64(i))) & 0xFF)
            return b < 0x10 ? "0" + String(b, radix: 16, uppercase: true) : String(b, radix: 16, uppercase: true)
        }.joined(separator: ":")
    }

    /// For random addresses, the kind given by the two top bits. Core spec Vol 6 Part B §1.3.2.
    public var randomKind: RandomAddressKind {
        switch rawValue >> 46 {
        case 0b11: return .staticRandom
        case 0b01: return .resolvablePrivate
        case 0b00: return .nonResolvablePrivate
        default: return .reserved
        }
    }

    /// Orders addresses by their 48-bit value.
    public static func < (a: BDAddress, b: BDAddress) -> Bool { a.rawValue < b.rawValue }
}

/// The three kinds of random device address, told apart by the address's two most
/// significant bits (Core spec Vol 6 Part B §1.3.2).
public enum RandomAddressKind: Sendable, Hashable {
    /// Top bits 0b11: fixed for the device's lifetime or until power cycle (§1.3.2.1).
    case staticRandom
    /// Top bits 0b01: a private address generated from an IRK, which bonded peers can resolve
    /// to the device's identity (§1.3.2.2).
    case resolvablePrivate
    /// Top bits 0b00: a private address no one can trace to the device (§1.3.2.2).
    case nonResolvablePrivate
    /// Top bits 0b10: reserved by the spec.
    case reserved
}

/// The address type as HCI uses it in LE commands and events. Core spec Vol 4 Part E §7.8.12.
public enum AddressType: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// 0x00: a public device address, assigned from the company's IEEE block (Vol 6 Part B §1.3.1).
    case `public` = 0x00
    /// 0x01: a random device address, static or private (Vol 6 Part B §1.3.2); `BDAddress.randomKind` says which.
    case random = 0x01
    /// Resolved from an RPA to a public identity (controller-based privacy).
    case publicIdentity = 0x02
    /// Resolved from an RPA to a static random identity.
    case randomIdentity = 0x03

    /// "public", "random", "public-identity" or "random-identity".
    public var description: String {
        switch self {
        case .public: return "public"
        case .random: return "random"
        case .publicIdentity: return "public-identity"
        case .randomIdentity: return "random-identity"
        }
    }

    /// The type to use when connecting to a device reported with this type.
    public var peerType: AddressType {
        switch self {
        case .public, .publicIdentity: return .public
        case .random, .randomIdentity: return .random
        }
    }
}

/// An address together with its type: what identifies an LE device on the air.
public struct DeviceAddress: Hashable, Sendable, CustomStringConvertible {
    /// The 48-bit address.
    public var address: BDAddress
    /// Whether `address` is public or random: two devices may share 48 bits across the types.
    public var type: AddressType

    /// The device at `address` of `type`.
    public init(_ address: BDAddress, type: AddressType) {
        self.address = address
        self.type = type
    }

    /// Parses `XX:XX:XX:XX:XX:XX/public` or `.../random`.
    public init?(string: String) {
        let parts = string.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let a = BDAddress(string: String(first)) else { return nil }
        if parts.count == 2 {
            switch parts[1].lowercased() {
            case "public", "p": type = .public
            case "random", "r": type = .random
            default: return nil
            }
        } else {
            type = .public
        }
        address = a
    }

    /// "C0:11:22:33:44:55/random", the form `init?(string:)` reads.
    public var description: String { "\(address)/\(type)" }
}

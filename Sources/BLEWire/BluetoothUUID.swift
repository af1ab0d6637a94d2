/// A Bluetooth UUID: 16-, 32- or 128-bit. Core spec Vol 3 Part B §2.5.1.
///
/// Short forms are aliases inside the Bluetooth Base UUID `0000xxxx-0000-1000-8000-00805F9B34FB`;
/// equality is on the full 128-bit value, so `180D` equals its 128-bit spelling.
public struct BluetoothUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 128-bit value, most significant half first.
    public var high: UInt64
    /// The least significant 64 bits (`high` holds the rest).
    public var low: UInt64

    /// The Bluetooth Base UUID's fixed parts. Core spec Vol 3 Part B §2.5.1.
    static let baseHighLow32: UInt64 = 0x0000_1000
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    /// The UUID whose 128-bit value is `high` then `low`.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The 16-bit alias `short` in the Base UUID, e.g. `BluetoothUUID(0x180D)` for Heart Rate.
    public init(_ short: UInt16) { self.init(uint32: UInt32(short)) }

    /// The 32-bit alias `uint32` in the Base UUID (Core spec Vol 3 Part B §2.5.1).
    public init(uint32: UInt32) {
        self.init(high: UInt64(uint32) << 32 | Self.baseHighLow32, low: Self.baseLow)
    }

    /// The 16-bit alias, if this UUID is in the base range and fits in 16 bits.
    public var uint16: UInt16? {
        guard let v = uint32, v <= 0xFFFF else { return nil }
        return UInt16(v)
    }

    /// The 32-bit alias, if this UUID is in the base range.
    public var uint32: UInt32? {
        guard low == Self.baseLow, high & 0xFFFF_FFFF == Self.baseHighLow32 else { return nil }
        return UInt32(high >> 32)
    }

    /// Parses "180D", "0x180D", "0000180d", or the 36-character form.
    public init?(string: String) {
        var s = string.trimmingCharacters(in: " ")
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s.removeFirst(2) }
        let hex = s.filter { $0 != "-" }
        guard hex.allSatisfy({ $0.isHexDigit }) else { return nil }
        switch hex.count {
        case 4:
            guard let v = UInt16(hex, radix: 16) else { return nil }
            self.init(v)
        case 8:
            guard let v = UInt32(hex, radix: 16) else { return nil }
            self.init(uint32: v)
        case 32:
            if s.count == 36 {
                let dashes = s.enumerated().filter { $0.element == "-" }.map(\.offset)
                guard dashes == [8, 13, 18, 23] else { return nil }
            } else if s.count != 32 {
                return nil
            }
            guard let h = UInt64(hex.prefix(16), radix: 16), let l = UInt64(hex.suffix(16), radix: 16) else { return nil }
            self.init(high: h, low: l)
        default:
            return nil
        }
    }

    /// Decodes 2, 4 or 16 little-endian bytes, as ATT and AD carry them.
    public init(littleEndian bytes: [UInt8]) throws(WireError) {
        switch bytes.count {
        case 2: self.init(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
        case 4:
            self.init(uint32: UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        case 16:
            var h: UInt64 = 0, l: UInt64 = 0
            for i in 0..<8 { l |= UInt64(bytes[i]) << (8 * UInt64(i)) }
            for i in 0..<8 { h |= UInt64(bytes[8 + i]) << (8 * UInt64(i)) }
            self.init(high: h, low: l)
        default:
            throw WireError.invalid("UUID of \(bytes.count) bytes")
        }
    }

    /// The shortest little-endian encoding ATT allows: 2 bytes for 16-bit aliases, else 16.
    /// (ATT has no 32-bit form; Core spec Vol 3 Part F §3.2.1.)
    public var attBytes: [UInt8] {
        if let s = uint16 { return [UInt8(s & 0xFF), UInt8(s >> 8)] }
        return littleEndian128
    }

    /// All 16 bytes, little-endian.
    public var littleEndian128: [UInt8] {
        (0..<8).map { UInt8((low >> (8 * UInt64($0))) & 0xFF) } + (0..<8).map { UInt8((high >> (8 * UInt64($0))) & 0xFF) }
    }

    /// The full form, lower case: `0000180d-0000-1000-8000-00805f9b34fb`.
    public var fullString: String {
        func hex(_ v: UInt64, _ digits: Int) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: max(0, digits - s.count)) + s
        }
        let a = hex(high >> 32, 8), b = hex((high >> 16) & 0xFFFF, 4), c = hex(high & 0xFFFF, 4)
        let d = hex(low >> 48, 4), e = hex(low & 0xFFFF_FFFF_FFFF, 12)
        return "\(a)-\(b)-\(c)-\(d)-\(e)"
    }

    /// SIG UUIDs in short upper-case form ("180D", "0000FEAA" for 32-bit); others in full lower case.
    public var description: String {
        if let s = uint16 {
            let h = String(s, radix: 16, uppercase: true)
            return String(repeating: "0", count: 4 - h.count) + h
        }
        if let s = uint32 {
            let h = String(s, radix: 16, uppercase: true)
            return String(repeating: "0", count: 8 - h.count) + h
        }
        return fullString
    }

    /// Orders UUIDs by their 128-bit value, so sorted lists read the same everywhere.
    public static func < (a: BluetoothUUID, b: BluetoothUUID) -> Bool { (a.high, a.low) < (b.high, b.low) }
}

extension BluetoothUUID: ExpressibleByStringLiteral {
    /// For literals in code only; a malformed literal is a programming error caught by tests.
    public init(stringLiteral value: String) {
        self = BluetoothUUID(string: value) ?? BluetoothUUID(high: 0, low: 0)
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}

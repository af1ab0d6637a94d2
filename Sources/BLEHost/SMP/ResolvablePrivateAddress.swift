import BLECrypto
import BLEWire

/// Resolvable private addresses (Core spec Vol 6 Part B §1.3.2.2–1.3.2.3): 24 bits of prand
/// (top two bits 0b01) over a 24-bit hash = ah(IRK, prand). A device that knows the IRK can tell
/// the address is its peer's; nobody else can link two of them.
public enum ResolvablePrivateAddress {
    /// A new RPA from `irk` (least significant octet first, as distributed) and 22 random bits.
    public static func generate(irk: [UInt8], random: [UInt8]) throws(CryptoError) -> BDAddress {
        guard random.count == 3 else { throw CryptoError(.invalidLength, "RPA random must be 3 bytes, got \(random.count)") }
        // prand, most significant octet first: 0b01 in the top two bits, and its 22 random bits
        // neither all 0 nor all 1 (Vol 6 Part B §1.3.2.2).
        var bits = [random[0] & 0x3F, random[1], random[2]]
        if bits == [0, 0, 0] { bits[2] = 1 }
        if bits == [0x3F, 0xFF, 0xFF] { bits[2] = 0xFE }
        let prand = [bits[0] | 0x40, bits[1], bits[2]]
        let hash = try SMPCrypto.ah(k: Array(irk.reversed()), r: prand)
        let value = (prand + hash).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return BDAddress(rawValue: value)
    }

    /// Whether `irk` can name a device: 16 octets, not all zero (the value a device without an
    /// IRK distributes, Vol 3 Part H §3.6.4; anyone can make RPAs that resolve with it).
    public static func isUsable(_ irk: [UInt8]) -> Bool {
        irk.count == 16 && irk.contains { $0 != 0 }
    }

    /// Whether `address` is an RPA made from `irk`; never for an all-zero IRK.
    public static func resolves(_ address: BDAddress, irk: [UInt8]) -> Bool {
        guard address.randomKind == .resolvablePrivate, isUsable(irk) else { return false }
        let msb = Array(address.littleEndianBytes.reversed())
        guard let hash = try? SMPCrypto.ah(k: Array(irk.reversed()), r: Array(msb[0..<3])) else { return false }
        return hash == Array(msb[3..<6])
    }
}

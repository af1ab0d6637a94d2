import BLECrypto
import BLEWire

/// The Database Hash, Core spec Vol 3 Part G §7.3: AES-CMAC (Vol 3 Part H §2.2.5) with an
/// all-zero key over a summary of the database's structure, so that a client that cached the
/// database can tell whether it changed without rediscovering it (robust caching, §2.5.2.1).
extension GATTServerDatabase {
    /// The message §7.3.1 hashes, in ascending handle order:
    /// - handle ‖ type ‖ value of every «Primary Service», «Secondary Service», «Include»,
    ///   «Characteristic» and «Characteristic Extended Properties» attribute;
    /// - handle ‖ type (no value) of every «Characteristic User Description», «Client
    ///   Characteristic Configuration», «Server Characteristic Configuration», «Characteristic
    ///   Presentation Format» and «Characteristic Aggregate Format» descriptor.
    /// Handles and the 16-bit types are little-endian; other attributes contribute nothing.
    public func databaseHashInput() -> [UInt8] {
        var w = ByteWriter(capacity: attributes.count * 8)
        for attribute in attributes {
            guard let type = attribute.type.uint16 else { continue }
            switch type {
            case 0x2800, 0x2801, 0x2802, 0x2803, 0x2900:
                w.u16(attribute.handle)
                w.u16(type)
                if case let .fixed(value) = attribute.value { w.append(value) }
            case 0x2901, 0x2902, 0x2903, 0x2904, 0x2905:
                w.u16(attribute.handle)
                w.u16(type)
            default:
                continue
            }
        }
        return w.bytes
    }

    /// AES-CMAC with a zero key over `databaseHashInput()`, as AES-CMAC produces it (most
    /// significant octet first): the spec's worked example (Vol 3 Part G Appendix B) prints it as
    /// 0xF1CA2D48ECF58BAC8A8830BBB9FBA990, and this returns `f1 ca … 90`.
    public func databaseHash() throws -> [UInt8] {
        try AESCMAC.mac(key: [UInt8](repeating: 0, count: 16), message: databaseHashInput())
    }

    /// The Database Hash characteristic's value: `databaseHash()` in little-endian octet order.
    ///
    /// §7.3 gives the hash as a 128-bit number without an octet order, and stacks differ on the
    /// wire. Characteristic values are little-endian unless a profile says otherwise (Vol 3
    /// Part F §3.3.1), and the qualification tester (GATT/SR/GAS/BV-02-C) expects that order, so
    /// the characteristic sends the least significant octet first (`90 a9 … f1` for the example).
    /// A client only ever compares the value with its own earlier read, so either order caches
    /// correctly.
    public func databaseHashCharacteristicValue() throws -> [UInt8] {
        Array(try databaseHash().reversed())
    }
}

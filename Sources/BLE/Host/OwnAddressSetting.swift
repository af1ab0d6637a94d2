import BLEHCI
import BLEWire

/// The address this host uses on the air (Core spec Vol 6 Part B §1.3): the controller's public
/// address, or a static random one set with LE Set Random Address (Vol 4 Part E §7.8.4). Scans,
/// connection attempts and advertising all name it.
struct OwnAddressSetting {
    var type: OwnAddressType = .public
    var random: BDAddress?
    /// With privacy on, the identity address (our static random one) that pairing distributes
    /// while `random` is the current RPA (Vol 3 Part H §3.6.5).
    var identity: DeviceAddress?

    /// Checks that `address` may be used as a static random address: the two top bits 1, the
    /// rest neither all 0 nor all 1 (Vol 6 Part B §1.3.2.1).
    static func validateStaticRandom(_ address: BDAddress) throws {
        guard address.randomKind == .staticRandom, address != BDAddress(rawValue: 0xFFFF_FFFF_FFFF),
              address.rawValue & 0x3FFF_FFFF_FFFF != 0 else {
            throw BLEError.invalidArgument("\(address) is not a static random address (the two top bits must be 1, the rest neither all 0 nor all 1)")
        }
    }
}

@testable import BLE
import BLEHost
import BLEWire
import XCTest

/// Which pairing may replace a bond (the security review's bond-takeover findings).
final class BondReplacementTests: XCTestCase {
    let identity = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_AA), type: .public)
    let irk: [UInt8] = Array(repeating: 0x3C, count: 16)

    func bond(authenticated: Bool, sc: Bool = true, keySize: Int = 16, connectionAddress: DeviceAddress? = nil) -> Bond {
        var b = Bond(peer: identity, peerLongTermKey: Array(repeating: 1, count: 16), peerIdentityResolvingKey: irk,
                     secureConnections: sc, authenticated: authenticated, keySize: keySize)
        b.connectionAddress = connectionAddress
        return b
    }

    func testANewIdentityIsStored() {
        XCTAssertEqual(BondReplacement.decide(old: nil, new: bond(authenticated: false), from: identity, explicit: false), .store)
    }

    func testAClaimFromAnAddressTheBondDoesNotKnowIsAConflictEvenWhenExplicit() {
        let stranger = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
        for explicit in [false, true] {
            guard case .conflict = BondReplacement.decide(old: bond(authenticated: true), new: bond(authenticated: true), from: stranger, explicit: explicit) else {
                return XCTFail("explicit \(explicit)")
            }
        }
    }

    func testTheSameDeviceByItsRPAOrLastAddressMayRenewTheBond() throws {
        let rpa = try ResolvablePrivateAddress.generate(irk: irk, random: [1, 2, 3])
        let old = bond(authenticated: false, connectionAddress: DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_07), type: .random))
        XCTAssertEqual(BondReplacement.decide(old: old, new: bond(authenticated: false), from: DeviceAddress(rpa, type: .random), explicit: false), .store)
        XCTAssertEqual(BondReplacement.decide(old: old, new: bond(authenticated: false), from: DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_07), type: .random),
                                              explicit: false), .store)
    }

    func testAPeerStartedPairingMayNotWeakenTheBondOnAnyAxisButAnExplicitOneMay() {
        let old = bond(authenticated: true, sc: true, keySize: 16)
        for weaker in [bond(authenticated: false), bond(authenticated: true, sc: false), bond(authenticated: true, keySize: 12)] {
            guard case .keep = BondReplacement.decide(old: old, new: weaker, from: identity, explicit: false) else { return XCTFail("\(weaker)") }
            XCTAssertEqual(BondReplacement.decide(old: old, new: weaker, from: identity, explicit: true), .store)
        }
        XCTAssertEqual(BondReplacement.decide(old: old, new: bond(authenticated: true), from: identity, explicit: false), .store, "as strong: renewed")
    }
}

@testable import BLE
import BLEWire
import XCTest

/// The signing fields of a bond survive the file format: a restarted host must not reuse a
/// SignCounter it has sent, nor accept one it has already seen (Vol 3 Part C §10.4).
final class BondSigningFieldsTests: XCTestCase {
    func testSigningKeysAndCountersRoundTripThroughTheBondFile() throws {
        let bond = Bond(peer: DeviceAddress(BDAddress(rawValue: 0xC011_2233_4455), type: .random),
                        peerLongTermKey: [UInt8](repeating: 1, count: 16),
                        peerSignatureKey: [UInt8](repeating: 2, count: 16), peerSignCounter: 41,
                        localSignCounter: 7, localSignatureKey: [UInt8](repeating: 3, count: 16),
                        secureConnections: true, authenticated: false, keySize: 16)
        let text = BondFileFormat.encode(bond)
        XCTAssertTrue(text.contains("local-csrk=03030303030303030303030303030303\n"), text)
        XCTAssertTrue(text.contains("peer-sign-counter=41\n"), text)
        XCTAssertTrue(text.contains("local-sign-counter=7\n"), text)
        XCTAssertEqual(try BondFileFormat.decodeBond(text), bond)
        // A bond written before our CSRK was recorded reads back without one (signing then
        // needs a new pairing), and without a peer counter: any first counter is taken.
        let older = text.split(separator: "\n").filter { !$0.hasPrefix("local-csrk=") && !$0.hasPrefix("peer-sign-counter=") }
            .joined(separator: "\n") + "\n"
        let decoded = try BondFileFormat.decodeBond(older)
        XCTAssertNil(decoded.localSignatureKey)
        XCTAssertNil(decoded.peerSignCounter)
        XCTAssertThrowsError(try BondFileFormat.decodeBond(text.replacingOccurrences(of: "local-csrk=03", with: "local-csrk=")))
    }
}

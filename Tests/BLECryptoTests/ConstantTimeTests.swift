import BLECrypto
import XCTest

/// `ConstantTime.equal`, which the Security Manager compares confirm values and DHKey checks
/// with, and the signed-write check its MACs.
final class ConstantTimeTests: XCTestCase {
    func testEqualOnlyForTheSameOctets() {
        let a: [UInt8] = Array(0..<16)
        XCTAssertTrue(ConstantTime.equal(a, a))
        XCTAssertTrue(ConstantTime.equal([], []))
        for i in a.indices {
            var b = a
            b[i] ^= 0x80
            XCTAssertFalse(ConstantTime.equal(a, b), "a difference in octet \(i)")
        }
        XCTAssertFalse(ConstantTime.equal(a, Array(a.dropLast())), "different lengths")
        XCTAssertFalse(ConstantTime.equal(Array(a.dropLast()), a))
    }
}

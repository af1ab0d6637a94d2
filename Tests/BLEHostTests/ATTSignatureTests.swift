import XCTest
import BLEWire
import BLETestSupport
@testable import BLEHost

/// The signing algorithm (Core spec Vol 3 Part H §2.4.5) against published vectors: BlueZ's
/// unit/test-crypto.c `sign_att_1`…`sign_att_5`, which check `bt_crypto_sign_att` (the
/// implementation Linux hosts interoperate with). Keys and messages are as BlueZ gives them:
/// least significant octet first, as SMP and ATT carry them; the expected value is the whole
/// 12-octet Authentication Signature as it goes on the air.
final class ATTSignatureTests: XCTestCase {
    /// RFC 4493's key 2b7e1516 28aed2a6 abf71588 09cf4f3c, least significant octet first.
    static let rfcKey = hexBytes("3c4fcf09 8815f7ab a6d2ae28 16157e2b")
    static let rfcMessage = hexBytes("6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51"
                                     + "30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710")

    func testBlueZSignAttVectorsOneToFour() throws {
        let cases: [(length: Int, signature: String)] = [
            (0, "00000000 b3a85941 27ebc2c0"),
            (16, "00000000 273974f4 392a232a"),
            (40, "00000000 b7ca94ab 87c78218"),
            (64, "00000000 44e1e6ce 1df51368"),
        ]
        for c in cases {
            let message = Array(Self.rfcMessage.prefix(c.length))
            let signature = try ATTSignature.sign(message, key: Self.rfcKey, counter: 0)
            XCTAssertEqual(signature.hexString, hexBytes(c.signature).hexString, "\(c.length)-octet message")
            XCTAssertTrue(ATTSignature.isValid(signature, of: message, key: Self.rfcKey))
        }
    }

    /// `sign_att_5`: a real Signed Write Command, opcode 0xD2 to handle 0x0012 with value
    /// 13 37, SignCounter 1. The signature starts with the counter, little-endian.
    func testBlueZSignAttVectorFiveIsASignedWriteCommand() throws {
        let key = hexBytes("505E42DF 9691EC72 D31FCDFB EB641B61")
        let message = hexBytes("d2 1200 1337")
        let signature = try ATTSignature.sign(message, key: key, counter: 1)
        XCTAssertEqual(signature.hexString, hexBytes("01000000 f1871e93 3c900ff2").hexString)
        XCTAssertEqual(ATTSignature.counter(of: signature), 1)
        XCTAssertTrue(ATTSignature.isValid(signature, of: message, key: key))
        // The whole PDU as it goes on the air.
        let pdu = ATTPDU.signedWriteCommand(handle: 0x0012, value: [0x13, 0x37], signature: signature).encode()
        XCTAssertEqual(pdu.hexString, hexBytes("d2 1200 1337 01000000 f1871e93 3c900ff2").hexString)
    }

    func testAnyChangeInvalidatesTheSignature() throws {
        let key = hexBytes("505E42DF 9691EC72 D31FCDFB EB641B61")
        let message = hexBytes("d2 1200 1337")
        let signature = try ATTSignature.sign(message, key: key, counter: 1)
        for i in 0..<message.count {
            var m = message
            m[i] ^= 0x01
            XCTAssertFalse(ATTSignature.isValid(signature, of: m, key: key), "message bit flip at \(i)")
        }
        for i in 0..<signature.count {
            var s = signature
            s[i] ^= 0x80
            XCTAssertFalse(ATTSignature.isValid(s, of: message, key: key), "signature bit flip at \(i)")
        }
        var otherKey = key
        otherKey[0] ^= 1
        XCTAssertFalse(ATTSignature.isValid(signature, of: message, key: otherKey))
        // Wrong lengths are refused, not trapped on.
        XCTAssertFalse(ATTSignature.isValid(Array(signature.prefix(11)), of: message, key: key))
        XCTAssertFalse(ATTSignature.isValid(signature, of: message, key: Array(key.prefix(15))))
        XCTAssertNil(ATTSignature.counter(of: []))
        XCTAssertThrowsError(try ATTSignature.sign(message, key: [], counter: 0))
    }

    func testTheCounterIsLittleEndianAndCoversTheMAC() throws {
        let key = Self.rfcKey
        let a = try ATTSignature.sign([0xD2, 0x01, 0x00], key: key, counter: 0x0403_0201)
        XCTAssertEqual(Array(a.prefix(4)), [0x01, 0x02, 0x03, 0x04])
        XCTAssertEqual(ATTSignature.counter(of: a), 0x0403_0201)
        let b = try ATTSignature.sign([0xD2, 0x01, 0x00], key: key, counter: 0x0403_0202)
        XCTAssertNotEqual(Array(a.suffix(8)), Array(b.suffix(8)), "the counter is signed too")
    }
}

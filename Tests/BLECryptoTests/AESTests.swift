import XCTest
@testable import BLECrypto
import BLETestSupport

/// AES-128 (FIPS-197) and AES-CMAC (RFC 4493) against their published vectors.
final class AESTests: XCTestCase {
    static let rfcKey = hexBytes("2b7e1516 28aed2a6 abf71588 09cf4f3c")
    static let rfcMessage64 = hexBytes("""
        6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
        30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710
        """)

    /// FIPS-197 Appendix C.1.
    func testFIPS197AES128() throws {
        let out = try AES128.encrypt(key: hexBytes("000102030405060708090a0b0c0d0e0f"), block: hexBytes("00112233445566778899aabbccddeeff"))
        XCTAssertEqual(out, hexBytes("69c4e0d86a7b0430d8cdb78070b4c55a"))
    }

    /// FIPS-197 Appendix B (the cipher example), the key RFC 4493 reuses.
    func testFIPS197AppendixB() throws {
        let out = try AES128.encrypt(key: Self.rfcKey, block: hexBytes("3243f6a8 885a308d 313198a2 e0370734"))
        XCTAssertEqual(out, hexBytes("3925841d 02dc09fb dc118597 196a0b32"))
    }

    /// RFC 4493 §4 subkey generation: L = AES-128(K, 0).
    func testRFC4493SubkeyL() throws {
        XCTAssertEqual(try AES128.encrypt(key: Self.rfcKey, block: [UInt8](repeating: 0, count: 16)),
                       hexBytes("7df76b0c 1ab899b3 3e42f047 b91b546f"))
    }

    /// The security function e is plain MSB-first AES-128: the LE encryption sample data
    /// (Core spec Vol 6 Part C §1, SK = e(LTK, SKD)) comes out as printed.
    func testSecurityFunctionEIsPlainAES() throws {
        let out = try AES128.encrypt(key: hexBytes("4C68384139F574D836BCF34E9DFB01BF"), block: hexBytes("0213243546576879acbdcedfe0f10213"))
        XCTAssertEqual(out, hexBytes("99ad1b5226a37e3e058e3b8e27c2c666"))
    }

    /// HCI LE Encrypt carries key, plaintext and result LSB-first: the same sample as it appears
    /// in the Command Complete parameters (66 c6 c2 27 ... ad 99) is the reversed MSB-first tag.
    func testHCIByteOrderIsReversed() throws {
        let hciKey: [UInt8] = hexBytes("4C68384139F574D836BCF34E9DFB01BF").reversed()
        let hciPlaintext: [UInt8] = hexBytes("0213243546576879acbdcedfe0f10213").reversed()
        let out = try AES128.encrypt(key: hciKey.reversed(), block: hciPlaintext.reversed())
        XCTAssertEqual(Array(out.reversed()), hexBytes("66 c6 c2 27 8e 3b 8e 05 3e 7e a3 26 52 1b ad 99"))
    }

    func testCMACEmptyMessage() throws {
        XCTAssertEqual(try AESCMAC.mac(key: Self.rfcKey, message: []), hexBytes("bb1d6929 e9593728 7fa37d12 9b756746"))
    }

    func testCMAC16ByteMessage() throws {
        XCTAssertEqual(try AESCMAC.mac(key: Self.rfcKey, message: Array(Self.rfcMessage64[0..<16])),
                       hexBytes("070a16b4 6b4d4144 f79bdd9d d04a287c"))
    }

    func testCMAC40ByteMessage() throws {
        XCTAssertEqual(try AESCMAC.mac(key: Self.rfcKey, message: Array(Self.rfcMessage64[0..<40])),
                       hexBytes("dfa66747 de9ae630 30ca3261 1497c827"))
    }

    func testCMAC64ByteMessage() throws {
        XCTAssertEqual(try AESCMAC.mac(key: Self.rfcKey, message: Self.rfcMessage64),
                       hexBytes("51f0bebf 7e3b9d92 fc497417 79363cfe"))
    }

    /// The GATT Database Hash (Core spec Vol 3 Part G §7.3) is AES-CMAC under an all-zero key;
    /// the GATT server computes it with this function. Checked against a published
    /// database-hash sample (111 attribute bytes of a small GAP/GATT/Battery/Device-Information
    /// database, the one BlueZ's unit/test-crypto.c uses) and its expected hash.
    func testCMACWithZeroKeyGATTDatabaseHash() throws {
        let message = hexBytes("""
            01000028 00180200 03280A03 00002A04
            00032802 0500012A 06000028 01180700
            03282008 00052A09 0002290A 0003280A
            0B00292B 0C000328 020D002A 2B0E0000
            2808180F 00022814 0016000F 18100003
            28A21100 182A1200 02291300 00290000
            14000128 0F181500 03280216 00192A
            """)
        XCTAssertEqual(message.count, 111)
        let zeroKey = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(try AESCMAC.mac(key: zeroKey, message: message), hexBytes("F1CA2D48ECF58BAC8A8830BBB9FBA990"))
        // And the degenerate empty database still gives a 16-byte tag.
        XCTAssertEqual(try AESCMAC.mac(key: zeroKey, message: []).count, 16)
    }

    func testCMACIsSafeToCallConcurrently() async throws {
        let expected = hexBytes("51f0bebf 7e3b9d92 fc497417 79363cfe")
        let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<16 {
                group.addTask { try AESCMAC.mac(key: Self.rfcKey, message: Self.rfcMessage64) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(results, Array(repeating: expected, count: 16))
    }

    func testWrongLengthsThrow() {
        assertThrows(.invalidLength) { try AES128.encrypt(key: [UInt8](repeating: 0, count: 15), block: [UInt8](repeating: 0, count: 16)) }
        assertThrows(.invalidLength) { try AES128.encrypt(key: [UInt8](repeating: 0, count: 32), block: [UInt8](repeating: 0, count: 16)) }
        assertThrows(.invalidLength) { try AES128.encrypt(key: [UInt8](repeating: 0, count: 16), block: []) }
        assertThrows(.invalidLength) { try AES128.encrypt(key: [UInt8](repeating: 0, count: 16), block: [UInt8](repeating: 0, count: 17)) }
        assertThrows(.invalidLength) { try AESCMAC.mac(key: [], message: [1, 2, 3]) }
        assertThrows(.invalidLength) { try AESCMAC.mac(key: [UInt8](repeating: 0, count: 24), message: []) }
    }

    func testSecureRandom() throws {
        let a = try SecureRandom.bytes(count: 16)
        let b = try SecureRandom.bytes(count: 16)
        XCTAssertEqual(a.count, 16)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(try SecureRandom.bytes(count: 0), [])
        assertThrows(.invalidLength) { try SecureRandom.bytes(count: -1) }
        assertThrows(.invalidLength) { try SecureRandom.bytes(count: 1 << 20) }
    }

    func testErrorDescription() {
        let error = CryptoError(.invalidLength, "AES-128 key must be 16 bytes, got 3")
        XCTAssertEqual(error.description, "CryptoError.invalidLength: AES-128 key must be 16 bytes, got 3")
        XCTAssertEqual(CryptoError.Code(rawValue: "invalidLength"), .invalidLength)
    }
}

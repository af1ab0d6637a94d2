import XCTest
@testable import BLECrypto
import BLETestSupport

/// The Security Manager functions against the Core spec's sample data
/// (Vol 3 Part H Appendix D for f4–h7 and ah, §2.2.3/§2.2.4 examples for c1 and s1).
/// Everything is written MSB-first, exactly as printed in the spec.
final class SMPCryptoTests: XCTestCase {
    // Shared sample values of Appendix D.
    static let u = hexBytes("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    static let v = hexBytes("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let n1 = hexBytes("d5cb8454 d177733e ffffb2ec 712baeab")
    static let n2 = hexBytes("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
    static let dhKey = hexBytes("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
    static let a1 = hexBytes("00561237 37bfce")
    static let a2 = hexBytes("00a71370 2dcfc1")
    static let macKey = hexBytes("2965f176 a1084a02 fd3f6a20 ce636e20")
    static let key128 = hexBytes("ec0234a3 57c8ad05 341010a6 0a397d9b")
    static let zero16 = [UInt8](repeating: 0, count: 16)

    /// Appendix D.2.
    func testF4() throws {
        let out = try SMPCrypto.f4(u: Self.u, v: Self.v, x: Self.n1, z: 0x00)
        XCTAssertEqual(out, hexBytes("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    /// Appendix D.3.
    func testF5() throws {
        let out = try SMPCrypto.f5(w: Self.dhKey, n1: Self.n1, n2: Self.n2, a1: Self.a1, a2: Self.a2)
        XCTAssertEqual(out.macKey, hexBytes("2965f176 a1084a02 fd3f6a20 ce636e20"))
        XCTAssertEqual(out.ltk, hexBytes("69867911 69d7cd23 980522b5 94750a38"))
    }

    /// Appendix D.3's intermediate key T = AES-CMAC_SALT(W).
    func testF5IntermediateT() throws {
        XCTAssertEqual(try AESCMAC.mac(key: SMPCrypto.f5Salt, message: Self.dhKey), hexBytes("3c128f20 de883288 97624bdb 8dac6989"))
    }

    /// Appendix D.4.
    func testF6() throws {
        let out = try SMPCrypto.f6(w: Self.macKey, n1: Self.n1, n2: Self.n2, r: hexBytes("12a3343b b453bb54 08da42d2 0c2d0fc8"),
                                   ioCap: hexBytes("010102"), a1: Self.a1, a2: Self.a2)
        XCTAssertEqual(out, hexBytes("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    /// Appendix D.5.
    func testG2() throws {
        let out = try SMPCrypto.g2(u: Self.u, v: Self.v, x: Self.n1, y: Self.n2)
        XCTAssertEqual(out, 0x2f9e_d5ba)
        XCTAssertEqual(out % 1_000_000, 938_554, "the six digits Numeric Comparison shows")
    }

    /// Appendix D.6 (keyID "lebr").
    func testH6() throws {
        XCTAssertEqual(try SMPCrypto.h6(w: Self.key128, keyID: hexBytes("6c656272")), hexBytes("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
    }

    /// Appendix D.8 (SALT "tmp1").
    func testH7() throws {
        let salt = hexBytes("00000000 00000000 00000000 746D7031")
        XCTAssertEqual(try SMPCrypto.h7(salt: salt, w: Self.key128), hexBytes("fb173597 c6a3c0ec d2998c2a 75a57011"))
    }

    /// Appendix D.7.
    func testAh() throws {
        XCTAssertEqual(try SMPCrypto.ah(k: Self.key128, r: hexBytes("708194")), hexBytes("0dfbaa"))
    }

    /// §2.2.3's example: TK 0, random 5783D521..., Pairing Request 07071000000101, Pairing
    /// Response 05000800000302, initiator A1A2A3A4A5A6 random, responder B1B2B3B4B5B6 public.
    func testC1() throws {
        let out = try SMPCrypto.c1(k: Self.zero16, r: hexBytes("5783D521 56AD6F0E 6388274E C6702EE0"),
                                   preq: hexBytes("07071000000101"), pres: hexBytes("05000800000302"),
                                   iat: 1, ia: hexBytes("A1A2A3A4A5A6"), rat: 0, ra: hexBytes("B1B2B3B4B5B6"))
        XCTAssertEqual(out, hexBytes("1e1e3fef 878988ea d2a74dc5 bef13b86"))
    }

    /// §2.2.4's example.
    func testS1() throws {
        let out = try SMPCrypto.s1(k: Self.zero16, r1: hexBytes("000F0E0D0C0B0A09 1122334455667788"), r2: hexBytes("0102030405060708 99AABBCCDDEEFF00"))
        XCTAssertEqual(out, hexBytes("9a1fe1f0 e8b0f49b 5b4216ae 796da062"))
    }

    func testWrongLengthsThrow() {
        let z16 = Self.zero16, z32 = [UInt8](repeating: 0, count: 32), z7 = [UInt8](repeating: 0, count: 7)
        assertThrows(.invalidLength) { try SMPCrypto.f4(u: Array(z32.dropLast()), v: z32, x: z16, z: 0) }
        assertThrows(.invalidLength) { try SMPCrypto.f4(u: z32, v: z32, x: z32, z: 0) }
        assertThrows(.invalidLength) { try SMPCrypto.f5(w: z16, n1: z16, n2: z16, a1: z7, a2: z7) }
        assertThrows(.invalidLength) { try SMPCrypto.f5(w: z32, n1: z16, n2: z16, a1: [0, 1, 2, 3, 4, 5], a2: z7) }
        assertThrows(.invalidLength) { try SMPCrypto.f6(w: z16, n1: z16, n2: z16, r: z16, ioCap: [1, 1], a1: z7, a2: z7) }
        assertThrows(.invalidLength) { try SMPCrypto.f6(w: z16, n1: z16, n2: z16, r: z16, ioCap: [1, 1, 2], a1: z7, a2: z16) }
        assertThrows(.invalidLength) { try SMPCrypto.g2(u: z32, v: z32, x: z16, y: z32) }
        assertThrows(.invalidLength) { try SMPCrypto.h6(w: z16, keyID: [0x6c, 0x65, 0x62]) }
        assertThrows(.invalidLength) { try SMPCrypto.h7(salt: z32, w: z16) }
        assertThrows(.invalidLength) { try SMPCrypto.ah(k: z16, r: [1, 2, 3, 4]) }
        assertThrows(.invalidLength) { try SMPCrypto.c1(k: z16, r: z16, preq: z16, pres: z7, iat: 0, ia: [UInt8](repeating: 0, count: 6), rat: 0, ra: [UInt8](repeating: 0, count: 6)) }
        assertThrows(.invalidLength) { try SMPCrypto.c1(k: z16, r: z16, preq: z7, pres: z7, iat: 0, ia: z7, rat: 0, ra: [UInt8](repeating: 0, count: 6)) }
        assertThrows(.invalidLength) { try SMPCrypto.s1(k: z16, r1: Array(z16.dropFirst()), r2: z16) }
    }

    func testC1RejectsAddressTypesOtherThanPublicOrRandom() {
        let six = [UInt8](repeating: 0, count: 6), seven = [UInt8](repeating: 0, count: 7)
        assertThrows(.invalidArgument) { try SMPCrypto.c1(k: Self.zero16, r: Self.zero16, preq: seven, pres: seven, iat: 2, ia: six, rat: 0, ra: six) }
        assertThrows(.invalidArgument) { try SMPCrypto.c1(k: Self.zero16, r: Self.zero16, preq: seven, pres: seven, iat: 0, ia: six, rat: 0xff, ra: six) }
    }
}

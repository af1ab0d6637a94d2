import XCTest
@testable import BLECrypto
import BLETestSupport

/// P-256 key generation and ECDH (Core spec Vol 3 Part H §2.3.5.6.1 and Appendix D.1).
final class P256Tests: XCTestCase {
    // Appendix D.1: device A uses the debug key pair, device B the second pair.
    static let privateA = hexBytes("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
    static let publicAX = hexBytes("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    static let publicAY = hexBytes("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b")
    static let privateB = hexBytes("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let publicBX = hexBytes("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
    static let publicBY = hexBytes("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a")
    static let dhKey = hexBytes("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")

    /// §2.3.5.6.1: the debug private key's public key is the published one.
    func testDebugKeyPair() throws {
        let pair = try P256.keyPair(privateKey: P256.debugPrivateKey)
        XCTAssertEqual(P256.debugPrivateKey, Self.privateA)
        XCTAssertEqual(pair.publicKeyX, Self.publicAX)
        XCTAssertEqual(pair.publicKeyY, Self.publicAY)
        XCTAssertEqual(P256.debugPublicKeyX, Self.publicAX)
        XCTAssertEqual(P256.debugPublicKeyY, Self.publicAY)
        XCTAssertEqual(pair.description, "P256KeyPair(publicKeyX: 20b003d2f297be2c5e2c83a7e9f9a5b9eff49111acf4fddbcc0301480e359de6, privateKey: <redacted>)")
    }

    /// Appendix D.1's second key pair.
    func testSampleKeyPairB() throws {
        let pair = try P256.keyPair(privateKey: Self.privateB)
        XCTAssertEqual(pair.publicKeyX, Self.publicBX)
        XCTAssertEqual(pair.publicKeyY, Self.publicBY)
    }

    /// Appendix D.1: both sides arrive at the same DHKey.
    func testECDHSample() throws {
        XCTAssertEqual(try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: Self.publicBX, peerPublicKeyY: Self.publicBY), Self.dhKey)
        XCTAssertEqual(try P256.sharedSecret(privateKey: Self.privateB, peerPublicKeyX: Self.publicAX, peerPublicKeyY: Self.publicAY), Self.dhKey)
    }

    func testGeneratedPairsAgree() throws {
        let alice = try P256.generateKeyPair()
        let bob = try P256.generateKeyPair()
        XCTAssertEqual(alice.privateKey.count, 32)
        XCTAssertEqual(alice.publicKeyX.count, 32)
        XCTAssertEqual(alice.publicKeyY.count, 32)
        XCTAssertNotEqual(alice, bob)
        XCTAssertTrue(P256.isValidPublicKey(x: alice.publicKeyX, y: alice.publicKeyY))
        // The generated public key is the one the private key implies.
        XCTAssertEqual(try P256.keyPair(privateKey: alice.privateKey), alice)
        let ab = try P256.sharedSecret(privateKey: alice.privateKey, peerPublicKeyX: bob.publicKeyX, peerPublicKeyY: bob.publicKeyY)
        let ba = try P256.sharedSecret(privateKey: bob.privateKey, peerPublicKeyX: alice.publicKeyX, peerPublicKeyY: alice.publicKeyY)
        XCTAssertEqual(ab, ba)
        XCTAssertEqual(ab.count, 32)
    }

    func testOffCurvePointThrows() {
        var badY = Self.publicBY
        badY[31] ^= 0x01
        XCTAssertFalse(P256.isValidPublicKey(x: Self.publicBX, y: badY))
        assertThrows(.invalidPublicKey) { try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: Self.publicBX, peerPublicKeyY: badY) }
    }

    func testPointAtOriginThrows() {
        let zero = [UInt8](repeating: 0, count: 32)
        XCTAssertFalse(P256.isValidPublicKey(x: zero, y: zero))
        assertThrows(.invalidPublicKey) { try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: zero, peerPublicKeyY: zero) }
    }

    /// Coordinates ≥ p are not field elements; y + p would otherwise alias a valid point.
    func testCoordinateAbovePrimeThrows() {
        let ones = [UInt8](repeating: 0xff, count: 32)
        XCTAssertFalse(P256.isValidPublicKey(x: ones, y: Self.publicBY))
        assertThrows(.invalidPublicKey) { try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: ones, peerPublicKeyY: ones) }
    }

    func testInvalidPrivateKeysThrow() {
        let order = hexBytes("ffffffff 00000000 ffffffff ffffffff bce6faad a7179e84 f3b9cac2 fc632551")
        assertThrows(.invalidPrivateKey) { try P256.keyPair(privateKey: [UInt8](repeating: 0, count: 32)) }
        assertThrows(.invalidPrivateKey) { try P256.keyPair(privateKey: order) }
        assertThrows(.invalidPrivateKey) { try P256.keyPair(privateKey: [UInt8](repeating: 0xff, count: 32)) }
        assertThrows(.invalidPrivateKey) { try P256.sharedSecret(privateKey: order, peerPublicKeyX: Self.publicBX, peerPublicKeyY: Self.publicBY) }
        // n - 1 is the largest valid scalar.
        var orderMinusOne = order
        orderMinusOne[31] -= 1
        XCTAssertNoThrow(try P256.keyPair(privateKey: orderMinusOne))
    }

    func testWrongLengthsThrow() {
        assertThrows(.invalidLength) { try P256.keyPair(privateKey: Array(Self.privateA.dropLast())) }
        assertThrows(.invalidLength) { try P256.sharedSecret(privateKey: Self.privateA + [0], peerPublicKeyX: Self.publicBX, peerPublicKeyY: Self.publicBY) }
        assertThrows(.invalidLength) { try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: Array(Self.publicBX.dropFirst()), peerPublicKeyY: Self.publicBY) }
        assertThrows(.invalidLength) { try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: Self.publicBX, peerPublicKeyY: []) }
        XCTAssertFalse(P256.isValidPublicKey(x: Self.publicBX, y: []))
    }

    /// LE Secure Connections end to end on the sample data: ECDH gives the DHKey that f5 of
    /// Appendix D.3 starts from.
    func testECDHFeedsF5() throws {
        let dh = try P256.sharedSecret(privateKey: Self.privateA, peerPublicKeyX: Self.publicBX, peerPublicKeyY: Self.publicBY)
        let keys = try SMPCrypto.f5(w: dh, n1: SMPCryptoTests.n1, n2: SMPCryptoTests.n2, a1: SMPCryptoTests.a1, a2: SMPCryptoTests.a2)
        XCTAssertEqual(keys.ltk, hexBytes("69867911 69d7cd23 980522b5 94750a38"))
    }
}

import CLibcrypto

/// A P-256 key pair for LE Secure Connections (Core spec Vol 3 Part H §2.3.5.6).
///
/// All three values are 32 bytes, most-significant byte first (the spec's notation, and the
/// order libcrypto uses). The Pairing Public Key PDU (§3.5.6) carries X and Y least-significant
/// byte first, so the Security Manager reverses them on the way in and out.
public struct P256KeyPair: Sendable, Hashable, CustomStringConvertible {
    public let privateKey: [UInt8]
    public let publicKeyX: [UInt8]
    public let publicKeyY: [UInt8]

    public init(privateKey: [UInt8], publicKeyX: [UInt8], publicKeyY: [UInt8]) {
        self.privateKey = privateKey
        self.publicKeyX = publicKeyX
        self.publicKeyY = publicKeyY
    }

    /// Never prints the private key: logs and test failures must not leak it.
    public var description: String {
        let x = publicKeyX.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()
        return "P256KeyPair(publicKeyX: \(x), privateKey: <redacted>)"
    }
}

/// Elliptic-curve Diffie-Hellman on NIST P-256 (secp256r1), the curve LE Secure Connections
/// uses (Core spec Vol 3 Part H §2.3.5.6.1), via libcrypto's EVP_PKEY interface.
public enum P256 {
    public static let scalarSize = 32
    public static let coordinateSize = 32

    /// The private key of the debug key pair (Core spec Vol 3 Part H §2.3.5.6.1). A device in
    /// Secure Connections debug mode uses it so an air sniffer can decrypt the link; a device not
    /// in debug mode may refuse a peer that presents the matching public key.
    public static let debugPrivateKey: [UInt8] = [
        0x3f, 0x49, 0xf6, 0xd4, 0xa3, 0xc5, 0x5f, 0x38, 0x74, 0xc9, 0xb3, 0xe3, 0xd2, 0x10, 0x3f, 0x50,
        0x4a, 0xff, 0x60, 0x7b, 0xeb, 0x40, 0xb7, 0x99, 0x58, 0x99, 0xb8, 0xa6, 0xcd, 0x3c, 0x1a, 0xbd,
    ]
    /// The debug public key's x-coordinate (§2.3.5.6.1).
    public static let debugPublicKeyX: [UInt8] = [
        0x20, 0xb0, 0x03, 0xd2, 0xf2, 0x97, 0xbe, 0x2c, 0x5e, 0x2c, 0x83, 0xa7, 0xe9, 0xf9, 0xa5, 0xb9,
        0xef, 0xf4, 0x91, 0x11, 0xac, 0xf4, 0xfd, 0xdb, 0xcc, 0x03, 0x01, 0x48, 0x0e, 0x35, 0x9d, 0xe6,
    ]
    /// The debug public key's y-coordinate (§2.3.5.6.1).
    public static let debugPublicKeyY: [UInt8] = [
        0xdc, 0x80, 0x9c, 0x49, 0x65, 0x2a, 0xeb, 0x6d, 0x63, 0x32, 0x9a, 0xbf, 0x5a, 0x52, 0x15, 0x5c,
        0x76, 0x63, 0x45, 0xc2, 0x8f, 0xed, 0x30, 0x24, 0x74, 0x1c, 0x8e, 0xd0, 0x15, 0x89, 0xd2, 0x8b,
    ]

    /// A fresh key pair from libcrypto's DRBG. The spec asks for a new pair per pairing at the
    /// latest when a pairing fails (§2.3.5.6.1); callers decide how often beyond that.
    public static func generateKeyPair() throws(CryptoError) -> P256KeyPair {
        OpenSSL.clearErrors()
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw OpenSSL.failure("EVP_PKEY_CTX_new_from_name(EC)") }
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_keygen_init(ctx), "EVP_PKEY_keygen_init")
        try OpenSSL.check(EVP_PKEY_CTX_set_group_name(ctx, ble_name_p256), "EVP_PKEY_CTX_set_group_name(P-256)")
        var generated: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_generate(ctx, &generated), "EVP_PKEY_generate")
        guard let pkey = generated else { throw OpenSSL.failure("EVP_PKEY_generate returned no key") }
        defer { EVP_PKEY_free(pkey) }

        var priv: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_get_bn_param(pkey, ble_param_priv, &priv), "EVP_PKEY_get_bn_param(priv)")
        guard let privBN = priv else { throw OpenSSL.failure("EVP_PKEY_get_bn_param(priv) returned nothing") }
        defer { BN_clear_free(privBN) }
        let privateKey = try bigEndianBytes(privBN, count: scalarSize)

        var encoded = [UInt8](repeating: 0, count: 1 + 2 * coordinateSize)
        var length = 0
        let status = encoded.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_octet_string_param(pkey, ble_param_pub, $0.baseAddress, $0.count, &length)
        }
        try OpenSSL.check(status, "EVP_PKEY_get_octet_string_param(pub)")
        return try keyPair(privateKey: privateKey, uncompressedPoint: Array(encoded[0..<length]))
    }

    /// The key pair whose private key is `privateKey` (32 bytes, 1 ≤ d < n), its public key
    /// computed as d·G. Lets tests and debug mode use the spec's fixed keys.
    public static func keyPair(privateKey: [UInt8]) throws(CryptoError) -> P256KeyPair {
        try CryptoError.requireLength(privateKey, scalarSize, "P-256 private key")
        OpenSSL.clearErrors()
        let group = try Curve()
        let point = try privateKey.withBIGNUM { (d) throws(CryptoError) -> [UInt8] in
            try group.requireValidScalar(d)
            return try group.multiplyGenerator(by: d)
        }
        return try keyPair(privateKey: privateKey, uncompressedPoint: point)
    }

    /// The ECDH shared secret: the x-coordinate of d·Q, 32 bytes MSB-first. In LE Secure
    /// Connections this is the DHKey (§2.3.5.6.1) fed to f5 as W.
    ///
    /// The peer's point is checked before use (on the curve, coordinates below p, correct
    /// order); an invalid one throws `invalidPublicKey`, which the Security Manager turns into
    /// Pairing Failed rather than leaking bits of the private key (the invalid-curve attack,
    /// CVE-2018-5383).
    public static func sharedSecret(privateKey: [UInt8], peerPublicKeyX: [UInt8], peerPublicKeyY: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(privateKey, scalarSize, "P-256 private key")
        try CryptoError.requireLength(peerPublicKeyX, coordinateSize, "P-256 peer public key X")
        try CryptoError.requireLength(peerPublicKeyY, coordinateSize, "P-256 peer public key Y")
        let own = try keyPair(privateKey: privateKey)
        let ownKey = try EVPKey(keyPair: own)
        let peerKey = try EVPKey(publicKeyX: peerPublicKeyX, publicKeyY: peerPublicKeyY)

        OpenSSL.clearErrors()
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, ownKey.pointer, nil) else { throw OpenSSL.failure("EVP_PKEY_CTX_new_from_pkey") }
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_derive_init(ctx), "EVP_PKEY_derive_init")
        guard EVP_PKEY_derive_set_peer_ex(ctx, peerKey.pointer, 1) == 1 else {
            throw OpenSSL.failure("EVP_PKEY_derive_set_peer_ex (peer key validation)", code: .invalidPublicKey)
        }
        var length = 0
        try OpenSSL.check(EVP_PKEY_derive(ctx, nil, &length), "EVP_PKEY_derive (length)")
        guard length == coordinateSize else {
            throw CryptoError(.libraryFailure, "ECDH secret is \(length) bytes, expected \(coordinateSize)")
        }
        var secret = [UInt8](repeating: 0, count: length)
        let status = secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(ctx, $0.baseAddress, &length) }
        try OpenSSL.check(status, "EVP_PKEY_derive")
        guard length == coordinateSize else {
            throw CryptoError(.libraryFailure, "ECDH secret is \(length) bytes, expected \(coordinateSize)")
        }
        return secret
    }

    /// Whether (x, y) is a valid P-256 public key: the check a Security Manager makes on a
    /// received Pairing Public Key before anything else (§2.3.5.6.1).
    public static func isValidPublicKey(x: [UInt8], y: [UInt8]) -> Bool {
        guard x.count == coordinateSize, y.count == coordinateSize else { return false }
        return (try? EVPKey(publicKeyX: x, publicKeyY: y)) != nil
    }

    private static func keyPair(privateKey: [UInt8], uncompressedPoint: [UInt8]) throws(CryptoError) -> P256KeyPair {
        guard uncompressedPoint.count == 1 + 2 * coordinateSize, uncompressedPoint.first == 0x04 else {
            throw CryptoError(.libraryFailure, "public key is not an uncompressed P-256 point (\(uncompressedPoint.count) bytes)")
        }
        return P256KeyPair(
            privateKey: privateKey,
            publicKeyX: Array(uncompressedPoint[1...coordinateSize]),
            publicKeyY: Array(uncompressedPoint[(1 + coordinateSize)...])
        )
    }
}

/// The P-256 group as libcrypto's EC_GROUP, for what the EVP_PKEY interface does not offer:
/// checking a scalar's range and computing d·G from a given private key.
private final class Curve {
    let group: OpaquePointer

    init() throws(CryptoError) {
        guard let group = EC_GROUP_new_by_curve_name(ble_nid_p256) else { throw OpenSSL.failure("EC_GROUP_new_by_curve_name(P-256)") }
        self.group = group
    }

    deinit { EC_GROUP_free(group) }

    /// Throws `invalidPrivateKey` unless 1 ≤ d < n (the group order).
    func requireValidScalar(_ d: OpaquePointer) throws(CryptoError) {
        guard let order = EC_GROUP_get0_order(group) else { throw OpenSSL.failure("EC_GROUP_get0_order") }
        guard BN_is_zero(d) == 0, BN_cmp(d, order) < 0 else {
            throw CryptoError(.invalidPrivateKey, "P-256 private key must be in [1, n-1]")
        }
    }

    /// d·G as an uncompressed point (0x04 || X || Y).
    func multiplyGenerator(by d: OpaquePointer) throws(CryptoError) -> [UInt8] {
        guard let point = EC_POINT_new(group) else { throw OpenSSL.failure("EC_POINT_new") }
        defer { EC_POINT_free(point) }
        try OpenSSL.check(EC_POINT_mul(group, point, d, nil, nil, nil), "EC_POINT_mul")
        var out = [UInt8](repeating: 0, count: 1 + 2 * P256.coordinateSize)
        let written = out.withUnsafeMutableBufferPointer {
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, $0.baseAddress, $0.count, nil)
        }
        guard written == out.count else { throw OpenSSL.failure("EC_POINT_point2oct") }
        return out
    }
}

/// An owned EVP_PKEY on P-256, imported from raw coordinates with EVP_PKEY_fromdata.
private final class EVPKey {
    let pointer: OpaquePointer

    /// A key pair (private and public), for the local side of ECDH.
    convenience init(keyPair: P256KeyPair) throws(CryptoError) {
        let point = [0x04] + keyPair.publicKeyX + keyPair.publicKeyY
        let params = try keyPair.privateKey.withBIGNUM { (d) throws(CryptoError) -> ParamList in
            try ParamList("P-256 key pair") { builder in
                point.withUnsafeBufferPointer { encoded in
                    guard OSSL_PARAM_BLD_push_utf8_string(builder, ble_param_group, ble_name_p256, 0) == 1,
                          OSSL_PARAM_BLD_push_BN(builder, ble_param_priv, d) == 1,
                          OSSL_PARAM_BLD_push_octet_string(builder, ble_param_pub, encoded.baseAddress, encoded.count) == 1
                    else { return nil }
                    return OSSL_PARAM_BLD_to_param(builder)
                }
            }
        }
        try self.init(params: params, selection: ble_evp_pkey_keypair, failure: .libraryFailure, what: "P-256 key pair")
    }

    /// A peer's public key, validated: on the curve (checked while decoding the point) and
    /// passing EVP_PKEY_public_check (coordinates in range, order n).
    convenience init(publicKeyX: [UInt8], publicKeyY: [UInt8]) throws(CryptoError) {
        let point = [0x04] + publicKeyX + publicKeyY
        let params = try ParamList("P-256 public key") { builder in
            point.withUnsafeBufferPointer { encoded in
                guard OSSL_PARAM_BLD_push_utf8_string(builder, ble_param_group, ble_name_p256, 0) == 1,
                      OSSL_PARAM_BLD_push_octet_string(builder, ble_param_pub, encoded.baseAddress, encoded.count) == 1
                else { return nil }
                return OSSL_PARAM_BLD_to_param(builder)
            }
        }
        try self.init(params: params, selection: ble_evp_pkey_public_key, failure: .invalidPublicKey, what: "P-256 public key")
        OpenSSL.clearErrors()
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { throw OpenSSL.failure("EVP_PKEY_CTX_new_from_pkey") }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_public_check(ctx) == 1 else {
            throw OpenSSL.failure("P-256 public key check", code: .invalidPublicKey)
        }
    }

    private init(params: ParamList, selection: Int32, failure: CryptoError.Code, what: String) throws(CryptoError) {
        OpenSSL.clearErrors()
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw OpenSSL.failure("EVP_PKEY_CTX_new_from_name(EC)") }
        defer { EVP_PKEY_CTX_free(ctx) }
        try OpenSSL.check(EVP_PKEY_fromdata_init(ctx), "EVP_PKEY_fromdata_init")
        var imported: OpaquePointer?
        let status = withExtendedLifetime(params) { EVP_PKEY_fromdata(ctx, &imported, selection, params.params) }
        guard status == 1, let key = imported else {
            throw OpenSSL.failure("importing \(what)", code: failure)
        }
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }
}

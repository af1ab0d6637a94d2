import CLibcrypto

/// AES-CMAC with a 128-bit key (RFC 4493, NIST SP 800-38B), through libcrypto's EVP_MAC "CMAC".
///
/// Core spec Vol 3 Part H §2.2.5 makes AES-CMAC the building block of every LE Secure
/// Connections function (f4, f5, f6, g2, h6, h7), and Vol 3 Part G §7.3 uses it with an all-zero
/// key to compute the GATT Database Hash. Byte order is MSB-first, as in RFC 4493's examples and
/// the Core spec's sample data.
public enum AESCMAC {
    public static let keySize = 16
    public static let tagSize = 16

    /// The 16-byte tag of `message` (any length, including empty) under a 16-byte `key`.
    public static func mac(key: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(key, keySize, "AES-CMAC key")
        OpenSSL.clearErrors()
        guard let algorithm = EVP_MAC_fetch(nil, "CMAC", nil) else { throw OpenSSL.failure("EVP_MAC_fetch(CMAC)") }
        defer { EVP_MAC_free(algorithm) }
        guard let ctx = EVP_MAC_CTX_new(algorithm) else { throw OpenSSL.failure("EVP_MAC_CTX_new") }
        defer { EVP_MAC_CTX_free(ctx) }

        let params = try ParamList("CMAC") { builder in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, ble_param_cipher, ble_name_aes128cbc, 0) == 1 else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        let initialised = withExtendedLifetime(params) {
            key.withUnsafeBufferPointer { EVP_MAC_init(ctx, $0.baseAddress, $0.count, params.params) }
        }
        try OpenSSL.check(initialised, "EVP_MAC_init(CMAC, AES-128-CBC)")

        if !message.isEmpty {
            let updated = message.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) }
            try OpenSSL.check(updated, "EVP_MAC_update")
        }

        var tag = [UInt8](repeating: 0, count: tagSize)
        var length = 0
        let finished = tag.withUnsafeMutableBufferPointer { EVP_MAC_final(ctx, $0.baseAddress, &length, $0.count) }
        try OpenSSL.check(finished, "EVP_MAC_final")
        guard length == tagSize else {
            throw CryptoError(.libraryFailure, "CMAC produced \(length) bytes, expected \(tagSize)")
        }
        return tag
    }
}

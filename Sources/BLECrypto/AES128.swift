import CLibcrypto

/// AES-128 on a single block: the Bluetooth security function `e`.
///
/// Core spec Vol 3 Part H §2.2.1 defines `e(key, plaintextData)` as FIPS-197 AES-128 on one
/// 128-bit block, and it is the same operation the controller performs for HCI LE Encrypt
/// (Vol 4 Part E §7.8.22). Legacy pairing's c1 and s1 and the resolvable private address hash ah
/// are built from it (§2.2.2–§2.2.4).
///
/// Byte order: arrays are most-significant byte first, the order FIPS-197 and OpenSSL use and the
/// order in which the Core spec writes its sample data (key `0x2b7e...` means `[0x2b, 0x7e, ...]`).
/// The spec's `e` is MSB-first in that sense too. HCI, however, carries keys, plaintext and
/// ciphertext least-significant byte first (LE Encrypt, LE Start Encryption's LTK, SMP PDUs carry
/// their values LSB-first as well), so a caller moving values between the wire and these
/// functions reverses them.
///
/// ECB with padding off: exactly one block in, one block out, no chaining.
public enum AES128 {
    public static let keySize = 16
    public static let blockSize = 16

    /// Encrypts one 16-byte block with a 16-byte key (both MSB-first).
    public static func encrypt(key: [UInt8], block: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(key, keySize, "AES-128 key")
        try CryptoError.requireLength(block, blockSize, "AES-128 block")
        OpenSSL.clearErrors()
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OpenSSL.failure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }

        let initialised = key.withUnsafeBufferPointer { EVP_EncryptInit_ex2(ctx, EVP_aes_128_ecb(), $0.baseAddress, nil, nil) }
        try OpenSSL.check(initialised, "EVP_EncryptInit_ex2(AES-128-ECB)")
        try OpenSSL.check(EVP_CIPHER_CTX_set_padding(ctx, 0), "EVP_CIPHER_CTX_set_padding")

        // Room for one extra block, as EVP_EncryptUpdate's contract asks, even with padding off.
        var out = [UInt8](repeating: 0, count: blockSize * 2)
        var produced: Int32 = 0
        var finalLength: Int32 = 0
        let status: (Int32, Int32) = out.withUnsafeMutableBufferPointer { outBuffer in
            block.withUnsafeBufferPointer { inBuffer in
                guard let outBase = outBuffer.baseAddress else { return (0, 0) }
                let update = EVP_EncryptUpdate(ctx, outBase, &produced, inBuffer.baseAddress, Int32(blockSize))
                guard update == 1 else { return (update, 0) }
                let final = EVP_EncryptFinal_ex(ctx, outBase + Int(produced), &finalLength)
                return (update, final)
            }
        }
        try OpenSSL.check(status.0, "EVP_EncryptUpdate")
        try OpenSSL.check(status.1, "EVP_EncryptFinal_ex")
        guard Int(produced) + Int(finalLength) == blockSize else {
            throw CryptoError(.libraryFailure, "AES-128-ECB produced \(produced + finalLength) bytes, expected \(blockSize)")
        }
        return Array(out[0..<blockSize])
    }
}

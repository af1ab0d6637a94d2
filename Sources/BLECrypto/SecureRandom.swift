import CLibcrypto

/// Cryptographically secure random bytes from libcrypto's DRBG (RAND_bytes).
///
/// The Security Manager needs these for pairing nonces (Na/Nb, Mrand/Srand), keys it distributes
/// (LTK, IRK, CSRK) and the random part of resolvable private addresses (Core spec Vol 3 Part H
/// §2.3.5, Vol 6 Part B §1.3.2.2). Core spec Vol 2 Part H §2 requires a generator of this quality.
public enum SecureRandom {
    /// `count` random bytes; `count` must be 0...4096 (a bound that catches length bugs).
    public static func bytes(count: Int) throws(CryptoError) -> [UInt8] {
        guard (0...4096).contains(count) else {
            throw CryptoError(.invalidLength, "random byte count must be 0...4096, got \(count)")
        }
        if count == 0 { return [] }
        OpenSSL.clearErrors()
        var out = [UInt8](repeating: 0, count: count)
        let status = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        try OpenSSL.check(status, "RAND_bytes")
        return out
    }
}

import BLECrypto

/// The Authentication Signature of signed data: the signing algorithm of Core spec Vol 3 Part H
/// §2.4.5 as data signing uses it (Vol 3 Part C §10.4.1 generating, §10.4.2 verifying), carried
/// at the end of a Signed Write Command (Vol 3 Part F §3.4.5.4). Sans-IO and stateless: the
/// counters belong to whoever keeps the bond.
///
/// For a message `m` (the whole ATT PDU before the signature: opcode 0xD2, handle, value) and
/// the signer's SignCounter:
///
///     M   = m || SignCounter                       (SignCounter 4 octets, little-endian)
///     MAC = MSB64(AES-CMAC_CSRK(M))                (the 64 most significant bits)
///     Authentication Signature = SignCounter || MAC (12 octets)
///
/// Like every Security Manager function, AES-CMAC takes its key and message most significant
/// octet first, while the CSRK (distributed in Signing Information, Vol 3 Part H §3.6.6) and the
/// PDU are least significant octet first: both are byte-reversed before CMAC, and the MAC goes
/// on the air least significant octet first. This is the order BlueZ's `bt_crypto_sign_att`
/// uses, whose published vectors (unit/test-crypto.c) the tests check.
public enum ATTSignature {
    /// Octets of the Authentication Signature: SignCounter (4) and MAC (8).
    public static let length = 12
    /// Octets of the SignCounter at the start of the signature.
    public static let counterLength = 4
    /// Octets of the MAC after the counter.
    public static let macLength = 8

    /// The 12-octet Authentication Signature of `message` with `counter`, under the 16-octet
    /// CSRK `key` (least significant octet first, as SMP distributes it). Throws
    /// `CryptoError.invalidLength` for a key that is not 16 octets.
    public static func sign(_ message: [UInt8], key: [UInt8], counter: UInt32) throws(CryptoError) -> [UInt8] {
        let counterBytes = littleEndian(counter)
        let tag = try AESCMAC.mac(key: key.reversed(), message: (message + counterBytes).reversed())
        // `tag` is most significant octet first; its first eight octets are the 64 MSBs.
        return counterBytes + tag[0..<macLength].reversed()
    }

    /// The SignCounter a signature carries (its first four octets, little-endian), nil when it
    /// is not 12 octets.
    public static func counter(of signature: [UInt8]) -> UInt32? {
        guard signature.count == length else { return nil }
        return signature[0..<counterLength].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// Whether `signature` (12 octets) is the Authentication Signature of `message` under `key`
    /// with the counter it carries (Vol 3 Part C §10.4.2). False, never a trap, for a signature
    /// of the wrong length, a key that is not 16 octets, or a MAC that does not match; the MAC is
    /// compared without stopping at the first difference.
    public static func isValid(_ signature: [UInt8], of message: [UInt8], key: [UInt8]) -> Bool {
        guard let counter = counter(of: signature), let expected = try? sign(message, key: key, counter: counter) else { return false }
        return ConstantTime.equal(expected, signature)
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}

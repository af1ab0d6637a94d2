/// The Security Manager's cryptographic toolbox, Core spec Vol 3 Part H §2.2.
///
/// Every value is a byte array written most-significant byte first, exactly as the spec defines
/// the functions and prints its sample data (Vol 3 Part H Appendix D): `f4(U, V, X, Z)` with
/// `U = 0x20b003d2...` takes `u: [0x20, 0xb0, 0x03, 0xd2, ...]`. SMP PDUs carry these values
/// least-significant byte first (public keys, nonces, confirm values, DHKey checks), so the
/// Security Manager reverses them between the wire and these functions. Concatenation `A || B`
/// puts A in the more significant (earlier) bytes.
///
/// Each input is length-checked; a wrong length throws `CryptoError.invalidLength`.
public enum SMPCrypto {
    // MARK: LE Secure Connections (AES-CMAC based)

    /// f4(U, V, X, Z) = AES-CMAC_X(U || V || Z): the confirm value of LE Secure Connections
    /// (§2.2.6). U and V are 32-byte P-256 x-coordinates, X a 16-byte nonce, Z one byte (0 for
    /// Just Works / Numeric Comparison, 0x80|bit for each passkey round).
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(u, 32, "f4 U")
        try CryptoError.requireLength(v, 32, "f4 V")
        try CryptoError.requireLength(x, 16, "f4 X")
        return try AESCMAC.mac(key: x, message: u + v + [z])
    }

    /// SALT of f5, §2.2.7.
    static let f5Salt: [UInt8] = [
        0x6c, 0x88, 0x83, 0x91, 0xaa, 0xf5, 0xa5, 0x38, 0x60, 0x37, 0x0b, 0xdb, 0x5a, 0x60, 0x83, 0xbe,
    ]
    /// keyID "btle" of f5, §2.2.7.
    static let f5KeyID: [UInt8] = [0x62, 0x74, 0x6c, 0x65]

    /// f5(W, N1, N2, A1, A2): derives the MacKey and the LTK from the DHKey (§2.2.7).
    ///
    /// W is the 32-byte DHKey, N1/N2 16-byte nonces, A1/A2 7-byte addresses: the address type
    /// (0x00 public, 0x01 random) in the first byte, then the 6-byte BD_ADDR MSB-first
    /// (`0x00561237 37bfce` in the spec's sample).
    public static func f5(w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8]) throws(CryptoError) -> (macKey: [UInt8], ltk: [UInt8]) {
        try CryptoError.requireLength(w, 32, "f5 W")
        try CryptoError.requireLength(n1, 16, "f5 N1")
        try CryptoError.requireLength(n2, 16, "f5 N2")
        try CryptoError.requireLength(a1, 7, "f5 A1")
        try CryptoError.requireLength(a2, 7, "f5 A2")
        let t = try AESCMAC.mac(key: f5Salt, message: w)
        // Counter || keyID || N1 || N2 || A1 || A2 || Length, Length = 256 bits of output.
        let body = f5KeyID + n1 + n2 + a1 + a2 + [0x01, 0x00]
        let macKey = try AESCMAC.mac(key: t, message: [0x00] + body)
        let ltk = try AESCMAC.mac(key: t, message: [0x01] + body)
        return (macKey, ltk)
    }

    /// f6(W, N1, N2, R, IOcap, A1, A2) = AES-CMAC_W(N1 || N2 || R || IOcap || A1 || A2): the DHKey
    /// check value (§2.2.8). W is the MacKey from f5, R 16 bytes, IOcap 3 bytes (AuthReq, OOB data
    /// flag, IO capability, in that order from the most significant byte), A1/A2 as in f5.
    public static func f6(w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8], a1: [UInt8], a2: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(w, 16, "f6 W")
        try CryptoError.requireLength(n1, 16, "f6 N1")
        try CryptoError.requireLength(n2, 16, "f6 N2")
        try CryptoError.requireLength(r, 16, "f6 R")
        try CryptoError.requireLength(ioCap, 3, "f6 IOcap")
        try CryptoError.requireLength(a1, 7, "f6 A1")
        try CryptoError.requireLength(a2, 7, "f6 A2")
        return try AESCMAC.mac(key: w, message: n1 + n2 + r + ioCap + a1 + a2)
    }

    /// g2(U, V, X, Y) = AES-CMAC_X(U || V || Y) mod 2^32: the Numeric Comparison value (§2.2.9).
    /// The six digits shown to the user are `g2 % 1_000_000`.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) throws(CryptoError) -> UInt32 {
        try CryptoError.requireLength(u, 32, "g2 U")
        try CryptoError.requireLength(v, 32, "g2 V")
        try CryptoError.requireLength(x, 16, "g2 X")
        try CryptoError.requireLength(y, 16, "g2 Y")
        let tag = try AESCMAC.mac(key: x, message: u + v + y)
        return tag[12...].reduce(0) { ($0 << 8) | UInt32($1) }
    }

    /// h6(W, keyID) = AES-CMAC_W(keyID): link-key conversion (§2.2.10), e.g. keyID "lebr"
    /// (0x6c656272) or "tmp1" (0x746d7031). W is 16 bytes, keyID 4.
    public static func h6(w: [UInt8], keyID: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(w, 16, "h6 W")
        try CryptoError.requireLength(keyID, 4, "h6 keyID")
        return try AESCMAC.mac(key: w, message: keyID)
    }

    /// h7(SALT, W) = AES-CMAC_SALT(W): link-key conversion when both sides set CT2 (§2.2.11).
    public static func h7(salt: [UInt8], w: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(salt, 16, "h7 SALT")
        try CryptoError.requireLength(w, 16, "h7 W")
        return try AESCMAC.mac(key: salt, message: w)
    }

    // MARK: AES-128 based (legacy pairing and private addresses)

    /// ah(k, r) = e(k, padding || r) mod 2^24: the hash of a resolvable private address
    /// (§2.2.2). k is the 16-byte IRK, r the 3-byte prand; returns 3 bytes.
    public static func ah(k: [UInt8], r: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(k, 16, "ah k")
        try CryptoError.requireLength(r, 3, "ah r")
        let block = try AES128.encrypt(key: k, block: [UInt8](repeating: 0, count: 13) + r)
        return Array(block[13...])
    }

    /// c1: the LE legacy pairing confirm value (§2.2.3).
    ///
    /// `p1 = pres || preq || rat' || iat'`, `p2 = padding || ia || ra`,
    /// `c1 = e(k, e(k, r XOR p1) XOR p2)`. k is the TK, r the 16-byte random, preq/pres the 7-byte
    /// Pairing Request/Response PDUs (opcode in the least significant byte, so `0x07071000000101`
    /// for a request whose first wire byte is 0x01), iat/rat the address types (0 public,
    /// 1 random), ia/ra the 6-byte addresses.
    public static func c1(k: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8], iat: UInt8, ia: [UInt8], rat: UInt8, ra: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(k, 16, "c1 k")
        try CryptoError.requireLength(r, 16, "c1 r")
        try CryptoError.requireLength(preq, 7, "c1 preq")
        try CryptoError.requireLength(pres, 7, "c1 pres")
        try CryptoError.requireLength(ia, 6, "c1 ia")
        try CryptoError.requireLength(ra, 6, "c1 ra")
        guard iat <= 1, rat <= 1 else {
            throw CryptoError(.invalidArgument, "c1 address types must be 0 (public) or 1 (random), got iat=\(iat) rat=\(rat)")
        }
        let p1 = pres + preq + [rat, iat]
        let p2 = [UInt8](repeating: 0, count: 4) + ia + ra
        let first = try AES128.encrypt(key: k, block: zip(r, p1).map { $0 ^ $1 })
        return try AES128.encrypt(key: k, block: zip(first, p2).map { $0 ^ $1 })
    }

    /// s1(k, r1, r2) = e(k, r1' || r2'), where r1' and r2' are the least significant 64 bits
    /// (last 8 bytes) of r1 and r2: the LE legacy pairing STK (§2.2.4).
    public static func s1(k: [UInt8], r1: [UInt8], r2: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CryptoError.requireLength(k, 16, "s1 k")
        try CryptoError.requireLength(r1, 16, "s1 r1")
        try CryptoError.requireLength(r2, 16, "s1 r2")
        return try AES128.encrypt(key: k, block: Array(r1[8...]) + Array(r2[8...]))
    }
}

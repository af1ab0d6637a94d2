import CLibcrypto

/// Small helpers around libcrypto's C conventions (1 = success, an error queue per thread,
/// objects freed by hand) so the algorithm files read as the spec's definitions.
enum OpenSSL {
    /// Drains this thread's libcrypto error queue into a `libraryFailure` error. Draining matters:
    /// the queue is per thread and a stale entry would be blamed on the next, unrelated call.
    static func failure(_ what: String, code: CryptoError.Code = .libraryFailure) -> CryptoError {
        var details: [String] = []
        while true {
            let packed = ERR_get_error()
            if packed == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            let text: String = buffer.withUnsafeMutableBufferPointer { raw in
                guard let base = raw.baseAddress else { return "" }
                ERR_error_string_n(packed, base, raw.count)
                return String(cString: base)
            }
            details.append(text)
        }
        let suffix = details.isEmpty ? "" : " (" + details.joined(separator: "; ") + ")"
        return CryptoError(code, what + " failed" + suffix)
    }

    /// Throws `failure(what)` unless a libcrypto call returned 1.
    static func check(_ result: Int32, _ what: String) throws(CryptoError) {
        guard result == 1 else { throw failure(what) }
    }

    /// Forgets anything left on the error queue before a call whose failure we will report.
    static func clearErrors() {
        ERR_clear_error()
    }
}

/// Owns an `OSSL_PARAM` array made with `OSSL_PARAM_BLD`.
///
/// The builder keeps the pointers it is pushed (names, strings, octet buffers, BIGNUMs) and only
/// copies the data in `OSSL_PARAM_BLD_to_param`. So `build` does the pushes *and* the
/// `to_param` call itself, inside whatever `withUnsafeBufferPointer` scopes keep its inputs
/// alive; names and fixed strings come from the static C constants in the CLibcrypto shim.
final class ParamList {
    let params: UnsafeMutablePointer<OSSL_PARAM>

    init(_ what: String, _ build: (OpaquePointer) -> UnsafeMutablePointer<OSSL_PARAM>?) throws(CryptoError) {
        guard let builder = OSSL_PARAM_BLD_new() else { throw OpenSSL.failure("OSSL_PARAM_BLD_new for \(what)") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard let params = build(builder) else { throw OpenSSL.failure("building parameters for \(what)") }
        self.params = params
    }

    deinit { OSSL_PARAM_free(params) }
}

extension Array where Element == UInt8 {
    /// Bytes as a libcrypto BIGNUM (big-endian, which is how the spec writes P-256 values).
    func withBIGNUM<R>(_ body: (OpaquePointer) throws(CryptoError) -> R) throws(CryptoError) -> R {
        let bn: OpaquePointer? = withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        guard let bn else { throw OpenSSL.failure("BN_bin2bn") }
        defer { BN_clear_free(bn) }
        return try body(bn)
    }
}

/// Writes `bn` as exactly `count` big-endian bytes (left-padded with zeros).
func bigEndianBytes(_ bn: OpaquePointer, count: Int) throws(CryptoError) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(bn, $0.baseAddress, Int32(count)) }
    guard written == Int32(count) else { throw OpenSSL.failure("BN_bn2binpad to \(count) bytes") }
    return out
}

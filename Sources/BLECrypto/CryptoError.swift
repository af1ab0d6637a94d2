/// Why a BLECrypto operation failed.
///
/// A struct with an open `Code` rather than an enum (the swift-nio shape the architecture asks
/// for): new codes can be added without breaking callers that switch on the ones they know.
/// Every function in this module throws this instead of trapping, so a bad key length or a
/// peer's invalid public key arriving in an SMP PDU becomes an error the Security Manager can
/// answer (for example with Pairing Failed, DHKey Check Failed), never a crash.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; compare against the static members.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// An input had the wrong number of bytes (key, block, nonce, address...).
        public static let invalidLength = Code(rawValue: "invalidLength")
        /// An input had the right length but a value the function does not accept.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A P-256 private key outside [1, n-1].
        public static let invalidPrivateKey = Code(rawValue: "invalidPrivateKey")
        /// A P-256 public key that is not a point on the curve (Core spec Vol 3 Part H §2.3.5.6.1
        /// requires rejecting those; accepting them enables the invalid-curve attack).
        public static let invalidPublicKey = Code(rawValue: "invalidPublicKey")
        /// libcrypto reported a failure; the message carries OpenSSL's error text.
        public static let libraryFailure = Code(rawValue: "libraryFailure")

        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "CryptoError.\(code): \(message)" }
}

extension CryptoError {
    /// Throws `invalidLength` unless `bytes` has exactly `count` bytes.
    static func requireLength(_ bytes: [UInt8], _ count: Int, _ name: String) throws(CryptoError) {
        guard bytes.count == count else {
            throw CryptoError(.invalidLength, "\(name) must be \(count) bytes, got \(bytes.count)")
        }
    }
}

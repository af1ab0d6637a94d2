import BLEHost
import BLEWire

extension Peripheral {
    /// Pairs with the peripheral now (Core spec Vol 3 Part H §2.3): the feature exchange, the
    /// association model the IO capabilities choose (asking `SecuritySettings.agent` for a
    /// passkey or a comparison), encryption with the new key, and key distribution; the bond
    /// is stored when both sides asked to bond. Fails with `BLEError.security` and the Pairing
    /// Failed reason.
    @discardableResult
    public func pair() async throws -> PairingResult {
        let result = try await host.run { [linkID] in try await $0.security.pair(linkID: linkID, explicit: true, $0) }
        // The central's keys go out last: wait until the controller has sent them, so a
        // disconnect right after `pair()` cannot cut the bond short on the peripheral's side.
        await flush()
        return result
    }

    /// Encrypts the link with the stored bond's key, without pairing (LE Enable Encryption,
    /// Vol 4 Part E §7.8.24). Fails with `BLEError.security(.encryptionFailed)` when the
    /// peripheral no longer has the key; pairing again repairs the bond.
    public func encrypt() async throws {
        try await host.run { [linkID] in try await $0.security.encrypt(linkID: linkID, $0) }
    }

    /// The link's security level now (Vol 3 Part C §10.2.1).
    public var securityLevel: SecurityLevel {
        get async { await host.run { [linkID] in $0.security.level(linkID: linkID, $0) } }
    }

    /// Runs a GATT request; when the server answers that the link lacks security (Insufficient
    /// Authentication, Encryption or Encryption Key Size, Vol 3 Part F §3.4.1.1), raises it as
    /// iOS does (encrypt with a bond's key, otherwise pair) and retries: at most
    /// `SecurityCoordinator.raiseSteps` raises (encryption, then an authenticated key).
    func securely<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        var steps = 0
        while true {
            do {
                return try await body()
            } catch let error as BLEError {
                guard case let .gatt(.att(code, _, _)) = error, Self.isSecurityError(code),
                      host.configuration.security.raisesSecurityOnDemand, steps < SecurityCoordinator.raiseSteps else { throw error }
                steps += 1
                do {
                    try await host.run { [linkID] in try await $0.security.raise(for: code, linkID: linkID, $0) }
                } catch BLEError.security(.local(.authenticationRequirements, _)) {
                    // Our IO capability cannot give the authenticated key the server asks for: no
                    // pairing was tried, and the server's refusal is the answer.
                    throw error
                }
            }
        }
    }

    static func isSecurityError(_ code: ATTErrorCode) -> Bool {
        code == .insufficientAuthentication || code == .insufficientEncryption || code == .encryptionKeySizeTooShort
    }
}

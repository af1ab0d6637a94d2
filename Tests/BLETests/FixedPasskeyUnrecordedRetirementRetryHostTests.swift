@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import Synchronization
import XCTest

/// Review 25b: a fixed passkey whose retirement the bond store cannot record is not used, and
/// the pairing ends with Passkey Entry Failed (`SMPPairing.abandon`, 28a6cb6). That failure is
/// this host's own (its store), not a wrong guess by the peer; yet `perform`'s `.failed` path
/// counts it against the peer in the attempt limiter (the model was Passkey Entry, so
/// `local: true`, a "guess"), and the central's immediate retry, which would now get a random
/// passkey, is refused with Repeated Attempts.
final class FixedPasskeyUnrecordedRetirementRetryHostTests: XCTestCase {
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_0A)
    var ownAddress: DeviceAddress { DeviceAddress(own, type: .random) }
    let central = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_42), type: .random)

    final class RetirementFailingStore: BondStore {
        let inner = InMemoryBondStore()
        func bonds() throws -> [Bond] { try inner.bonds() }
        func save(_ bond: Bond) throws { try inner.save(bond) }
        func remove(_ peer: DeviceAddress) throws -> Bool { try inner.remove(peer) }
        func localIdentity() throws -> LocalIdentity { try inner.localIdentity() }
        func problems() -> [String] { [] }
        func isPasskeyRetired(_ passkey: UInt32) throws -> Bool { try inner.isPasskeyRetired(passkey) }
        func retirePasskey(_ passkey: UInt32) throws { throw BLEError.transport("retired-passkeys: no space left on device") }
    }

    func initiator(_ consumed: Int) -> MaliciousCentralPairingHostTests.Initiator {
        var s = SMPPairingSettings()
        s.ioCapability = .keyboardOnly
        s.mitm = true
        return MaliciousCentralPairingHostTests.Initiator(SMPPairing(role: .initiator, settings: s, identity: SMPLocalIdentity(
            identityResolvingKey: [UInt8](repeating: 1, count: 16), identityAddress: central, signatureKey: [UInt8](repeating: 2, count: 16)),
            initiatorAddress: central, responderAddress: ownAddress), handle: 0x0041, consumedSoFar: consumed)
    }

    func testARetryAfterThePairingEndedForTheStoresFailureIsNotRefusedAsRepeatedAttempts() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = RetirementFailingStore()
        config.security.pairing.ioCapability = .displayOnly
        config.security.pairing.displayedPasskey = 123_456
        config.security.agent = FixedPairingAgent(confirms: false)
        let m = try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(own), configuration: config)
        await t.centralConnects(from: central, handle: 0x0041)
        @Sendable func smp() async -> [[UInt8]] { await t.controller.l2capPayloads(channel: 0x0006) }

        let first = initiator(0)
        await first.begin(t.controller)
        let ended = await t.controller.play("the first pairing's end", within: .seconds(20),
            step: { await first.step(t.controller) }, until: { await first.finished })
        XCTAssertTrue(ended)
        let failure = await first.failedWith
        XCTAssertEqual(failure, .peer(.passkeyEntryFailed), "the host ends the pairing (its store could not record the passkey)")

        // The central tries again at once: the host would now show a random passkey.
        let before = await smp().count
        let second = initiator(before)
        await second.begin(t.controller)
        // (The first central's Pairing Public Key, in flight when the host ended its pairing,
        // may be answered with Pairing Failed, Unspecified Reason, first.)
        do {
            _ = try await t.controller.waitForL2CAP(channel: 0x0006) { $0.dropFirst(before).contains { $0 == [0x05, 0x09] || $0.first == 0x02 } }
        } catch {
            XCTFail("the host's answer to the retry: \(error)")
        }
        let answers = await Array(smp().dropFirst(before))
        XCTAssertFalse(answers.contains([0x05, 0x09]),
                       "the retry was refused with Repeated Attempts: the host's own store failure counted as the peer's failed guess (\(answers))")
        XCTAssertTrue(answers.contains { $0.first == 0x02 }, "expected a Pairing Response, got \(answers)")
        await m.close()
    }
}

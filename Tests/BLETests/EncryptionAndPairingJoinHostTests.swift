@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import Synchronization
import XCTest

/// A central encrypting with its bond's key when the peripheral's Security Request asking for
/// MITM arrives (peripherals commonly send one right after connecting, as centrals encrypt right
/// after connecting): no pairing starts beside the encryption (the request is answered when the
/// encryption ends), and the caller of `encrypt` learns its encryption's outcome at its
/// Encryption Change, not at the end of some pairing that runs meanwhile.
final class EncryptionAndPairingJoinHostTests: XCTestCase {
    let fixture = BondedLinkFixture(peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_25_F1), type: .public),
                                    ltk: [UInt8](repeating: 0x5F, count: 16))

    func testARaiseEncryptingWithTheBondIsNotHeldByAPairingASecurityRequestStartedMeanwhile() async throws {
        let t = HostUnderTest()
        // Able to protect against MITM, so a Security Request for MITM over the unauthenticated
        // bond is answered by pairing (`securityRequested`).
        let (central, p) = try await fixture.connectedCentral(t, io: .keyboardDisplay)
        let id = p.linkID
        let raised = Task { () -> Error? in
            do {
                try await p.host.run { try await $0.security.raise(for: .insufficientEncryption, linkID: id, $0) }
                return nil
            } catch { return error }
        }
        _ = try await t.controller.waitForCommand(.leEnableEncryption, within: .seconds(5))
        // The peripheral's Security Request (bonding, MITM, Secure Connections) arrives while the
        // encryption with the bond's key is under way.
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x0D])
        // The request is taken: held until the encryption ends, or answered by a pairing.
        let taken = await waitUntil("the Security Request held, or a Pairing Request for it", within: .seconds(10)) {
            let held = await p.host.run { $0.security.deferredSecurityRequests[0x0040] != nil }
            let paired = await t.controller.l2capPayloads(channel: 0x0006).contains { $0.first == 0x01 }
            return held || paired
        }
        XCTAssertTrue(taken)
        // The encryption with the bond's key succeeds.
        await t.controller.sendNow(.encryptionChange(status: .success, handle: 0x0040, enabled: true))
        await waitUntil(within: .seconds(5)) {
            await p.host.run { $0.connections.links[0x0040]?.security.encrypted } == true
        }
        let withBondKey = await p.host.run { $0.connections.links[0x0040]?.encryptedWithBondKey }
        XCTAssertEqual(withBondKey, true, "the link is encrypted with the bond's key")

        let outcome = SharedValue<(done: Bool, error: String?)>((false, nil))
        let watcher = Task {
            let e = await raised.value
            outcome.withLock { $0 = (true, e.map { String(describing: $0) }) }
        }
        let ended = await outcome.wait("the raise to end once its encryption succeeded", within: .seconds(10)) { $0.done }
        XCTAssertTrue(ended, "the raise whose encryption with the bond's key succeeded still waits, on the pairing the Security Request started meanwhile")
        if !ended {
            // The peer refuses the pairing: the raise now fails with the pairing's error,
            // though the link is encrypted with the bond's key.
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x05, 0x05])
            await outcome.wait("the raise to end after the refusal", within: .seconds(10)) { $0.done }
            XCTFail("the raise then ended with \(outcome.withLock { $0.error } ?? "success") over a link encrypted with the bond's key")
        } else {
            XCTAssertNil(outcome.withLock { $0.error }, "the raise failed")
        }
        _ = await watcher.value
        await central.close()
    }
}

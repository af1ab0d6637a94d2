@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// What one `raise` step must make, and a refusal that is stale by the time it is handled.
final class RaiseStepHostTests: XCTestCase {
    let fixture = BondedLinkFixture(own: BDAddress(rawValue: 0xC1_02_03_04_05_5E),
                                    peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_5E), type: .public),
                                    ltk: [UInt8](repeating: 0x5E, count: 16))
    var handle: UInt16 { fixture.handle }

    /// The central evaluated the L2CAP request before the link was encrypted (it refuses it for
    /// Insufficient Encryption), but its refusal is handled after the Encryption Change (events
    /// and ACL data travel apart over HCI; or the central encrypted on its own at connection,
    /// as iOS does, while the request was in flight). The link already has what was refused for:
    /// the request is retried, with no Security Request (which a central whose key meets it
    /// ignores, leaving the open to wait out the SMP timeout).
    func testARefusalForEncryptionThatArrivesAfterTheLinkWasEncryptedIsRetriedWithoutASecurityRequest() async throws {
        let t = HostUnderTest()
        let m = try await fixture.peripheral(t)
        let linked = await m.connectedCentrals.first
        let c = try XCTUnwrap(linked)
        let opening = Task { () -> Error? in
            do { _ = try await m.openL2CAPChannel(to: c, psm: 0x0081); return nil } catch { return error }
        }
        try await t.controller.waitForL2CAP(channel: 0x0005, within: .seconds(10)) { $0.contains { $0.first == 0x14 } }
        // The central encrypts with the bond's key (as it does on connecting)...
        try await fixture.encryptWithTheBondKey(t)
        let h = handle
        await waitUntil(within: .seconds(5)) { await m.host.run { $0.connections.links[h]?.security.encrypted } == true }
        // ...and its refusal of the request it evaluated before arrives now.
        try await fixture.refuseConnection(t, number: 1, .insufficientEncryption)
        // A retried request or a Security Request.
        try await t.controller.waitForACL { acl in
            let requests = FakeController.l2capPayloads(in: acl, channel: 0x0005).filter { $0.first == 0x14 }.count
            let asked = FakeController.l2capPayloads(in: acl, channel: 0x0006).filter { $0.first == 0x0B }.count
            return requests >= 2 || asked >= 1
        }
        let asked = await fixture.securityRequests(t)
        let requests = await fixture.connectionRequests(t)
        XCTAssertEqual(asked, [], "a Security Request over a link already encrypted, for a refusal of the unencrypted link")
        XCTAssertEqual(requests.count, 2, "the refused request was not retried over the now encrypted link")
        opening.cancel()
        await m.close()
        _ = await opening.value
    }

    /// A link encrypted with an authenticated legacy key (level 3), refused for Insufficient
    /// Authentication (the central wants more, e.g. level 4): the central answers the Security
    /// Request by refreshing the encryption with the same key. Nothing was raised, yet
    /// `checkRaised` passes (`now.authenticated` was already true before), so the raise returns
    /// as if it had made its step; the caller retries, is refused again and raises a second
    /// time for nothing.
    func testARaiseForAuthenticationOverAnAlreadyAuthenticatedKeyThatGetsTheSameKeyFailsNotRaised() async throws {
        let t = HostUnderTest()
        let m = try await fixture.peripheral(t, authenticated: true, secureConnections: false)
        try await fixture.encryptWithTheBondKey(t)
        let h = handle
        await waitUntil(within: .seconds(5)) { await m.host.run { $0.connections.links[h]?.security.encrypted } == true }
        let id = try await XCTUnwrapAsync(await m.host.run { [handle] in $0.connections.links[handle]?.id })
        let before = await m.host.run { $0.security.level(linkID: id, $0) }
        XCTAssertEqual(before, .authenticated)

        let raised = Task { () -> Error? in
            do {
                try await m.host.run { try await $0.security.raise(for: .insufficientAuthentication, linkID: id, $0) }
                return nil
            } catch { return error }
        }
        try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { $0.contains { $0.first == 0x0B } }
        try await fixture.encryptWithTheBondKey(t, replies: 2)
        let error = await raised.value
        let after = await m.host.run { $0.security.level(linkID: id, $0) }
        XCTAssertEqual(after, before)
        guard case BLEError.security(.notRaised)? = error else {
            return XCTFail("the raise ended with \(String(describing: error)) though the link is as it was (level \(after.rawValue))")
        }
        await m.close()
    }
}

/// A central answering a Security Request over an encrypted link it cannot improve on.
final class CentralWithoutMITMSecurityRequestHostTests: XCTestCase {
    let fixture = BondedLinkFixture(own: BDAddress(rawValue: 0xC1_02_03_04_05_5F),
                                    peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_5F), type: .public),
                                    ltk: [UInt8](repeating: 0x5F, count: 16))
    var peer: DeviceAddress { fixture.peer }

    /// A central whose IO capability cannot give MITM protection (NoInputNoOutput, the
    /// default) cannot answer a Security Request for MITM over an unauthenticated key with
    /// anything better: a pairing can only be Just Works again. `raise` knows this
    /// (`needsAuthentication && !canProtectMITM` throws without pairing) and the new code sets
    /// `requestsMITM` only "where the IO capability allows", but `securityRequested` pairs
    /// regardless. With the peer bonded that Just Works pairing fails (`protectsExistingBond`),
    /// sends Pairing Failed, counts towards the repeated-attempts back-off and is reported to
    /// the application as `lastPairingFailure`; without protection it re-pairs for nothing on
    /// every such request.
    func testACentralThatCannotProtectMITMDoesNotPairForASecurityRequestAskingMITMOverAnEncryptedLink() async throws {
        let t = HostUnderTest()
        let (central, p) = try await fixture.encryptedCentral(t, io: .noInputNoOutput)
        // Bonding, MITM, Secure Connections.
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x0D])
        // The request has been taken once the link has a pairing machine; let what it spawned run.
        await waitUntil(within: .seconds(10)) { await central.host.run { $0.security.machines[0x0040] != nil } }
        for _ in 0..<5 { await central.host.run { _ in } ; await Task.yield() }
        // A sentinel a central refuses (Pairing Failed, Command Not Supported): the first SMP
        // PDU the central sends must be that refusal, not a Pairing Request.
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x01, 0x03, 0x00, 0x09, 0x10, 0x01, 0x01])
        let sent = try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { $0.contains { $0.first == 0x05 } }
        XCTAssertFalse(sent.contains { $0.first == 0x01 }, "a futile pairing for a Security Request this side cannot meet: \(sent)")
        let failure = p.lastPairingFailure
        XCTAssertNil(failure, "the futile pairing's failure reaches the application as lastPairingFailure")
        await central.close()
    }

    /// Not encrypted yet: such a central answers a Security Request for MITM with the bond's
    /// key, which a pairing (Just Works again) could not better, rather than pair over the bond.
    func testACentralThatCannotProtectMITMEncryptsWithTheBondForASecurityRequestAskingMITM() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = try fixture.store()
        let central = try await Central.open(transport: t.hostEnd, configuration: config)
        _ = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x0D])
        _ = try await t.controller.waitForCommand(.leEnableEncryption, within: .seconds(10))
        let sent = await t.controller.l2capPayloads(channel: 0x0006)
        XCTAssertFalse(sent.contains { $0.first == 0x01 }, "paired over the bond for nothing: \(sent)")
        await central.close()
    }
}

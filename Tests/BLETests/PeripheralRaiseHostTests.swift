@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// A peripheral raising a link's security when the central refused it something (an L2CAP
/// connection for Insufficient Authentication or Encryption Key Size, Vol 3 Part A §4.23): it
/// asks with a Security Request (Vol 3 Part H §2.4.6), also on a link already encrypted with a
/// key too weak, and a raise that ends with the link still short of what was refused fails
/// with `.notRaised` instead of returning as if it had raised the link.
final class PeripheralRaiseHostTests: XCTestCase {
    let fixture = BondedLinkFixture(own: BDAddress(rawValue: 0xC1_02_03_04_05_2D),
                                    peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_D1), type: .public),
                                    ltk: [UInt8](repeating: 0xD1, count: 16))
    var handle: UInt16 { fixture.handle }

    func linkID(_ m: PeripheralManager) async throws -> UInt64 {
        try await XCTUnwrapAsync(await m.host.run { [handle] in $0.connections.links[handle]?.id })
    }

    func raise(_ code: ATTErrorCode, _ m: PeripheralManager, _ linkID: UInt64) -> Task<Error?, Never> {
        Task {
            do {
                try await m.host.run { try await $0.security.raise(for: code, linkID: linkID, $0) }
                return nil
            } catch { return error }
        }
    }

    /// Encrypted with an unauthenticated bond's key, refused for Insufficient Authentication:
    /// the raise asks the central for MITM protection; a central that only refreshes the
    /// encryption with the same key leaves the link unauthenticated, and the raise says so.
    func testARaiseForAuthenticationOnAnEncryptedLinkAsksForMITMAndFailsWhenTheKeyStaysWeak() async throws {
        let t = HostUnderTest()
        let m = try await fixture.peripheral(t)
        try await fixture.encryptWithTheBondKey(t)
        let id = try await linkID(m)
        await waitUntil(within: .seconds(5)) { await m.host.run { $0.security.level(linkID: id, $0) } == .encrypted }

        let raised = raise(.insufficientAuthentication, m, id)
        let request = try await fixture.waitForSecurityRequest(t, 1)
        XCTAssertEqual(request[1] & 0x04, 0x04, "the Security Request asks for MITM protection")
        try await fixture.encryptWithTheBondKey(t, replies: 2)
        let error = await raised.value
        guard case BLEError.security(.notRaised)? = error else { return XCTFail("raise ended with \(String(describing: error))") }
        let after = await m.host.run { $0.security.level(linkID: id, $0) }
        XCTAssertEqual(after, .encrypted)
        await m.close()
    }

    /// A 7-octet key refused for Encryption Key Size: the same; the key stays 7 octets.
    func testARaiseForKeySizeOnAnEncryptedLinkFailsWhenTheKeyStaysShort() async throws {
        let t = HostUnderTest()
        let m = try await fixture.peripheral(t, authenticated: true, keySize: 7)
        try await fixture.encryptWithTheBondKey(t)
        let id = try await linkID(m)
        let h = handle
        await waitUntil(within: .seconds(5)) { await m.host.run { $0.connections.links[h]?.security.keySize } == 7 }

        let raised = raise(.encryptionKeySizeTooShort, m, id)
        _ = try await fixture.waitForSecurityRequest(t, 1)
        try await fixture.encryptWithTheBondKey(t, replies: 2)
        let error = await raised.value
        guard case BLEError.security(.notRaised)? = error else { return XCTFail("raise ended with \(String(describing: error))") }
        await m.close()
    }

    /// An L2CAP connection the central refuses for Insufficient Authentication on a link not
    /// yet encrypted: the first raise gets encryption with the (unauthenticated) bond's key,
    /// the connection is refused again, and a second raise asks for an authenticated key over
    /// the encrypted link; the central's answer to that (here Pairing Failed) is the caller's,
    /// not the second refusal.
    func testAnOpenRefusedForAuthenticationTwiceRaisesTwice() async throws {
        let t = HostUnderTest()
        let m = try await fixture.peripheral(t)
        let linked = await m.connectedCentrals.first
        let c = try XCTUnwrap(linked)
        let opening = Task { () -> Error? in
            do { _ = try await m.openL2CAPChannel(to: c, psm: 0x0081); return nil } catch { return error }
        }
        try await fixture.refuseConnection(t, number: 1, .insufficientAuthentication)
        let first = try await fixture.waitForSecurityRequest(t, 1)
        XCTAssertEqual(first[1] & 0x04, 0x04)
        try await fixture.encryptWithTheBondKey(t)
        try await fixture.refuseConnection(t, number: 2, .insufficientAuthentication)
        let second = try await fixture.waitForSecurityRequest(t, 2)
        XCTAssertEqual(second[1] & 0x04, 0x04, "the second Security Request asks for MITM protection")
        await t.controller.sendL2CAP(handle: handle, channel: 0x0006, payload: [0x05, 0x03])
        let error = await opening.value
        guard case BLEError.security(.peer(.authenticationRequirements))? = error else {
            return XCTFail("the open ended with \(String(describing: error))")
        }
        await m.close()
    }

}

/// A central asked by a Security Request for more than the key its link is encrypted with
/// (MITM protection over an unauthenticated bond's key) pairs (Vol 3 Part H §2.4.6); before,
/// it ignored every Security Request on an encrypted link, so a peripheral's raise waited for
/// the SMP timeout.
final class CentralSecurityRequestOverAWeakKeyHostTests: XCTestCase {
    let fixture = BondedLinkFixture(own: BDAddress(rawValue: 0xC1_02_03_04_05_2E),
                                    peer: DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_D2), type: .public),
                                    ltk: [UInt8](repeating: 0xD2, count: 16))

    func testASecurityRequestForMITMOverAnUnauthenticatedKeyIsAnsweredByPairing() async throws {
        let t = HostUnderTest()
        let (central, p) = try await fixture.encryptedCentral(t, io: .keyboardDisplay)
        // Bonding, MITM, Secure Connections.
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x0D])
        try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { $0.contains { $0.first == 0x01 } }
        let request = await t.controller.l2capPayloads(channel: 0x0006).first { $0.first == 0x01 }
        XCTAssertEqual((request?[3] ?? 0) & 0x04, 0x04, "the Pairing Request asks for MITM protection")
        _ = p
        await central.close()
    }

    /// What the encrypted link's key already gives is not paired over again.
    func testASecurityRequestTheKeyAlreadyMeetsIsIgnored() async throws {
        let t = HostUnderTest()
        let (central, p) = try await fixture.encryptedCentral(t, io: .keyboardDisplay)
        // Bonding and Secure Connections, no MITM; then a Pairing Request, which a central
        // refuses (Pairing Failed, Command Not Supported), so the request was taken before it.
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x09])
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x01, 0x03, 0x00, 0x09, 0x10, 0x01, 0x01])
        let sent = try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { !$0.isEmpty }
        XCTAssertEqual(sent.first?.first, 0x05, "nothing answers a Security Request the link already meets: \(sent)")
        let level = await p.securityLevel
        XCTAssertEqual(level, .encrypted)
        await central.close()
    }
}


@testable import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// A central answers a Security Request asking for MITM over an encrypted, unauthenticated
/// link by pairing, once per link: a peripheral that cannot give MITM protection and does not
/// bond would otherwise make every pairing Just Works again and set off another with each
/// Security Request (successful pairings count towards no limiter, and no bond is protected).
final class SecurityRequestRepairingLoopHostTests: XCTestCase {
    let centralAddress = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_01), type: .public)
    let peerAddress = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_5A), type: .public)

    func testAPeripheralCannotMakeTheCentralPairAgainAndAgainOverAnEncryptedLink() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = InMemoryBondStore()
        // A central that can protect against MITM (so it asks for it, as iOS does).
        config.security.pairing.ioCapability = .keyboardDisplay
        let central = try await Central.open(transport: t.hostEnd, configuration: config)
        let p = try await central.connect(peerAddress, timeout: .seconds(5))
        let identity = SMPLocalIdentity(identityResolvingKey: Array(repeating: 0x5A, count: 16), identityAddress: peerAddress,
                                        signatureKey: Array(repeating: 0x5B, count: 16))
        // NoInputNoOutput, no bonding: every pairing is Just Works and nothing is stored.
        let peer = ResponderSMPPeer(SMPPairing(role: .responder, settings: SMPPairingSettings(ioCapability: .noInputNoOutput, bonding: false),
                                   identity: identity, initiatorAddress: centralAddress, responderAddress: peerAddress))

        /// Sends a Security Request (Bonding, MITM, Secure Connections) and plays the peer until
        /// the pairings it set off are over; the number of Pairing Requests the host then sent.
        @Sendable func securityRequest(expectingPairings n: Int) async -> Int {
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x0D])
            _ = await waitUntil("pairing \(n)", within: .seconds(10)) {
                await peer.step(t.controller)
                let idle = await central.host.run { $0.security.machines[0x0040]?.isPairing == false }
                return await peer.completed >= n && idle
            }
            return await t.controller.l2capPayloads(channel: 0x0006).filter { $0.first == 0x01 }.count
        }

        /// Sends a Security Request, then a Pairing Request (which a central refuses with
        /// Pairing Failed) as a sentinel: once the refusal is out, the Security Request was
        /// taken and what it set off has begun; the Pairing Requests the host sent by then.
        @Sendable func ignoredSecurityRequest() async throws -> Int {
            let failedBefore = await t.controller.l2capPayloads(channel: 0x0006).filter { $0.first == 0x05 }.count
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x0D])
            await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x01, 0x03, 0x00, 0x09, 0x10, 0x01, 0x01])
            try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { $0.filter { $0.first == 0x05 }.count > failedBefore }
            await central.host.run { _ in }
            return await t.controller.l2capPayloads(channel: 0x0006).filter { $0.first == 0x01 }.count
        }

        // The link is secured for the first time (Just Works: encrypted, unauthenticated).
        let first = await securityRequest(expectingPairings: 1)
        XCTAssertEqual(first, 1)
        let level = await p.securityLevel
        XCTAssertEqual(level, .encrypted)
        // One pairing for MITM over the unauthenticated key.
        let second = await securityRequest(expectingPairings: 2)
        XCTAssertEqual(second, 2)
        // That pairing gave nothing better (the peer cannot protect MITM). More requests
        // should not each pair again.
        let total = try await ignoredSecurityRequest()
        XCTAssertLessThanOrEqual(total, 2, "the peer made the central pair \(total) times on one link with Security Requests")
        let bonds = try XCTUnwrap(config.security.bondStore).bonds()
        XCTAssertEqual(bonds.count, 0)
        await central.close()
    }
}

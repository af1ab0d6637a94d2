@testable import BLE
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import BLETestSupport
import XCTest

/// Attacks by a malicious central behind the fake controller,
/// pairing with our peripheral.
final class MaliciousCentralPairingHostTests: XCTestCase {
    let own = BDAddress(rawValue: 0xC1_02_03_04_05_06)
    var ownAddress: DeviceAddress { DeviceAddress(own, type: .random) }
    /// The bonded victim's public identity.
    let victim = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_AA), type: .public)
    let victimLTK = [UInt8](repeating: 0xAA, count: 16)

    /// An initiator SMP machine playing a central, and its controller for encryption.
    actor Initiator {
        var m: SMPPairing
        let handle: UInt16
        let corruptDHKeyCheck: Bool
        var consumed: Int
        private(set) var finished = false
        private(set) var failedWith: SMPPairingError?
        init(_ m: SMPPairing, handle: UInt16, consumedSoFar: Int, corruptDHKeyCheck: Bool = false) {
            self.m = m; self.handle = handle; self.consumed = consumedSoFar; self.corruptDHKeyCheck = corruptDHKeyCheck
        }

        func begin(_ c: FakeController) async { await perform(m.start(now: .zero), c) }

        func step(_ c: FakeController) async {
            let pdus = await c.l2capPayloads(channel: 0x0006)
            while consumed < pdus.count {
                let pdu = pdus[consumed]
                consumed += 1
                await perform(m.receive(pdu, now: .zero), c)
            }
        }

        private func perform(_ actions: [SMPAction], _ c: FakeController) async {
            for a in actions {
                switch a {
                case var .send(b):
                    if corruptDHKeyCheck, b.first == 0x0D { b[1] ^= 0xFF }
                    await c.sendL2CAP(handle: handle, channel: 0x0006, payload: b)
                case let .startEncryption(ltk, ediv, rand):
                    await c.sendNow(.le(.longTermKeyRequest(handle: handle, randomNumber: rand, encryptedDiversifier: ediv)))
                    let reply = try? await c.waitForCommand(.leLongTermKeyRequestReply, within: .seconds(5))
                    let ok = reply.map { Array($0.parameters[2..<18]) == ltk } ?? false
                    await c.sendNow(.encryptionChange(status: ok ? .success : .pinOrKeyMissing, handle: handle, enabled: ok))
                    await perform(m.encryptionChanged(status: ok ? 0 : 6, enabled: ok, now: .zero), c)
                case .completed: finished = true
                case let .failed(e): finished = true; failedWith = e
                default: break
                }
            }
        }
    }

    func connect(_ t: HostUnderTest, from peer: DeviceAddress, handle: UInt16) async {
        await t.controller.sendNow(.le(.connectionComplete(LEConnectionComplete(
            status: .success, handle: handle, role: .peripheral, peer: peer, interval: 24, latency: 0,
            supervisionTimeout: 400, centralClockAccuracy: 0, format: .legacy))))
    }

    func manager(_ t: HostUnderTest, store: any BondStore, allowsUnauthenticatedBondReplacement: Bool = false) async throws -> PeripheralManager {
        await t.controller.start()
        var config = HostConfiguration()
        config.security.bondStore = store
        config.security.allowsUnauthenticatedBondReplacement = allowsUnauthenticatedBondReplacement
        return try await PeripheralManager.open(transport: t.hostEnd, address: .staticRandom(own), configuration: config)
    }

    /// A central that spoofs a bonded device's address pairs Just Works and claims a fresh
    /// identity that sorts before the victim's: were its bond (peer = claimed, connectionAddress
    /// = victim) stored, it would also match the victim's address, and after a restart the LTK
    /// request from the victim's address would be answered with the attacker's key. Refused
    /// (even with `allowsUnauthenticatedBondReplacement`, which by default refuses it sooner).
    func testAPairingFromABondedDevicesAddressClaimingAnotherIdentityDoesNotShadowItsBond() async throws {
        let store = InMemoryBondStore()
        try store.save(Bond(peer: victim, peerLongTermKey: victimLTK, localLongTermKey: victimLTK,
                            peerIdentityResolvingKey: [UInt8](repeating: 0xAB, count: 16),
                            secureConnections: true, authenticated: true, keySize: 16))
        let t = HostUnderTest()
        let m = try await manager(t, store: store, allowsUnauthenticatedBondReplacement: true)
        await connect(t, from: victim, handle: 0x0041)
        let claimed = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_10), type: .public)
        let evil = SMPLocalIdentity(identityResolvingKey: [UInt8](repeating: 0xEE, count: 16), identityAddress: claimed,
                                    signatureKey: [UInt8](repeating: 0xEF, count: 16))
        let attacker = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: evil,
                                            initiatorAddress: victim, responderAddress: ownAddress), handle: 0x0041, consumedSoFar: 0)
        await attacker.begin(t.controller)
        let done = await waitUntil("the attack pairing", within: .seconds(20)) {
            await attacker.step(t.controller)
            return await attacker.finished
        }
        XCTAssertTrue(done)
        // The host refuses the claim and drops the link.
        let refused = await waitUntil("the host dropping the link", within: .seconds(10)) {
            await t.controller.commands.contains { $0.opcode == .disconnect }
        }
        XCTAssertTrue(refused)
        await m.close()
        let matching = try store.bonds().filter { $0.matches(victim) }
        XCTAssertEqual(matching.map(\.peer), [victim], "no second bond matches the victim's address")

        // After a restart: the victim's address asks for its key.
        let t2 = HostUnderTest()
        let m2 = try await manager(t2, store: store)
        await connect(t2, from: victim, handle: 0x0041)
        await t2.controller.sendNow(.le(.longTermKeyRequest(handle: 0x0041, randomNumber: 0, encryptedDiversifier: 0)))
        let reply = try await t2.controller.waitForCommand(.leLongTermKeyRequestReply, within: .seconds(5))
        XCTAssertEqual(Array(reply.parameters[2..<18]), victimLTK, "the victim's address gets the victim's LTK")
        await m2.close()
    }

    /// Three Just Works pairings (no secret to guess) that end with a bad DHKey Check, from
    /// three made-up addresses, must not lock every central out of pairing with our peripheral.
    func testJustWorksFailuresDoNotLockOutEveryone() async throws {
        let store = InMemoryBondStore()
        let t = HostUnderTest()
        let m = try await manager(t, store: store)
        for i in 0..<3 {
            let handle = UInt16(0x0041 + i)
            let address = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_10 + UInt64(i)), type: .random)
            await connect(t, from: address, handle: handle)
            let before = await t.controller.l2capPayloads(channel: 0x0006).count
            let a = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: SMPLocalIdentity(
                identityResolvingKey: [UInt8](repeating: 1, count: 16), identityAddress: address, signatureKey: [UInt8](repeating: 2, count: 16)),
                initiatorAddress: address, responderAddress: ownAddress), handle: handle, consumedSoFar: before, corruptDHKeyCheck: true)
            await a.begin(t.controller)
            _ = await waitUntil("failed pairing \(i)", within: .seconds(20)) {
                await a.step(t.controller)
                return await a.finished
            }
        }
        // A legitimate central from a fresh address.
        let honest = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_99), type: .random)
        await connect(t, from: honest, handle: 0x0050)
        let before = await t.controller.l2capPayloads(channel: 0x0006).count
        let h = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: SMPLocalIdentity(
            identityResolvingKey: [UInt8](repeating: 3, count: 16), identityAddress: honest, signatureKey: [UInt8](repeating: 4, count: 16)),
            initiatorAddress: honest, responderAddress: ownAddress), handle: 0x0050, consumedSoFar: before)
        await h.begin(t.controller)
        _ = await waitUntil("honest pairing", within: .seconds(20)) {
            await h.step(t.controller)
            return await h.finished
        }
        let failure = await h.failedWith
        XCTAssertNil(failure, "an honest Just Works pairing was refused: \(String(describing: failure))")
        await m.close()
    }
}

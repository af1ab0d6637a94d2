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

    /// An initiator SMP machine playing a central on link `handle`, and its controller for
    /// encryption.
    actor Initiator {
        var m: SMPPairing
        let handle: UInt16
        let corruptDHKeyCheck: Bool
        var consumed: Int
        private(set) var finished = false
        /// The controller switched encryption on with the pairing's key.
        private(set) var encrypted = false
        private(set) var failedWith: SMPPairingError?
        init(_ m: SMPPairing, handle: UInt16, consumedSoFar: Int, corruptDHKeyCheck: Bool = false) {
            self.m = m; self.handle = handle; self.consumed = consumedSoFar; self.corruptDHKeyCheck = corruptDHKeyCheck
        }

        func begin(_ c: FakeController) async { await perform(m.start(now: .zero), c) }

        /// Begins the pairing and plays it until `reached` holds (true), or 20 s pass (false).
        func play(_ c: FakeController, until reached: @escaping @Sendable (Initiator) async -> Bool, _ what: String) async -> Bool {
            await begin(c)
            return await c.play(what, within: .seconds(20), step: { await self.step(c) }, until: { await reached(self) })
        }

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
                    // Its own link's reply (the fake controller returns the first matching command).
                    let h = handle
                    let reply = try? await c.waitForCommand(within: .seconds(5)) {
                        $0.opcode == .leLongTermKeyRequestReply && Array($0.parameters[0..<2]) == [UInt8(h & 0xFF), UInt8(h >> 8)]
                    }
                    let ok = reply.map { Array($0.parameters[2..<18]) == ltk } ?? false
                    await c.sendNow(.encryptionChange(status: ok ? .success : .pinOrKeyMissing, handle: handle, enabled: ok))
                    encrypted = ok
                    await perform(m.encryptionChanged(status: ok ? 0 : 6, enabled: ok, now: .zero), c)
                case .completed: finished = true
                case let .failed(e): finished = true; failedWith = e
                default: break
                }
            }
        }
    }


    func manager(_ t: HostUnderTest, store: any BondStore, allowsUnauthenticatedBondReplacement: Bool = false) async throws -> PeripheralManager {
        try await t.openPeripheral(own: own, store: store) { $0.security.allowsUnauthenticatedBondReplacement = allowsUnauthenticatedBondReplacement }
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
        await t.centralConnects(from: victim, handle: 0x0041)
        let claimed = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_10), type: .public)
        let evil = SMPLocalIdentity(identityResolvingKey: [UInt8](repeating: 0xEE, count: 16), identityAddress: claimed,
                                    signatureKey: [UInt8](repeating: 0xEF, count: 16))
        let attacker = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: evil,
                                            initiatorAddress: victim, responderAddress: ownAddress), handle: 0x0041, consumedSoFar: 0)
        let done = await attacker.play(t.controller, until: { await $0.finished }, "the attack pairing")
        XCTAssertTrue(done)
        // The host refuses the claim and drops the link.
        let refused = await t.controller.sent(.disconnect, "the host dropping the link")
        XCTAssertTrue(refused)
        await m.close()
        let matching = try store.bonds().filter { $0.matches(victim) }
        XCTAssertEqual(matching.map(\.peer), [victim], "no second bond matches the victim's address")

        // After a restart: the victim's address asks for its key.
        let t2 = HostUnderTest()
        let m2 = try await manager(t2, store: store)
        await t2.centralConnects(from: victim, handle: 0x0041)
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
            await t.centralConnects(from: address, handle: handle)
            let before = await t.controller.l2capPayloads(channel: 0x0006).count
            let a = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: SMPLocalIdentity(
                identityResolvingKey: [UInt8](repeating: 1, count: 16), identityAddress: address, signatureKey: [UInt8](repeating: 2, count: 16)),
                initiatorAddress: address, responderAddress: ownAddress), handle: handle, consumedSoFar: before, corruptDHKeyCheck: true)
            await a.begin(t.controller)
            _ = await t.controller.play("failed pairing \(i)", within: .seconds(20),
                step: { await a.step(t.controller) }, until: { await a.finished })
        }
        // A legitimate central from a fresh address.
        let honest = DeviceAddress(BDAddress(rawValue: 0xC5_00_00_00_00_99), type: .random)
        await t.centralConnects(from: honest, handle: 0x0050)
        let before = await t.controller.l2capPayloads(channel: 0x0006).count
        let h = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: SMPLocalIdentity(
            identityResolvingKey: [UInt8](repeating: 3, count: 16), identityAddress: honest, signatureKey: [UInt8](repeating: 4, count: 16)),
            initiatorAddress: honest, responderAddress: ownAddress), handle: 0x0050, consumedSoFar: before)
        _ = await h.play(t.controller, until: { await $0.finished }, "honest pairing")
        let failure = await h.failedWith
        XCTAssertNil(failure, "an honest Just Works pairing was refused: \(String(describing: failure))")
        await m.close()
    }

    /// A device copying a bonded central's address gets the link encrypted by a pairing of its
    /// own and leaves before the keys are distributed: the pairing made no bond, so nothing the
    /// device did on that link (a subscription, robust caching) is kept in the victim's bond,
    /// whose key never encrypted it.
    func testAnUnfinishedPairingFromABondedAddressKeepsNothingInItsBond() async throws {
        let store = InMemoryBondStore()
        try store.save(Bond(peer: victim, peerLongTermKey: victimLTK, localLongTermKey: victimLTK,
                            secureConnections: true, authenticated: true, keySize: 16))
        let t = HostUnderTest()
        let m = try await manager(t, store: store, allowsUnauthenticatedBondReplacement: true)
        let handles = try await m.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify], permissions: [.read], value: [0x42]),
        ]))
        let cccd = try XCTUnwrap(handles.characteristics.first?.cccdHandle)
        await t.centralConnects(from: victim, handle: 0x0041)
        await m.waitForConnectedCentrals(1)
        @Sendable func att() async -> [[UInt8]] { await t.controller.l2capPayloads(channel: 0x0004) }
        let le = { (h: UInt16) in [UInt8(h & 0xFF), UInt8(h >> 8)] }

        // Client Supported Features' handle, then a subscription and robust caching on (last:
        // the bond's client is change-unaware, so robust caching refuses what follows).
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x29, 0x2B])
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 1 }
        let found = await att()[0]
        XCTAssertEqual(found.first, 0x09, "Read By Type Response: \(found)")
        let features = UInt16(found[2]) | UInt16(found[3]) << 8
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12] + le(cccd) + [0x01, 0x00])
        await t.controller.sendL2CAP(handle: 0x0041, channel: 4, payload: [0x12] + le(features) + [0x01])
        try await t.controller.waitForL2CAP(channel: 0x0004, within: .seconds(10)) { $0.count == 3 }
        let written = await att()
        XCTAssertEqual(Array(written.dropFirst()), [[0x13], [0x13]])

        let copier = Initiator(SMPPairing(role: .initiator, settings: SMPPairingSettings(), identity: SMPLocalIdentity(
            identityResolvingKey: [UInt8](repeating: 0xEE, count: 16), identityAddress: victim, signatureKey: [UInt8](repeating: 0xEF, count: 16)),
            initiatorAddress: victim, responderAddress: ownAddress), handle: 0x0041, consumedSoFar: 0)
        let encrypted = await copier.play(t.controller, until: { await $0.encrypted }, "the copier's pairing encrypting the link")
        XCTAssertTrue(encrypted)
        // Gone before distributing its keys: the pairing never ends.
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0041, reason: .remoteUserTerminatedConnection))
        await m.waitForConnectedCentrals(0)
        await m.close()
        let kept = try XCTUnwrap(try store.bonds().first { $0.peer == victim })
        XCTAssertEqual(kept.peerLongTermKey, victimLTK)
        XCTAssertEqual(kept.clientConfigurations, [:], "the copier's subscription is not the bonded client's")
        XCTAssertTrue(kept.clientSupportedFeatures?.isEmpty ?? true, "the copier's robust caching is not the bonded client's")
    }
}

import BLE
import BLEHCI
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Signed writes are tied to one bond and one pairing: a CSRK per bond, and counters that a
/// pairing again does not reopen to replays. Two hosts on the virtual radio.
final class SignedWriteKeyIsolationWorldTests: XCTestCase {
    /// Each pairing gives the peer a CSRK of its own, so a device we bonded with
    /// cannot forge our signed writes to another.
    func testEachBondGetsItsOwnCSRKSoOnePeerCannotForgeOurSignedWritesToAnother() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), store1 = InMemoryBondStore(), store2 = InMemoryBondStore()
            let (m1, d1) = try await SignedWriteWorldTests.peripheral(world, store: store1)
            let (m2, d2) = try await SignedWriteWorldTests.peripheral(world, store: store2)
            let controller = await world.radio.addDevice()
            let tap = TapTransport(controller.transport)
            let central = try await Central.open(transport: tap, clock: world.clock,
                                                 configuration: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: PasskeyBoard()), store: centralStore))
            for d in [d1, d2] {
                let p = try await central.connect(DeviceAddress(d.address, type: .public), timeout: .seconds(5))
                _ = try await p.pair()
                try await p.disconnect()
            }
            let k1 = try XCTUnwrap(try store1.bonds().first?.peerSignatureKey)
            let k2 = try XCTUnwrap(try store2.bonds().first?.peerSignatureKey)
            XCTAssertNotEqual(k1, k2, "peripheral 1 holds the CSRK peripheral 2 checks our signed writes with")

            // Peripheral 1 (or anyone with its bond) forges a signed write to peripheral 2.
            let p = try await central.connect(DeviceAddress(d2.address, type: .public), timeout: .seconds(5))
            let c = try await SignedWriteWorldTests.characteristic(SignedWriteWorldTests.signed, on: p)
            let handle = try XCTUnwrap(tap.attPDUs.last?.handle)
            let forged = try SignedWriteWithoutResponse.pdu(handle: c.valueHandle, value: Array("forged".utf8), mtu: 23, key: k1, counter: 1000).encode()
            try await tap.injectATT(forged, handle: handle)
            let value = try await p.readValue(for: c)
            XCTAssertNotEqual(String(decoding: value, as: UTF8.self), "forged", "peripheral 2 applied a write forged with peripheral 1's key")
            await central.close(); await m1.close(); await m2.close()
        }
    }

    /// A pairing again restarts both counters, so it must bring a new CSRK, or
    /// signed writes captured before it would be accepted again afterwards. (The peripheral
    /// lets the Just Works pairing again replace the bond, which by default it refuses.)
    func testSignedWritesCapturedBeforeARepairingCannotBeReplayedAfterIt() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            let rig = try await SignedWriteWorldTests.rig(world, centralStore: centralStore, peripheralStore: peripheralStore,
                                                          allowsUnauthenticatedBondReplacement: true)
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            try await p.disconnect()
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            var c = try await SignedWriteWorldTests.characteristic(SignedWriteWorldTests.signed, on: p)
            try await p.writeValue(Array("one".utf8), for: c, type: .signedWithoutResponse)
            try await p.writeValue(Array("two".utf8), for: c, type: .signedWithoutResponse)
            _ = try await p.readValue(for: c)
            let captured = try XCTUnwrap(rig.tap.attPDUs.first { $0.pdu.first == ATTOpcode.signedWriteCommand.rawValue })
            _ = try await p.pair()   // the user pairs again
            try await p.disconnect()
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            c = try await SignedWriteWorldTests.characteristic(SignedWriteWorldTests.signed, on: p)
            let handle = try XCTUnwrap(rig.tap.attPDUs.last?.handle)
            try await rig.tap.injectATT(captured.pdu, handle: handle)
            let value = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: value, as: UTF8.self), "two", "a write captured before the re-pairing was replayed")
            await rig.central.close(); await rig.manager.close()
        }
    }
}

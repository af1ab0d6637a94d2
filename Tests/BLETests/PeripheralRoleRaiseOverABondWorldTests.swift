import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Review 25c: `raise(for:linkID:)` (touched by faafe32 for Secure Connections Only mode) also
/// serves the peripheral role: `PeripheralManager.openL2CAPChannel(to:)` runs through
/// `raisingSecurityOnRefusal`. On a peripheral-role link to a bonded central whose link is not
/// encrypted, raise sees a bond with an initiator key and calls `encrypt`, which sends LE Enable
/// Encryption, a command only a central may send (Vol 4 Part E §7.8.24): the controller answers
/// Command Disallowed and the open fails, where a Security Request (what `secure` sends for the
/// peripheral) would have had the central encrypt with the bond's key.
final class PeripheralRoleRaiseOverABondWorldTests: XCTestCase {
    static let centralAddress = BDAddress(rawValue: 0x00_1B_DC_00_0C_2C)
    static let peripheralAddress = BDAddress(rawValue: 0x00_1B_DC_00_0D_2D)
    static let psm: UInt16 = 0x0085

    func testAPeripheralOpeningAChannelToABondedCentralThatNeedsEncryptionGetsIt() async throws {
        try await VirtualWorld.run { world in
            var pc = HostConfiguration()
            pc.security.bondStore = InMemoryBondStore()
            var cc = HostConfiguration()
            cc.security.bondStore = InMemoryBondStore()
            let address = DeviceAddress(Self.peripheralAddress, type: .public)
            let (manager, _) = try await world.addPeripheralManager(name: "Tag", address: Self.peripheralAddress, configuration: pc)
            let ad = AdvertisingData.Builder().localName("Tag").build()
            try await manager.startAdvertising(ad, parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (central, _) = try await world.addCentral(address: Self.centralAddress, configuration: cc)
            let listener = try await central.listenL2CAP(psm: Self.psm, security: L2CAPSecurityRequirement(level: .encrypted))
            var p = try await central.connect(address, timeout: .seconds(5))
            let paired = try await p.pair()
            XCTAssertTrue(paired.bonded)
            try await p.disconnect()
            for _ in 0..<500 where await !manager.connectedCentrals.isEmpty { try await world.clock.sleep(for: .milliseconds(10)) }

            // Back again, not encrypted yet; the peripheral opens a channel the central guards.
            try? await manager.startAdvertising(ad, parameters: AdvertisingParameters(interval: .milliseconds(20)))
            p = try await central.connect(address, timeout: .seconds(5))
            for _ in 0..<500 where await manager.connectedCentrals.count != 1 { try await world.clock.sleep(for: .milliseconds(10)) }
            let linked = await manager.connectedCentrals.first
            let c = try XCTUnwrap(linked)
            do {
                let channel = try await manager.openL2CAPChannel(to: c, psm: Self.psm)
                _ = channel
                var incoming = listener.makeAsyncIterator()
                _ = try await XCTUnwrapAsync(await incoming.next())
                let level = await p.securityLevel
                XCTAssertNotEqual(level, .none)
            } catch {
                XCTFail("the peripheral's raise over the bond failed instead of asking the central to encrypt: \(error)")
            }
            await central.close()
            await manager.close()
        }
    }
}

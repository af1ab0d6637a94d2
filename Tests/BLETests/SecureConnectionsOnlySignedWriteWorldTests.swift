import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Secure Connections Only mode is mode 1 level 4 (Core v5.4 Vol 3 Part C §10.2.4): data
/// signing (mode 2) is not among what it allows, and a bond below level 4 made before the mode
/// was switched on unlocks nothing. A server in that mode therefore applies no Signed Write
/// Command checked against such a bond's CSRK: the bond's key no longer encrypts the link
/// (SecureConnectionsOnlyBondWorldTests), and its signing key must not write either.
final class SecureConnectionsOnlySignedWriteWorldTests: XCTestCase {
    static let peripheralAddress = BDAddress(rawValue: 0x00_1B_DC_00_5C_01)

    static func peripheralConfiguration(_ store: any BondStore, secureConnectionsOnly: Bool) -> HostConfiguration {
        var c = PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: PasskeyBoard()), store: store)
        c.security.pairing.secureConnectionsOnly = secureConnectionsOnly
        return c
    }

    static func peripheral(_ world: VirtualWorld, store: any BondStore, secureConnectionsOnly: Bool) async throws -> (PeripheralManager, VirtualDevice) {
        let (manager, device) = try await world.addPeripheralManager(name: "Signer", address: peripheralAddress,
                                                                    configuration: peripheralConfiguration(store, secureConnectionsOnly: secureConnectionsOnly))
        _ = try await manager.add(SignedWriteWorldTests.definition)
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Signer").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        return (manager, device)
    }

    func testAJustWorksBondsSigningKeyDoesNotWriteInSecureConnectionsOnlyMode() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            var (manager, device) = try await Self.peripheral(world, store: peripheralStore, secureConnectionsOnly: false)
            let address = DeviceAddress(Self.peripheralAddress, type: .public)
            let central = try await world.addCentral(configuration: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: PasskeyBoard()), store: centralStore)).0

            // A Just Works bond (level 2) with both CSRKs, made before the mode was on.
            var p = try await central.connect(address, timeout: .seconds(5))
            let result = try await p.pair()
            XCTAssertTrue(result.bonded)
            XCTAssertEqual(result.securityLevel, .encrypted)
            XCTAssertTrue(result.keysReceived.contains(.signingKey) || result.keysSent.contains(.signingKey))
            try await p.disconnect()

            // The server restarts in Secure Connections Only mode on the same bonds.
            await manager.close()
            await world.radio.remove(device.id)
            (manager, device) = try await Self.peripheral(world, store: peripheralStore, secureConnectionsOnly: true)

            // The client reconnects without encryption and writes signed with the old bond's CSRK.
            p = try await central.connect(address, timeout: .seconds(5))
            let c = try await SignedWriteWorldTests.characteristic(SignedWriteWorldTests.signed, on: p)
            try await p.writeValue(Array("forged".utf8), for: c, type: .signedWithoutResponse)
            let value = try await p.readValue(for: c)
            let level = await p.securityLevel
            XCTAssertEqual(level, .none, "the write went signed over an unencrypted link")
            XCTAssertEqual(String(decoding: value, as: UTF8.self), "none",
                           "a Secure Connections Only server applied a signed write checked against a level 2 bond's CSRK")
            await central.close()
            await manager.close()
        }
    }
}

import BLE
import BLESystems
import BLEVirtual
import XCTest

/// `ble serve test`'s signed-write characteristic (8f3c000b): a bonded central writes it with
/// Signed Write Without Response over an unencrypted link; an unbonded one is refused.
final class TestProfileSignedWriteTests: XCTestCase {
    static func configuration(_ store: any BondStore, raise: Bool = true) -> HostConfiguration {
        var c = HostConfiguration()
        c.security.bondStore = store
        c.security.agent = FixedPairingAgent(confirms: true)
        c.security.raisesSecurityOnDemand = raise
        return c
    }

    func testABondedCentralWritesTheSignedCharacteristicUnencrypted() async throws {
        try await VirtualWorld.run { world in
            let (manager, device) = try await world.addPeripheralManager(name: "TestDevice", configuration: Self.configuration(InMemoryBondStore()))
            var profile = TestServeProfile()
            try await profile.install(on: manager)
            let (data, response) = profile.advertisement(name: "TestDevice")
            try await manager.startAdvertising(data, scanResponse: response)
            let (central, _) = try await world.addCentral(configuration: Self.configuration(InMemoryBondStore(), raise: false))
            let address = DeviceAddress(device.address, type: .public)

            var p = try await central.connect(address, timeout: .seconds(5))
            func signedCharacteristic() async throws -> GATTCharacteristic {
                let services = try await p.discoverServices([TestServeProfile.service])
                let chars = try await p.discoverCharacteristics([TestServeProfile.signed], for: try XCTUnwrap(services.first))
                return try XCTUnwrap(chars.first)
            }
            var c = try await signedCharacteristic()
            XCTAssertEqual(c.properties, [.read, .authenticatedSignedWrites])
            XCTAssertEqual(c.valueHandle, 0x0026, "the handle docs/CLI.md's `ble write --signed` example shows")
            let before = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: before, as: UTF8.self), "unsigned")
            do {
                try await p.writeValue(Array("x".utf8), for: c, type: .signedWithoutResponse)
                XCTFail("not bonded yet")
            } catch BLEError.security(.unavailable) {}
            // A plain write is refused on the unencrypted link: it needs a signature or encryption
            // (this central does not pair on demand, so the error reaches it).
            do {
                try await p.writeValue(Array("x".utf8), for: c, type: .withResponse)
                XCTFail("a plain write over an unencrypted link")
            } catch BLEError.gatt(.att(code: .insufficientAuthentication, _, _)) {}

            _ = try await p.pair()
            try await p.disconnect()
            p = try await central.connect(address, timeout: .seconds(5))
            c = try await signedCharacteristic()
            try await p.writeValue(Array("signed".utf8), for: c, type: .signedWithoutResponse)
            let after = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: after, as: UTF8.self), "signed")
            let level = await p.securityLevel
            XCTAssertEqual(level, .none)
            await central.close()
            await manager.close()
        }
    }
}

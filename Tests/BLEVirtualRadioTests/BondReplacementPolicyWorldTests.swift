import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// A central that copies a bonded central's address and pairs Just Works does not replace the
/// bond: the peripheral refuses the unauthenticated key with Pairing Failed (Authentication
/// Requirements, Core v5.4 Vol 3 Part H §3.5.5), reports it as a typed event, keeps the old
/// keys, and the real central still reconnects encrypted (Zephyr's default, as
/// `SecuritySettings.allowsUnauthenticatedBondReplacement` is off by default).
final class BondReplacementPolicyWorldTests: XCTestCase {
    static let victimAddress = BDAddress(rawValue: 0x00_1B_DC_00_0B_0B)

    static func justWorks(_ store: any BondStore) -> HostConfiguration {
        var c = HostConfiguration()
        c.security.bondStore = store
        return c
    }

    func testAJustWorksPairingFromACopiedAddressDoesNotReplaceTheBond() async throws {
        try await VirtualWorld.run { world in
            let peripheralStore = InMemoryBondStore()
            let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: Self.justWorks(peripheralStore))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let address = DeviceAddress(device.address, type: .public)
            let events = await manager.events

            let victimStore = InMemoryBondStore()
            let (victim, _) = try await world.addCentral(address: Self.victimAddress, configuration: Self.justWorks(victimStore))
            var p = try await victim.connect(address, timeout: .seconds(5))
            _ = try await p.pair()
            for await e in events { if case .paired = e { break } }
            try await p.disconnect()
            await victim.close()
            let bonded = try XCTUnwrap(try peripheralStore.bonds().first)

            // The attacker: the victim's address, its own keys, Just Works.
            let (attacker, _) = try await world.addCentral(address: Self.victimAddress, configuration: Self.justWorks(InMemoryBondStore()))
            let a = try await attacker.connect(address, timeout: .seconds(5))
            do {
                _ = try await a.pair()
                XCTFail("the Just Works pairing was accepted")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error.reason, .authenticationRequirements)
                // The peripheral's application sees why (after a refusal only: there is no
                // such event to wait for otherwise).
                var refusal: SMPPairingError?
                for await e in events { if case let .pairingFailed(_, error) = e { refusal = error; break } }
                guard case .existingBondKept? = refusal else { return XCTFail("the peripheral reports \(String(describing: refusal))") }
            }
            XCTAssertEqual(try peripheralStore.bonds().map(\.localLongTermKey), [bonded.localLongTermKey], "the old keys are kept")
            await attacker.close()

            // The real central comes back and encrypts with its key.
            let (again, _) = try await world.addCentral(address: Self.victimAddress, configuration: Self.justWorks(victimStore))
            p = try await again.connect(address, timeout: .seconds(5))
            try await p.encrypt()
            await again.close()
            await manager.close()
        }
    }
}

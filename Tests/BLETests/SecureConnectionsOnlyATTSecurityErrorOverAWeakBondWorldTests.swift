import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Review 25b: a central in Secure Connections Only mode whose bond with a peripheral is below
/// level 4 answers that peripheral's Security Request by pairing again at level 4
/// (`securityRequested` skips a bond `refusal(of:)` refuses). The other peer-set-off path, an
/// ATT security error (`raise(for:)`), does not: it sees a bond with a key and calls `encrypt`,
/// which throws for the refused bond, so a read the server answers Insufficient Encryption fails
/// instead of pairing over the weak bond.
final class SecureConnectionsOnlyATTSecurityErrorOverAWeakBondWorldTests: XCTestCase {
    static let centralAddress = BDAddress(rawValue: 0x00_1B_DC_00_0C_1C)
    static let peripheralAddress = BDAddress(rawValue: 0x00_1B_DC_00_0D_1D)

    func testAnInsufficientEncryptionOverAWeakBondInSecureConnectionsOnlyModeIsAnsweredByPairingAgain() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            func config(_ store: any BondStore, legacy: Bool = false, scOnly: Bool = false) -> HostConfiguration {
                var c = PairingWorldTests.security(io: .displayYesNo, agent: BoardAgent(board: board), store: store)
                c.security.pairing.secureConnections = !legacy
                c.security.pairing.secureConnectionsOnly = scOnly
                return c
            }
            let centralStore = InMemoryBondStore()
            let address = DeviceAddress(Self.peripheralAddress, type: .public)
            let (manager, _) = try await world.addPeripheralManager(name: "Lock", address: Self.peripheralAddress, configuration: config(InMemoryBondStore()))
            let handles = try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read], permissions: [.readEncrypted], value: [0x42]),
            ]))
            let valueHandle = try XCTUnwrap(handles.characteristics.first?.valueHandle)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            var (central, centralDevice) = try await world.addCentral(address: Self.centralAddress, configuration: config(centralStore, legacy: true))
            var p = try await central.connect(address, timeout: .seconds(5))
            let first = try await p.pair()
            XCTAssertFalse(first.secureConnections)
            try await p.disconnect()
            await central.close()
            await world.radio.remove(centralDevice.id)

            // The central switches Secure Connections Only on; the peripheral still has the
            // legacy bond, so it answers the read Insufficient Encryption.
            (central, centralDevice) = try await world.addCentral(address: Self.centralAddress, configuration: config(centralStore, scOnly: true))
            p = try await central.connect(address, timeout: .seconds(5))
            do {
                let value = try await p.readValue(handle: valueHandle)
                XCTAssertEqual(value, [0x42])
            } catch {
                XCTFail("the read failed instead of pairing again over the weak bond: \(error)")
            }
            let bond = try XCTUnwrap(try centralStore.bonds().first)
            XCTAssertTrue(bond.secureConnections && bond.authenticated, "a level 4 key replaced the legacy one")
            await central.close()
            await manager.close()
        }
    }
}

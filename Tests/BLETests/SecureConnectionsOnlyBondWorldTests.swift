import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Secure Connections Only mode is mode 1 level 4 (Core v5.4 Vol 3 Part C §10.2.4): a bond
/// made before it was switched on, with a legacy or unauthenticated key, does not encrypt the
/// link. The peripheral answers the central's key request negatively; the central does not
/// encrypt with such a bond and says to pair again.
final class SecureConnectionsOnlyBondWorldTests: XCTestCase {
    static let centralAddress = BDAddress(rawValue: 0x00_1B_DC_00_0C_0C)
    static let peripheralAddress = BDAddress(rawValue: 0x00_1B_DC_00_0D_0D)

    static func configuration(_ store: any BondStore, legacy: Bool = false, secureConnectionsOnly: Bool = false) -> HostConfiguration {
        var c = HostConfiguration()
        c.security.bondStore = store
        c.security.pairing.secureConnections = !legacy
        c.security.pairing.secureConnectionsOnly = secureConnectionsOnly
        return c
    }

    func testALegacyBondDoesNotEncryptInSecureConnectionsOnlyMode() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            let address = DeviceAddress(Self.peripheralAddress, type: .public)
            var (manager, peripheralDevice) = try await world.addPeripheralManager(name: "Lock", address: Self.peripheralAddress, configuration: Self.configuration(peripheralStore))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let events = await manager.events
            var (central, centralDevice) = try await world.addCentral(address: Self.centralAddress, configuration: Self.configuration(centralStore, legacy: true))
            var p = try await central.connect(address, timeout: .seconds(5))
            let result = try await p.pair()
            XCTAssertFalse(result.secureConnections)
            for await e in events { if case .paired = e { break } }
            try await p.disconnect()
            await central.close()
            await world.radio.remove(centralDevice.id)

            // The central switches Secure Connections Only on: it does not use the legacy bond.
            (central, centralDevice) = try await world.addCentral(address: Self.centralAddress, configuration: Self.configuration(centralStore, secureConnectionsOnly: true))
            p = try await central.connect(address, timeout: .seconds(5))
            do {
                try await p.encrypt()
                XCTFail("the central encrypted with a legacy bond in Secure Connections Only mode")
            } catch let BLEError.security(error) {
                XCTAssertTrue("\(error)".contains("Secure Connections Only"), "\(error)")
            }
            try? await p.disconnect()
            await central.close()
            await world.radio.remove(centralDevice.id)

            // The peripheral switches it on: the central's key request is answered negatively.
            await manager.close()
            await world.radio.remove(peripheralDevice.id)
            (manager, peripheralDevice) = try await world.addPeripheralManager(name: "Lock", address: Self.peripheralAddress,
                                                                configuration: Self.configuration(peripheralStore, secureConnectionsOnly: true))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            (central, _) = try await world.addCentral(address: Self.centralAddress, configuration: Self.configuration(centralStore, legacy: true))
            p = try await central.connect(address, timeout: .seconds(5))
            do {
                try await p.encrypt()
                XCTFail("the peripheral encrypted with a legacy bond in Secure Connections Only mode")
            } catch let BLEError.security(.encryptionFailed(status)) {
                XCTAssertEqual(status, 0x06, "PIN or Key Missing: the negative reply")
            }
            await central.close()
            await manager.close()
        }
    }

    /// A peripheral's Security Request to a central in Secure Connections Only mode whose bond
    /// with it is below level 4 is answered by pairing again (authenticated Secure Connections),
    /// not left unanswered: the new level 4 key replaces the old one.
    func testASecurityRequestOverAWeakBondInSecureConnectionsOnlyModeIsAnsweredByPairingAgain() async throws {
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
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let events = await manager.events
            var (central, centralDevice) = try await world.addCentral(address: Self.centralAddress, configuration: config(centralStore, legacy: true))
            var p = try await central.connect(address, timeout: .seconds(5))
            let first = try await p.pair()
            XCTAssertFalse(first.secureConnections)
            var connected: ConnectedCentral?
            for await e in events {
                if case let .connected(c) = e { connected = c }
                if case .paired = e { break }
            }
            try await p.disconnect()
            await central.close()
            await world.radio.remove(centralDevice.id)

            (central, centralDevice) = try await world.addCentral(address: Self.centralAddress, configuration: config(centralStore, scOnly: true))
            p = try await central.connect(address, timeout: .seconds(5))
            for await e in events { if case let .connected(c) = e { connected = c; break } }
            let level = try await manager.requestSecurity(from: try XCTUnwrap(connected))
            XCTAssertEqual(level, .secureConnections, "paired again at level 4")
            let bond = try XCTUnwrap(try centralStore.bonds().first)
            XCTAssertTrue(bond.secureConnections && bond.authenticated, "the level 4 key replaced the legacy one")
            await central.close()
            await manager.close()
        }
    }
}

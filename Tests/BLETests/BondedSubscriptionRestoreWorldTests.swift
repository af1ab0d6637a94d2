import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// A bonded client's CCCDs (Core v5.4 Vol 3 Part G §3.3.3.3) come back only once its link is
/// encrypted with its bond's key: a central that merely connects from the bonded address does
/// not see (or receive) the bonded client's subscriptions.
final class BondedSubscriptionRestoreWorldTests: XCTestCase {
    static func cccd(of uuid: BluetoothUUID, on p: Peripheral) async throws -> [UInt8] {
        let services = try await p.discoverServices([PairingWorldTests.service])
        let chars = try await p.discoverCharacteristics([uuid], for: try XCTUnwrap(services.first))
        let descriptors = try await p.discoverDescriptors(for: try XCTUnwrap(chars.first))
        let cccd = try XCTUnwrap(descriptors.first { $0.uuid == BluetoothUUID(0x2902) })
        return try await p.readValue(for: cccd)
    }

    func testSubscriptionsComeBackOnlyOnceEncryptedWithTheBondsKey() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let centralStore = InMemoryBondStore()
            let rig = try await PairingWorldTests.rig(world, central: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: centralStore),
                                                      peripheral: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            let address = rig.central.controllerInfo.address
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let services = try await p.discoverServices([PairingWorldTests.service])
            let chars = try await p.discoverCharacteristics([PairingWorldTests.counter], for: try XCTUnwrap(services.first))
            try await p.setNotifyValue(true, for: try XCTUnwrap(chars.first))
            try await p.disconnect()
            await rig.central.close()

            // Someone with the bonded central's address and no keys.
            let (spoofer, _) = try await world.addCentral(address: address, configuration: PairingWorldTests.security(
                io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore(), raise: false))
            let s = try await spoofer.connect(rig.address, timeout: .seconds(5))
            let seen = try await Self.cccd(of: PairingWorldTests.counter, on: s)
            XCTAssertEqual(seen, [0, 0], "the bonded client's subscription is not restored before encryption")
            await spoofer.close()

            // The bonded central, encrypted with its key, finds it as it left it.
            let (again, _) = try await world.addCentral(address: address, configuration: PairingWorldTests.security(
                io: .noInputNoOutput, agent: BoardAgent(board: board), store: centralStore))
            p = try await again.connect(rig.address, timeout: .seconds(5))
            try await p.encrypt()
            let restored = try await Self.cccd(of: PairingWorldTests.counter, on: p)
            XCTAssertEqual(restored, [1, 0])
            await again.close()
            await rig.manager.close()
        }
    }
}

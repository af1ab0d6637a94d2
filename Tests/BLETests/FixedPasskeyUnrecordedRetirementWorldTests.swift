import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import Synchronization
import XCTest

/// The fixed passkey's retirement is what keeps it single-use across restarts. When the bond
/// store cannot record it (a full or read-only disk), the passkey must not be used anyway: the pairing that shows it reveals it (Vol 3 Part H §2.3.5.6.3), and the
/// next run, finding no record, shows it again. SignCounters follow the same rule here already:
/// one the store cannot record is not used.
final class FixedPasskeyUnrecordedRetirementWorldTests: XCTestCase {
    /// A store, kept across restarts, whose passkey retirements fail while `failing` is set.
    final class RetirementFailingStore: BondStore {
        let inner = InMemoryBondStore()
        let failing = Mutex(true)
        func bonds() throws -> [Bond] { try inner.bonds() }
        func save(_ bond: Bond) throws { try inner.save(bond) }
        func remove(_ peer: DeviceAddress) throws -> Bool { try inner.remove(peer) }
        func localIdentity() throws -> LocalIdentity { try inner.localIdentity() }
        func problems() -> [String] { [] }
        func isPasskeyRetired(_ passkey: UInt32) throws -> Bool { try inner.isPasskeyRetired(passkey) }
        func retirePasskey(_ passkey: UInt32) throws {
            if failing.withLock({ $0 }) { throw BLEError.transport("retired-passkeys: no space left on device") }
            try inner.retirePasskey(passkey)
        }
    }

    static func peripheral(_ world: VirtualWorld, store: any BondStore, address: BDAddress? = nil) async throws -> (PeripheralManager, VirtualDevice) {
        var c = HostConfiguration()
        c.security.pairing.ioCapability = .displayOnly
        c.security.pairing.displayedPasskey = 123_456
        c.security.agent = FixedPairingAgent(confirms: false)
        c.security.bondStore = store
        let (manager, device) = try await world.addPeripheralManager(name: "Lock", address: address, configuration: c)
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        return (manager, device)
    }

    func testAFixedPasskeyWhoseRetirementCouldNotBeRecordedIsNotUsedAgainAfterARestart() async throws {
        try await VirtualWorld.run { world in
            let store = RetirementFailingStore()
            let (first, device) = try await Self.peripheral(world, store: store)
            let address = DeviceAddress(device.address, type: .public)
            let c1 = try await FixedPasskeyRestartWorldTests.central(world, typing: 123_456)
            let p1 = try await c1.connect(address, timeout: .seconds(5))
            let firstResult = try? await p1.pair()
            await c1.close()
            await first.close()
            await world.radio.remove(device.id)

            // The disk has room again; the peripheral restarts on the same store.
            store.failing.withLock { $0 = false }
            let (second, _) = try await Self.peripheral(world, store: store, address: device.address)
            let c2 = try await FixedPasskeyRestartWorldTests.central(world, typing: 123_456)
            let p2 = try await c2.connect(address, timeout: .seconds(5))
            let secondResult = try? await p2.pair()
            XCTAssertFalse(firstResult != nil && secondResult != nil,
                           "the fixed passkey paired before and after a restart: its retirement was not recorded, and it was shown anyway")
            await c2.close()
            await second.close()
        }
    }
}

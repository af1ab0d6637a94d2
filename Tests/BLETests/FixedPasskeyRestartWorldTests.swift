import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import Foundation
import XCTest

/// A fixed passkey (`displayedPasskey`, `ble --passkey`) is single-use across restarts too: one
/// recorded Passkey Entry pairing reveals all 20 bits of it (each round's commitment opens in
/// the clear, Core v5.4 Vol 3 Part H §2.3.5.6.3), so its retirement is kept in the bonds
/// directory and a restarted peripheral shows random passkeys instead.
final class FixedPasskeyRestartWorldTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "fixed-passkey-\(UUID().uuidString)"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func peripheral(_ world: VirtualWorld, directory: String, passkey: UInt32) async throws -> (PeripheralManager, DeviceAddress) {
        var c = HostConfiguration()
        c.security.pairing.ioCapability = .displayOnly
        c.security.pairing.displayedPasskey = passkey
        c.security.agent = FixedPairingAgent(confirms: false)
        c.security.bondStore = try DirectoryBondStore(directory: directory)
        let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: c)
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        return (manager, DeviceAddress(device.address, type: .public))
    }

    /// A central that types `passkey` and demands MITM protection, with bonds of its own.
    static func central(_ world: VirtualWorld, typing passkey: UInt32) async throws -> Central {
        var c = HostConfiguration()
        c.security.pairing.ioCapability = .keyboardOnly
        c.security.pairing.mitm = true
        c.security.agent = FixedPairingAgent(passkey: passkey)
        c.security.bondStore = InMemoryBondStore()
        return try await Central.open(transport: await world.radio.addDevice().transport, clock: world.clock, configuration: c)
    }

    func testAFixedPasskeyUsedBeforeARestartIsNotShownAfterIt() async throws {
        let directory = self.directory
        try await VirtualWorld.run { world in
            let (first, address) = try await Self.peripheral(world, directory: directory, passkey: 123_456)
            let c1 = try await Self.central(world, typing: 123_456)
            let p1 = try await c1.connect(address, timeout: .seconds(5))
            let result = try await p1.pair()
            XCTAssertEqual(result.securityLevel, .secureConnections, "the first pairing uses the fixed passkey")
            await c1.close()
            await first.close()

            // The restarted peripheral, on the same bonds directory and settings.
            let (second, address2) = try await Self.peripheral(world, directory: directory, passkey: 123_456)
            let c2 = try await Self.central(world, typing: 123_456)
            let p2 = try await c2.connect(address2, timeout: .seconds(5))
            do {
                _ = try await p2.pair()
                XCTFail("the fixed passkey was shown again after the restart")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error.reason, .confirmValueFailed)
            }
            await c2.close()
            await second.close()
        }
    }

    /// A fixed passkey this side types (both sides keyboards, `ble --io keyboard --passkey`)
    /// is the same 20-bit secret as one it shows: it is retired in the bonds directory on
    /// first use, and after a restart the typed passkey is refused (Passkey Entry Failed,
    /// `SMPPairingError.fixedPasskeyUsed`).
    func testAFixedPasskeyTypedBeforeARestartIsRefusedAfterIt() async throws {
        let directory = self.directory
        try await VirtualWorld.run { world in
            func peripheral() async throws -> (PeripheralManager, DeviceAddress, PeripheralManagerEventStream) {
                var c = HostConfiguration()
                c.security.pairing.ioCapability = .keyboardOnly
                c.security.pairing.displayedPasskey = 123_456
                c.security.agent = FixedPairingAgent(passkey: 123_456)
                c.security.bondStore = try DirectoryBondStore(directory: directory)
                let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: c)
                let events = await manager.events
                try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
                return (manager, DeviceAddress(device.address, type: .public), events)
            }
            let (first, address, _) = try await peripheral()
            let c1 = try await Self.central(world, typing: 123_456)
            let p1 = try await c1.connect(address, timeout: .seconds(5))
            let result = try await p1.pair()
            XCTAssertEqual(result.method, .passkeyEntry, "the first pairing uses the typed fixed passkey")
            await c1.close()
            await first.close()

            let (second, address2, events) = try await peripheral()
            let c2 = try await Self.central(world, typing: 123_456)
            let p2 = try await c2.connect(address2, timeout: .seconds(5))
            do {
                _ = try await p2.pair()
                XCTFail("the typed fixed passkey was accepted again after the restart")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error.reason, .passkeyEntryFailed)
                var refusal: SMPPairingError?
                for await e in events { if case let .pairingFailed(_, error) = e { refusal = error; break } }
                guard case .fixedPasskeyUsed? = refusal else { return XCTFail("the peripheral reports \(String(describing: refusal))") }
            }
            await c2.close()
            await second.close()
        }
    }
}

import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import Foundation
import XCTest
import Synchronization

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

    /// `central` pairs with the real lock at `lockAddress` and leaves; the bond `store` keeps.
    static func bond(_ central: Central, withLockAt lockAddress: BDAddress, advertising: AdvertisingData,
                     store: InMemoryBondStore, _ world: VirtualWorld) async throws -> Bond {
        let (real, _) = try await world.addPeripheralManager(name: "Lock", address: lockAddress, configuration: justWorks(InMemoryBondStore()))
        try await real.startAdvertising(advertising, parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let p = try await central.connect(DeviceAddress(lockAddress, type: .public), timeout: .seconds(5))
        _ = try await p.pair()
        try await p.disconnect()
        await real.close()
        return try XCTUnwrap(try store.bonds().first)
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

    /// Our own `pair()` that failed does not leave the link counted as ours: a Just Works
    /// pairing the peer then starts with a Security Request (here a device copying the bonded
    /// peripheral's address) is refused, and the bond is kept.
    func testAFailedExplicitPairingDoesNotLetAPeerStartedPairingReplaceTheBond() async throws {
        try await VirtualWorld.run { world in
            let lockAddress = BDAddress(rawValue: 0x00_1B_DC_00_0C_0C)
            let centralStore = InMemoryBondStore()
            // A central that could protect against MITM, so a Security Request asking for it
            // over the (Just Works) bond is answered by pairing, not with the bond's key.
            var cc = Self.justWorks(centralStore)
            cc.security.pairing.ioCapability = .keyboardDisplay
            let (central, _) = try await world.addCentral(configuration: cc)
            let advertising = AdvertisingData.Builder().localName("Lock").build()

            let bonded = try await Self.bond(central, withLockAt: lockAddress, advertising: advertising, store: centralStore, world)

            // The attacker declines the central's own pairing, then asks for a pairing itself
            // (with MITM in its Security Request, so the central pairs rather than encrypting
            // with the bond's key), which its IO capability makes Just Works.
            var ac = Self.justWorks(InMemoryBondStore())
            ac.security.pairing.asksApproval = true
            ac.security.pairing.requestsMITM = true
            ac.security.agent = DeclinesFirstApprovalAgent()
            let (attacker, _) = try await world.addPeripheralManager(name: "Lock", address: lockAddress, configuration: ac)
            let events = await attacker.events
            try await attacker.startAdvertising(advertising, parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let a = try await central.connect(DeviceAddress(lockAddress, type: .public), timeout: .seconds(5))
            var connected: ConnectedCentral?
            for await e in events { if case let .connected(c) = e { connected = c; break } }
            do {
                _ = try await a.pair()
                XCTFail("the attacker declined the central's pairing")
            } catch BLEError.security {}
            do {
                _ = try await attacker.requestSecurity(from: try XCTUnwrap(connected))
                XCTFail("the Just Works pairing the attacker started was accepted")
            } catch {}
            guard case .existingBondKept? = a.lastPairingFailure else {
                return XCTFail("the central's application sees why: \(String(describing: a.lastPairingFailure))")
            }
            XCTAssertEqual(try centralStore.bonds().map(\.peerLongTermKey), [bonded.peerLongTermKey], "the real peripheral's bond is kept")
            await attacker.close()
            await central.close()
        }
    }

    /// A Numeric Comparison that the peripheral's agent accepts without a person comparing
    /// (`ble serve --io yesno --confirm yes`) authenticates nothing: a central copying a bonded
    /// central's address that pairs so is refused like Just Works, and the bond is kept.
    func testAnAutoConfirmedNumericComparisonDoesNotReplaceTheBond() async throws {
        try await VirtualWorld.run { world in
            let store = InMemoryBondStore()
            var pc = Self.justWorks(store)
            pc.security.pairing.ioCapability = .displayYesNo
            pc.security.agent = FixedPairingAgent(confirms: true)
            let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: pc)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let address = DeviceAddress(device.address, type: .public)
            let events = await manager.events

            var cc = Self.justWorks(InMemoryBondStore())
            cc.security.pairing.ioCapability = .displayYesNo
            cc.security.pairing.requestsMITM = true
            cc.security.agent = FixedPairingAgent(confirms: true)
            let (victim, _) = try await world.addCentral(address: Self.victimAddress, configuration: cc)
            let p = try await victim.connect(address, timeout: .seconds(5))
            let first = try await p.pair()
            XCTAssertEqual(first.method, .numericComparison)
            await victim.close()
            let bonded = try XCTUnwrap(try store.bonds().first)

            cc.security.bondStore = InMemoryBondStore()
            let (attacker, _) = try await world.addCentral(address: Self.victimAddress, configuration: cc)
            let a = try await attacker.connect(address, timeout: .seconds(5))
            do {
                _ = try await a.pair()
                XCTFail("the auto-confirmed pairing was accepted")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error.reason, .authenticationRequirements)
                var refusal: SMPPairingError?
                for await e in events { if case let .pairingFailed(_, error) = e { refusal = error; break } }
                guard case .existingBondKept? = refusal else { return XCTFail("the peripheral reports \(String(describing: refusal))") }
            }
            XCTAssertEqual(try store.bonds().map(\.localLongTermKey), [bonded.localLongTermKey], "the old keys are kept")
            await attacker.close()
            await manager.close()
        }
    }

    /// A pairing a peripheral starts whose key the central does not keep, because it is weaker
    /// than the bond's (a device copying the bonded peripheral's address, legacy Just Works
    /// where the bond is Secure Connections): the central's application sees why in
    /// `lastPairingFailure`, as it does for a refused one, and the bond is kept.
    func testACentralThatKeepsItsBondOverAWeakerPeerStartedPairingSaysSo() async throws {
        try await VirtualWorld.run { world in
            let lockAddress = BDAddress(rawValue: 0x00_1B_DC_00_0D_0D)
            let centralStore = InMemoryBondStore()
            var cc = Self.justWorks(centralStore)
            cc.security.allowsUnauthenticatedBondReplacement = true
            // Able to protect against MITM: see the test above.
            cc.security.pairing.ioCapability = .keyboardDisplay
            let (central, _) = try await world.addCentral(configuration: cc)
            let advertising = AdvertisingData.Builder().localName("Lock").build()

            let bonded = try await Self.bond(central, withLockAt: lockAddress, advertising: advertising, store: centralStore, world)
            XCTAssertTrue(bonded.secureConnections)

            // The copier pairs legacy only and asks for MITM, so the unauthenticated bond is
            // paired over rather than used.
            var ac = Self.justWorks(InMemoryBondStore())
            ac.security.pairing.secureConnections = false
            ac.security.pairing.requestsMITM = true
            let (copier, _) = try await world.addPeripheralManager(name: "Lock", address: lockAddress, configuration: ac)
            let events = await copier.events
            try await copier.startAdvertising(advertising, parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let a = try await central.connect(DeviceAddress(lockAddress, type: .public), timeout: .seconds(5))
            var connected: ConnectedCentral?
            for await e in events { if case let .connected(c) = e { connected = c; break } }
            _ = try? await copier.requestSecurity(from: try XCTUnwrap(connected))
            guard case .existingBondKept? = a.lastPairingFailure else {
                return XCTFail("the central's application sees why: \(String(describing: a.lastPairingFailure))")
            }
            XCTAssertEqual(try centralStore.bonds().map(\.peerLongTermKey), [bonded.peerLongTermKey], "the real peripheral's bond is kept")
            await copier.close()
            await central.close()
        }
    }
}

/// Declines the first pairing it is asked to approve and approves every later one.
final class DeclinesFirstApprovalAgent: PairingAgent, Sendable {
    private let asked = Mutex(0)

    func approvePairing(with peer: DeviceAddress, features: SMPPairingFeatures) async -> Bool {
        asked.withLock {
            $0 += 1
            return $0 > 1
        }
    }
}

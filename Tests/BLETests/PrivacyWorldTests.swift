import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import XCTest

/// Privacy between two of our hosts on the virtual radio, in virtual time (Core spec Vol 3 Part C
/// §10.7): a device with privacy on advertises, scans and connects with resolvable private
/// addresses from its IRK and renews them; a bonded peer resolves them (in the host, or with the
/// controller's resolving list) and reaches the device by its identity address.
final class PrivacyWorldTests: XCTestCase {
    static let rotation: Duration = .seconds(60)

    struct Rig {
        let central: Central
        let manager: PeripheralManager
        let centralStore: InMemoryBondStore
        let peripheralStore: InMemoryBondStore
    }

    static func configuration(store: any BondStore, controllerResolution: Bool) -> HostConfiguration {
        var c = HostConfiguration()
        c.security.bondStore = store
        c.security.usesControllerAddressResolution = controllerResolution
        return c
    }

    /// A peripheral and a central, each with privacy on or off; the peripheral advertises "Lock"
    /// with one value readable only over an encrypted link.
    static func rig(_ world: VirtualWorld, peripheralPrivacy: Bool, centralPrivacy: Bool, controllerResolution: Bool) async throws -> Rig {
        let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
        let pDevice = await world.radio.addDevice()
        let manager = try await PeripheralManager.open(
            transport: pDevice.transport, name: "Lock", address: peripheralPrivacy ? .resolvablePrivate(rotation: rotation) : .public,
            clock: world.clock, configuration: configuration(store: peripheralStore, controllerResolution: controllerResolution))
        _ = try await manager.add(GATTServiceDefinition(uuid: PairingWorldTests.service, characteristics: [
            GATTCharacteristicDefinition(uuid: PairingWorldTests.encrypted, properties: [.read], permissions: [.readEncrypted], value: Array("encrypted".utf8)),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let cDevice = await world.radio.addDevice()
        let central = try await Central.open(
            transport: cDevice.transport, address: centralPrivacy ? .resolvablePrivate(rotation: rotation) : .public,
            clock: world.clock, configuration: configuration(store: centralStore, controllerResolution: controllerResolution))
        return Rig(central: central, manager: manager, centralStore: centralStore, peripheralStore: peripheralStore)
    }

    static func findLock(_ central: Central) async throws -> ScannedDevice {
        try await central.find(filter: ScanFilter(nameContains: "Lock"), timeout: .seconds(5))
    }

    /// Pairs with bonding over a first connection to `address`; returns the peer's identity.
    static func bond(_ rig: Rig, at address: DeviceAddress) async throws -> DeviceAddress {
        let p = try await rig.central.connect(address, timeout: .seconds(5))
        let result = try await p.pair()
        XCTAssertTrue(result.bonded)
        let identity = try XCTUnwrap(result.peerIdentity)
        try await p.disconnect()
        return identity
    }

    func testAPeripheralWithPrivacyAdvertisesWithRenewedRPAsItsIdentityResolves() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheralPrivacy: true, centralPrivacy: false, controllerResolution: false)
            let first = try await Self.findLock(rig.central).address
            XCTAssertEqual(first.type, .random)
            XCTAssertEqual(first.address.randomKind, .resolvablePrivate)
            let irk = try rig.peripheralStore.localIdentity().identityResolvingKey
            XCTAssertTrue(ResolvablePrivateAddress.resolves(first.address, irk: irk), "the RPA is made from the local identity's IRK")

            // Its lifetime ends while advertising: advertising pauses for the new address.
            try await world.clock.sleep(for: Self.rotation + .seconds(1))
            let second = try await Self.findLock(rig.central).address
            XCTAssertEqual(second.address.randomKind, .resolvablePrivate)
            XCTAssertNotEqual(second, first, "a new RPA after its lifetime")
            XCTAssertTrue(ResolvablePrivateAddress.resolves(second.address, irk: irk))
            let advertising = await rig.manager.isAdvertising
            XCTAssertTrue(advertising, "advertising resumes after the renewal")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// The bonded peripheral's next RPA is shown with its identity and reached by it, and the
    /// reconnection encrypts with the stored key instead of pairing again.
    private func reconnectByIdentity(controllerResolution: Bool) async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheralPrivacy: true, centralPrivacy: false, controllerResolution: controllerResolution)
            let events = await rig.manager.events
            let first = try await Self.findLock(rig.central)
            XCTAssertNil(first.identity, "not bonded yet: nothing resolves the RPA")
            let identity = try await Self.bond(rig, at: first.address)
            XCTAssertEqual(identity.type, .random)
            XCTAssertEqual(identity.address.randomKind, .staticRandom, "the identity distributed is the static one behind the RPAs")
            XCTAssertNotEqual(identity.address, first.address.address)
            let stored = try rig.peripheralStore.localIdentity()
            XCTAssertEqual(identity.address, stored.address)

            try await world.clock.sleep(for: Self.rotation + .seconds(1))
            let again = try await Self.findLock(rig.central)
            XCTAssertEqual(again.identity, identity, "the bonded device is shown with its identity")
            if controllerResolution {
                XCTAssertEqual(again.address, DeviceAddress(identity.address, type: .randomIdentity), "the controller resolved it")
            } else {
                XCTAssertEqual(again.address.address.randomKind, .resolvablePrivate)
                XCTAssertNotEqual(again.address, first.address, "a renewed RPA")
            }
            await rig.central.stopScan()

            let p = try await rig.central.connect(identity, timeout: .seconds(5))
            let value = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: p)
            XCTAssertEqual(value, "encrypted")
            try await p.disconnect()
            let paired = await PairingWorldTests.pairings(in: events, untilDisconnects: 2)
            XCTAssertEqual(paired, 1, "the reconnection by identity encrypted with the bond")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testABondedPeripheralWithPrivacyIsReachedByItsIdentityResolvedInTheHost() async throws {
        try await reconnectByIdentity(controllerResolution: false)
    }

    func testABondedPeripheralWithPrivacyIsReachedByItsIdentityResolvedByTheController() async throws {
        try await reconnectByIdentity(controllerResolution: true)
    }

    /// A central opened with bonds already in its store loads them into the controller's
    /// resolving list when its first scan turns the scanner on (the load runs only while the
    /// scanner is idle; with shared scans it was skipped), so the scan reports the identity.
    func testTheFirstScanOfANewCentralLoadsTheResolvingList() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheralPrivacy: true, centralPrivacy: false, controllerResolution: true)
            let identity = try await Self.bond(rig, at: try await Self.findLock(rig.central).address)
            await rig.central.close()
            let device = await world.radio.addDevice()
            let central = try await Central.open(transport: device.transport, address: .public, clock: world.clock,
                                                 configuration: Self.configuration(store: rig.centralStore, controllerResolution: true))
            let lock = try await Self.findLock(central)
            let listed = await world.radio.controller(device.id)?.resolvingList.count
            XCTAssertEqual(listed, 1, "the bond's IRK is in the controller's list")
            XCTAssertEqual(lock.address.address, identity.address, "the controller resolved the RPA to the identity")
            await central.close()
            await rig.manager.close()
        }
    }

    /// Connecting by identity without a recent scan: the host scans for an RPA the bond's IRK
    /// resolves, then connects to it.
    func testConnectingByIdentityFindsTheCurrentRPAWithoutAScanFirst() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheralPrivacy: true, centralPrivacy: false, controllerResolution: false)
            let identity = try await Self.bond(rig, at: try await Self.findLock(rig.central).address)
            try await world.clock.sleep(for: Self.rotation * 3)
            let p = try await rig.central.connect(identity, timeout: .seconds(5))
            XCTAssertEqual(p.address.address.randomKind, .resolvablePrivate)
            let value = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: p)
            XCTAssertEqual(value, "encrypted")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// A central with privacy: the peripheral bonds with its identity, recognises its next RPA
    /// (the Long Term Key Request is answered from the bond) and keeps one bond.
    func testACentralWithPrivacyIsRecognisedByItsNewRPA() async throws {
        for controllerResolution in [false, true] {
            try await VirtualWorld.run { world in
                let rig = try await Self.rig(world, peripheralPrivacy: false, centralPrivacy: true, controllerResolution: controllerResolution)
                let events = await rig.manager.events
                let lock = try await Self.findLock(rig.central)
                _ = try await Self.bond(rig, at: lock.address)
                let bonds = try rig.peripheralStore.bonds()
                XCTAssertEqual(bonds.count, 1)
                let centralIdentity = try rig.centralStore.localIdentity()
                XCTAssertEqual(bonds.first?.peer, DeviceAddress(centralIdentity.address, type: .random), "the central's identity, not its RPA")

                try await world.clock.sleep(for: Self.rotation + .seconds(1))
                let p = try await rig.central.connect(lock.address, timeout: .seconds(5))
                let value = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: p)
                XCTAssertEqual(value, "encrypted")
                try await p.disconnect()
                var centrals: [DeviceAddress] = [], paired = 0
                for await e in events {
                    if case let .connected(c) = e { centrals.append(c.address) }
                    if case .paired = e { paired += 1 }
                    if centrals.count == 2 { break }
                }
                XCTAssertEqual(paired, 1, "recognised by its new address: no second pairing")
                XCTAssertEqual(try rig.peripheralStore.bonds().count, 1)
                if !controllerResolution {
                    XCTAssertEqual(centrals.count, 2)
                    XCTAssertNotEqual(centrals.first, centrals.last, "the central came back with a new RPA")
                    XCTAssertTrue(centrals.allSatisfy { $0.address.randomKind == .resolvablePrivate })
                }
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }

    /// A scan that runs for longer than the RPA's lifetime gets new addresses too: the scanner
    /// pauses for each (LE Set Random Address is refused while it scans) and goes on.
    func testALongScanWithPrivacyRenewsItsAddress() async throws {
        try await VirtualWorld.run { world in
            let device = await world.radio.addDevice()
            let central = try await Central.open(transport: device.transport, address: .resolvablePrivate(rotation: Self.rotation),
                                                 clock: world.clock, configuration: Self.configuration(store: InMemoryBondStore(), controllerResolution: false))
            // On the world's executor, so virtual time waits for it (an unstructured task does
            // not inherit the executor preference).
            let scan = Task(executorPreference: world.clock.taskExecutor) { for try await _ in central.scan(timeout: .seconds(200)) {} }
            var seen: [BDAddress] = []
            for _ in 0..<3 {
                try await world.clock.sleep(for: .seconds(5))
                let controller = await world.radio.controller(device.id)
                seen.append(try XCTUnwrap(controller?.randomAddress))
                XCTAssertEqual(controller?.isScanning, true, "still scanning")
                try await world.clock.sleep(for: Self.rotation - .seconds(5))
            }
            XCTAssertEqual(Set(seen).count, 3, "a new RPA each lifetime: \(seen)")
            XCTAssertTrue(seen.allSatisfy { $0.randomKind == .resolvablePrivate })
            scan.cancel()
            await central.close()
        }
    }
}

extension PrivacyWorldTests {
    /// Second review: a bond removed while the peripheral keeps advertising leaves the
    /// controller's resolving list at once, so that central's next connection is no longer
    /// reported by the identity it had (it comes as the RPA it uses).
    func testARemovedBondLeavesTheResolvingListWhileAdvertising() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, peripheralPrivacy: false, centralPrivacy: true, controllerResolution: true)
            let events = await rig.manager.events
            let lock = try await Self.findLock(rig.central)
            _ = try await Self.bond(rig, at: lock.address)
            let centralIdentity = try rig.centralStore.localIdentity()
            // Reconnect while bonded: the controller resolves the central's RPA to its identity.
            var p = try await rig.central.connect(lock.address, timeout: .seconds(5))
            try await p.disconnect()
            let removed = try await rig.manager.removeBond(DeviceAddress(centralIdentity.address, type: .random))
            XCTAssertTrue(removed)
            try await world.clock.sleep(for: .seconds(1))
            p = try await rig.central.connect(lock.address, timeout: .seconds(5))
            try await p.disconnect()
            var centrals: [DeviceAddress] = []
            for await e in events {
                if case let .connected(c) = e { centrals.append(c.address) }
                if centrals.count == 3 { break }
            }
            XCTAssertEqual(centrals[1], DeviceAddress(centralIdentity.address, type: .randomIdentity), "bonded: resolved by the controller")
            XCTAssertEqual(centrals[2].type, .random, "after removeBond: no longer resolved")
            XCTAssertEqual(centrals[2].address.randomKind, .resolvablePrivate)
            await rig.central.close()
            await rig.manager.close()
        }
    }
}

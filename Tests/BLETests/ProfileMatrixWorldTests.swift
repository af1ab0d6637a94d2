import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEVirtual
import BLEVirtualRadio
import BLEWire
import XCTest

/// Pairing, L2CAP credit-based channels and a GATT suite between two of our hosts on every
/// controller profile (`ProfilePair.matrix`: 4.0, 4.2, 5.0, default on both devices, and a 4.0
/// device facing a default one in either role), in virtual time. The per-profile tests at the
/// end check what must differ: what a 4.0 controller lacks is refused with a typed error or
/// done another way (L2CAP connection parameter requests, host address resolution), what 4.2
/// and 5.0 add is used.
final class ProfileMatrixWorldTests: XCTestCase {
    static let limit = Duration.seconds(120)

    static let suite = BluetoothUUID(0xFFE0)
    static let longRead = BluetoothUUID(0xFFE1)
    static let writable = BluetoothUUID(0xFFE2)
    static let notifying = BluetoothUUID(0xFFE3)
    static let indicating = BluetoothUUID(0xFFE4)

    /// 400 octets, each telling its place: more than 27 and more than 251.
    static let longValue: [UInt8] = (0..<400).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    struct Rig {
        let central: Central
        let centralDevice: VirtualDevice
        let manager: PeripheralManager
        let peripheralDevice: VirtualDevice
        let address: DeviceAddress
        let handles: GATTServiceHandles
        let suite: GATTServiceHandles
    }

    /// A peripheral on `pair.peripheral` with PairingWorldTests' service and the GATT suite's,
    /// advertising "Matrix", and a central on `pair.central`.
    static func rig(_ world: VirtualWorld, _ pair: ProfilePair, central: HostConfiguration = HostConfiguration(),
                    peripheral: HostConfiguration = HostConfiguration()) async throws -> Rig {
        let (manager, pDevice) = try await world.addPeripheralManager(name: "Matrix", configuration: peripheral, controller: pair.peripheralController)
        let handles = try await manager.add(GATTServiceDefinition(uuid: PairingWorldTests.service, characteristics: [
            GATTCharacteristicDefinition(uuid: PairingWorldTests.open, properties: [.read], permissions: [.read], value: Array("open".utf8)),
            GATTCharacteristicDefinition(uuid: PairingWorldTests.encrypted, properties: [.read], permissions: [.readEncrypted], value: Array("encrypted".utf8)),
            GATTCharacteristicDefinition(uuid: PairingWorldTests.authenticated, properties: [.read], permissions: [.readAuthenticated], value: Array("authenticated".utf8)),
        ]))
        let suite = try await manager.add(GATTServiceDefinition(uuid: Self.suite, characteristics: [
            GATTCharacteristicDefinition(uuid: longRead, properties: [.read], permissions: [.read], value: longValue, userDescription: "long"),
            GATTCharacteristicDefinition(uuid: writable, properties: [.read, .write], permissions: [.read, .write], value: [0]),
            GATTCharacteristicDefinition(uuid: notifying, properties: [.notify], permissions: [.read], value: [0]),
            GATTCharacteristicDefinition(uuid: indicating, properties: [.indicate], permissions: [.read], value: [0]),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Matrix").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, cDevice) = try await world.addCentral(configuration: central, controller: pair.centralController)
        return Rig(central: c, centralDevice: cDevice, manager: manager, peripheralDevice: pDevice,
                   address: DeviceAddress(pDevice.address, type: .public), handles: handles, suite: suite)
    }

    /// Connects the rig's central and returns both ends of the link.
    static func connect(_ rig: Rig) async throws -> (Peripheral, ConnectedCentral) {
        let events = await rig.manager.events
        let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
        for await e in events { if case let .connected(c) = e { return (p, c) } }
        throw BLEError.notConnected
    }

    /// Waits (in virtual time, at most a second) until `condition` holds.
    static func settle(_ world: VirtualWorld, _ condition: () async -> Bool) async throws {
        for _ in 0..<100 where !(await condition()) { try await world.clock.sleep(for: .milliseconds(10)) }
    }

    // MARK: - On every profile

    /// LE Secure Connections Just Works with bonding, then a reconnection that encrypts with the
    /// bond's key (no second pairing).
    func testJustWorksBondingAndReconnectionOnEveryProfile() async throws {
        await forEachPair { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let board = PasskeyBoard()
                let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
                let rig = try await Self.rig(world, pair,
                                             central: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: centralStore),
                                             peripheral: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: peripheralStore))
                let events = await rig.manager.events
                var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
                let result = try await p.pair()
                XCTAssertTrue(result.secureConnections, "\(pair)")
                XCTAssertEqual(result.method, .justWorks, "\(pair)")
                XCTAssertTrue(result.bonded, "\(pair)")
                let value = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: p)
                XCTAssertEqual(value, "encrypted", "\(pair)")
                let c = try centralStore.bonds(), r = try peripheralStore.bonds()
                XCTAssertEqual(c.count, 1, "\(pair)")
                XCTAssertEqual(c.first?.peerLongTermKey, r.first?.localLongTermKey, "\(pair)")
                let encryptedOnAir = await world.controllerConnections(of: rig.centralDevice).values.map(\.encrypted)
                XCTAssertEqual(encryptedOnAir, [true], "\(pair): the controllers encrypt the link")
                try await p.disconnect()

                p = try await rig.central.connect(rig.address, timeout: .seconds(5))
                let again = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: p)
                XCTAssertEqual(again, "encrypted", "\(pair)")
                let level = await p.securityLevel
                XCTAssertEqual(level, .encrypted, "\(pair)")
                try await p.disconnect()
                let paired = await PairingWorldTests.pairings(in: events, untilDisconnects: 2)
                XCTAssertEqual(paired, 1, "\(pair): the reconnection encrypted with the bond, without pairing")
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }

    /// LE Secure Connections Passkey Entry with bonding (the peripheral displays, the central's
    /// user types), an authenticated read, and a reconnection that reads it with the bond's key.
    func testPasskeyPairingAndReconnectionOnEveryProfile() async throws {
        await forEachPair { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let board = PasskeyBoard()
                let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
                let rig = try await Self.rig(world, pair,
                                             central: PairingWorldTests.security(io: .keyboardOnly, agent: BoardAgent(board: board), store: centralStore, mitm: true),
                                             peripheral: PairingWorldTests.security(io: .displayOnly, agent: BoardAgent(board: board), store: peripheralStore))
                let events = await rig.manager.events
                var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
                let result = try await p.pair()
                XCTAssertEqual(result.method, .passkeyEntry, "\(pair)")
                XCTAssertEqual(result.securityLevel, .secureConnections, "\(pair)")
                XCTAssertTrue(result.bonded, "\(pair)")
                let value = try await PairingWorldTests.read(PairingWorldTests.authenticated, on: p)
                XCTAssertEqual(value, "authenticated", "\(pair)")
                try await p.disconnect()

                p = try await rig.central.connect(rig.address, timeout: .seconds(5))
                let again = try await PairingWorldTests.read(PairingWorldTests.authenticated, on: p)
                XCTAssertEqual(again, "authenticated", "\(pair): the bond's authenticated key")
                try await p.disconnect()
                let paired = await PairingWorldTests.pairings(in: events, untilDisconnects: 2)
                XCTAssertEqual(paired, 1, "\(pair)")
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }

    /// An LE credit-based channel: opened by the central, SDUs of 1, 300 and 5000 octets each
    /// way byte for byte, closed by the central (the peripheral's sequence ends).
    func testL2CAPChannelOnEveryProfile() async throws {
        let sdus = [[0x42], L2CAPWorldTests.pattern(300, seed: 1), L2CAPWorldTests.pattern(5000, seed: 9)]
        await forEachPair { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let rig = try await Self.rig(world, pair)
                let parameters = CreditBasedChannelParameters(mtu: 8192, mps: 247, initialCredits: 8)
                let listener = try await rig.manager.listenL2CAP(psm: L2CAPWorldTests.psm, parameters: parameters)
                let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
                let channel = try await p.openL2CAPChannel(psm: L2CAPWorldTests.psm, parameters: parameters)
                var incoming = listener.makeAsyncIterator()
                let served = try await XCTUnwrapAsync(await incoming.next())
                XCTAssertEqual(served.info.remoteCID, channel.info.localCID, "\(pair)")

                let sender = Task(executorPreference: world.clock.taskExecutor) { for s in sdus { try await channel.send(s) } }
                var received: [[UInt8]] = []
                for try await sdu in served {
                    received.append(sdu)
                    if received.count == sdus.count { break }
                }
                try await sender.value
                XCTAssertEqual(received, sdus, "\(pair): central → peripheral")

                let back = Task(executorPreference: world.clock.taskExecutor) { for s in sdus.reversed() { try await served.send(s) } }
                var returned: [[UInt8]] = []
                for try await sdu in channel {
                    returned.append(sdu)
                    if returned.count == sdus.count { break }
                }
                try await back.value
                XCTAssertEqual(returned, sdus.reversed(), "\(pair): peripheral → central")

                await channel.close()
                var after: [[UInt8]] = []
                for try await sdu in served { after.append(sdu) }
                XCTAssertEqual(after, [], "\(pair): the close ends the peer's sequence")
                do {
                    try await channel.send([1])
                    XCTFail("\(pair): a closed channel sends nothing")
                } catch BLEError.l2cap(.closed) {}
                try await p.disconnect()
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }

    /// Discovery of the whole database (services, characteristics, descriptors, matching the
    /// server's handles), reads of a 400-octet value, writes of 100 and 400 octets, five
    /// notifications and three confirmed indications.
    func testGATTSuiteOnEveryProfile() async throws {
        await forEachPair { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let rig = try await Self.rig(world, pair)
                let managerEvents = await rig.manager.events
                let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
                let mtu = try await p.exchangeMTU()
                XCTAssertGreaterThan(mtu, 243, "\(pair): notifications may be longer than one LL payload")

                // The whole database.
                let services = try await p.discoverServices()
                XCTAssertEqual(services.map(\.uuid), [BluetoothUUID(0x1800), BluetoothUUID(0x1801), PairingWorldTests.service, Self.suite], "\(pair)")
                var characteristics: [BluetoothUUID: GATTCharacteristic] = [:]
                var descriptorCount = 0
                for service in services {
                    for c in try await p.discoverCharacteristics(for: service) {
                        characteristics[c.uuid] = c
                        descriptorCount += try await p.discoverDescriptors(for: c).count
                    }
                }
                for expected in rig.handles.characteristics + rig.suite.characteristics {
                    XCTAssertEqual(characteristics[expected.uuid]?.valueHandle, expected.valueHandle, "\(pair): \(expected.uuid)")
                }
                let longC = try XCTUnwrap(characteristics[Self.longRead])
                let descriptors = try await p.discoverDescriptors(for: longC)
                XCTAssertEqual(descriptors.map(\.uuid), [BluetoothUUID(0x2901)], "\(pair)")
                let userDescription = try await p.readValue(for: descriptors[0])
                XCTAssertEqual(userDescription, Array("long".utf8), "\(pair)")
                XCTAssertGreaterThanOrEqual(descriptorCount, 4, "\(pair): CCCDs, user description")

                // Long reads and writes.
                let read = try await p.readValue(for: longC)
                XCTAssertEqual(read, Self.longValue, "\(pair): a 400-octet read")
                let writableC = try XCTUnwrap(characteristics[Self.writable])
                for length in [100, 400] {
                    let value = (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ length) }
                    try await p.writeValue(value, for: writableC)
                    let stored = await rig.manager.value(forHandle: writableC.valueHandle)
                    XCTAssertEqual(stored, value, "\(pair): a \(length)-octet write")
                    let back = try await p.readValue(for: writableC)
                    XCTAssertEqual(back, value, "\(pair): read back \(length) octets")
                }

                // Notifications, sized up to the link's ATT_MTU.
                let notifyC = try XCTUnwrap(characteristics[Self.notifying])
                let notifications = await p.notifications(for: notifyC)
                try await p.setNotifyValue(true, for: notifyC)
                let size = min(200, p.mtu - 3)
                let sent = (0..<5).map { i in (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
                for value in sent { try await rig.manager.updateValueWaiting(value, forHandle: notifyC.valueHandle) }
                var got: [[UInt8]] = []
                for await value in notifications {
                    got.append(value)
                    if got.count == sent.count { break }
                }
                XCTAssertEqual(got, sent, "\(pair): notifications of \(size) octets")

                // Indications, each confirmed.
                let indicateC = try XCTUnwrap(characteristics[Self.indicating])
                let indications = await p.notifications(for: indicateC)
                try await p.setNotifyValue(true, for: indicateC)
                let indicated: [[UInt8]] = [[1], Array(repeating: 2, count: 240), [3, 3, 3]]
                for value in indicated { try await rig.manager.updateValueWaiting(value, forHandle: indicateC.valueHandle) }
                var gotIndications: [[UInt8]] = []
                for await value in indications {
                    gotIndications.append(value)
                    if gotIndications.count == indicated.count { break }
                }
                XCTAssertEqual(gotIndications, indicated, "\(pair)")
                var confirmed = 0
                for await e in managerEvents {
                    if case let .indicationConfirmed(_, handle) = e, handle == indicateC.valueHandle { confirmed += 1 }
                    if confirmed == indicated.count { break }
                }
                XCTAssertEqual(confirmed, indicated.count, "\(pair): every indication confirmed")
                try await p.disconnect()
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }
}

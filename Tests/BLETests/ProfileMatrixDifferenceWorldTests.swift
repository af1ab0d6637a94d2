import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEVirtual
import BLEVirtualRadio
import BLEWire
import BLERuntime
import Synchronization
import XCTest

/// What must differ between the controller profiles, asserted rather than tolerated: a 4.0
/// controller's missing Data Length Extension, LE 2M, extended advertising, LL privacy,
/// Connection Parameters Request procedure and third link; 4.2's Data Length Extension and
/// controller privacy; 5.0's LE 2M, two 251-octet advertising sets and missing PAST; and the
/// default controller with all of it. In virtual time, each world bounded.
final class ProfileMatrixDifferenceWorldTests: XCTestCase {
    static let limit = Duration.seconds(120)
    typealias Matrix = ProfileMatrixWorldTests

    /// The error `body` throws, nil (and a test failure) when it returns.
    static func error(_ what: String, file: StaticString = #filePath, line: UInt = #line,
                      _ body: () async throws -> Void) async -> (any Error)? {
        do {
            try await body()
            XCTFail("\(what) did not throw", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    static func isUnsupported(_ error: (any Error)?) -> Bool {
        if case BLEError.unsupported? = error as? BLEError { return true }
        return false
    }

    static func isInvalidArgument(_ error: (any Error)?) -> Bool {
        if case BLEError.invalidArgument? = error as? BLEError { return true }
        return false
    }

    /// 32 octets of advertising data: one more than a legacy PDU holds.
    static let tooLongForLegacy = AdvertisingData(structures: [
        AdvertisingData.Structure(type: .manufacturerSpecificData, data: [0xFF, 0xFF] + [UInt8](repeating: 0xA5, count: 28)),
    ])

    /// `count` manufacturer-data structures of 200 octets each.
    static func longData(_ count: Int, seed: UInt8 = 0) -> AdvertisingData {
        ExtendedAdvertisingWorldTests.longData(count, seed: seed)
    }

    // MARK: - 4.0

    func testA40ControllerHasNoDataLengthExtensionNo2MAndLegacyAdvertisingOnly() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let rig = try await Matrix.rig(world, .both(.bluetooth40))
            let info = rig.central.controllerInfo
            XCTAssertEqual(info.aclBufferLength, 27)
            XCTAssertFalse(info.supportsDataLengthExtension)
            XCTAssertEqual(info.linkDataLengthLimit, 27)
            XCTAssertFalse(info.resolvesAddressesInController)
            XCTAssertFalse(info.supportsExtendedAdvertisingCommands)
            XCTAssertFalse(info.usesExtendedCommands(.extendedWhenSupported), "legacy commands only")
            XCTAssertEqual(info.supportedPHYs, .le1M)
            XCTAssertFalse(info.supportsPHYUpdate)
            XCTAssertFalse(info.supportsConnectionParametersRequest)
            XCTAssertNil(info.resolvingListSize, "no LE Read Resolving List Size (4.2) to ask")
            let capacity = await rig.manager.advertisingSetCapacity
            XCTAssertNil(capacity, "no advertising sets")

            let (p, c) = try await Matrix.connect(rig)
            let central = await Self.error("setDataLength on 4.0") { try await p.setDataLength(251) }
            XCTAssertTrue(Self.isUnsupported(central), "\(String(describing: central))")
            let peripheral = await Self.error("setDataLength on 4.0 (peripheral)") { try await rig.manager.setDataLength(251, for: c) }
            XCTAssertTrue(Self.isUnsupported(peripheral), "\(String(describing: peripheral))")
            let phy = await Self.error("setPHY on 4.0") { try await p.setPHY(.le2M) }
            XCTAssertTrue(Self.isUnsupported(phy), "\(String(describing: phy))")
            try await world.clock.sleep(for: .seconds(1))
            XCTAssertEqual(p.dataLength.tx, 27)
            XCTAssertEqual(p.dataLength.rx, 27)
            XCTAssertEqual(p.phy, .le1M)
            for device in [rig.centralDevice, rig.peripheralDevice] {
                let octets = await world.controllerConnections(of: device).values.map(\.maxTxOctets)
                XCTAssertEqual(octets, [27], "the Link Layer's payload stays 27")
            }
            // Everything still fits: a 400-octet value over 27-octet LL payloads and buffers.
            let services = try await p.discoverServices([Matrix.suite])
            let chars = try await p.discoverCharacteristics([Matrix.longRead], for: try XCTUnwrap(services.first))
            let value = try await p.readValue(for: try XCTUnwrap(chars.first))
            XCTAssertEqual(value, Matrix.longValue)

            // More than 31 octets of advertising data is refused; so is any advertising set.
            let long = await Self.error("32 octets of legacy advertising data") { try await rig.manager.startAdvertising(Self.tooLongForLegacy) }
            XCTAssertTrue(Self.isInvalidArgument(long), "\(String(describing: long))")
            let set = await Self.error("an advertising set on 4.0") { _ = try await rig.manager.startAdvertisingSet(Self.longData(1)) }
            XCTAssertTrue(Self.isUnsupported(set), "\(String(describing: set))")
            let coded = await Self.error("a coded scan on 4.0") { for try await _ in rig.central.scan(timeout: .seconds(1), phys: .leCoded) {} }
            XCTAssertTrue(Self.isUnsupported(coded), "\(String(describing: coded))")
            try await p.disconnect()
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// A 4.0 device facing a default one: the default end may ask for 251 octets, but the
    /// 4.0 Link Layer has no Data Length Update procedure, so the link stays at 27.
    func testALinkWithA40EndStaysAt27Octets() async throws {
        await forEachPair([ProfilePair(central: .bluetooth40, peripheral: .current), ProfilePair(central: .current, peripheral: .bluetooth40)]) { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let rig = try await Matrix.rig(world, pair)
                let (p, c) = try await Matrix.connect(rig)
                if pair.central == .current {
                    try await p.setDataLength(251)
                } else {
                    try await rig.manager.setDataLength(251, for: c)
                }
                try await world.clock.sleep(for: .seconds(1))
                XCTAssertEqual(p.dataLength.tx, 27, "\(pair)")
                XCTAssertEqual(p.dataLength.rx, 27, "\(pair)")
                let fourOh = pair.central == .bluetooth40 ? rig.centralDevice : rig.peripheralDevice
                let octets = await world.controllerConnections(of: fourOh).values.map(\.maxTxOctets)
                XCTAssertEqual(octets, [27], "\(pair)")
                let services = try await p.discoverServices([Matrix.suite])
                let chars = try await p.discoverCharacteristics([Matrix.longRead], for: try XCTUnwrap(services.first))
                let value = try await p.readValue(for: try XCTUnwrap(chars.first))
                XCTAssertEqual(value, Matrix.longValue, "\(pair)")
                try await p.disconnect()
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }

    /// A 4.0 central holds two links: a third connection is refused with a typed error, the two
    /// links keep serving, and once one ends the third device connects.
    func testA40CentralRefusesAThirdLinkAndKeepsServing() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            var managers: [PeripheralManager] = []
            var addresses: [DeviceAddress] = []
            for name in ["One", "Two", "Three"] {
                let (m, d) = try await world.addPeripheralManager(name: name, controller: VirtualControllerProfile.bluetooth40.configuration)
                _ = try await m.add(GATTServiceDefinition(uuid: PairingWorldTests.service, characteristics: [
                    GATTCharacteristicDefinition(uuid: PairingWorldTests.open, properties: [.read], permissions: [.read], value: Array(name.utf8)),
                ]))
                try await m.startAdvertising(AdvertisingData.Builder().localName(name).build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
                managers.append(m)
                addresses.append(DeviceAddress(d.address, type: .public))
            }
            let (central, centralDevice) = try await world.addCentral(controller: VirtualControllerProfile.bluetooth40.configuration)
            let one = try await central.connect(addresses[0], timeout: .seconds(5))
            let two = try await central.connect(addresses[1], timeout: .seconds(5))
            let third = await Self.error("a third link on 4.0") { _ = try await central.connect(addresses[2], timeout: .seconds(5)) }
            guard case BLEError.hci(.commandFailed(opcode: .leCreateConnection, status: .connectionLimitExceeded))? = third as? BLEError else {
                return XCTFail("expected LE Create Connection refused with Connection Limit Exceeded, got \(String(describing: third))")
            }
            let links = await world.controllerConnections(of: centralDevice).count
            XCTAssertEqual(links, 2)
            let first = try await PairingWorldTests.read(PairingWorldTests.open, on: one)
            let second = try await PairingWorldTests.read(PairingWorldTests.open, on: two)
            XCTAssertEqual([first, second], ["One", "Two"], "both links still serve")
            try await one.disconnect()
            let three = try await central.connect(addresses[2], timeout: .seconds(5))
            let value = try await PairingWorldTests.read(PairingWorldTests.open, on: three)
            XCTAssertEqual(value, "Three")
            try await two.disconnect()
            try await three.disconnect()
            await central.close()
            for m in managers { await m.close() }
        }
    }

    /// A 4.0 peripheral holds two links: a third central cannot connect, the two keep being served.
    func testA40PeripheralServesTwoCentralsAndNoThird() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let rig = try await Matrix.rig(world, .both(.bluetooth40))
            let (other, _) = try await world.addCentral(controller: VirtualControllerProfile.bluetooth40.configuration)
            let (third, _) = try await world.addCentral()
            let a = try await rig.central.connect(rig.address, timeout: .seconds(5))
            try await rig.manager.startAdvertising(AdvertisingData.Builder().localName("Matrix").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let b = try await other.connect(rig.address, timeout: .seconds(5))
            await rig.manager.waitForConnectedCentrals(2)
            let links = await world.controllerConnections(of: rig.peripheralDevice).count
            XCTAssertEqual(links, 2)
            let refused = await Self.error("a third central on a 4.0 peripheral") { _ = try await third.connect(rig.address, timeout: .seconds(2)) }
            guard case BLEError.timeout? = refused as? BLEError else {
                return XCTFail("expected the third central's connect to time out (the 4.0 advertiser takes no third CONNECT_IND), got \(String(describing: refused))")
            }
            let stillTwo = await rig.manager.connectedCentrals.count
            XCTAssertEqual(stillTwo, 2)
            for p in [a, b] {
                let value = try await PairingWorldTests.read(PairingWorldTests.open, on: p)
                XCTAssertEqual(value, "open", "both links still served")
            }
            try await a.disconnect()
            try await b.disconnect()
            await rig.central.close()
            await other.close()
            await third.close()
            await rig.manager.close()
        }
    }

    // MARK: - Connection parameters over L2CAP

    /// A peripheral whose own Link Layer lacks the Connection Parameters Request procedure (4.0),
    /// or whose central's does (the central's Link Layer answers Unsupported Remote Feature,
    /// 0x1A), asks over L2CAP (Vol 3 Part A §4.20): the central's host accepts, runs LE
    /// Connection Update, and the peripheral's call returns the new parameters.
    func testAConnectionParameterRequestGoesOverL2CAPWhereTheProcedureIsMissing() async throws {
        let pairs = [ProfilePair(central: .current, peripheral: .bluetooth40), .both(.bluetooth40),
                     ProfilePair(central: .bluetooth40, peripheral: .bluetooth42), ProfilePair(central: .bluetooth40, peripheral: .bluetooth50),
                     .both(.bluetooth42)]
        await forEachPair(pairs) { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let pDevice = await world.radio.addDevice(configuration: pair.peripheralController)
                let pTap = HCITap(wrapping: pDevice.transport, executor: world.clock.taskExecutor)
                let manager = try await PeripheralManager.open(transport: pTap, name: "Timing", clock: world.clock)
                try await manager.startAdvertising(AdvertisingData.Builder().localName("Timing").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
                let cDevice = await world.radio.addDevice(configuration: pair.centralController)
                let cTap = HCITap(wrapping: cDevice.transport, executor: world.clock.taskExecutor)
                let central = try await Central.open(transport: cTap, clock: world.clock)
                let events = await manager.events
                let p = try await central.connect(DeviceAddress(pDevice.address, type: .public), timeout: .seconds(5))
                var connected: ConnectedCentral?
                for await e in events { if case let .connected(c) = e { connected = c; break } }
                let c = try XCTUnwrap(connected)
                XCTAssertEqual(central.controllerInfo.supportsConnectionParametersRequest, pair.central != .bluetooth40, "\(pair)")

                let before = p.connectionParameters
                let applied = try await manager.requestConnectionParameters(intervalMin: 60, intervalMax: 80, latency: 2, supervisionTimeout: 600, for: c)
                XCTAssertTrue((60...80).contains(applied.interval), "\(pair): \(applied)")
                XCTAssertEqual(applied.latency, 2, "\(pair)")
                XCTAssertEqual(applied.supervisionTimeout, 600, "\(pair)")
                XCTAssertNotEqual(applied.interval, before.interval, "\(pair)")
                try await Matrix.settle(world) { p.connectionParameters.interval == applied.interval }
                XCTAssertEqual(p.connectionParameters.interval, applied.interval, "\(pair): the central's link has them too")
                for device in [cDevice, pDevice] {
                    let intervals = await world.controllerConnections(of: device).values.map(\.interval)
                    XCTAssertEqual(intervals, [applied.interval], "\(pair): the Link Layer runs them")
                }

                // How it went, from both hosts' HCI traffic. The central's L2CAP response reaches
                // the peripheral's host only after its LE Connection Update Complete (see the
                // report); wait for it.
                try await world.clock.sleep(for: .seconds(2))
                let overL2CAP = pair.peripheral == .bluetooth40 || pair.central == .bluetooth40
                let peripheralUpdates = pTap.sentCommands(0x2013)
                let peripheralCompletions = pTap.connectionUpdateCompletions()
                if pair.peripheral == .bluetooth40 {
                    XCTAssertEqual(peripheralUpdates, 0, "\(pair): a 4.0 peripheral does not try the Link Layer procedure")
                    XCTAssertEqual(peripheralCompletions, [.success], "\(pair)")
                } else if pair.central == .bluetooth40 {
                    XCTAssertEqual(peripheralUpdates, 1, "\(pair): the Link Layer procedure first")
                    XCTAssertEqual(peripheralCompletions, [.unsupportedRemoteFeature, .success], "\(pair): 0x1A, then the update the central ran")
                } else {
                    XCTAssertEqual(peripheralUpdates, 1, "\(pair)")
                    XCTAssertEqual(peripheralCompletions, [.success], "\(pair)")
                }
                XCTAssertEqual(pTap.signals(sent: true, code: 0x12), overL2CAP ? 1 : 0, "\(pair): L2CAP Connection Parameter Update Request sent")
                XCTAssertEqual(pTap.signals(sent: false, code: 0x13), overL2CAP ? 1 : 0, "\(pair): and its response")
                XCTAssertEqual(cTap.signals(sent: false, code: 0x12), overL2CAP ? 1 : 0, "\(pair): the central got the request")
                XCTAssertEqual(cTap.sentCommands(0x2013), overL2CAP ? 1 : 0, "\(pair): and ran LE Connection Update")

                // The link still serves, and a second request goes the same way.
                let again = try await manager.requestConnectionParameters(intervalMin: 24, intervalMax: 24, latency: 0, supervisionTimeout: 400, for: c)
                XCTAssertEqual(again.interval, 24, "\(pair)")
                try await p.disconnect()
                await central.close()
                await manager.close()
            }
        }
    }

    // MARK: - Privacy

    struct PrivacyRig {
        let central: Central
        let centralDevice: VirtualDevice
        let manager: PeripheralManager
        let centralStore: InMemoryBondStore
        let peripheralStore: InMemoryBondStore
    }

    /// PrivacyWorldTests' rig on `pair`'s controllers: the peripheral with privacy on (RPAs
    /// renewed every minute), the central asking for controller address resolution.
    static func privacyRig(_ world: VirtualWorld, _ pair: ProfilePair) async throws -> PrivacyRig {
        let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
        let pDevice = await world.radio.addDevice(configuration: pair.peripheralController)
        let manager = try await PeripheralManager.open(
            transport: pDevice.transport, name: "Lock", address: .resolvablePrivate(rotation: PrivacyWorldTests.rotation),
            clock: world.clock, configuration: PrivacyWorldTests.configuration(store: peripheralStore, controllerResolution: true))
        _ = try await manager.add(GATTServiceDefinition(uuid: PairingWorldTests.service, characteristics: [
            GATTCharacteristicDefinition(uuid: PairingWorldTests.encrypted, properties: [.read], permissions: [.readEncrypted], value: Array("encrypted".utf8)),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let cDevice = await world.radio.addDevice(configuration: pair.centralController)
        let central = try await Central.open(transport: cDevice.transport, address: .public, clock: world.clock,
                                             configuration: PrivacyWorldTests.configuration(store: centralStore, controllerResolution: true))
        return PrivacyRig(central: central, centralDevice: cDevice, manager: manager, centralStore: centralStore, peripheralStore: peripheralStore)
    }

    /// A bonded peripheral with privacy renews its RPA; the central finds it by its identity
    /// and reconnects with the bond's key. On 4.0 the host resolves (the controller has no
    /// resolving list), and on 4.2 too (a resolving list, but no LE Set Privacy Mode: network
    /// privacy mode would hide peers that advertise with their identity); on 5.0 the controller
    /// resolves and reports the identity.
    func testABondedPeripheralWithPrivacyIsRecognisedByTheHostOn4xAndByTheControllerOn50() async throws {
        await forEachPair([.both(.bluetooth40), .both(.bluetooth42), .both(.bluetooth50)]) { pair in
            try await VirtualWorld.run(limit: Self.limit) { world in
                let rig = try await Self.privacyRig(world, pair)
                let inController = pair.central == .bluetooth50
                XCTAssertEqual(rig.central.controllerInfo.resolvesAddressesInController, inController, "\(pair)")
                let events = await rig.manager.events
                let first = try await rig.central.find(filter: ScanFilter(nameContains: "Lock"), timeout: .seconds(5))
                XCTAssertEqual(first.address.address.randomKind, .resolvablePrivate, "\(pair)")
                let p = try await rig.central.connect(first.address, timeout: .seconds(5))
                let result = try await p.pair()
                XCTAssertTrue(result.bonded, "\(pair)")
                let identity = try XCTUnwrap(result.peerIdentity)
                try await p.disconnect()

                try await world.clock.sleep(for: PrivacyWorldTests.rotation + .seconds(1))
                let again = try await rig.central.find(filter: ScanFilter(nameContains: "Lock"), timeout: .seconds(5))
                XCTAssertEqual(again.identity, identity, "\(pair): shown with its identity")
                let listed = await world.radio.controller(rig.centralDevice.id)?.resolvingList.count
                if inController {
                    XCTAssertEqual(again.address, DeviceAddress(identity.address, type: .randomIdentity), "\(pair): the controller resolved it")
                    XCTAssertEqual(listed, 1, "\(pair)")
                } else {
                    XCTAssertEqual(again.address.address.randomKind, .resolvablePrivate, "\(pair): reported as heard, resolved by the host")
                    XCTAssertNotEqual(again.address, first.address, "\(pair): a renewed RPA")
                    XCTAssertEqual(listed, 0, "\(pair): nothing in the controller")
                }
                await rig.central.stopScan()
                let back = try await rig.central.connect(identity, timeout: .seconds(5))
                let value = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: back)
                XCTAssertEqual(value, "encrypted", "\(pair)")
                try await back.disconnect()
                let paired = await PairingWorldTests.pairings(in: events, untilDisconnects: 2)
                XCTAssertEqual(paired, 1, "\(pair): the reconnection encrypted with the bond")
                await rig.central.close()
                await rig.manager.close()
            }
        }
    }

    // MARK: - 4.2

    func testA42ControllerUsesDataLengthExtensionAndLegacyAdvertising() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let rig = try await Matrix.rig(world, .both(.bluetooth42))
            let info = rig.central.controllerInfo
            XCTAssertEqual(info.aclBufferLength, 251)
            XCTAssertTrue(info.supportsDataLengthExtension)
            XCTAssertEqual(info.linkDataLengthLimit, 251)
            XCTAssertFalse(info.resolvesAddressesInController, "LL Privacy without LE Set Privacy Mode: the host resolves")
            XCTAssertFalse(info.usesExtendedCommands(.extendedWhenSupported), "legacy advertising")
            XCTAssertEqual(info.supportedPHYs, .le1M)
            XCTAssertTrue(info.supportsConnectionParametersRequest)
            let capacity = await rig.manager.advertisingSetCapacity
            XCTAssertNil(capacity)

            let (p, c) = try await Matrix.connect(rig)
            try await p.setDataLength(251)
            try await Matrix.settle(world) { p.dataLength.tx == 251 }
            XCTAssertEqual(p.dataLength.tx, 251, "LE Data Length Change came")
            XCTAssertEqual(p.dataLength.rx, 27, "the peripheral has not asked for more yet")
            try await rig.manager.setDataLength(251, for: c)
            try await Matrix.settle(world) { p.dataLength.rx == 251 }
            XCTAssertEqual(p.dataLength.rx, 251, "both ways once the peripheral asked too")
            for device in [rig.centralDevice, rig.peripheralDevice] {
                let octets = await world.controllerConnections(of: device).values.map(\.maxTxOctets)
                XCTAssertEqual(octets, [251])
            }
            let phy = await Self.error("setPHY on 4.2") { try await p.setPHY(.le2M) }
            XCTAssertTrue(Self.isUnsupported(phy), "\(String(describing: phy))")
            let long = await Self.error("32 octets of legacy advertising data") { try await rig.manager.startAdvertising(Self.tooLongForLegacy) }
            XCTAssertTrue(Self.isInvalidArgument(long), "\(String(describing: long))")
            let set = await Self.error("an advertising set on 4.2") { _ = try await rig.manager.startAdvertisingSet(Self.longData(1)) }
            XCTAssertTrue(Self.isUnsupported(set), "\(String(describing: set))")
            try await p.disconnect()
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// A 4.2 central bonded with a peripheral that does not use privacy (it advertises with its
    /// public identity address, having distributed its IRK as every bond does).
    func testA42CentralReconnectsToABondedPeerWithoutPrivacy() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let board = PasskeyBoard()
            let rig = try await Matrix.rig(world, .both(.bluetooth42),
                                           central: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()),
                                           peripheral: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            XCTAssertFalse(rig.central.controllerInfo.lists(.leSetPrivacyMode), "LE Set Privacy Mode is 5.0")
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let result = try await p.pair()
            XCTAssertEqual(result.peerIdentity, rig.address)
            XCTAssertTrue(result.keysReceived.contains(.identityKey))
            try await p.disconnect()

            // The peripheral advertises with its identity: a central without the bond hears it.
            let (fresh, _) = try await world.addCentral(controller: VirtualControllerProfile.bluetooth42.configuration)
            let heard = try await fresh.find(filter: ScanFilter(nameContains: "Matrix"), timeout: .seconds(5))
            XCTAssertEqual(heard.address, rig.address)
            await fresh.close()
            // Without LE Set Privacy Mode the host keeps the controller's resolving list empty:
            // in network privacy mode (the only one a 4.2 controller has, Vol 6 Part B §4.7) the
            // entry would hide the peer's identity-address advertisements. The host resolves.
            let entries = await world.radio.controller(rig.centralDevice.id)?.resolvingList ?? []
            XCTAssertEqual(entries.map(\.identity), [])
            let again = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let value = try await PairingWorldTests.read(PairingWorldTests.encrypted, on: again)
            XCTAssertEqual(value, "encrypted", "reconnected by its identity, encrypted with the bond")
            try await again.disconnect()
            await rig.central.close()
            await rig.manager.close()
        }
    }

    // MARK: - 5.0

    func testA50ControllerUses2MAndDataLengthExtension() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let rig = try await Matrix.rig(world, .both(.bluetooth50))
            let info = rig.central.controllerInfo
            XCTAssertTrue(info.usesExtendedCommands(.extendedWhenSupported))
            XCTAssertEqual(info.supportedPHYs, [.le1M, .le2M, .leCoded])
            XCTAssertEqual(info.aclBufferLength, 251, "from LE Read Buffer Size v1")
            XCTAssertNil(info.isoBuffers)
            XCTAssertEqual(info.advertisingSets, 2)
            XCTAssertEqual(info.maximumAdvertisingDataLength, 251)
            XCTAssertFalse(info.lists(.leReadBufferSizeV2), "LE Read Buffer Size v2 is 5.2")
            XCTAssertFalse(info.lists(.lePeriodicAdvertisingSyncTransfer), "PAST is 5.1")
            XCTAssertTrue(info.resolvesAddressesInController)

            let (p, _) = try await Matrix.connect(rig)
            try await p.setPHY(.le2M)
            try await Matrix.settle(world) { p.phy == .le2M }
            XCTAssertEqual(p.phy, .le2M)
            for device in [rig.centralDevice, rig.peripheralDevice] {
                let phys = await world.controllerConnections(of: device).values.map(\.phy)
                XCTAssertEqual(phys, [.le2M])
            }
            try await p.setDataLength(251)
            try await Matrix.settle(world) { p.dataLength.tx == 251 }
            XCTAssertEqual(p.dataLength.tx, 251)
            let services = try await p.discoverServices([Matrix.suite])
            let chars = try await p.discoverCharacteristics([Matrix.longRead], for: try XCTUnwrap(services.first))
            let value = try await p.readValue(for: try XCTUnwrap(chars.first))
            XCTAssertEqual(value, Matrix.longValue, "on LE 2M")
            try await p.disconnect()
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// Two advertising sets of up to 251 octets: a 400-octet set and a third set are refused
    /// with typed errors; a 5.0 scan hears both sets whole.
    func testA50ControllerRunsTwoExtendedSetsOf251Octets() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, _) = try await world.addPeripheralManager(controller: VirtualControllerProfile.bluetooth50.configuration)
            let capacity = await manager.advertisingSetCapacity
            XCTAssertEqual(capacity?.sets, 2)
            XCTAssertEqual(capacity?.maximumDataLength, 251)
            let a = ExtendedAdvertisingWorldTests.staticRandom(0x0A), b = ExtendedAdvertisingWorldTests.staticRandom(0x0B)
            _ = try await manager.startAdvertisingSet(Self.longData(1), parameters: AdvertisingSetParameters(sid: 1, address: .random(a)))
            let tooLong = await Self.error("400 octets on a 251-octet controller") {
                _ = try await manager.startAdvertisingSet(Self.longData(2), parameters: AdvertisingSetParameters(sid: 3))
            }
            XCTAssertTrue(Self.isInvalidArgument(tooLong), "\(String(describing: tooLong))")
            _ = try await manager.startAdvertisingSet(Self.longData(1, seed: 4), parameters: AdvertisingSetParameters(sid: 2, address: .random(b)))
            let third = await Self.error("a third set on 5.0") {
                _ = try await manager.startAdvertisingSet(Self.longData(1), parameters: AdvertisingSetParameters(sid: 4))
            }
            XCTAssertTrue(Self.isUnsupported(third), "\(String(describing: third))")

            let (central, _) = try await world.addCentral(controller: VirtualControllerProfile.bluetooth50.configuration)
            let seen = try await ExtendedAdvertisingWorldTests.devices(central, phys: .le1M, timeout: .seconds(1))
            XCTAssertEqual(seen[DeviceAddress(a, type: .random)]?.advertisement.structures, Self.longData(1).structures)
            XCTAssertEqual(seen[DeviceAddress(b, type: .random)]?.advertisement.structures, Self.longData(1, seed: 4).structures)
            XCTAssertEqual(seen[DeviceAddress(b, type: .random)]?.extended?.advertisingSID, 2)
            await central.close()
            await manager.close()
        }
    }

    /// Periodic advertising runs on 5.0, but handing its sync over a link (PAST, 5.1) is refused
    /// with a typed error on either side.
    func testA50ControllerRefusesPeriodicAdvertisingSyncTransfer() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager(controller: VirtualControllerProfile.bluetooth50.configuration)
            let connected = Task(executorPreference: world.clock.taskExecutor) { () -> ConnectedCentral? in
                for await event in await manager.events { if case let .connected(c) = event { return c } }
                return nil
            }
            let set = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("train").build(),
                                                             parameters: AdvertisingSetParameters(sid: 7),
                                                             periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), Self.longData(1)))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("connect").build())
            let (central, _) = try await world.addCentral(controller: VirtualControllerProfile.bluetooth50.configuration)
            let receiving = await Self.error("receiving PAST on 5.0") { _ = try await central.periodicSyncTransfers() }
            XCTAssertTrue(Self.isUnsupported(receiving), "\(String(describing: receiving))")
            let link = try await central.connect(DeviceAddress(peripheral.address, type: .public), timeout: .seconds(5))
            let connectedCentral = await connected.value
            let peer = try XCTUnwrap(connectedCentral)
            let sending = await Self.error("Set Info Transfer on 5.0") { try await manager.transferAdvertisingSet(set, to: peer, serviceData: 7) }
            XCTAssertTrue(Self.isUnsupported(sending), "\(String(describing: sending))")
            // The central can still sync to the train itself.
            let sync = try await central.syncToPeriodicAdvertising(of: DeviceAddress(peripheral.address, type: .public), sid: set.sid)
            var reports = sync.makeAsyncIterator()
            let first = try await reports.next()
            XCTAssertEqual(first?.bytes, Self.longData(1).encode())
            try await link.disconnect()
            await central.close()
            await manager.close()
        }
    }

    // MARK: - default

    func testTheDefaultControllerHasEverything() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let rig = try await Matrix.rig(world, .both(.current))
            let info = rig.central.controllerInfo
            XCTAssertTrue(info.supportsDataLengthExtension)
            XCTAssertTrue(info.resolvesAddressesInController)
            XCTAssertTrue(info.usesExtendedCommands(.extendedWhenSupported))
            XCTAssertEqual(info.supportedPHYs, [.le1M, .le2M, .leCoded])
            XCTAssertTrue(info.lists(.leReadBufferSizeV2))
            XCTAssertTrue(info.lists(.lePeriodicAdvertisingSyncTransfer))
            XCTAssertTrue(info.supportsConnectionParametersRequest)
            let (p, c) = try await Matrix.connect(rig)
            try await p.setDataLength(251)
            try await p.setPHY(.le2M)
            try await Matrix.settle(world) { p.dataLength.tx == 251 && p.phy == .le2M }
            XCTAssertEqual(p.dataLength.tx, 251)
            XCTAssertEqual(p.phy, .le2M)
            let applied = try await rig.manager.requestConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400, for: c)
            XCTAssertEqual(applied.interval, 24, "through the Link Layer's procedure")
            try await p.disconnect()
            await rig.central.close()
            await rig.manager.close()
        }
    }
}

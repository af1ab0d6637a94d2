import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import Synchronization
import XCTest

/// Where one side's displayed passkey reaches the other side's user: the person reading one
/// screen and typing on the other.
final class PasskeyBoard: Sendable {
    private let state = Mutex<(value: UInt32?, waiters: [CheckedContinuation<UInt32?, Never>])>((nil, []))

    func show(_ value: UInt32) {
        let waiting = state.withLock { s -> [CheckedContinuation<UInt32?, Never>] in
            s.value = value
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiting { w.resume(returning: value) }
    }

    func read() async -> UInt32? {
        await withCheckedContinuation { c in
            let now = state.withLock { s -> UInt32?? in
                if let v = s.value { return .some(v) }
                s.waiters.append(c)
                return .none
            }
            if let now { c.resume(returning: now) }
        }
    }
}

/// A user who reads the board when asked for a passkey and posts to it what this side shows.
struct BoardAgent: PairingAgent {
    let board: PasskeyBoard
    var typesWrongPasskey = false
    var confirms = true
    func displayPasskey(_ passkey: UInt32, for peer: DeviceAddress) async { board.show(passkey) }
    func enterPasskey(for peer: DeviceAddress) async -> UInt32? {
        guard let v = await board.read() else { return nil }
        return typesWrongPasskey ? (v + 1) % 1_000_000 : v
    }
    func confirmNumericComparison(_ value: UInt32, for peer: DeviceAddress) async -> Bool {
        board.show(value)
        return confirms
    }
}

/// Pairing and bonding between two of our hosts on the virtual radio, in virtual time. The
/// radio encrypts a link only when both controllers were given the same key (a mismatch is a
/// MIC failure), so every success here is also a check that both ends derived the same key.
final class PairingWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFFF0)
    static let open = BluetoothUUID(0xFFF1)
    static let encrypted = BluetoothUUID(0xFFF2)
    static let authenticated = BluetoothUUID(0xFFF3)
    static let counter = BluetoothUUID(0xFFF4)

    static func security(io: SMPIOCapability, agent: any PairingAgent, store: any BondStore, mitm: Bool = false, raise: Bool = true) -> HostConfiguration {
        var c = HostConfiguration()
        c.security.pairing.ioCapability = io
        c.security.pairing.mitm = mitm
        c.security.agent = agent
        c.security.bondStore = store
        c.security.raisesSecurityOnDemand = raise
        return c
    }

    struct Rig {
        let central: Central
        let manager: PeripheralManager
        let address: DeviceAddress
        let handles: GATTServiceHandles
    }

    static func rig(_ world: VirtualWorld, central: HostConfiguration, peripheral: HostConfiguration) async throws -> Rig {
        let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: peripheral)
        let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: open, properties: [.read], permissions: [.read], value: Array("open".utf8)),
            GATTCharacteristicDefinition(uuid: encrypted, properties: [.read], permissions: [.readEncrypted], value: Array("encrypted".utf8)),
            GATTCharacteristicDefinition(uuid: authenticated, properties: [.read], permissions: [.readAuthenticated], value: Array("authenticated".utf8)),
            GATTCharacteristicDefinition(uuid: counter, properties: [.notify], permissions: [.readEncrypted], value: [0]),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        let (c, _) = try await world.addCentral(configuration: central)
        return Rig(central: c, manager: manager, address: DeviceAddress(device.address, type: .public), handles: handles)
    }

    /// The centrals' pairings among the peripheral's `events`, counted until `count` links ended.
    static func pairings(in events: PeripheralManagerEventStream, untilDisconnects count: Int) async -> Int {
        var paired = 0, disconnects = 0
        for await e in events {
            if case .paired = e { paired += 1 }
            if case .disconnected = e { disconnects += 1 }
            if disconnects == count { break }
        }
        return paired
    }

    static func read(_ uuid: BluetoothUUID, on p: Peripheral) async throws -> String {
        let services = try await p.discoverServices([service])
        let s = try XCTUnwrap(services.first)
        let chars = try await p.discoverCharacteristics([uuid], for: s)
        let c = try XCTUnwrap(chars.first)
        return String(decoding: try await p.readValue(for: c), as: UTF8.self)
    }

    func testJustWorksPairsBondsAndReconnectsByEncryptingWithTheStoredKey() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            let rig = try await Self.rig(world, central: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: centralStore),
                                         peripheral: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: peripheralStore))
            let events = await rig.manager.events
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let level = await p.securityLevel
            XCTAssertEqual(level, .none)
            let result = try await p.pair()
            XCTAssertTrue(result.secureConnections)
            XCTAssertEqual(result.method, .justWorks)
            XCTAssertEqual(result.securityLevel, .encrypted)
            XCTAssertTrue(result.bonded)
            XCTAssertEqual(result.keysReceived, [.identityKey, .signingKey])
            XCTAssertEqual(result.peerIdentity, rig.address, "the peripheral gives the address it uses as its identity")
            let after = await p.securityLevel
            XCTAssertEqual(after, .encrypted)
            let encryptedValue = try await Self.read(Self.encrypted, on: p)
            XCTAssertEqual(encryptedValue, "encrypted")
            // Both stores now hold a bond with the same LTK.
            let centralBonds = try centralStore.bonds(), peripheralBonds = try peripheralStore.bonds()
            XCTAssertEqual(centralBonds.count, 1)
            XCTAssertEqual(peripheralBonds.count, 1)
            XCTAssertEqual(centralBonds.first?.peerLongTermKey, peripheralBonds.first?.localLongTermKey)
            XCTAssertEqual(centralBonds.first?.peer, rig.address)
            try await p.disconnect()

            // Reconnect: the encrypted read is refused with Insufficient Encryption (the server
            // knows the bond), the central encrypts with the stored key, and no pairing runs.
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let again = try await Self.read(Self.encrypted, on: p)
            XCTAssertEqual(again, "encrypted")
            let reconnectLevel = await p.securityLevel
            XCTAssertEqual(reconnectLevel, .encrypted)
            try await p.disconnect()
            let paired = await Self.pairings(in: events, untilDisconnects: 2)
            XCTAssertEqual(paired, 1, "the reconnection encrypted without pairing")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testReadingAnAuthenticatedValuePairsWithPasskeyOnDemand() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let rig = try await Self.rig(world, central: Self.security(io: .keyboardOnly, agent: BoardAgent(board: board), store: InMemoryBondStore(), mitm: true),
                                         peripheral: Self.security(io: .displayOnly, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            // The first read gets Insufficient Authentication; the central pairs (Passkey Entry,
            // the peripheral displaying) and reads again.
            let value = try await Self.read(Self.authenticated, on: p)
            XCTAssertEqual(value, "authenticated")
            let level = await p.securityLevel
            XCTAssertEqual(level, .secureConnections)
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testAWrongPasskeyEndsInATypedErrorAndTheReadIsRefused() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let rig = try await Self.rig(world, central: Self.security(io: .keyboardOnly, agent: BoardAgent(board: board, typesWrongPasskey: true),
                                                                       store: InMemoryBondStore(), mitm: true),
                                         peripheral: Self.security(io: .displayOnly, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            do {
                _ = try await p.pair()
                XCTFail("a wrong passkey must not pair")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error.reason, .confirmValueFailed)
            }
            let level = await p.securityLevel
            XCTAssertEqual(level, .none)
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testJustWorksCannotReadAnAuthenticatedValue() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let rig = try await Self.rig(world, central: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()),
                                         peripheral: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            do {
                _ = try await Self.read(Self.authenticated, on: p)
                XCTFail("an unauthenticated key must not read an authenticated value")
            } catch let BLEError.gatt(.att(code, _, _)) {
                // No pairing could give an authenticated key here: the server's refusal stands.
                XCTAssertEqual(code, .insufficientAuthentication)
            }
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testABondThePeripheralLostIsRepairedByPairingAgain() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let peripheralStore = InMemoryBondStore()
            let rig = try await Self.rig(world, central: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()),
                                         peripheral: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: peripheralStore))
            let events = await rig.manager.events
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            // The central is done once its keys are sent; the peripheral once they arrived.
            for await e in events { if case .paired = e { break } }
            try await p.disconnect()
            // The peripheral forgets the central (a factory reset).
            let central = try XCTUnwrap(try peripheralStore.bonds().first).peer
            try await rig.manager.removeBond(central)
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            do {
                try await p.encrypt()
                XCTFail("the peripheral has no key any more")
            } catch let BLEError.security(.encryptionFailed(status)) {
                XCTAssertEqual(status, 0x06, "PIN or Key Missing")
            }
            // A read does not pair over a failed bond by itself (a spoofed peer could swap in a
            // weaker bond that way); it reports the failure. Pairing again, explicitly, repairs it.
            if case .connected = p.state {} else { p = try await rig.central.connect(rig.address, timeout: .seconds(5)) }
            do {
                _ = try await Self.read(Self.encrypted, on: p)
                XCTFail("the stale bond must not be replaced behind the caller's back")
            } catch BLEError.security(.encryptionFailed) {}
            if case .connected = p.state {} else { p = try await rig.central.connect(rig.address, timeout: .seconds(5)) }
            _ = try await p.pair()
            let value = try await Self.read(Self.encrypted, on: p)
            XCTAssertEqual(value, "encrypted")
            XCTAssertEqual(try peripheralStore.bonds().count, 1)
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testABondedClientsSubscriptionSurvivesTheReconnection() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let rig = try await Self.rig(world, central: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()),
                                         peripheral: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let services = try await p.discoverServices([Self.service])
            let chars = try await p.discoverCharacteristics([Self.counter], for: try XCTUnwrap(services.first))
            let counter = try XCTUnwrap(chars.first)
            try await p.setNotifyValue(true, for: counter)
            try await p.disconnect()

            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let stream = await p.notifications(valueHandle: counter.valueHandle)
            try await p.encrypt()
            // No CCCD write on this connection: the server restored it from the bond.
            let valueHandle = try XCTUnwrap(rig.handles.characteristics.first { $0.uuid == Self.counter }).valueHandle
            var sent = 0
            for _ in 0..<50 where sent == 0 {
                if case let .queued(n) = await rig.manager.updateValue([7], forHandle: valueHandle) { sent = n }
                try await world.clock.sleep(for: .milliseconds(100))
            }
            XCTAssertEqual(sent, 1)
            var it = stream.makeAsyncIterator()
            let first = await it.next()
            XCTAssertEqual(first, [7])
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// Review finding: a Just Works pairing that claims a bonded central's identity must not
    /// replace that central's authenticated bond on the peripheral. By default such a pairing
    /// is refused outright (`BondReplacementPolicyWorldTests`); with that policy relaxed, the
    /// pairing completes and the bond is still kept.
    func testAWeakerPairingDoesNotReplaceAStrongerBond() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let peripheralStore = InMemoryBondStore()
            var configuration = Self.security(io: .displayOnly, agent: BoardAgent(board: board), store: peripheralStore)
            configuration.security.allowsUnauthenticatedBondReplacement = true
            let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: configuration)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let events = await manager.events
            let address = DeviceAddress(device.address, type: .public)
            let identity = BDAddress(rawValue: 0xC5_00_00_00_00_01)

            let strong = try await Central.open(transport: await world.radio.addDevice().transport, address: .staticRandom(identity), clock: world.clock,
                                                configuration: Self.security(io: .keyboardOnly, agent: BoardAgent(board: board), store: InMemoryBondStore(), mitm: true))
            var p = try await strong.connect(address, timeout: .seconds(5))
            _ = try await p.pair()
            for await e in events { if case .paired = e { break } }
            try await p.disconnect()
            await strong.close()
            XCTAssertEqual(try peripheralStore.bonds().first?.authenticated, true)

            // Same address, no IO: Just Works.
            let weak = try await Central.open(transport: await world.radio.addDevice().transport, address: .staticRandom(identity), clock: world.clock,
                                              configuration: Self.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: InMemoryBondStore()))
            p = try await weak.connect(address, timeout: .seconds(5))
            let result = try await p.pair()
            XCTAssertEqual(result.securityLevel, .encrypted)
            for await e in events { if case .paired = e { break } }
            let kept = try peripheralStore.bonds()
            XCTAssertEqual(kept.count, 1)
            XCTAssertEqual(kept.first?.authenticated, true, "the authenticated bond stays")
            await weak.close()
            await manager.close()
        }
    }

    /// Review finding: with a fixed passkey, a failed Secure Connections passkey pairing gives
    /// away a bit of it, so the peripheral does not show it again.
    func testAFixedPasskeyIsRetiredAfterAFailedPairing() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            var peripheral = Self.security(io: .displayOnly, agent: BoardAgent(board: board), store: InMemoryBondStore())
            peripheral.security.pairing.displayedPasskey = 123_456
            let (manager, device) = try await world.addPeripheralManager(name: "Lock", configuration: peripheral)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Lock").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let address = DeviceAddress(device.address, type: .public)
            let guesser = FixedPairingAgent(passkey: 123_457)
            let first = try await Central.open(transport: await world.radio.addDevice().transport, clock: world.clock,
                                               configuration: Self.security(io: .keyboardOnly, agent: guesser, store: InMemoryBondStore(), mitm: true))
            let p1 = try await first.connect(address, timeout: .seconds(5))
            do { _ = try await p1.pair(); XCTFail("wrong passkey") } catch BLEError.security {}
            await first.close()
            // Another central that knows the old fixed passkey no longer gets in with it.
            let knower = FixedPairingAgent(passkey: 123_456)
            let second = try await Central.open(transport: await world.radio.addDevice().transport, clock: world.clock,
                                                configuration: Self.security(io: .keyboardOnly, agent: knower, store: InMemoryBondStore(), mitm: true))
            try await world.clock.sleep(for: .seconds(3))  // past the back-off of the first failure
            let p2 = try await second.connect(address, timeout: .seconds(5))
            do {
                _ = try await p2.pair()
                XCTFail("the fixed passkey must not be shown again after a failure")
            } catch let BLEError.security(error) {
                XCTAssertEqual(error.reason, .confirmValueFailed)
            }
            await second.close()
            await manager.close()
        }
    }

    /// Pairing again on a link that is already encrypted: the controller reports Encryption Key
    /// Refresh Complete instead of Encryption Change (Vol 4 Part E §7.7.39), and the pairing
    /// completes on it with the new, stronger key.
    func testPairingAgainOnAnEncryptedLinkRefreshesTheKey() async throws {
        try await VirtualWorld.run { world in
            let board = PasskeyBoard()
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            let rig = try await Self.rig(world, central: Self.security(io: .keyboardOnly, agent: BoardAgent(board: board), store: centralStore),
                                         peripheral: Self.security(io: .displayOnly, agent: BoardAgent(board: board), store: peripheralStore))
            let events = await rig.manager.events
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            // Without MITM asked for, Just Works first.
            let first = try await p.pair()
            XCTAssertEqual(first.method, .justWorks)
            for await e in events { if case .paired = e { break } }
            let encrypted = await p.securityLevel
            XCTAssertEqual(encrypted, .encrypted)
            // The authenticated value makes the central pair again over the encrypted link.
            let value = try await Self.read(Self.authenticated, on: p)
            XCTAssertEqual(value, "authenticated")
            let level = await p.securityLevel
            XCTAssertEqual(level, .secureConnections)
            for await e in events { if case .paired = e { break } }
            XCTAssertEqual(try centralStore.bonds().first?.authenticated, true, "the stronger bond replaced the first")
            XCTAssertEqual(try peripheralStore.bonds().first?.authenticated, true)
            XCTAssertEqual(try centralStore.bonds().first?.peerLongTermKey, try peripheralStore.bonds().first?.localLongTermKey)
            await rig.central.close()
            await rig.manager.close()
        }
    }
}

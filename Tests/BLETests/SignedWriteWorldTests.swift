import BLE
import BLEHCI
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import Synchronization
import XCTest

/// A central's transport that keeps a copy of every frame its host sends and can send one again
/// behind the host's back: an eavesdropper's capture and replay, between host and controller.
final class TapTransport: HCITransport {
    let inner: any HCITransport
    private let sentFrames = Mutex<[H4Frame]>([])

    init(_ inner: any HCITransport) { self.inner = inner }

    var incoming: AsyncThrowingStream<H4Frame, any Error> { inner.incoming }
    func send(_ frame: H4Frame) async throws {
        sentFrames.withLock { $0.append(frame) }
        try await inner.send(frame)
    }
    func close() async { await inner.close() }
    var description: String { "tap(\(inner.description))" }

    /// Sends `frame` to the controller as if the host had.
    func inject(_ frame: H4Frame) async throws { try await inner.send(frame) }

    /// The ATT PDUs the host sent (whole in one ACL packet, as short ones are), with the
    /// connection handle each went on.
    var attPDUs: [(handle: UInt16, pdu: [UInt8])] {
        sentFrames.withLock { frames in
            frames.compactMap { frame in
                guard frame.type == .acl, let acl = try? ACLPacket.decode(frame.payload), acl.boundary == .firstNonFlushable,
                      let l2cap = try? L2CAPFrame(bytes: acl.data), l2cap.channelID == L2CAPChannel.att else { return nil }
                return (acl.handle, l2cap.payload)
            }
        }
    }

    /// Sends `pdu` on the ATT channel of connection `handle`.
    func injectATT(_ pdu: [UInt8], handle: UInt16) async throws {
        try await inject(ACLPacket(handle: handle, boundary: .firstNonFlushable, data: L2CAPFrame(channelID: L2CAPChannel.att, payload: pdu).encode()).h4Frame)
    }
}

/// A bond store whose saves can be made to fail (a full or read-only disk).
final class FlakyBondStore: BondStore {
    let inner = InMemoryBondStore()
    let failing = Mutex(false)
    func bonds() throws -> [Bond] { try inner.bonds() }
    func save(_ bond: Bond) throws {
        if failing.withLock({ $0 }) { throw BLEError.transport("disk full") }
        try inner.save(bond)
    }
    func remove(_ peer: DeviceAddress) throws -> Bool { try inner.remove(peer) }
    func localIdentity() throws -> LocalIdentity { try inner.localIdentity() }
    func problems() -> [String] { [] }
}

/// Signed Write Without Response between two of our hosts on the virtual radio, in virtual time
/// (Core spec Vol 3 Part G §4.9.2): bond, reconnect without encryption, write signed; the
/// server applies what verifies, both bond stores keep their counters, and a captured signed
/// write sent again is refused, also by a server restarted on the same bond store.
final class SignedWriteWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xF5A0)
    static let signed = BluetoothUUID(0xF5A1)
    static let plain = BluetoothUUID(0xF5A2)

    static let definition = GATTServiceDefinition(uuid: service, characteristics: [
        GATTCharacteristicDefinition(uuid: signed, properties: [.read, .authenticatedSignedWrites], permissions: [.read, .writeSigned],
                                     value: Array("none".utf8)),
        GATTCharacteristicDefinition(uuid: plain, properties: [.read, .writeWithoutResponse], permissions: [.read, .write], value: [0]),
    ])

    struct Rig {
        let central: Central
        let tap: TapTransport
        let manager: PeripheralManager
        let device: VirtualDevice
        var address: DeviceAddress { DeviceAddress(device.address, type: .public) }
    }

    static func peripheral(_ world: VirtualWorld, store: any BondStore, address: BDAddress? = nil,
                           allowsUnauthenticatedBondReplacement: Bool = false) async throws -> (PeripheralManager, VirtualDevice) {
        let board = PasskeyBoard()
        var configuration = PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: board), store: store)
        configuration.security.allowsUnauthenticatedBondReplacement = allowsUnauthenticatedBondReplacement
        let (manager, device) = try await world.addPeripheralManager(name: "Signer", address: address, configuration: configuration)
        _ = try await manager.add(definition)
        try await manager.startAdvertising(AdvertisingData.Builder().localName("Signer").build(), parameters: AdvertisingParameters(interval: .milliseconds(20)))
        return (manager, device)
    }

    static func rig(_ world: VirtualWorld, centralStore: any BondStore, peripheralStore: any BondStore,
                    allowsUnauthenticatedBondReplacement: Bool = false) async throws -> Rig {
        let (manager, device) = try await peripheral(world, store: peripheralStore, allowsUnauthenticatedBondReplacement: allowsUnauthenticatedBondReplacement)
        let controller = await world.radio.addDevice()
        let tap = TapTransport(controller.transport)
        let central = try await Central.open(transport: tap, clock: world.clock,
                                             configuration: PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: PasskeyBoard()), store: centralStore))
        return Rig(central: central, tap: tap, manager: manager, device: device)
    }

    static func characteristic(_ uuid: BluetoothUUID, on p: Peripheral) async throws -> GATTCharacteristic {
        let services = try await p.discoverServices([service])
        let chars = try await p.discoverCharacteristics([uuid], for: try XCTUnwrap(services.first))
        return try XCTUnwrap(chars.first)
    }

    func testSignedWritesOverAnUnencryptedBondedLinkAreAppliedAndReplaysRefused() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            var rig = try await Self.rig(world, centralStore: centralStore, peripheralStore: peripheralStore)

            // Pair with bonding: both sides distribute their CSRK.
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let result = try await p.pair()
            XCTAssertTrue(result.bonded)
            XCTAssertTrue(result.keysSent.contains(.signingKey))
            XCTAssertTrue(result.keysReceived.contains(.signingKey))
            try await p.disconnect()
            let centralBond = try XCTUnwrap(try centralStore.bonds().first)
            let peripheralBond = try XCTUnwrap(try peripheralStore.bonds().first)
            let csrk = try XCTUnwrap(centralBond.localSignatureKey)
            XCTAssertEqual(peripheralBond.peerSignatureKey, csrk, "the server holds the CSRK the client gave")
            XCTAssertEqual(centralBond.localSignCounter, 0)
            XCTAssertNil(peripheralBond.peerSignCounter)

            // Reconnect: nothing here asks for encryption, so the link stays unencrypted.
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let c = try await Self.characteristic(Self.signed, on: p)
            XCTAssertTrue(c.properties.contains(.authenticatedSignedWrites))
            try await p.writeValue(Array("one".utf8), for: c, type: .signedWithoutResponse)
            try await p.writeValue(Array("two".utf8), for: c, type: .signedWithoutResponse)
            // The read goes after both commands on the same bearer: the server has them by then.
            let value = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: value, as: UTF8.self), "two")
            let level = await p.securityLevel
            XCTAssertEqual(level, .none, "the writes went signed over an unencrypted link")
            XCTAssertEqual(try centralStore.bonds().first?.localSignCounter, 2, "the client stored its next counter")
            XCTAssertEqual(try peripheralStore.bonds().first?.peerSignCounter, 1, "the server stored the last counter it accepted")

            // What went on the air is exactly the Signed Write Command of §4.9.2, counter 0 first.
            let signedPDUs = rig.tap.attPDUs.filter { $0.pdu.first == ATTOpcode.signedWriteCommand.rawValue }
            XCTAssertEqual(signedPDUs.count, 2)
            let first = try XCTUnwrap(signedPDUs.first)
            let expected = try SignedWriteWithoutResponse.pdu(handle: c.valueHandle, value: Array("one".utf8), mtu: 23, key: csrk, counter: 0).encode()
            XCTAssertEqual(first.pdu, expected)

            // An eavesdropper sends the captured first write again, on the same link: ignored.
            try await rig.tap.injectATT(first.pdu, handle: first.handle)
            let afterReplay = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: afterReplay, as: UTF8.self), "two", "the replayed write was not applied")
            XCTAssertEqual(try peripheralStore.bonds().first?.peerSignCounter, 1)
            try await p.disconnect()

            // The server restarts (a new host, the same bond store and address): the counter was
            // stored, so the replay is still refused, and the client's next write still works.
            await rig.manager.close()
            await world.radio.remove(rig.device.id)
            let (manager, device) = try await Self.peripheral(world, store: peripheralStore, address: rig.device.address)
            rig = Rig(central: rig.central, tap: rig.tap, manager: manager, device: device)
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let again = try await Self.characteristic(Self.signed, on: p)
            let handle = try XCTUnwrap(rig.tap.attPDUs.last?.handle, "the new link's handle, from the discovery just sent")
            try await rig.tap.injectATT(signedPDUs[1].pdu, handle: handle)
            try await rig.tap.injectATT(first.pdu, handle: handle)
            let read1 = try await p.readValue(for: again)
            XCTAssertEqual(String(decoding: read1, as: UTF8.self), "none", "neither replay was applied")
            try await p.writeValue(Array("three".utf8), for: again, type: .signedWithoutResponse)
            let read2 = try await p.readValue(for: again)
            XCTAssertEqual(String(decoding: read2, as: UTF8.self), "three")
            XCTAssertEqual(try centralStore.bonds().first?.localSignCounter, 3)
            XCTAssertEqual(try peripheralStore.bonds().first?.peerSignCounter, 2)
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testAnEncryptedLinkWritesPlainAndTheServerAppliesTheWriteCommand() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            let rig = try await Self.rig(world, centralStore: centralStore, peripheralStore: peripheralStore)
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            let c = try await Self.characteristic(Self.signed, on: p)
            try await p.writeValue(Array("sealed".utf8), for: c, type: .signedWithoutResponse)
            let read3 = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: read3, as: UTF8.self), "sealed")
            XCTAssertEqual(rig.tap.attPDUs.filter { $0.pdu.first == ATTOpcode.signedWriteCommand.rawValue }.count, 0,
                           "§4.9.2: a plain Write Command on an encrypted link")
            XCTAssertEqual(rig.tap.attPDUs.filter { $0.pdu.first == ATTOpcode.writeCommand.rawValue }.count, 1)
            XCTAssertEqual(try centralStore.bonds().first?.localSignCounter, 0, "no counter used")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    func testSigningNeedsABondAndACharacteristicThatTakesSignedWrites() async throws {
        try await VirtualWorld.run { world in
            let rig = try await Self.rig(world, centralStore: InMemoryBondStore(), peripheralStore: InMemoryBondStore())
            let p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let c = try await Self.characteristic(Self.signed, on: p)
            do {
                try await p.writeValue([1], for: c, type: .signedWithoutResponse)
                XCTFail("no bond, no CSRK: nothing can be signed")
            } catch BLEError.security(.unavailable) {}
            let plain = try await Self.characteristic(Self.plain, on: p)
            do {
                try await p.writeValue([1], for: plain, type: .signedWithoutResponse)
                XCTFail("the characteristic does not take signed writes")
            } catch BLEError.invalidArgument {}
            do {
                try await p.writeValue([UInt8](repeating: 1, count: 9), for: c, type: .signedWithoutResponse)
                XCTFail("ATT_MTU − 15 = 8 octets at most")
            } catch BLEError.invalidArgument {}
            XCTAssertEqual(p.maximumWriteValueLength(for: .signedWithoutResponse), 8)
            XCTAssertEqual(rig.tap.attPDUs.filter { $0.pdu.first == ATTOpcode.signedWriteCommand.rawValue }.count, 0, "nothing was sent")
            let read4 = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: read4, as: UTF8.self), "none")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// The server records the counter before it applies the write: when the store cannot, the
    /// write is dropped. The client, whose own store cannot record its counter, sends nothing.
    func testAWriteWhoseCounterCannotBeStoredIsNotApplied() async throws {
        try await VirtualWorld.run { world in
            let centralStore = FlakyBondStore(), peripheralStore = FlakyBondStore()
            let rig = try await Self.rig(world, centralStore: centralStore, peripheralStore: peripheralStore)
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            try await p.disconnect()
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let c = try await Self.characteristic(Self.signed, on: p)
            peripheralStore.failing.withLock { $0 = true }
            try await p.writeValue(Array("lost".utf8), for: c, type: .signedWithoutResponse)
            let read1 = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: read1, as: UTF8.self), "none", "not applied without its counter on record")
            XCTAssertNil(try peripheralStore.bonds().first?.peerSignCounter)
            peripheralStore.failing.withLock { $0 = false }
            centralStore.failing.withLock { $0 = true }
            do {
                try await p.writeValue(Array("x".utf8), for: c, type: .signedWithoutResponse)
                XCTFail("a counter that cannot be stored is not used")
            } catch BLEError.security(.unavailable) {}
            XCTAssertEqual(rig.tap.attPDUs.filter { $0.pdu.first == ATTOpcode.signedWriteCommand.rawValue }.count, 1, "only the first went out")
            centralStore.failing.withLock { $0 = false }
            try await p.writeValue(Array("kept".utf8), for: c, type: .signedWithoutResponse)
            let read2 = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: read2, as: UTF8.self), "kept")
            XCTAssertEqual(try peripheralStore.bonds().first?.peerSignCounter, 1,
                           "counter 1 could not be recorded, so it was neither sent nor used up: the next write takes it")
            await rig.central.close()
            await rig.manager.close()
        }
    }

    /// A central with privacy comes back on a new resolvable private address: the server finds
    /// its CSRK by resolving the address to the bond's identity (in the host, or by the
    /// controller's resolving list) and accepts its signed write.
    func testASignedWriteFromANewRPAIsCheckedAgainstTheIdentitysBond() async throws {
        for controllerResolution in [false, true] {
            try await VirtualWorld.run { world in
                let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
                let (manager, device) = try await Self.peripheral(world, store: peripheralStore)
                let events = await manager.events
                var configuration = PairingWorldTests.security(io: .noInputNoOutput, agent: BoardAgent(board: PasskeyBoard()), store: centralStore)
                configuration.security.usesControllerAddressResolution = controllerResolution
                let controller = await world.radio.addDevice()
                let central = try await Central.open(transport: controller.transport, address: .resolvablePrivate(rotation: .seconds(60)),
                                                     clock: world.clock, configuration: configuration)
                let address = DeviceAddress(device.address, type: .public)
                var p = try await central.connect(address, timeout: .seconds(5))
                _ = try await p.pair()
                try await p.disconnect()
                try await world.clock.sleep(for: .seconds(61))
                p = try await central.connect(address, timeout: .seconds(5))
                let c = try await Self.characteristic(Self.signed, on: p)
                try await p.writeValue(Array("private".utf8), for: c, type: .signedWithoutResponse)
                let value = try await p.readValue(for: c)
                XCTAssertEqual(String(decoding: value, as: UTF8.self), "private", "controller resolution \(controllerResolution)")
                XCTAssertEqual(try peripheralStore.bonds().count, 1)
                XCTAssertEqual(try peripheralStore.bonds().first?.peerSignCounter, 0)
                var centrals: [DeviceAddress] = []
                for await e in events {
                    if case let .connected(c) = e { centrals.append(c.address) }
                    if centrals.count == 2 { break }
                }
                // The first time on an RPA; the second on a new one, or (the peripheral's
                // controller having its IRK by then) reported by its identity.
                XCTAssertEqual(centrals.first?.address.randomKind, .resolvablePrivate)
                XCTAssertNotEqual(centrals.first, centrals.last, "the central came back on a new RPA")
                if let last = centrals.last, last.type == .random { XCTAssertEqual(last.address.randomKind, .resolvablePrivate) }
                await central.close()
                await manager.close()
            }
        }
    }

    /// A forged signed write from a central that is not bonded, and one signed with the wrong
    /// key by one that is, change nothing on the server.
    func testForgedSignedWritesChangeNothing() async throws {
        try await VirtualWorld.run { world in
            let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
            let rig = try await Self.rig(world, centralStore: centralStore, peripheralStore: peripheralStore)
            var p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            _ = try await p.pair()
            try await p.disconnect()
            p = try await rig.central.connect(rig.address, timeout: .seconds(5))
            let c = try await Self.characteristic(Self.signed, on: p)
            let handle = try XCTUnwrap(rig.tap.attPDUs.last?.handle)
            let forged = try SignedWriteWithoutResponse.pdu(handle: c.valueHandle, value: Array("evil".utf8), mtu: 23,
                                                            key: [UInt8](repeating: 0x42, count: 16), counter: 100).encode()
            try await rig.tap.injectATT(forged, handle: handle)
            let read5 = try await p.readValue(for: c)
            XCTAssertEqual(String(decoding: read5, as: UTF8.self), "none")
            XCTAssertNil(try peripheralStore.bonds().first?.peerSignCounter, "a forgery does not move the counter")
            await rig.central.close()
            await rig.manager.close()
        }
    }
}

import BLE
import BLETestSupport
import Foundation
import XCTest

/// Pairing against Bumble over rootcanal, both directions. rootcanal reports encryption on even
/// when the two ends' keys differ, so every success here also compares the key this stack gave
/// its controller with the one Bumble derived or received.
final class PairingInteropTests: XCTestCase {
    static let service = BluetoothUUID(string: "7e1f0101-8d0b-4c1e-9a00-5b1e00c0ffee")
    static let open = BluetoothUUID(string: "7e1f0102-8d0b-4c1e-9a00-5b1e00c0ffee")
    static let encrypted = BluetoothUUID(string: "7e1f0103-8d0b-4c1e-9a00-5b1e00c0ffee")
    static let authenticated = BluetoothUUID(string: "7e1f0104-8d0b-4c1e-9a00-5b1e00c0ffee")

    func configuration(io: SMPIOCapability, store: any BondStore, passkey: UInt32? = nil, confirms: Bool = true,
                       mitm: Bool = false, legacy: Bool = false, raise: Bool = true) -> HostConfiguration {
        var c = HostConfiguration()
        c.security.pairing.ioCapability = io
        c.security.pairing.mitm = mitm
        c.security.pairing.secureConnections = !legacy
        c.security.pairing.displayedPasskey = passkey
        c.security.agent = FixedPairingAgent(passkey: passkey, confirms: confirms)
        c.security.bondStore = store
        c.security.raisesSecurityOnDemand = raise
        return c
    }

    func read(_ uuid: BluetoothUUID?, on p: Peripheral) async throws -> String {
        let target = try XCTUnwrap(uuid)
        let services = try await p.discoverServices([try XCTUnwrap(Self.service)])
        let s = try XCTUnwrap(services.first)
        let characteristics = try await p.discoverCharacteristics([target], for: s)
        let c = try XCTUnwrap(characteristics.first)
        return String(decoding: try await p.readValue(for: c), as: UTF8.self)
    }

    func peerAddress(_ peer: PeerProcess) throws -> DeviceAddress {
        try XCTUnwrap(DeviceAddress(string: "\(peer.address)/random"))
    }

    /// One Swift central pairing with a Bumble peripheral; returns the stored bond and Bumble's
    /// "paired" event.
    func pairAsCentral(bumble: [String], io: SMPIOCapability, passkey: UInt32? = nil, mitm: Bool = false, legacy: Bool = false,
                       expected: SMPAssociationModel, level: SecurityLevel) async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: bumble, environment: env)
        let store = InMemoryBondStore()
        let central = try await Central.open(spec: env.rootcanal, configuration: configuration(io: io, store: store, passkey: passkey, mitm: mitm, legacy: legacy))
        let p = try await central.connect(try peerAddress(peer), timeout: .seconds(15))
        let result = try await p.pair()
        XCTAssertEqual(result.method, expected, "\(bumble)")
        XCTAssertEqual(result.secureConnections, !legacy && !bumble.contains("--legacy"))
        XCTAssertEqual(result.securityLevel, level)
        XCTAssertTrue(result.bonded)
        let paired = try await peer.event("paired", timeout: 30)
        let bond = try XCTUnwrap(try store.bonds().first)
        // Key agreement, checked: the key we encrypt with is the one Bumble holds for us.
        let bumbleKey = result.secureConnections ? paired.string("ltk") : paired.string("ltk_central")
        XCTAssertEqual(bond.peerLongTermKey?.hexString, bumbleKey, "LTK we gave our controller vs Bumble's")
        XCTAssertEqual(paired.bool("authenticated"), level >= .authenticated)
        let value = try await read(level >= .authenticated ? Self.authenticated : Self.encrypted, on: p)
        XCTAssertEqual(value, level >= .authenticated ? "authenticated" : "encrypted")
        await central.close()
    }

    func testJustWorksWithSecureConnections() async throws {
        try await pairAsCentral(bumble: ["--io", "none"], io: .noInputNoOutput, expected: .justWorks, level: .encrypted)
    }

    func testPasskeyTypedHereShownByBumble() async throws {
        try await pairAsCentral(bumble: ["--io", "display", "--mitm", "--passkey", "314159"], io: .keyboardOnly, passkey: 314159,
                                mitm: true, expected: .passkeyEntry, level: .secureConnections)
    }

    func testPasskeyShownHereTypedOnBumble() async throws {
        try await pairAsCentral(bumble: ["--io", "keyboard", "--mitm", "--passkey", "271828"], io: .displayOnly, passkey: 271828,
                                mitm: true, expected: .passkeyEntry, level: .secureConnections)
    }

    func testNumericComparison() async throws {
        try await pairAsCentral(bumble: ["--io", "yesno", "--mitm"], io: .displayYesNo, mitm: true, expected: .numericComparison, level: .secureConnections)
    }

    func testLegacyJustWorksAndLegacyPasskey() async throws {
        try await pairAsCentral(bumble: ["--io", "none", "--legacy"], io: .noInputNoOutput, expected: .justWorks, level: .encrypted)
        try await pairAsCentral(bumble: ["--io", "display", "--legacy", "--mitm", "--passkey", "1234"], io: .keyboardOnly, passkey: 1234,
                                mitm: true, legacy: true, expected: .passkeyEntry, level: .authenticated)
    }

    func testAWrongPasskeyFailsOnBothSides() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "display", "--mitm", "--passkey", "111111"], environment: env)
        let central = try await Central.open(spec: env.rootcanal, configuration: configuration(io: .keyboardOnly, store: InMemoryBondStore(), passkey: 222222, mitm: true))
        let p = try await central.connect(try peerAddress(peer), timeout: .seconds(15))
        do {
            _ = try await p.pair()
            XCTFail("a wrong passkey must not pair")
        } catch let BLEError.security(error) {
            XCTAssertEqual(error.reason, .confirmValueFailed)
        }
        let failure = try await peer.event("pairing_failure", timeout: 30)
        XCTAssertEqual(failure.int("reason"), 0x04)
        await central.close()
    }

    func testReconnectingWithTheStoredBondEncryptsWithoutPairing() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "none"], environment: env)
        let store = InMemoryBondStore()
        // Our own static random address, so Bumble knows us on the second connection too.
        let own = InteropEnvironment.nextStaticRandomAddress()
        let central = try await Central.open(spec: env.rootcanal, address: .staticRandom(try XCTUnwrap(BDAddress(string: own.description))),
                                             configuration: configuration(io: .noInputNoOutput, store: store))
        var p = try await central.connect(try peerAddress(peer), timeout: .seconds(15))
        let result = try await p.pair()
        try await peer.event("paired", timeout: 30)
        // Bumble connects with its static random address and distributes its public one as
        // identity: the bond remembers both.
        XCTAssertNotNil(result.peerIdentity)
        XCTAssertEqual(try store.bonds().first?.matches(try peerAddress(peer)), true)
        try await p.disconnect()
        try await peer.event("disconnected", timeout: 15)

        p = try await central.connect(try peerAddress(peer), timeout: .seconds(15))
        // The encrypted value is refused until the link is encrypted; the central encrypts with
        // the stored LTK and reads it, and Bumble sees encryption without a second pairing.
        let value = try await read(Self.encrypted, on: p)
        XCTAssertEqual(value, "encrypted")
        // rootcanal reports no key size (0), so count: one encryption per connection.
        try await peer.event("encrypted", timeout: 15) { $0.bool("enabled") == true }
        try await peer.event("encrypted", timeout: 15) { $0.bool("enabled") == true }
        let pairedEvents = peer.events.filter { $0.name == "paired" }.count
        XCTAssertEqual(pairedEvents, 1, "no second pairing")
        await central.close()
    }

    /// Bumble as central against our peripheral: the protected values are refused with the
    /// right ATT errors before pairing, and readable after it (passkey: Bumble types what we show).
    func testBumbleCentralPairsWithOurPeripheral() async throws {
        let env = try InteropEnvironment.current()
        let own = InteropEnvironment.nextStaticRandomAddress()
        let manager = try await PeripheralManager.open(spec: env.rootcanal, name: "SwiftLock",
                                                       address: .staticRandom(try XCTUnwrap(BDAddress(string: own.description))),
                                                       configuration: configuration(io: .displayOnly, store: InMemoryBondStore(), passkey: 424242))
        _ = try await manager.add(GATTServiceDefinition(uuid: try XCTUnwrap(Self.service), characteristics: [
            GATTCharacteristicDefinition(uuid: try XCTUnwrap(Self.open), properties: [.read], permissions: [.read], value: Array("open".utf8)),
            GATTCharacteristicDefinition(uuid: try XCTUnwrap(Self.encrypted), properties: [.read], permissions: [.readEncrypted], value: Array("encrypted".utf8)),
            GATTCharacteristicDefinition(uuid: try XCTUnwrap(Self.authenticated), properties: [.read], permissions: [.readAuthenticated], value: Array("authenticated".utf8)),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("SwiftLock").build())

        // Before pairing: open reads, the others get Insufficient Authentication (no LTK yet).
        let unpaired = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", own.description, "--no-pair-first"], environment: env)
        try await unpaired.event("done", timeout: 30)
        let reads = unpaired.events
        XCTAssertTrue(reads.contains { $0.name == "read" && $0.string("value") == "open" })
        XCTAssertEqual(reads.filter { $0.name == "read_error" }.compactMap { $0.int("code") }, [0x05, 0x05])
        unpaired.stop()

        let paired = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", own.description, "--io", "keyboard",
                                                                  "--mitm", "--passkey", "424242"], environment: env)
        let event = try await paired.event("paired", timeout: 30)
        XCTAssertEqual(event.bool("sc"), true)
        try await paired.event("done", timeout: 30)
        let values = paired.events.filter { $0.name == "read" }.compactMap { $0.string("value") }
        XCTAssertEqual(values, ["open", "encrypted", "authenticated"])
        let bonds = await manager.bondedDevices
        XCTAssertEqual(bonds.count, 1)
        XCTAssertEqual(bonds.first?.localLongTermKey?.hexString, event.string("ltk"), "our LTK vs Bumble's")
        paired.stop()
        await manager.close()
    }
}

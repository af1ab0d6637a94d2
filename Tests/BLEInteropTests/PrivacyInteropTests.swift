import BLE
import BLEHost
import BLETestSupport
import Foundation
import XCTest

/// Privacy against Bumble over rootcanal (Core spec Vol 3 Part C §10.7): a bonded Bumble
/// peripheral that advertises with a new resolvable private address after every connection is
/// shown by its identity address, reached by it, and encrypts with the stored bond.
final class PrivacyInteropTests: XCTestCase {
    /// Bumble's IRK, least significant octet first as SMP distributes it.
    static let irk = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

    func testABondedBumblePeripheralOnRPAsIsFoundAndConnectedByItsIdentityResolvedInTheHost() async throws {
        try await reconnectByIdentity(controllerResolution: false)
    }

    /// rootcanal has a resolving list: it reports the resolved RPA as the identity (with the
    /// identity's own address type) and connects to the identity behind its RPA.
    func testABondedBumblePeripheralOnRPAsIsFoundAndConnectedByItsIdentityResolvedByTheController() async throws {
        try await reconnectByIdentity(controllerResolution: true)
    }

    private func reconnectByIdentity(controllerResolution: Bool) async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "none", "--privacy", "--irk", Self.irk], environment: env)
        let advertising = try await peer.event("advertising", timeout: 30)
        let firstRPA = try XCTUnwrap(advertising.string("address"))
        let store = InMemoryBondStore()
        var configuration = HostConfiguration()
        configuration.security.bondStore = store
        configuration.security.agent = FixedPairingAgent(confirms: true)
        configuration.security.usesControllerAddressResolution = controllerResolution
        // Our own static random address, so Bumble knows us on the second connection.
        let own = try XCTUnwrap(BDAddress(string: InteropEnvironment.nextStaticRandomAddress().description))
        let central = try await Central.open(spec: env.rootcanal, address: .staticRandom(own), configuration: configuration)

        let first = try await central.find(filter: ScanFilter(nameContains: "BumbleLock"), timeout: .seconds(15))
        XCTAssertEqual(first.address.description, "\(firstRPA)/random")
        XCTAssertEqual(first.address.address.randomKind, .resolvablePrivate)
        XCTAssertNil(first.identity, "not bonded yet")
        var p = try await central.connect(first.address, timeout: .seconds(15))
        let result = try await p.pair()
        XCTAssertTrue(result.bonded)
        let identity = try XCTUnwrap(result.peerIdentity)
        let bond = try XCTUnwrap(try store.bonds().first)
        XCTAssertEqual(bond.peerIdentityResolvingKey?.hexString, Self.irk, "Bumble's IRK, as distributed")
        XCTAssertNotEqual(identity.address, first.address.address)
        try await peer.event("paired", timeout: 30)
        try await p.disconnect()
        try await peer.event("disconnected", timeout: 15)

        // Bumble advertises again with a new RPA; its IRK resolves it to the bonded identity.
        let readvertising = try await peer.event("advertising", timeout: 30)
        let secondRPA = try XCTUnwrap(readvertising.string("address"))
        XCTAssertNotEqual(secondRPA, firstRPA)
        var seen: ScannedDevice?
        for try await device in central.scan(filter: ScanFilter(nameContains: "BumbleLock", allowDuplicates: true), timeout: .seconds(15)) {
            guard device.identity != nil else { continue }
            seen = device
            break
        }
        await central.stopScan()
        let again = try XCTUnwrap(seen, "the bonded device was heard with its identity")
        XCTAssertEqual(again.identity, DeviceAddress(identity.address, type: identity.type.peerType))
        if controllerResolution {
            XCTAssertEqual(again.address.address, identity.address, "the controller reports the identity")
        } else {
            XCTAssertEqual(again.address.description, "\(secondRPA)/random", "the RPA as heard, resolved by the host")
        }

        p = try await central.connect(identity, timeout: .seconds(15))
        let services = try await p.discoverServices([try XCTUnwrap(PairingInteropTests.service)])
        let characteristics = try await p.discoverCharacteristics([try XCTUnwrap(PairingInteropTests.encrypted)], for: try XCTUnwrap(services.first))
        let value = String(decoding: try await p.readValue(for: try XCTUnwrap(characteristics.first)), as: UTF8.self)
        XCTAssertEqual(value, "encrypted")
        try await peer.event("encrypted", timeout: 15) { $0.bool("enabled") == true }
        try await peer.event("encrypted", timeout: 15) { $0.bool("enabled") == true }
        XCTAssertEqual(peer.events.filter { $0.name == "paired" }.count, 1, "encrypted with the bond: no second pairing")
        await central.close()
    }
}

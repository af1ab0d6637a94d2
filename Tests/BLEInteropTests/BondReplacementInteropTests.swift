import BLE
import BLETestSupport
import Foundation
import XCTest

/// Against Bumble over rootcanal: a Bumble central that copies a bonded central's address (and
/// so the identity it distributed) and pairs Just Works is refused with Pairing Failed
/// (Authentication Requirements), our bond keeps its keys, and the original central, with its
/// bonds kept in a file, still reconnects encrypted.
final class BondReplacementInteropTests: XCTestCase {
    static let service = BluetoothUUID(string: "7e1f0101-8d0b-4c1e-9a00-5b1e00c0ffee")
    static let encrypted = BluetoothUUID(string: "7e1f0103-8d0b-4c1e-9a00-5b1e00c0ffee")

    func testACopiedAddressPairingJustWorksIsRefusedAndTheOriginalStillEncrypts() async throws {
        let env = try InteropEnvironment.current()
        let own = InteropEnvironment.nextStaticRandomAddress()
        var configuration = HostConfiguration()
        configuration.security.bondStore = InMemoryBondStore()
        let manager = try await PeripheralManager.open(spec: env.rootcanal, name: "SwiftLock",
                                                       address: .staticRandom(try XCTUnwrap(BDAddress(string: own.description))),
                                                       configuration: configuration)
        _ = try await manager.add(GATTServiceDefinition(uuid: try XCTUnwrap(Self.service), characteristics: [
            GATTCharacteristicDefinition(uuid: try XCTUnwrap(Self.encrypted), properties: [.read], permissions: [.readEncrypted], value: Array("encrypted".utf8)),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("SwiftLock").build())
        let keystore = FileManager.default.temporaryDirectory.appendingPathComponent("bumble-keys-\(UUID().uuidString).json").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: keystore) }
        let victimAddress = InteropEnvironment.nextStaticRandomAddress()

        // The real central pairs Just Works and keeps its keys in a file.
        let victim = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", own.description, "--keystore", keystore],
                                   address: victimAddress, environment: env)
        try await victim.event("paired", timeout: 30)
        try await victim.event("done", timeout: 30)
        victim.stop()
        let bondedDevices = await manager.bondedDevices
        let bonded = try XCTUnwrap(bondedDevices.first)

        // The copy: same address, its own (memory) keys, Just Works.
        let copy = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", own.description],
                                 address: victimAddress, environment: env)
        let failure = try await copy.event("pairing_failure", timeout: 30)
        XCTAssertEqual(failure.int("reason"), 0x03, "Authentication Requirements")
        try await copy.event("done", timeout: 30)
        XCTAssertFalse(copy.events.contains { $0.name == "paired" })
        copy.stop()
        let kept = await manager.bondedDevices
        XCTAssertEqual(kept.map(\.localLongTermKey), [bonded.localLongTermKey], "the bond keeps its keys")

        // The original comes back and encrypts with the bond it kept.
        let again = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", own.description, "--keystore", keystore,
                                                                 "--encrypt-first"], address: victimAddress, environment: env)
        let encryption = try await again.event("encrypted", timeout: 30)
        XCTAssertEqual(encryption.bool("enabled"), true)
        try await again.event("done", timeout: 30)
        XCTAssertEqual(again.events.filter { $0.name == "read" }.compactMap { $0.string("value") }, ["encrypted"])
        again.stop()
        await manager.close()
    }
}

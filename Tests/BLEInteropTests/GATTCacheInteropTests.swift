import Foundation
import XCTest

/// Our GATT server and a bonded Bumble client across a server restart with a changed database
/// (Core spec Vol 3 Part G §2.5.2.1), over rootcanal. The server keeps the client's state with
/// its bond (the hash of the database it knew, its Client Supported Features, its CCCDs) and
/// restores it at connection: the client, change-unaware with robust caching enabled, is
/// answered Database Out Of Sync to a request sent before encryption, and is indicated Service
/// Changed (§7.1) once the link is encrypted.
final class GATTCacheInteropTests: XCTestCase {
    /// `ble serve PROFILE` with a bond store: it advertises as the store's identity address.
    final class BondedServe: BLEToolProcess, @unchecked Sendable {
        private(set) var address = ""

        init(profile: String, bonds: URL, environment: InteropEnvironment) throws {
            try super.init(["serve", profile, "--json", "--name", "Cache\(UInt32.random(in: 100_000...999_999))",
                            "--bonds", bonds.path, "--hci", environment.rootcanal])
            let ready = try waitFor("ready", timeout: 30)
            address = try XCTUnwrap(ready["address"] as? String, "\(ready)")
        }
    }

    func testABumbleClientOfAChangedDatabaseIsAnsweredOutOfSyncThenToldOfTheChange() throws {
        let env = try InteropEnvironment.current()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-gatt-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let bonds = dir.appendingPathComponent("bonds")
        let go = dir.appendingPathComponent("go")

        let before = try BondedServe(profile: "heart-rate", bonds: bonds, environment: env)
        addTeardownBlock { before.stop() }
        let client = try startPeer("caching_client.py", arguments: ["--target", before.address, "--probe", "2A00", "--go", go.path],
                                   environment: env)
        try client.waitForEvent("bonded", timeout: 60)
        _ = try before.waitFor("disconnected", timeout: 20)
        before.stop()

        // The same identity (from the bond store), another database.
        let after = try BondedServe(profile: "echo", bonds: bonds, environment: env)
        addTeardownBlock { after.stop() }
        XCTAssertEqual(after.address, before.address)
        try Data().write(to: go)

        let refused = try client.waitForEvent(matching: { $0.name == "read" || $0.name == "read_error" }, timeout: 30)
        XCTAssertEqual(refused.name, "read_error", "a change-unaware client's request before encryption: \(refused)")
        XCTAssertEqual(refused.int("code"), 0x12, "Database Out Of Sync (Vol 3 Part F §3.4.1.1)")
        let told = try client.waitForEvent(matching: { $0.name == "service_changed" || $0.name == "no_service_changed" }, timeout: 30)
        XCTAssertEqual(told.name, "service_changed", "\(told)")
        XCTAssertEqual(told.string("value"), "0100ffff", "the whole database")
        try client.waitForEvent("done", timeout: 20)
    }
}

import Foundation
import XCTest

/// `ble pair`, `ble bonds`, pairing options on `ble read` and `ble serve`, against Bumble over
/// rootcanal. Each test keeps its bonds in a directory of its own.
final class PairCommandInteropTests: XCTestCase {
    static let encrypted = "7e1f0103-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let authenticated = "7e1f0104-8d0b-4c1e-9a00-5b1e00c0ffee"
    static let testService = "8f3c0001-6c5a-4d2e-9b1f-2f0a1c3b4d5e"

    func bondsDirectory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    func json(_ line: Substring) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line))
    }

    func testPairJustWorksStoresABondThatReadEncryptsWithNextTime() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "none"], environment: env)
        let bonds = try bondsDirectory()
        let target = "\(peer.address)/random"
        let pair = try await BLETool.run(["pair", target, "--hci", env.rootcanal, "--bonds", bonds, "--json"], timeout: 60)
        XCTAssertTrue(pair.succeeded, "\(pair)")
        let outcome = try json(try XCTUnwrap(pair.stdout.split(separator: "\n").last))
        XCTAssertEqual(outcome["paired"] as? Bool, true)
        XCTAssertEqual(outcome["secureConnections"] as? Bool, true)
        XCTAssertEqual(outcome["method"] as? String, "justWorks")
        XCTAssertEqual(outcome["keySize"] as? Int, 16)
        XCTAssertEqual(outcome["bonded"] as? Bool, true)
        let paired = try await peer.event("paired", timeout: 30)

        // The bond is on disk: 0600 files in a 0700 directory.
        let attributes = try FileManager.default.attributesOfItem(atPath: bonds)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: bonds).filter { $0.hasSuffix(".bond") }
        XCTAssertEqual(files.count, 1)
        let fileAttributes = try FileManager.default.attributesOfItem(atPath: bonds + "/" + files[0])
        XCTAssertEqual((fileAttributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let list = try await BLETool.run(["bonds", "--bonds", bonds, "--json"])
        XCTAssertTrue(list.succeeded, "\(list)")
        let bond = try json(try XCTUnwrap(list.stdout.split(separator: "\n").first))
        XCTAssertNotNil(bond["peer"] as? String)
        // We paired with our stored identity address and distributed it: Bumble knows us by it.
        let identity = try String(contentsOfFile: bonds + "/identity", encoding: .utf8)
        let ours = try XCTUnwrap(identity.split(separator: "\n").first { $0.hasPrefix("address=") }).dropFirst("address=".count)
        XCTAssertEqual(paired.string("identity"), String(ours))
        XCTAssertEqual(bond["connectionAddress"] as? String, "\(peer.address)/random")
        XCTAssertEqual(bond["securityLevel"] as? Int, 2)

        // A second run reads the encrypted value: it reconnects with our identity address and
        // encrypts with the stored key; Bumble pairs only once.
        let read = try await BLETool.run(["read", target, Self.encrypted, "--hci", env.rootcanal, "--bonds", bonds], timeout: 60)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\"encrypted\" (9 bytes)")
        XCTAssertEqual(peer.events.filter { $0.name == "paired" }.count, 1, "no second pairing")

        let remove = try await BLETool.run(["bonds", "remove", try XCTUnwrap(bond["peer"] as? String), "--bonds", bonds])
        XCTAssertTrue(remove.succeeded, "\(remove)")
        let empty = try await BLETool.run(["bonds", "--bonds", bonds, "--json"])
        XCTAssertEqual(empty.stdout, "")
    }

    func testPairWithAPasskeyThenReadTheAuthenticatedValue() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "display", "--mitm", "--passkey", "123456"], environment: env)
        let bonds = try bondsDirectory()
        let target = "\(peer.address)/random"
        let pair = try await BLETool.run(["pair", target, "--hci", env.rootcanal, "--bonds", bonds, "--io", "keyboard", "--passkey", "123456", "--mitm"], timeout: 60)
        XCTAssertTrue(pair.succeeded, "\(pair)")
        XCTAssertTrue(pair.stdout.contains("method: Passkey Entry"), pair.stdout)
        XCTAssertTrue(pair.stdout.contains("security level: 4 (authenticated Secure Connections)"), pair.stdout)
        XCTAssertTrue(pair.stdout.contains("bond: stored in \(bonds)"), pair.stdout)
        let read = try await BLETool.run(["read", target, Self.authenticated, "--hci", env.rootcanal, "--bonds", bonds], timeout: 60)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\"authenticated\" (13 bytes)")
    }

    func testAKeyboardWithoutAPasskeyOrATerminalFailsClearly() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "display", "--mitm"], environment: env)
        let result = try await BLETool.run(["pair", "\(peer.address)/random", "--hci", env.rootcanal, "--bonds", try bondsDirectory(),
                                            "--io", "keyboard", "--json"], timeout: 60)
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("--passkey"), result.stderr)
        let outcome = try json(try XCTUnwrap(result.stdout.split(separator: "\n").last))
        XCTAssertEqual(outcome["paired"] as? Bool, false)
        XCTAssertEqual(outcome["reason"] as? Int, 0x01, "Passkey Entry Failed")
        try await peer.event("pairing_failure", timeout: 30)
    }

    /// A Bumble central against `ble serve test`: 0008 and 000a are refused before pairing with
    /// Insufficient Authentication, and read after a passkey pairing; serve logs the pairing.
    func testBumbleCentralPairsWithServeTest() async throws {
        let env = try InteropEnvironment.current()
        let serve = try ServeProcess(profile: "test", arguments: ["--io", "display", "--passkey", "654321", "--bonds", try bondsDirectory()],
                                     environment: env)
        defer { serve.stop() }
        let unpaired = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", serve.address.description,
                                                                    "--service", Self.testService, "--no-pair-first"], environment: env)
        try await unpaired.event("done", timeout: 30)
        let refused = unpaired.events.filter { $0.name == "read_error" }
        let refusedUUIDs = Set(refused.compactMap { $0.string("uuid") })
        XCTAssertTrue(refusedUUIDs.isSuperset(of: ["8f3c0008-6c5a-4d2e-9b1f-2f0a1c3b4d5e", "8f3c000a-6c5a-4d2e-9b1f-2f0a1c3b4d5e"]), "\(refused)")
        XCTAssertTrue(refused.allSatisfy { $0.int("code") == 0x05 || $0.int("code") == 0x02 }, "\(refused)")
        unpaired.stop()

        let central = try startPeer("pairing_peer.py", arguments: ["--role", "central", "--target", serve.address.description, "--service", Self.testService,
                                                                   "--io", "keyboard", "--mitm", "--passkey", "654321"], environment: env)
        try await central.event("paired", timeout: 30)
        try await central.event("done", timeout: 30)
        let values = Set(central.events.filter { $0.name == "read" }.compactMap { $0.string("value") })
        XCTAssertTrue(values.isSuperset(of: ["secret", "authenticated"]), "\(central.events)")
        let logged = try serve.waitFor("paired", timeout: 10)
        XCTAssertEqual(logged["method"] as? String, "passkey")
        XCTAssertEqual(logged["bonded"] as? Bool, true)
        central.stop()
    }

    /// Privacy on the command line: after `ble pair` with a Bumble peripheral that advertises with
    /// a new RPA after each connection, `ble scan` shows it by its identity and `ble read` reaches
    /// it by that identity, encrypting with the stored bond.
    func testScanShowsABondedPrivateDeviceByItsIdentityAndReadReachesIt() async throws {
        let env = try InteropEnvironment.current()
        let peer = try startPeer("pairing_peer.py", arguments: ["--io", "none", "--privacy", "--irk", "00112233445566778899aabbccddeeff"], environment: env)
        let first = try await peer.event("advertising", timeout: 30)
        let rpa = try XCTUnwrap(first.string("address"))
        let bonds = try bondsDirectory()
        let pair = try await BLETool.run(["pair", "\(rpa)/random", "--hci", env.rootcanal, "--bonds", bonds, "--json"], timeout: 60)
        XCTAssertTrue(pair.succeeded, "\(pair)")
        let paired = try json(try XCTUnwrap(pair.stdout.split(separator: "\n").last))
        XCTAssertEqual(paired["bonded"] as? Bool, true)
        let list = try await BLETool.run(["bonds", "--bonds", bonds, "--json"])
        let bond = try json(try XCTUnwrap(list.stdout.split(separator: "\n").first))
        let identity = "\(try XCTUnwrap(bond["peer"] as? String))/\(try XCTUnwrap(bond["type"] as? String))"
        try await peer.event("advertising", timeout: 30) { $0.string("address") != rpa }

        let scan = try await BLETool.run(["scan", "--json", "--timeout", "4", "--name", "BumbleLock", "--hci", env.rootcanal, "--bonds", bonds], timeout: 60)
        XCTAssertTrue(scan.succeeded, "\(scan)")
        let lines = try scan.stdout.split(separator: "\n").map(json)
        let seen = try XCTUnwrap(lines.first { $0["identity"] != nil }, scan.stdout)
        XCTAssertEqual("\(seen["identity"] as? String ?? "")/\(seen["identityType"] as? String ?? "")", identity)

        let read = try await BLETool.run(["read", identity, Self.encrypted, "--hci", env.rootcanal, "--bonds", bonds], timeout: 60)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\"encrypted\" (9 bytes)")
        XCTAssertEqual(peer.events.filter { $0.name == "paired" }.count, 1, "no second pairing")
    }
}

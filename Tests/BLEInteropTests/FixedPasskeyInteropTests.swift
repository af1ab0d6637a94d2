import Foundation
import XCTest

/// `ble serve --passkey` is single-use across restarts: a Bumble central that types the fixed
/// passkey pairs with the first run, and, with the same bonds directory, the restarted server
/// shows a random passkey instead, so a central typing the old one fails.
final class FixedPasskeyInteropTests: XCTestCase {
    func testARestartedServeDoesNotAcceptTheSamePasskeyAgain() async throws {
        let env = try InteropEnvironment.current()
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-passkey-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: bonds) }
        let options = ["--bonds", bonds, "--io", "display", "--passkey", "123456"]
        let typing = ["--role", "central", "--io", "keyboard", "--mitm", "--passkey", "123456"]

        let first = try ServeProcess(profile: "test", arguments: options, environment: env)
        let accepted = try startPeer("pairing_peer.py", arguments: typing + ["--target", first.address.description], environment: env)
        let paired = try await accepted.event("paired", timeout: 30)
        XCTAssertEqual(paired.bool("authenticated"), true)
        accepted.stop()
        first.stop()

        let second = try ServeProcess(profile: "test", arguments: options, environment: env)
        let refused = try startPeer("pairing_peer.py", arguments: typing + ["--target", second.address.description], environment: env)
        let failure = try await refused.event("pairing_failure", timeout: 30)
        XCTAssertEqual(failure.int("reason"), 0x04, "Confirm Value Failed: the server showed another passkey")
        XCTAssertFalse(refused.events.contains { $0.name == "paired" })
        refused.stop()
        second.stop()
    }
}

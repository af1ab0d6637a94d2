import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SIGUSR1 to the `ble` binary running `ble serve`: the test profile changes its database
/// (adds its toggled service after the last handle, then removes it) and logs each change; a
/// profile without a database change logs that and keeps serving. `--hci virtual` (an
/// in-process radio), so no rootcanal is needed.
final class ServeDatabaseChangeSignalTests: XCTestCase {
    func testSIGUSR1TogglesTheTestProfilesServiceAndEachChangeIsLogged() throws {
        let serve = try BLEToolProcess(["serve", "test", "--json", "--hci", "virtual"])
        try serve.waitFor("ready", timeout: 60)
        serve.signal(SIGUSR1)
        let added = try serve.waitFor("databaseChanged")
        XCTAssertEqual(added["added"] as? Bool, true, "\(added)")
        XCTAssertEqual(added["trigger"] as? String, "signal")
        XCTAssertEqual(added["signal"] as? String, "SIGUSR1")
        XCTAssertEqual(added["service"] as? String, "8f3c000c-6c5a-4d2e-9b1f-2f0a1c3b4d5e")
        // The test profile's last handle is 0x0026 (`ble write --signed`'s example in docs/CLI.md).
        XCTAssertEqual(added["start"] as? Int, 0x0027)
        XCTAssertEqual(added["end"] as? Int, 0x0029)

        serve.signal(SIGUSR1)
        let removed = try serve.waitFor("databaseChanged")
        XCTAssertEqual(removed["added"] as? Bool, false, "\(removed)")
        XCTAssertEqual(removed["start"] as? Int, 0x0027)
        XCTAssertEqual(removed["end"] as? Int, 0x0029)
        let hashes = [added["hash"] as? String, removed["hash"] as? String]
        XCTAssertEqual(hashes.compactMap { $0?.count }, [32, 32], "\(hashes)")
        XCTAssertNotEqual(hashes[0], hashes[1])
        XCTAssertEqual(serve.exitStatus, nil, "still serving")
        serve.stop()
        XCTAssertEqual(serve.exitStatus, 0)
    }

    func testSIGUSR1ToAProfileWithoutADatabaseChangeIsLoggedAndServingGoesOn() throws {
        let serve = try BLEToolProcess(["serve", "battery", "--json", "--hci", "virtual"])
        try serve.waitFor("ready", timeout: 60)
        serve.signal(SIGUSR1)
        let refused = try serve.waitFor("databaseChanged")
        XCTAssertEqual(refused["signal"] as? String, "SIGUSR1")
        XCTAssertNotNil(refused["error"] as? String, "\(refused)")
        XCTAssertEqual(serve.exitStatus, nil, "still serving")
        serve.stop()
        XCTAssertEqual(serve.exitStatus, 0)
    }
}

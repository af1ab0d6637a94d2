import Foundation
import XCTest

/// `ble serve PROFILE --json` running as a child process on the interop controller, with a fresh
/// static random address; `init` returns once it printed "ready".
///
/// Unless `arguments` name a bonds directory, it gets a fresh one of its own (under `$BLE_BONDS`,
/// which scripts/test.sh removes): a device of its own, with its own identity and bonds. Sharing
/// the run's directory made every served peripheral and every central of the tests one identity
/// (one IRK, one bond list), so a pairing could meet a bond an earlier test left for "itself",
/// and the host refuses a peer-started Just Works pairing over an existing bond.
final class ServeProcess: BLEToolProcess, @unchecked Sendable {
    let address: StaticRandomAddress

    init(profile: String, name: String = "SwiftPeer", arguments: [String] = [], environment: InteropEnvironment) throws {
        let address = InteropEnvironment.nextStaticRandomAddress()
        self.address = address
        var arguments = arguments
        if !arguments.contains("--bonds") {
            let parent = ProcessInfo.processInfo.environment["BLE_BONDS"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.temporaryDirectory
            let own = parent.appendingPathComponent("serve-\(UUID().uuidString)")
            arguments += ["--bonds", own.path]
        }
        try super.init(["serve", profile, "--json", "--name", name, "--address", address.description, "--hci", environment.rootcanal] + arguments)
        try waitFor("ready", timeout: 30)
    }
}

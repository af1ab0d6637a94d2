import Foundation
import XCTest

/// `ble serve PROFILE --json` running as a child process on the interop controller, with a fresh
/// static random address; `init` returns once it printed "ready".
final class ServeProcess: BLEToolProcess, @unchecked Sendable {
    let address: StaticRandomAddress

    init(profile: String, name: String = "SwiftPeer", arguments: [String] = [], environment: InteropEnvironment) throws {
        let address = InteropEnvironment.nextStaticRandomAddress()
        self.address = address
        try super.init(["serve", profile, "--json", "--name", name, "--address", address.description, "--hci", environment.rootcanal] + arguments)
        try waitFor("ready", timeout: 30)
    }
}

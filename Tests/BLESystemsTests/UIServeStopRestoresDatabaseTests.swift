import BLE
import BLEHTTP
import BLEVirtual
import BLESystems
import BLEWire
import Foundation
import XCTest

/// `ble ui`'s /serve Stop leaves the database as it was before the start: also without a service
/// the running profile added itself (`ble serve test`'s database change, on a central's
/// `db-change` write), which a stop that removed only what the install added left behind, for
/// the next profile started to serve.
final class UIServeStopRestoresDatabaseTests: XCTestCase {
    func testStoppingTheTestProfileInTheUIRemovesTheToggledServiceToo() async throws {
        let (before, during, after) = try await VirtualWorld.run { world in
            let (ui, _) = try await world.addCentral()
            let app = UIServeApp(central: ui, token: "t")
            let database = PeripheralManager(sharingControllerWith: ui)
            let before = await database.services.map(\.uuid)
            let started = await UIServeAppTests.post(app, "/api/serve/start", #"{"profile": "test", "name": "UITest"}"#)
            let running = try XCTUnwrap(started.json["running"] as? [String: Any], "\(started.json)")
            let address = try XCTUnwrap(DeviceAddress(string: "\(running["address"] as? String ?? "")/\(running["addressType"] as? String ?? "")"))
            let (other, _) = try await world.addCentral()
            let peripheral = try await other.connect(address, timeout: .seconds(10))
            let writeOnly = try await peripheral.characteristic(TestServeProfile.writeOnly)
            try await peripheral.writeValue(Array("db-change".utf8), for: try XCTUnwrap(writeOnly))
            for _ in 0..<50 where !(await database.services.contains { $0.uuid == TestServeProfile.toggledService }) {
                try await world.clock.sleep(for: .milliseconds(100))
            }
            let during = await database.services.map(\.uuid)
            _ = await UIServeAppTests.post(app, "/api/serve/stop", "")
            let after = await database.services.map(\.uuid)
            await app.stop()
            await other.close()
            await ui.close()
            return (before, during, after)
        }
        XCTAssertTrue(during.contains(TestServeProfile.toggledService), "the write added the toggled service: \(during)")
        XCTAssertEqual(after, before, "stopping leaves the database as it was before the start")
    }
}

import BLE
import BLEHTTP
import BLETestSupport
import BLEVirtual
import BLESystems
import XCTest

/// The serve screen's log starts with "ready" on Swift's default executors too (real time, as
/// `ble ui` runs): the profile's events, buffered since before advertising started, wait behind
/// a gate until "ready" is logged. In a one-thread virtual-time world the events task could never
/// run first, so this test runs where it can; without the gate "advertising" came first in
/// about one start in sixty.
final class UIServeReadyFirstTests: XCTestCase {
    func testEveryStartsLogBeginsWithReadyOnTheDefaultExecutors() async throws {
        let world = VirtualWorld(clock: SystemClock(), airTimeModel: false)
        let (ui, _) = try await world.addCentral()
        let app = UIServeApp(central: ui, token: "t")
        var firsts: [String] = []
        for _ in 0..<40 {
            let started = await UIServeAppTests.post(app, "/api/serve/start", #"{"profile": "battery"}"#)
            XCTAssertNotNil(started.json["running"] as? [String: Any], "\(started.json)")
            // A page opened now gets the log so far, "advertising" included once it is logged.
            let page = try await UIServeAppTests.Page(app, world: world)
            await page.waitForLog("the page's log to show advertising", within: .seconds(20)) { $0.contains("advertising") }
            firsts.append(page.logged.first ?? "none")
            page.task.cancel()
            _ = await UIServeAppTests.post(app, "/api/serve/stop", "")
        }
        await app.stop()
        await ui.close()
        await world.radio.shutdown()
        XCTAssertEqual(firsts.filter { $0 != "ready" }, [], "\(firsts)")
    }
}

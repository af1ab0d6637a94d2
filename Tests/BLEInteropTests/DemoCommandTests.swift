import Foundation
import XCTest

/// `ble demo`, the README's first command: needs nothing attached and nothing installed.
final class DemoCommandTests: XCTestCase {
    func testDemoRunsBothRolesOnTheVirtualRadio() throws {
        let result = try BLETool.run(["demo"], timeout: 120)
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = result.stdout
        for expected in [
            "found       HRM", "found       Battery", "found       TestDevice",
            "read        Body Sensor Location = Chest",
            "notified    Heart Rate Measurement",
            "read        Battery Level = 100 %",
            "read long   512 bytes",
            "read back equal",
            "refused     encrypted value: GATT: ATT error Insufficient Authentication (0x05)",
            "indicated   counter 02000000 (confirmed)",
            "done: 3 peripherals found",
        ] {
            XCTAssertTrue(out.contains(expected), "missing \"\(expected)\" in:\n\(out)")
        }
        XCTAssertLessThan(result.duration, 60, "the demo takes seconds")
    }
}

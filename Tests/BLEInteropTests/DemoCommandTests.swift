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
            "of virtual radio time in",
        ] {
            XCTAssertTrue(out.contains(expected), "missing \"\(expected)\" in:\n\(out)")
        }
        XCTAssertLessThan(result.duration, 60, "the demo takes seconds")
    }

    /// `--hci virtual`: every command gets an in-process radio with the demo peripherals on it.
    func testVirtualHCIGivesEveryCommandTheDemoDevices() throws {
        let scan = try BLETool.run(["scan", "--hci", "virtual", "--timeout", "1.5", "--json"], timeout: 60)
        XCTAssertTrue(scan.succeeded, "\(scan)")
        for name in ["HRM", "Battery", "TestDevice"] {
            XCTAssertTrue(scan.stdout.contains("\"name\":\"\(name)\""), "missing \(name) in:\n\(scan.stdout)")
        }
        let read = try BLETool.run(["read", "00:5A:B1:00:00:02", "2A19", "--json"], environment: ["BLE_HCI": "virtual"], timeout: 60)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertTrue(read.stdout.contains("\"hex\":\"64\""), read.stdout)
    }

    /// With neither --hci nor BLE_HCI and no Linux adapter, the error lists every choice.
    func testWithoutAControllerTheErrorListsTheChoices() throws {
        let adapters = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? []
        try XCTSkipUnless(adapters.isEmpty, "this machine has Bluetooth adapters: \(adapters)")
        let result = try BLETool.run(["scan", "--timeout", "1"], environment: ["BLE_HCI": ""], timeout: 60)
        XCTAssertEqual(result.status, 1, "\(result)")
        for choice in ["virtual", "tcp:HOST:PORT", "serial:PATH", "hciN", "ble demo"] {
            XCTAssertTrue(result.stderr.contains(choice), "missing \(choice) in: \(result.stderr)")
        }
    }
}

import Foundation
import XCTest

/// `ble demo`, the README's first command: needs nothing attached and nothing installed.
final class DemoCommandTests: XCTestCase {
    func testDemoRunsBothRolesOnTheVirtualRadio() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("demo-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try BLETool.run(["demo", "--output", directory], timeout: 120)
        XCTAssertTrue(result.succeeded, "\(result)")
        let out = result.stdout
        for expected in [
            "found       EchoServer", "found       M5Stack", "found       HRM", "found       BLE001",
            "echo        You said: hello from the demo",
            "identical to the original",
            "6 read           e3737b3f-a08d-405b-b32d-35a8f6c64c5d: 48656c6c6f20576f726c64 \"Hello World\"",
            "7 wrote          e3737b3f-a08d-405b-b32d-35a8f6c64c5d: 5772697465204461746120303432 \"Write Data 042\"",
            "9 notification   #2",
            "location    Chest",
            "measurement 60 bpm",
            "sample      x",
            "done: 6 peripherals found",
            "of virtual radio time in",
        ] {
            XCTAssertTrue(out.contains(expected), "missing \"\(expected)\" in:\n\(out)")
        }
        XCTAssertLessThan(result.duration, 60, "the demo takes seconds")
        let original = try Data(contentsOf: URL(fileURLWithPath: directory + "/demo-image.ppm"))
        let received = try Data(contentsOf: URL(fileURLWithPath: directory + "/received-image.ppm"))
        XCTAssertEqual(received, original, "the image came back byte for byte")
        XCTAssertEqual(out.components(separatedBy: "\nsample      x").count - 1, 5, "five accelerometer samples")
    }

    /// `--hci virtual`: every command gets an in-process radio with the demo peripherals on it.
    func testVirtualHCIGivesEveryCommandTheDemoDevices() throws {
        let scan = try BLETool.run(["scan", "--hci", "virtual", "--timeout", "1.5", "--json"], timeout: 60)
        XCTAssertTrue(scan.succeeded, "\(scan)")
        for name in ["EchoServer", "M5Stack", "HRM", "BLE001", "Battery", "TestDevice"] {
            XCTAssertTrue(scan.stdout.contains("\"name\":\"\(name)\""), "missing \(name) in:\n\(scan.stdout)")
        }
        let read = try BLETool.run(["read", "00:5A:B1:00:00:05", "2A19", "--json"], environment: ["BLE_HCI": "virtual"], timeout: 60)
        XCTAssertTrue(read.succeeded, "\(read)")
        XCTAssertTrue(read.stdout.contains("\"hex\":\"64\""), read.stdout)
    }

    /// The virtual radio's demo peripherals forget their bonds at exit, so `--hci virtual` keeps
    /// its bonds in memory even with BLE_BONDS set: a read of the encrypted characteristic pairs
    /// in each run and succeeds each time, where a bond stored by the first run would make the
    /// second one's encryption fail (the peer has no key, HCI status 0x06).
    func testVirtualRadioBondsDoNotOutliveTheRun() throws {
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("virtual-bonds-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: bonds) }
        let encrypted = "8f3c0008-6c5a-4d2e-9b1f-2f0a1c3b4d5e"
        for run in 1...2 {
            let read = try BLETool.run(["read", "00:5A:B1:00:00:06/public", encrypted, "--hci", "virtual", "--json"],
                                       environment: ["BLE_BONDS": bonds], timeout: 60)
            XCTAssertTrue(read.succeeded, "run \(run): \(read)")
            XCTAssertTrue(read.stdout.contains(#""utf8":"secret""#), "run \(run): \(read.stdout)")
        }
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: bonds)) ?? []
        XCTAssertEqual(stored, [], "nothing written to BLE_BONDS for the virtual radio")
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

import BLERuntime
import XCTest
@testable import BLETransport

final class TransportSpecTests: XCTestCase {
    func testGoodSpecs() throws {
        let cases: [(String, TransportSpec)] = [
            ("tcp:127.0.0.1:6402", .tcp(host: "127.0.0.1", port: 6402)),
            ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
            ("tcp:[::1]:6402", .tcp(host: "::1", port: 6402)),
            ("tcp:[fe80::1%eth0]:65535", .tcp(host: "fe80::1%eth0", port: 65535)),
            ("serial:/dev/ttyUSB0", .serial(path: "/dev/ttyUSB0", baud: 1_000_000, rtscts: false)),
            ("serial:/dev/ttyACM1@115200", .serial(path: "/dev/ttyACM1", baud: 115_200, rtscts: false)),
            ("serial:/dev/ttyUSB0@3000000,rtscts", .serial(path: "/dev/ttyUSB0", baud: 3_000_000, rtscts: true)),
            ("serial:/dev/ttyUSB0@4000000", .serial(path: "/dev/ttyUSB0", baud: 4_000_000, rtscts: false)),
            ("hci0", .hciUserChannel(index: 0)),
            ("hci12", .hciUserChannel(index: 12)),
            ("hci:3", .hciUserChannel(index: 3)),
            ("virtual", .virtual),
            ("virtual:4.0", .virtualProfile("4.0")),
            ("virtual:default", .virtualProfile("default")),
            ("  hci1 ", .hciUserChannel(index: 1)),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(try TransportSpec.parse(text), expected, text)
        }
    }

    func testDescriptionRoundTrips() throws {
        for text in ["tcp:127.0.0.1:6402", "tcp:[::1]:7", "serial:/dev/ttyUSB0@1000000",
                     "serial:/dev/x@115200,rtscts", "hci2", "virtual", "virtual:5.0"] {
            let spec = try TransportSpec.parse(text)
            XCTAssertEqual(spec.description, text)
            XCTAssertEqual(try TransportSpec.parse(spec.description), spec)
        }
    }

    func testBadSpecsSayWhatIsExpected() {
        let cases: [(String, String)] = [
            ("", "expected one of"),
            ("usb:0", "expected one of: tcp:HOST:PORT"),
            ("tcp:127.0.0.1", "expected tcp:HOST:PORT"),
            ("tcp::6402", "missing host"),
            ("tcp:127.0.0.1:0", "port must be a number 1...65535"),
            ("tcp:127.0.0.1:70000", "port must be a number 1...65535"),
            ("tcp:127.0.0.1:http", "port must be a number"),
            ("tcp:::1:6402", "IPv6 addresses need brackets"),
            ("tcp:[::1:6402", "unclosed '['"),
            ("tcp:[::1]6402", "expected ':PORT' after ']'"),
            ("serial:", "missing device path"),
            ("serial:/dev/ttyUSB0@fast", "expected serial:PATH@BAUD with a number"),
            ("serial:/dev/ttyUSB0@123456", "unsupported baud rate 123456"),
            ("serial:/dev/ttyUSB0@115200,parity", "unknown serial option 'parity'"),
            ("hci", "expected hciN or hci:N"),
            ("hcix", "expected hciN or hci:N"),
            ("hci:-1", "expected hciN or hci:N"),
            ("hci99999", "expected hciN or hci:N"),
            ("virtual:", "expected virtual:PROFILE"),
            ("virtual:4 0", "expected virtual:PROFILE"),
        ]
        for (text, fragment) in cases {
            XCTAssertThrowsError(try TransportSpec.parse(text), text) { error in
                guard let e = error as? TransportError else { return XCTFail("\(text): \(error)") }
                XCTAssertEqual(e.kind, .invalidSpec, text)
                XCTAssertTrue(e.message.contains(fragment), "\(text): '\(e.message)' lacks '\(fragment)'")
                XCTAssertTrue(e.message.contains("'\(text)'"), "\(text): message should quote the input: \(e.message)")
            }
        }
    }

    func testFromEnvironment() throws {
        XCTAssertNil(try TransportSpec.fromEnvironment([:]))
        XCTAssertNil(try TransportSpec.fromEnvironment(["BLE_HCI": " "]))
        XCTAssertEqual(try TransportSpec.fromEnvironment(["BLE_HCI": "tcp:127.0.0.1:6402"]), .tcp(host: "127.0.0.1", port: 6402))
        XCTAssertThrowsError(try TransportSpec.fromEnvironment(["BLE_HCI": "bogus"])) { error in
            XCTAssertTrue((error as? TransportError)?.message.hasPrefix("BLE_HCI: ") == true, "\(error)")
        }
    }

    func testVirtualIsNotAvailableHere() async {
        do {
            _ = try await openTransport(.virtual)
            XCTFail("virtual opened")
        } catch let e as TransportError {
            XCTAssertEqual(e.kind, .notAvailable)
            XCTAssertTrue(e.message.contains("not available in this build"), e.message)
        } catch {
            XCTFail("\(error)")
        }
    }
}

import BLE
import XCTest

/// `TransportSpec` comes with `import BLE` alone: the spec strings `TransportFactory.open(spec:)`
/// and `BLE_HCI` take are parsed and printed back.
final class TransportSpecExportTests: XCTestCase {
    func testSpecsParseAndPrintWithImportBLEAlone() throws {
        XCTAssertEqual(try TransportSpec.parse("tcp:127.0.0.1:6402"), .tcp(host: "127.0.0.1", port: 6402))
        XCTAssertEqual(try TransportSpec.parse("tcp:[::1]:6402").description, "tcp:[::1]:6402")
        XCTAssertEqual(try TransportSpec.parse("serial:/dev/ttyUSB0"),
                       .serial(path: "/dev/ttyUSB0", baud: TransportSpec.defaultBaud, rtscts: false))
        XCTAssertEqual(try TransportSpec.parse("hci:1"), .hciUserChannel(index: 1))
        XCTAssertEqual(try TransportSpec.parse("virtual"), .virtual)
        XCTAssertEqual(TransportSpec.environmentVariable, "BLE_HCI")
        XCTAssertThrowsError(try TransportSpec.parse("usb:0")) { error in
            XCTAssertEqual((error as? TransportError)?.kind, .invalidSpec)
        }
    }
}

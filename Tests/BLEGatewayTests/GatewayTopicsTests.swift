import BLEGateway
import BLEWire
import XCTest

final class GatewayTopicsTests: XCTestCase {
    func testTopicsAreUnderPrefixAndName() throws {
        let t = try GatewayTopics(prefix: "home/ble", name: "kitchen")
        XCTAssertEqual(t.status, "home/ble/kitchen/status")
        XCTAssertEqual(t.statistics, "home/ble/kitchen/status/stats")
        XCTAssertEqual(t.commands, "home/ble/kitchen/cmd")
        XCTAssertEqual(t.replies, "home/ble/kitchen/reply")
        let a = try XCTUnwrap(BDAddress(string: "C0:11:22:33:44:55"))
        XCTAssertEqual(t.advertisement(a), "home/ble/kitchen/adv/C0:11:22:33:44:55")
        XCTAssertEqual(t.value(a, "2A37"), "home/ble/kitchen/dev/C0:11:22:33:44:55/2A37")
    }

    func testWildcardsAndBrokerTopicsAreRefused() {
        for name in ["", "a/b", "a+", "#", "$SYS", "a\u{0}b"] {
            XCTAssertThrowsError(try GatewayTopics(prefix: "ble", name: name), name)
        }
        for prefix in ["", "a//b", "a/+", "$SYS/x", "/ble"] {
            XCTAssertThrowsError(try GatewayTopics(prefix: prefix, name: "g"), prefix)
        }
    }

    func testResponseTopicsUnderThePrefixAreRefused() throws {
        let t = try GatewayTopics(prefix: "ble", name: "g1")
        XCTAssertTrue(t.allowsResponseTopic("clients/42/reply"))
        XCTAssertFalse(t.allowsResponseTopic("ble/g2/status"))
        XCTAssertFalse(t.allowsResponseTopic("ble"))
        XCTAssertFalse(t.allowsResponseTopic("a/+/b"))
        XCTAssertFalse(t.allowsResponseTopic("$SYS/x"))
        XCTAssertFalse(t.allowsResponseTopic(String(repeating: "a", count: 300)))
        XCTAssertTrue(t.allowsResponseTopic("blex/reply"))
    }
}

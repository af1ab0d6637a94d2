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

    func testResponseTopicsOnlyUnderTheReplyRoot() throws {
        let t = try GatewayTopics(prefix: "ble", name: "g1")
        XCTAssertEqual(t.replyRoot, "ble-reply")
        XCTAssertTrue(t.allowsResponseTopic("ble-reply/42"))
        XCTAssertTrue(t.allowsResponseTopic("ble-reply/clients/42/reply"))
        for refused in ["clients/42/reply", "ble/g2/status", "ble", "ble-reply", "ble-reply/", "ble-reply/+", "ble-reply/a/#",
                        "$SYS/x", "ble-replyx/1", "ble-reply/" + String(repeating: "a", count: 300), "ble-reply/a\u{0}b"] {
            XCTAssertFalse(t.allowsResponseTopic(refused), refused)
        }
    }

    func testDotNamesAndControlCharactersAreRefused() {
        for name in [".", "..", "a\u{7F}", "a\u{85}b", "a\u{202E}b"] {
            XCTAssertThrowsError(try GatewayTopics(prefix: "ble", name: name), name)
        }
        XCTAssertThrowsError(try GatewayTopics(prefix: "ble/..", name: "g"))
        XCTAssertNoThrow(try GatewayTopics(prefix: "ble", name: "a.b"))
    }
}

import XCTest
import BLEWire
@testable import BLEHost

/// The basic L2CAP header. Core spec Vol 3 Part A §3.1.
final class L2CAPFrameTests: XCTestCase {
    func testDecodeATTFrame() throws {
        // ATT Exchange MTU Request (MTU 23) on CID 0x0004.
        let frame = try L2CAPFrame(bytes: [0x03, 0x00, 0x04, 0x00, 0x02, 0x17, 0x00])
        XCTAssertEqual(frame.channelID, L2CAPChannel.att)
        XCTAssertEqual(try L2CAPFrame.decode([0x03, 0x00, 0x04, 0x00, 0x02, 0x17, 0x00]), frame)
        XCTAssertEqual(frame.payload, [0x02, 0x17, 0x00])
    }

    func testEncode() {
        let frame = L2CAPFrame(channelID: L2CAPChannel.leSignaling, payload: [0x13, 0x01, 0x02, 0x00, 0x00, 0x00])
        XCTAssertEqual(frame.encode(), [0x06, 0x00, 0x05, 0x00, 0x13, 0x01, 0x02, 0x00, 0x00, 0x00])
        XCTAssertEqual(L2CAPFrame(channelID: L2CAPChannel.smp, payload: []).encode(), [0x00, 0x00, 0x06, 0x00])
        XCTAssertEqual(try L2CAPFrame(bytes: frame.encode()), frame)
    }

    func testFixedChannelIDs() {
        XCTAssertEqual(L2CAPChannel.att, 0x0004)
        XCTAssertEqual(L2CAPChannel.leSignaling, 0x0005)
        XCTAssertEqual(L2CAPChannel.smp, 0x0006)
        XCTAssertTrue(L2CAPChannel.dynamicRange.contains(0x0040))
        XCTAssertEqual(L2CAPChannel.name(0x0040), "CID 0x0040")
        XCTAssertEqual(L2CAPChannel.name(L2CAPChannel.att), "ATT")
        XCTAssertEqual(L2CAPFrame(channelID: 0x0005, payload: [0xAB]).description, "L2CAP[LE signaling] ab")
    }

    func testLengthMismatchThrows() {
        XCTAssertThrowsError(try L2CAPFrame(bytes: [0x03, 0x00, 0x04, 0x00, 0x02, 0x17])) { error in
            XCTAssertEqual((error as? WireError)?.kind, .truncated(needed: 3, remaining: 2))
        }
        XCTAssertThrowsError(try L2CAPFrame(bytes: [0x01, 0x00, 0x04, 0x00, 0x02, 0x17])) { error in
            XCTAssertEqual((error as? WireError)?.kind, .invalidValue)
        }
        XCTAssertThrowsError(try L2CAPFrame(bytes: [0x00, 0x00, 0x04]))
        XCTAssertThrowsError(try L2CAPFrame(bytes: []))
    }

    func testPDULengthFromPrefix() {
        XCTAssertNil(L2CAPFrame.pduLength(prefix: [UInt8]()))
        XCTAssertNil(L2CAPFrame.pduLength(prefix: [0x1B]))
        XCTAssertEqual(L2CAPFrame.pduLength(prefix: [0x1B, 0x00]), 31)
        XCTAssertEqual(L2CAPFrame.pduLength(prefix: [0x1B, 0x00, 0x04, 0x00, 0x01][...]), 31)
        XCTAssertEqual(L2CAPFrame.pduLength(prefix: [0xFF, 0xFF]), 65539)
    }

    func testEveryPrefixDecodesWithoutTrapping() {
        let bytes: [UInt8] = [0x05, 0x00, 0x04, 0x00, 0x0A, 0x01, 0x00, 0xFF, 0xFF]
        for end in 0...bytes.count {
            _ = try? L2CAPFrame(bytes: Array(bytes[..<end]))
        }
    }
}

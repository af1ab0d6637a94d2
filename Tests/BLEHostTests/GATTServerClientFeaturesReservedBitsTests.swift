import XCTest
import BLEWire
@testable import BLEHost

/// Client Supported Features (Core spec Vol 3 Part G §7.2, Table 7.6) keeps only its defined
/// bits: bit 0 Robust Caching, bit 1 Enhanced ATT bearer, bit 2 Multiple Handle Value
/// Notifications. Every other bit, of the first octet and of any octet after it, is reserved for
/// future use: the server processes it as 0, so it is neither kept nor read back, and a write
/// that clears it clears nothing the client set. The database is the fixture's: Client
/// Supported Features at 0x000B.
final class GATTServerClientFeaturesReservedBitsTests: XCTestCase {
    func testReservedBitsOfTheFirstOctetAreNotKept() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 0b00 ff", "S: 13",
            "C: 0a 0b00", "S: 0b 07",
        ])
        XCTAssertEqual(h.server.clientSupportedFeatures, [0x07])
        XCTAssertEqual(h.events, [.valueWritten(handle: 0x0B, value: [0x07])])
    }

    func testOctetsAfterTheFirstAreNotKept() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 0b00 01ffff", "S: 13",
            "C: 0a 0b00", "S: 0b 01",
        ])
        XCTAssertEqual(h.server.clientSupportedFeatures, [0x01])
    }

    /// A write that sets no defined bit at all reads back as the default, 0.
    func testOnlyReservedBitsWrittenReadsBackAsZero() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 0b00 f8", "S: 13",
            "C: 0a 0b00", "S: 0b 00",
        ])
        XCTAssertFalse(h.server.robustCachingEnabled)
        XCTAssertFalse(h.server.clientSupportsEnhancedATT)
        XCTAssertFalse(h.server.multipleNotificationsEnabled)
    }

    /// Clearing reserved bits, in the first octet or after it, is not clearing a bit the
    /// client set: the write is accepted.
    func testClearingReservedBitsIsAccepted() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 0b00 09", "S: 13",
            "C: 12 0b00 01", "S: 13",
            "C: 12 0b00 0180", "S: 13",
            "C: 12 0b00 01", "S: 13",
            "C: 0a 0b00", "S: 0b 01",
        ])
        XCTAssertEqual(h.server.clientSupportedFeatures, [0x01])
    }

    /// The defined bits stay protected: a write that clears one is Value Not Allowed (0x13),
    /// also when it sets reserved bits, and also when it is shorter than the value.
    func testClearingADefinedBitIsStillRefused() {
        var h = GATTServerHarness()
        h.run([
            "C: 12 0b00 07", "S: 13",
            "C: 12 0b00 fb", "S: 01 12 0b00 13",
            "C: 12 0b00 03", "S: 01 12 0b00 13",
            "C: 12 0b00", "S: 01 12 0b00 13",
            "C: 0a 0b00", "S: 0b 07",
        ])
        XCTAssertEqual(h.server.clientSupportedFeatures, [0x07])
    }

    /// A queued write (§3.4.6) is judged on the value it makes as a whole: reserved bits in a
    /// second segment are dropped as in a single write.
    func testQueuedWriteKeepsOnlyDefinedBits() {
        var h = GATTServerHarness()
        h.run([
            "C: 16 0b00 0000 05", "S: 17 0b00 0000 05",
            "C: 16 0b00 0100 ff", "S: 17 0b00 0100 ff",
            "C: 18 01", "S: 19",
            "C: 0a 0b00", "S: 0b 05",
        ])
        XCTAssertEqual(h.server.clientSupportedFeatures, [0x05])
    }

    /// Before any write the value reads as one octet of 0 (§7.2: every bit's default), so a
    /// queued write may start after it; what it writes there is reserved and not kept.
    func testTheUnwrittenValueIsOneOctetLong() {
        var h = GATTServerHarness()
        h.run([
            "C: 0a 0b00", "S: 0b 00",
            "C: 16 0b00 0100 ff", "S: 17 0b00 0100 ff",
            "C: 18 01", "S: 19",
            "C: 0a 0b00", "S: 0b 00",
        ])
    }

    /// The bits robust caching, Enhanced ATT and Multiple Handle Value Notifications read.
    func testTheFeatureFlagsFollowTheDefinedBits() {
        var h = GATTServerHarness()
        h.run(["C: 12 0b00 fd", "S: 13"])
        XCTAssertTrue(h.server.robustCachingEnabled)
        XCTAssertFalse(h.server.clientSupportsEnhancedATT)
        XCTAssertTrue(h.server.multipleNotificationsEnabled)
        h.run(["C: 12 0b00 07", "S: 13"])
        XCTAssertTrue(h.server.clientSupportsEnhancedATT)
    }

    /// A bond stored with reserved bits (by an earlier version that kept them) restores only
    /// the defined ones, so the client may write its value without them.
    func testRestoredFeaturesKeepOnlyDefinedBits() {
        var h = GATTServerHarness()
        h.server.restoreClientSupportedFeatures([0xF9, 0xFF])
        XCTAssertEqual(h.server.clientSupportedFeatures, [0x01])
        h.run([
            "C: 12 0b00 01", "S: 13",
            "C: 12 0b00 00", "S: 01 12 0b00 13",
            "C: 0a 0b00", "S: 0b 01",
        ])
    }
}

import XCTest
import BLEFuzzTargets

/// Inputs of the `scan-aggregator` fuzz target kept as they were found, replayed through the
/// target itself, so its model of the aggregator and the aggregator stay in agreement on them.
final class ScanAggregatorTargetReplayTests: XCTestCase {
    /// A scan response from C0:00:00:00:00:01/random with no advertisement (0.14 s), ageing
    /// with a 60 ms limit at 2.69 s, then an ADV_DIRECT_IND from that address with no data at
    /// 4.45 s. The aggregator drops the lone response when it ages out, unreported (it had no
    /// device to report); the target's model kept it and expected it merged into the new
    /// device. Found by `scripts/fuzz.sh all 30` (`scan-aggregator-crash-f37c05b3`).
    func testALoneScanResponseAgedOutIsNotMergedIntoALaterAdvertisement() {
        let input: [UInt8] = [
            0x07, 0x08, 0x07, 0x08, 0x01, 0x02, 0x03, 0x02, 0x01, 0x07, 0x7D, 0xB0, 0x07, 0x08,
            0x01, 0x02, 0x07, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0x03, 0xB0, 0x07, 0x00, 0x00,
        ]
        let violations = FuzzSmoke.replay(target: "scan-aggregator", inputs: [input])
        XCTAssertEqual(violations?.count, 0, "\(violations?.messages ?? [])")
    }
}

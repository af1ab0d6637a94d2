import XCTest
import BLEFuzzTargets
import BLETestSupport

/// Inputs on which libFuzzer found a fuzz target's invariant broken (`scripts/fuzz.sh`), replayed
/// through the same target so each stays fixed. Each names the target, what broke, and the fix.
final class FuzzFindingTests: XCTestCase {
    private func assertClean(_ target: String, _ input: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        guard let violations = FuzzSmoke.replay(target: target, inputs: [input]) else {
            return XCTFail("no fuzz target named \(target)", file: file, line: line)
        }
        XCTAssertEqual(violations.count, 0, "\(target): \(violations.messages)", file: file, line: line)
    }

    /// `hci-event`: a Number Of Completed Packets event with Num_Handles 255 in 1,043 octets of
    /// parameters decoded through `HCIEvent.decode(code:parameters:)`, and its encoding (63
    /// entries, all one length byte holds) decoded to another event. An event's parameters are
    /// at most 255 octets (Core v5.4 Vol 4 Part E §5.4.4), so such input is now refused.
    func testHCIEventWithParametersPastTheLengthByteIsRefused() {
        let input = hexBytes("""
            13ffffffffffffffffffff75007218fffffffffffffffffffffffffffffffffffffffffdffffffffffffffffffffffff
            ffc500ffffc500ffffffffffffffffffffffffffffffffffffffffffffffffffb1b1b1b1b1b177777777777777777777
            777777777777777777777777777777777777777777777777777777777777777777777777ffffffffffffffffffc500ff
            ffc500ffffffffffffffffffffffffffffffffffffffffffffffffffb1b1b1b1b1b17777777777777777777777777777
            77777777777777777777777777777777777777777777777777777777777777777777b1b1b1b1b1b1b1b1b1b1b1b1b1b1
            b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b13e0c06030d000000000cb1b1ffffffffffffffffffffffffffffffffffff
            ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
            ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
            ffffffffffffffffffffffb1b1b1b1b1b1b1b1b1b1b1b1ff09bc40000000000000000000000000000000000000000000
            0000000000000000000000000000000000000000000000000000000000000000000000000000000000002a0000000000
            00000000020000000000000000000000000000000000000000003e0c06030d000000000c04260d0500007777b1b1b1b1
            b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b13e0c06030d000000000cb1b1ffffffffffffffff
            ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
            ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
            ffffffffffffffffffffffffffffffffffffffffffb1b1b1b1b1b1b1b1b1b1b1b1ff09bc400000000000000000000000
            000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
            000000002a000000000000000000020000000000000000000000000000000000000000003e0c06030d000000000c0426
            0d0500000000000000000000ffffffffffffffffffffffffffffffffffffffffffffffb1b1b1b1b1b1b1b1b1b1b1b1b1
            b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1ff09bc400000000000
            000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
            0000000000000000000000000400000000000000000200260d0000000000000000000000000000000000000000000000
            000000000000000000000000000000000000000000000000000000000005000004640000
            """.split(separator: "\n").joined(separator: " "))
        XCTAssertEqual(input.count, 1_044)
        assertClean("hci-event", input)
    }

    /// `scan-aggregator`: a scan response from C0:00:00:00:00:01/random with no advertisement
    /// (0.14 s), ageing with a 60 ms limit at 2.69 s, then an ADV_DIRECT_IND from that address
    /// with no data at 4.45 s. The aggregator drops the lone response when it ages out,
    /// unreported (it had no device to report); the target's model kept it and expected it
    /// merged into the new device. The model now forgets every address ageing removes.
    func testALoneScanResponseAgedOutIsNotMergedIntoALaterAdvertisement() {
        assertClean("scan-aggregator", [
            0x07, 0x08, 0x07, 0x08, 0x01, 0x02, 0x03, 0x02, 0x01, 0x07, 0x7D, 0xB0, 0x07, 0x08,
            0x01, 0x02, 0x07, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0x03, 0xB0, 0x07, 0x00, 0x00,
        ])
    }
}

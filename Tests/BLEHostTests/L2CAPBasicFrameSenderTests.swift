import BLEHCI
@testable import BLEHost
import BLETestSupport
import BLEWire
import XCTest

/// `ACLFlowController.enqueueBasicFrame`: an L2CAP basic frame (Core spec Vol 3 Part A §3.1)
/// leaves as the ACL fragments of the encoded frame, whether it fits one buffer (framed in the
/// payload's own array) or not.
final class L2CAPBasicFrameSenderTests: XCTestCase {
    func testABasicFrameLeavesAsTheFragmentsOfItsEncoding() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<200 {
            let length = Int.random(in: 1...260, using: &rng)
            var payload = (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { payload.reserveCapacity(payload.count + 8) }
            let channel = [L2CAPChannel.att, L2CAPChannel.smp, 0x0040][Int.random(in: 0...2, using: &rng)]
            let expected = ACLFragmenter.fragment(handle: 0x0041, pdu: L2CAPFrame(channelID: channel, payload: payload).encode(),
                                                  maxLength: length).map { $0.encode() }
            var flow = ACLFlowController(bufferCount: 1_000, bufferLength: length)
            var sent: [[UInt8]] = []
            flow.enqueueBasicFrame(handle: 0x0041, channel: channel, payload: payload) { sent.append($0) }
            XCTAssertEqual(sent, expected, "buffer \(length), payload \(payload.count)")
        }
    }

    /// The length field holds 65535 at most: a longer payload is cut to it, as
    /// `L2CAPFrame.encode` does.
    func testAPayloadOverTheLengthFieldIsCutToIt() {
        let payload = [UInt8](repeating: 0x5A, count: 70_000)
        var flow = ACLFlowController(bufferCount: 1_000, bufferLength: 1_021)
        var sent: [[UInt8]] = []
        flow.enqueueBasicFrame(handle: 0x0041, channel: L2CAPChannel.att, payload: payload) { sent.append($0) }
        let data = sent.flatMap { $0.dropFirst(4) }
        XCTAssertEqual(data.count, 4 + 65_535)
        XCTAssertEqual(Array(data.prefix(4)), [0xFF, 0xFF, 0x04, 0x00])
        XCTAssertEqual(data, L2CAPFrame(channelID: L2CAPChannel.att, payload: payload).encode())
    }
}

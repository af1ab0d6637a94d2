@testable import BLEHCI
import BLEWire
import BLETestSupport
import XCTest

/// The in-place paths of the notification hot path against the per-layer ones they
/// replace: fragments built in wire form with the L2CAP basic header (Vol 3 Part A §3.1, Vol 4
/// Part E §5.4.2), and Number Of Completed Packets read without decoding (§7.7.19).
final class ACLWireFormTests: XCTestCase {
    /// The old way: an L2CAP frame encoded, fragmented, each fragment encoded.
    private func perLayer(handle: UInt16, channel: UInt16, payload: [UInt8], length: Int) -> [[UInt8]] {
        let pdu = [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), UInt8(channel & 0xFF), UInt8(channel >> 8)] + payload
        return ACLFragmenter.fragment(handle: handle, pdu: pdu, maxLength: length).map { $0.encode() }
    }

    func testFragmentsInWireFormAreTheBytesOfEveryLayerEncodedInTurn() {
        var rng = SeededGenerator(seed: 12)
        for _ in 0..<300 {
            let length = Int.random(in: 1...260, using: &rng)
            let payload = (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let handle = UInt16.random(in: 0...0x0EFF, using: &rng)
            var flow = ACLFlowController(bufferCount: 1_000, bufferLength: length)
            var sent: [[UInt8]] = []
            flow.enqueue(handle: handle, channel: 0x0004, payload: payload) { sent.append($0) }
            XCTAssertEqual(sent, perLayer(handle: handle, channel: 0x0004, payload: payload, length: length), "buffer \(length)")
        }
    }

    func testWireFormFragmentsWaitForCreditsAndKeepTheirOrder() {
        var flow = ACLFlowController(bufferCount: 3, bufferLength: 27)
        let payload = [UInt8](repeating: 0xA5, count: 247)
        var sent: [[UInt8]] = []
        flow.enqueue(handle: 0x40, channel: 0x0004, payload: payload) { sent.append($0) }
        XCTAssertEqual(sent.count, 3)
        XCTAssertEqual(flow.queuedPDUs(handle: 0x40), 1)
        while flow.queuedPackets(handle: 0x40) > 0 {
            flow.credit(handle: 0x40, count: 1)
            flow.pump { sent.append($0) }
        }
        XCTAssertEqual(sent, perLayer(handle: 0x40, channel: 0x0004, payload: payload, length: 27))
        XCTAssertEqual(flow.availableCredits + flow.inFlight(handle: 0x40), 3)
    }

    /// A payload in an array with room for the headers (as `ATTServer` makes its updates) that
    /// fits one buffer is framed in that array: the same packets, sent or queued, in the same
    /// order as a payload without the room, and a caller's own copy left as it was.
    func testAPayloadWithRoomForTheHeadersGivesTheSamePacketsSentOrQueued() {
        func roomy(_ bytes: [UInt8]) -> [UInt8] {
            var a: [UInt8] = []
            a.reserveCapacity(bytes.count + 8)
            a.append(contentsOf: bytes)
            return a
        }
        var rng = SeededGenerator(seed: 0xF8A)
        for _ in 0..<200 {
            let length = Int.random(in: 5...260, using: &rng)
            let credits = Int.random(in: 1...3, using: &rng)
            var framed = ACLFlowController(bufferCount: credits, bufferLength: length)
            var copied = ACLFlowController(bufferCount: credits, bufferLength: length)
            var sentFramed: [[UInt8]] = []
            var sentCopied: [[UInt8]] = []
            for _ in 0..<6 {
                let payload = (0..<Int.random(in: 0...(length - 4), using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let handle = UInt16.random(in: 0x40...0x42, using: &rng)
                let kept = roomy(payload)
                let a = framed.enqueue(handle: handle, channel: 0x0004, payload: kept) { sentFramed.append($0) }
                XCTAssertEqual(kept, payload, "the caller's array is not framed")
                let b = copied.enqueue(handle: handle, channel: 0x0004, payload: Array(payload)) { sentCopied.append($0) }
                XCTAssertEqual(a, b)
                _ = framed.enqueue(handle: handle, channel: 0x0004, payload: roomy(payload)) { sentFramed.append($0) }
                _ = copied.enqueue(handle: handle, channel: 0x0004, payload: Array(payload)) { sentCopied.append($0) }
                XCTAssertEqual(sentFramed, sentCopied)
                XCTAssertEqual(framed.hasQueuedPackets, copied.hasQueuedPackets)
                // A completion now and then lets queued packets go, round-robin.
                if Bool.random(using: &rng), let h = sentFramed.last.map({ UInt16($0[0]) | UInt16($0[1] & 0x0F) << 8 }) {
                    framed.credit(handle: h, count: 1)
                    framed.pump { sentFramed.append($0) }
                    copied.credit(handle: h, count: 1)
                    copied.pump { sentCopied.append($0) }
                }
                XCTAssertEqual(sentFramed, sentCopied)
            }
        }
    }

    func testAFramedPayloadIsTheBytesOfEveryLayer() {
        for count in [0, 1, 100, 247] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            var room: [UInt8] = []
            room.reserveCapacity(count + 8)
            room.append(contentsOf: payload)
            var flow = ACLFlowController(bufferCount: 1, bufferLength: 251)
            var sent: [[UInt8]] = []
            flow.enqueue(handle: 0x0EFF, channel: 0x0004, payload: room) { sent.append($0) }
            XCTAssertEqual(sent, perLayer(handle: 0x0EFF, channel: 0x0004, payload: payload, length: 251), "\(count) bytes")
        }
    }

    func testCompletedPacketsAreReadInPlaceAsDecodeReadsThem() throws {
        let event = hexBytes("13 09 02 4000 0300 4100 0100")
        var entries: [CompletedPackets] = []
        XCTAssertTrue(HCIEvent.scanCompletedPackets(event) { entries.append(CompletedPackets(handle: $0, count: $1)) })
        XCTAssertEqual(entries, [CompletedPackets(handle: 0x40, count: 3), CompletedPackets(handle: 0x41, count: 1)])
        guard case let .numberOfCompletedPackets(decoded) = try HCIEvent.decode(event) else { return XCTFail("not decoded as NOCP") }
        XCTAssertEqual(decoded, entries)
    }

    func testOtherEventsAndBadLengthsAreLeftToDecode() {
        var called = false
        // Command Complete; a length byte that does not match; fewer entries than announced.
        for bytes in [hexBytes("0E 04 01 0300 00"), hexBytes("13 09 02 4000 0300"), hexBytes("13 05 02 4000 0300"), hexBytes("13")] {
            XCTAssertFalse(HCIEvent.scanCompletedPackets(bytes) { _, _ in called = true })
        }
        XCTAssertFalse(called)
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("13 05 02 4000 0300")))
    }
}

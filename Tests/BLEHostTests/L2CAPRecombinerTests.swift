import BLEHCI
@testable import BLEHost
import BLEWire
import BLETestSupport
import XCTest

/// L2CAP's side of fragmentation: PDUs recombined from the ACL fragments they came in, per
/// handle, by the basic header's length (Core spec Vol 3 Part A §7.2, §3.1; Vol 4 Part E §5.4.2).
final class L2CAPRecombinerTests: XCTestCase {
    /// An L2CAP basic frame: length, CID, payload.
    func l2cap(cid: UInt16 = 0x0004, payload: [UInt8]) -> [UInt8] {
        L2CAPFrame(channelID: cid, payload: payload).encode()
    }

    func testA251BytePDUIn27ByteFragmentsIsRecombinedWhole() throws {
        let pdu = l2cap(payload: (0..<247).map { UInt8($0 & 0xFF) })
        let packets = ACLFragmenter.fragment(handle: 0x0040, pdu: pdu, maxLength: 27)
        var recombiner = L2CAPRecombiner()
        var result: [UInt8]?
        for (i, packet) in packets.enumerated() {
            // Through the wire format too.
            let back = try ACLPacket.decode(packet.encode())
            result = try recombiner.push(back)
            if i < packets.count - 1 { XCTAssertNil(result) }
        }
        XCTAssertEqual(result, pdu)
        XCTAssertTrue(recombiner.handlesInProgress.isEmpty)
    }


    func testInterleavedHandles() throws {
        let a = l2cap(payload: Array(repeating: 0xA1, count: 60))
        let b = l2cap(cid: 0x0006, payload: Array(repeating: 0xB2, count: 40))
        let fa = ACLFragmenter.fragment(handle: 1, pdu: a, maxLength: 27)
        let fb = ACLFragmenter.fragment(handle: 2, pdu: b, maxLength: 27)
        var recombiner = L2CAPRecombiner()
        var done: [UInt16: [UInt8]] = [:]
        var ia = 0, ib = 0
        while ia < fa.count || ib < fb.count {
            for packet in [ia < fa.count ? fa[ia] : nil, ib < fb.count ? fb[ib] : nil].compactMap({ $0 }) {
                if let pdu = try recombiner.push(packet) { done[packet.handle] = pdu }
            }
            ia += 1
            ib += 1
        }
        XCTAssertEqual(done[1], a)
        XCTAssertEqual(done[2], b)
    }

    func testSingleFragmentAndSplitHeader() throws {
        var r = L2CAPRecombiner()
        let small = l2cap(payload: [1, 2, 3])
        XCTAssertEqual(try r.push(ACLPacket(handle: 5, boundary: .firstFlushable, data: small)), small)
        // Basic header split over fragments of 1 and 2 bytes.
        XCTAssertNil(try r.push(ACLPacket(handle: 5, boundary: .firstFlushable, data: [small[0]])))
        XCTAssertNil(try r.push(ACLPacket(handle: 5, boundary: .continuing, data: Array(small[1..<3]))))
        XCTAssertEqual(try r.push(ACLPacket(handle: 5, boundary: .continuing, data: Array(small[3...]))), small)
        // An empty L2CAP payload is complete at 4 bytes.
        XCTAssertEqual(try r.push(ACLPacket(handle: 5, boundary: .firstFlushable, data: hexBytes("0000 0500"))), hexBytes("0000 0500"))
    }

    func testContinuationWithoutStart() {
        var r = L2CAPRecombiner()
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 7, boundary: .continuing, data: [1]))) { error in
            XCTAssertEqual(error as? L2CAPRecombinationError, .continuationWithoutStart(handle: 7))
        }
    }

    func testStartWhileInProgressDiscardsAndCanBeRepushed() throws {
        var r = L2CAPRecombiner()
        let pdu = l2cap(payload: Array(repeating: 9, count: 30))
        let fragments = ACLFragmenter.fragment(handle: 3, pdu: pdu, maxLength: 27)
        XCTAssertNil(try r.push(fragments[0]))
        let fresh = ACLPacket(handle: 3, boundary: .firstFlushable, data: l2cap(payload: [4]))
        // The unfinished PDU is dropped and the new one is kept (a flushed or truncated PDU
        // must not cost the next one).
        XCTAssertEqual(try r.push(fresh), l2cap(payload: [4]))
        XCTAssertEqual(r.lastDiscarded, .startWhileInProgress(handle: 3))
        XCTAssertTrue(r.handlesInProgress.isEmpty)
        // The old PDU's continuation is now an orphan.
        XCTAssertThrowsError(try r.push(fragments[1]))
    }

    func testOverflowDiscardsState() throws {
        var r = L2CAPRecombiner()
        // Declares 2 payload bytes but the start alone carries 3.
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0200 0400 010203")))) { error in
            XCTAssertEqual(error as? L2CAPRecombinationError, .overflow(handle: 1, expected: 6, received: 7))
        }
        // Overflow by a continuation.
        XCTAssertNil(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0400 0400 01"))))
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 1, boundary: .continuing, data: hexBytes("02030405"))))
        XCTAssertTrue(r.handlesInProgress.isEmpty)
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 1, boundary: .continuing, data: hexBytes("01"))))
    }

    func testResetHandle() throws {
        var r = L2CAPRecombiner()
        XCTAssertNil(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0A00 0400 01"))))
        XCTAssertNil(try r.push(ACLPacket(handle: 2, boundary: .firstFlushable, data: hexBytes("0A00 0400 01"))))
        r.reset(handle: 1)
        XCTAssertEqual(r.handlesInProgress, [2])
        XCTAssertNil(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0A00 0400 01"))))
        r.resetAll()
        XCTAssertTrue(r.handlesInProgress.isEmpty)
    }

    func testRandomFragmentsNeverTrap() {
        var rng = SplitMix64(seed: 42)
        var r = L2CAPRecombiner()
        for _ in 0..<5000 {
            let n = Int.random(in: 0...12, using: &rng)
            let data = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let boundary = PacketBoundary(rawValue: UInt8.random(in: 0...3, using: &rng)) ?? .continuing
            _ = try? r.push(ACLPacket(handle: UInt16.random(in: 0...2, using: &rng), boundary: boundary, data: data))
            _ = try? ACLPacket.decode(data)
        }
    }

    func testRecombiningSlicesOfTheReceivedPacketsMatchesWholePackets() throws {
        var rng = SplitMix64(seed: 5)
        for _ in 0..<200 {
            let payload = (0..<Int.random(in: 0...400, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let pdu = [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), 0x04, 0x00] + payload
            let fragments = ACLFragmenter.fragment(handle: 1, pdu: pdu, maxLength: Int.random(in: 1...64, using: &rng))
            var recombiner = L2CAPRecombiner()
            var whole: [UInt8]?
            for f in fragments {
                XCTAssertNil(whole)
                whole = try recombiner.push(handle: 1, isStart: f.boundary.isStart, f.encode()[4...])
            }
            XCTAssertEqual(whole, pdu)
            XCTAssertFalse(recombiner.isInProgress(1))
        }
    }
}

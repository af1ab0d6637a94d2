import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

/// ACL packets, fragmentation and reassembly. Core spec Vol 4 Part E §5.4.2, Vol 3 Part A §7.2.
final class ACLTests: XCTestCase {
    /// An L2CAP basic-frame: length, CID, payload.
    func l2cap(cid: UInt16 = 0x0004, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u16(UInt16(payload.count))
        w.u16(cid)
        w.append(payload)
        return w.bytes
    }

    func testGoldenPackets() throws {
        // Host -> controller: handle 0x0040, first non-flushable, ATT Read Request for 0x0001.
        let out = ACLPacket(handle: 0x0040, boundary: .firstNonFlushable, data: hexBytes("0300 0400 0A0100"))
        XCTAssertEqual(out.h4Frame.bytes, hexBytes("02 4000 0700 0300 0400 0A0100"))
        // Controller -> host: first flushable (PB 0b10) sets bit 13 of the header.
        let incoming = try ACLPacket.decode(hexBytes("4020 0500 0100 0400 13"))
        XCTAssertEqual(incoming, ACLPacket(handle: 0x0040, boundary: .firstFlushable, data: hexBytes("0100 0400 13")))
        // Continuation, broadcast bits, and the largest handle.
        let cont = try ACLPacket.decode(hexBytes("FF5E 0100 AA"))
        XCTAssertEqual(cont.handle, 0x0EFF)
        XCTAssertEqual(cont.boundary, .continuing)
        XCTAssertEqual(cont.broadcast, 1)
        XCTAssertEqual(cont.encode(), hexBytes("FF5E 0100 AA"))
        XCTAssertEqual(try ACLPacket.decode(hexBytes("0130 0000")).boundary, .complete)
    }

    func testDecodeRejectsBadLengths() {
        let good = hexBytes("4020 0300 010203")
        for n in 0..<good.count {
            XCTAssertThrowsError(try ACLPacket.decode(Array(good.prefix(n))))
        }
        XCTAssertThrowsError(try ACLPacket.decode(good + [0]))
    }

    func testFragment251BytePDUInto27ByteBuffers() throws {
        let pdu = l2cap(payload: (0..<247).map { UInt8($0 & 0xFF) })
        XCTAssertEqual(pdu.count, 251)
        let packets = ACLFragmenter.fragment(handle: 0x0040, pdu: pdu, maxLength: 27)
        XCTAssertEqual(packets.count, 10)
        XCTAssertEqual(packets.first?.boundary, .firstNonFlushable)
        XCTAssertTrue(packets.dropFirst().allSatisfy { $0.boundary == .continuing })
        XCTAssertTrue(packets.dropLast().allSatisfy { $0.data.count == 27 })
        XCTAssertEqual(packets.last?.data.count, 251 - 9 * 27)
        XCTAssertEqual(packets.flatMap(\.data), pdu)

        var reassembler = ACLReassembler()
        var result: [UInt8]?
        for (i, packet) in packets.enumerated() {
            // Through the wire format too.
            let back = try ACLPacket.decode(packet.encode())
            result = try reassembler.push(back)
            if i < packets.count - 1 { XCTAssertNil(result) }
        }
        XCTAssertEqual(result, pdu)
        XCTAssertTrue(reassembler.handlesInProgress.isEmpty)
    }

    func testFragmentEdgeCases() {
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: [], maxLength: 27), [ACLPacket(handle: 1, boundary: .firstNonFlushable, data: [])])
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: [1, 2, 3], maxLength: 0).count, 3)
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: Array(repeating: 0, count: 27), maxLength: 27).count, 1)
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: Array(repeating: 0, count: 28), maxLength: 27).count, 2)
    }

    func testInterleavedHandles() throws {
        let a = l2cap(payload: Array(repeating: 0xA1, count: 60))
        let b = l2cap(cid: 0x0006, payload: Array(repeating: 0xB2, count: 40))
        let fa = ACLFragmenter.fragment(handle: 1, pdu: a, maxLength: 27)
        let fb = ACLFragmenter.fragment(handle: 2, pdu: b, maxLength: 27)
        var reassembler = ACLReassembler()
        var done: [UInt16: [UInt8]] = [:]
        var ia = 0, ib = 0
        while ia < fa.count || ib < fb.count {
            for packet in [ia < fa.count ? fa[ia] : nil, ib < fb.count ? fb[ib] : nil].compactMap({ $0 }) {
                if let pdu = try reassembler.push(packet) { done[packet.handle] = pdu }
            }
            ia += 1
            ib += 1
        }
        XCTAssertEqual(done[1], a)
        XCTAssertEqual(done[2], b)
    }

    func testSingleFragmentAndSplitHeader() throws {
        var r = ACLReassembler()
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
        var r = ACLReassembler()
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 7, boundary: .continuing, data: [1]))) { error in
            XCTAssertEqual(error as? ACLReassemblyError, .continuationWithoutStart(handle: 7))
        }
    }

    func testStartWhileInProgressDiscardsAndCanBeRepushed() throws {
        var r = ACLReassembler()
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
        var r = ACLReassembler()
        // Declares 2 payload bytes but the start alone carries 3.
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0200 0400 010203")))) { error in
            XCTAssertEqual(error as? ACLReassemblyError, .overflow(handle: 1, expected: 6, received: 7))
        }
        // Overflow by a continuation.
        XCTAssertNil(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0400 0400 01"))))
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 1, boundary: .continuing, data: hexBytes("02030405"))))
        XCTAssertTrue(r.handlesInProgress.isEmpty)
        XCTAssertThrowsError(try r.push(ACLPacket(handle: 1, boundary: .continuing, data: hexBytes("01"))))
    }

    func testResetHandle() throws {
        var r = ACLReassembler()
        XCTAssertNil(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0A00 0400 01"))))
        XCTAssertNil(try r.push(ACLPacket(handle: 2, boundary: .firstFlushable, data: hexBytes("0A00 0400 01"))))
        r.reset(handle: 1)
        XCTAssertEqual(r.handlesInProgress, [2])
        XCTAssertNil(try r.push(ACLPacket(handle: 1, boundary: .firstFlushable, data: hexBytes("0A00 0400 01"))))
        r.resetAll()
        XCTAssertTrue(r.handlesInProgress.isEmpty)
    }

    func testRandomFragmentsNeverTrap() {
        var rng = SeededGenerator(seed: 42)
        var r = ACLReassembler()
        for _ in 0..<5000 {
            let n = Int.random(in: 0...12, using: &rng)
            let data = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let boundary = PacketBoundary(rawValue: UInt8.random(in: 0...3, using: &rng)) ?? .continuing
            _ = try? r.push(ACLPacket(handle: UInt16.random(in: 0...2, using: &rng), boundary: boundary, data: data))
            _ = try? ACLPacket.decode(data)
        }
    }
}

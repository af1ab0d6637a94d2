import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

/// ACL packets and fragmentation. Core spec Vol 4 Part E §5.4.2, Vol 3 Part A §7.2.
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
    }

    func testFragmentEdgeCases() {
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: [], maxLength: 27), [ACLPacket(handle: 1, boundary: .firstNonFlushable, data: [])])
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: [1, 2, 3], maxLength: 0).count, 3)
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: Array(repeating: 0, count: 27), maxLength: 27).count, 1)
        XCTAssertEqual(ACLFragmenter.fragment(handle: 1, pdu: Array(repeating: 0, count: 28), maxLength: 27).count, 2)
    }
}

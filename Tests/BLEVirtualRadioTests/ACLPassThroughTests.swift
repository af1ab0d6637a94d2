import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import XCTest

/// Without the air-time model the medium passes a host's ACL packet to the peer's host in its own
/// bytes, only the header rewritten (`VirtualController.passThrough`, from `forward`): what arrives must be
/// exactly what the decoding path gives, `VirtualController.deliverFromPeer` on the decoded packet
/// (Core Vol 4 Part E §5.4.2: the peer's handle, first-flushable or continuing, point-to-point),
/// including a packet longer than the peer's buffers, which is still cut to them.
final class ACLPassThroughTests: XCTestCase {
    var rig = TwoControllerMedium()
    var medium: VirtualMedium {
        get { rig.medium }
        set { rig.medium = newValue }
    }
    var peripheral: VirtualMedium.ControllerID { rig.peripheral }
    var central: VirtualMedium.ControllerID { rig.central }

    /// Two controllers; the peripheral's ACL buffers hold `peripheralBuffer` bytes.
    func setUp(peripheralBuffer: UInt16) {
        rig = TwoControllerMedium(peripheralBuffer: peripheralBuffer)
    }

    func connect() throws -> (central: UInt16, peripheral: UInt16) { try rig.connect() }

    /// The frames as one batch from the central's host, as `VirtualRadio` hands them over.
    func batch(_ frames: [H4Frame]) -> [VirtualMedium.Delivery] { rig.batch(frames, from: central) }

    /// What the decoding path gives the peripheral's host for these packets: each decoded and
    /// handed to the peripheral's controller as received from the air, then encoded.
    func decodingPath(_ frames: [H4Frame], peerHandle: UInt16) throws -> [H4Frame] {
        let controller = try XCTUnwrap(medium.controller(peripheral))
        return try frames.flatMap { frame in
            controller.deliverFromPeer(handle: peerHandle, packet: try ACLPacket.decode(frame.payload)).map(\.h4Frame)
        }
    }

    func received(_ out: [VirtualMedium.Delivery]) -> [VirtualMedium.Delivery] { out.filter { $0.to == peripheral } }

    func testPacketsThatFitArriveAsTheDecodingPathWouldGiveThem() throws {
        setUp(peripheralBuffer: 251)
        let handles = try connect()
        let sent = [
            ACLPacket(handle: handles.central, boundary: .firstNonFlushable, data: [0x05, 0x00, 0x04, 0x00, 1]),
            ACLPacket(handle: handles.central, boundary: .continuing, data: [2, 3, 4, 5]),
            // Header flags a host should not set: the peer's host still gets a point-to-point packet.
            ACLPacket(handle: handles.central, boundary: .firstFlushable, broadcast: 1, data: [6]),
            ACLPacket(handle: handles.central, boundary: .continuing, broadcast: 2, data: []),
            ACLPacket(handle: handles.central, boundary: .complete, data: Array(repeating: 7, count: 251)),
        ].map(\.h4Frame)
        let out = received(batch(sent))
        XCTAssertEqual(out.map(\.h4Frame), try decodingPath(sent, peerHandle: handles.peripheral))
        XCTAssertEqual(out.map(\.packet), try decodingPath(sent, peerHandle: handles.peripheral).map { .acl(try ACLPacket.decode($0.payload)) },
                       "a delivery passed through reads as the decoded packet")
        XCTAssertEqual(out.count, 5)
    }

    /// The header is rewritten in the frame's own bytes only when the medium holds the only
    /// reference (the radio takes each frame out of its batch): frames a caller keeps are as
    /// they were, and both ways give the peer's host the same packets.
    func testARewrittenHeaderNeverChangesAFrameTheSenderStillHolds() throws {
        setUp(peripheralBuffer: 251)
        let handles = try connect()
        let sent = [
            ACLPacket(handle: handles.central, boundary: .firstNonFlushable, data: [0x02, 0x00, 0x04, 0x00, 1, 2]),
            ACLPacket(handle: handles.central, boundary: .firstNonFlushable, data: [0x01, 0x00, 0x04, 0x00, 3]),
        ].map(\.h4Frame)
        let copies = sent.map { H4Frame(type: $0.type, payload: Array($0.payload)) }
        let kept = received(batch(sent))
        XCTAssertEqual(sent, copies, "the caller's frames are untouched")
        var given: [VirtualMedium.Delivery] = []
        var credits = VirtualMedium.CompletedPacketsTally()
        for frame in copies.map({ H4Frame(type: $0.type, payload: Array($0.payload)) }) {
            medium.receive(consume frame, from: central, now: .zero, into: &given, credits: &credits)
        }
        credits.write(into: &given)
        XCTAssertEqual(received(given).map(\.h4Frame), kept.map(\.h4Frame))
        XCTAssertEqual(kept.map(\.h4Frame), try decodingPath(copies, peerHandle: handles.peripheral))
    }

    func testAPacketLongerThanThePeersBuffersIsStillCutToThem() throws {
        setUp(peripheralBuffer: 27)
        let handles = try connect()
        let sent = [
            ACLPacket(handle: handles.central, boundary: .firstNonFlushable, data: Array(0..<100)),
            ACLPacket(handle: handles.central, boundary: .continuing, data: Array(repeating: 9, count: 27)),
            ACLPacket(handle: handles.central, boundary: .continuing, data: Array(repeating: 8, count: 28)),
        ].map(\.h4Frame)
        let out = received(batch(sent))
        XCTAssertEqual(out.map(\.h4Frame), try decodingPath(sent, peerHandle: handles.peripheral))
        XCTAssertEqual(out.count, 4 + 1 + 2, "100 bytes in four buffers, 27 in one, 28 in two")
        XCTAssertTrue(out.allSatisfy { d in
            guard case let .acl(p) = d.packet else { return false }
            return p.data.count <= 27 && p.handle == handles.peripheral
        })
    }

    func testAMalformedPacketIsDroppedUncreditedAndTheRestGoOn() throws {
        setUp(peripheralBuffer: 251)
        let handles = try connect()
        let good = ACLPacket(handle: handles.central, boundary: .firstNonFlushable, data: [1, 2]).h4Frame
        var long = good
        long.payload.append(0xFF)   // one byte beyond the length field
        var short = good
        short.payload.removeLast()  // one byte missing
        let out = batch([long, good, short, H4Frame(type: .acl, payload: [0x40, 0x00, 0x00])])
        XCTAssertEqual(received(out).map(\.h4Frame), try decodingPath([good], peerHandle: handles.peripheral))
        XCTAssertEqual(out.filter { $0.to == central }, [VirtualMedium.Delivery(to: central, packet: .event(.numberOfCompletedPackets([
            CompletedPackets(handle: handles.central, count: 1)])))], "only the well-formed packet is credited")
    }

    /// What lets the radio skip its second `advance(to:)` after a batch of ACL data: without the
    /// air-time model data schedules nothing, so nothing is due after it that was not before.
    func testABatchOfDataWithoutTheAirTimeModelLeavesEveryDeadlineAsItWas() throws {
        setUp(peripheralBuffer: 27)
        let handles = try connect()
        let t = Duration.milliseconds(500)
        _ = medium.advance(to: t)
        let before = medium.nextDeadline
        XCTAssertEqual(medium.deadlineAfterAdvance, before, "what advance left is what the medium says")
        let frames = [
            ACLPacket(handle: handles.central, boundary: .firstNonFlushable, data: Array(0..<60)),
            ACLPacket(handle: 0x0EEE, boundary: .firstNonFlushable, data: [1]),
        ].map(\.h4Frame)
        XCTAssertFalse(frames.contains { VirtualMedium.mayScheduleWork($0, airTimeModel: medium.airTimeModel) })
        var out: [VirtualMedium.Delivery] = []
        var credits = VirtualMedium.CompletedPacketsTally()
        for frame in frames { medium.receive(frame, from: central, now: t, into: &out, credits: &credits) }
        XCTAssertFalse(out.isEmpty)
        XCTAssertEqual(medium.nextDeadline, before)
        XCTAssertEqual(medium.deadlineAfterAdvance, medium.nextDeadline, "the radio arms its timer with it")
        XCTAssertEqual(medium.advance(to: t), [])
        // A command may: advertising enabled now has its first event due at once.
        XCTAssertTrue(VirtualMedium.mayScheduleWork(HCICommand.leSetAdvertisingEnable(enable: true).h4Frame, airTimeModel: false))
        XCTAssertTrue(VirtualMedium.mayScheduleWork(frames[0], airTimeModel: true), "with the air-time model data waits for a connection event")
    }
}

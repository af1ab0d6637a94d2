import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import XCTest

/// One batch of host frames without the air-time model, as the radio hands it to the medium:
/// ACL packets go into the batch's deliveries with one Number Of Completed Packets
/// event per host (at the place of its first packet), and the route the batch's packets share is
/// looked up again after anything but an ACL packet — a disconnect in the middle of a batch
/// drops the packets after it.
final class BatchForwardingTests: XCTestCase {
    var rig = TwoControllerMedium()
    var medium: VirtualMedium {
        get { rig.medium }
        set { rig.medium = newValue }
    }
    var peripheral: VirtualMedium.ControllerID { rig.peripheral }
    var central: VirtualMedium.ControllerID { rig.central }

    override func setUp() {
        rig = TwoControllerMedium()
    }

    func connect() throws -> (central: UInt16, peripheral: UInt16) { try rig.connect() }

    /// The frames as one batch from `id`'s host, the way `VirtualRadio` hands them over.
    func batch(_ frames: [H4Frame], from id: VirtualMedium.ControllerID) -> [VirtualMedium.Delivery] { rig.batch(frames, from: id) }

    func acl(_ handle: UInt16, _ byte: UInt8) -> H4Frame {
        ACLPacket(handle: handle, boundary: .firstNonFlushable, data: [byte]).h4Frame
    }

    func testABatchOfPacketsArrivesInOrderWithOneCreditReportForItsSender() throws {
        let handles = try connect()
        let out = batch([acl(handles.central, 1), acl(handles.central, 2), acl(handles.central, 3)], from: central)
        XCTAssertEqual(out.first, VirtualMedium.Delivery(to: central, packet: .event(.numberOfCompletedPackets([
            CompletedPackets(handle: handles.central, count: 3)]))), "one report, where the first packet's stood")
        let received = out.compactMap { d -> ACLPacket? in
            guard d.to == peripheral, case let .acl(p) = d.packet else { return nil }
            return p
        }
        XCTAssertEqual(received.map(\.data), [[1], [2], [3]])
        XCTAssertTrue(received.allSatisfy { $0.handle == handles.peripheral && $0.boundary == .firstFlushable })
        XCTAssertEqual(out.count, 4)
    }

    func testADisconnectInTheMiddleOfABatchDropsThePacketsAfterIt() throws {
        let handles = try connect()
        let out = batch([acl(handles.central, 1), HCICommand.disconnect(handle: handles.central).h4Frame, acl(handles.central, 2)], from: central)
        let received = out.compactMap { d -> [UInt8]? in
            guard d.to == peripheral, case let .acl(p) = d.packet else { return nil }
            return p.data
        }
        XCTAssertEqual(received, [[1]], "the packet after the disconnect has no connection to go over")
        let credited = out.compactMap { d -> [CompletedPackets]? in
            guard d.to == central, case let .event(.numberOfCompletedPackets(entries)) = d.packet else { return nil }
            return entries
        }
        XCTAssertEqual(credited, [[CompletedPackets(handle: handles.central, count: 1)]], "only the packet that was sent is credited")
    }

    func testPacketsFromAnUnknownHandleAreDroppedAndNotCredited() throws {
        let handles = try connect()
        let out = batch([acl(0x0EEE, 1), acl(handles.central, 2), acl(0x0EEE, 3)], from: central)
        let received = out.compactMap { d -> [UInt8]? in
            guard d.to == peripheral, case let .acl(p) = d.packet else { return nil }
            return p.data
        }
        XCTAssertEqual(received, [[2]])
        XCTAssertEqual(out.first, VirtualMedium.Delivery(to: central, packet: .event(.numberOfCompletedPackets([
            CompletedPackets(handle: handles.central, count: 1)]))))
    }
}

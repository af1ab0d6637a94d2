import BLEHCI
@testable import BLEVirtualRadio
import XCTest

/// The radio merges the Number Of Completed Packets events one batch of host frames produces
/// (Core spec Vol 4 Part E §7.7.19): one event per host, at the place of its first, counts per
/// handle added, every other delivery where it was.
final class CompletedPacketsCoalescingTests: XCTestCase {
    typealias ID = VirtualMedium.ControllerID

    func completed(_ to: Int, _ entries: [(UInt16, UInt16)]) -> VirtualMedium.Delivery {
        VirtualMedium.Delivery(to: ID(rawValue: to), packet: .event(.numberOfCompletedPackets(entries.map { CompletedPackets(handle: $0.0, count: $0.1) })))
    }

    func data(_ to: Int, _ byte: UInt8) -> VirtualMedium.Delivery {
        VirtualMedium.Delivery(to: ID(rawValue: to), packet: .acl(ACLPacket(handle: 0x40, boundary: .firstFlushable, data: [byte])))
    }

    func testReportsToOneHostMergeAtTheFirstWithCountsPerHandle() {
        let batch = [completed(0, [(1, 1)]), data(1, 0xA), completed(0, [(1, 1)]), data(1, 0xB), completed(0, [(2, 1), (1, 3)])]
        XCTAssertEqual(batch.coalescingCompletedPackets(), [completed(0, [(1, 5), (2, 1)]), data(1, 0xA), data(1, 0xB)])
    }

    func testEachHostGetsItsOwnReport() {
        let batch = [completed(0, [(1, 1)]), completed(1, [(7, 2)]), completed(0, [(1, 1)]), completed(1, [(7, 1)])]
        XCTAssertEqual(batch.coalescingCompletedPackets(), [completed(0, [(1, 2)]), completed(1, [(7, 3)])])
    }

    func testOtherDeliveriesKeepTheirOrderAndASingleReportIsUntouched() {
        let batch = [data(0, 1), completed(0, [(1, 1)]), data(0, 2), data(1, 3)]
        XCTAssertEqual(batch.coalescingCompletedPackets(), batch)
    }

    func testCountsSaturateInsteadOfOverflowing() {
        let batch = [completed(0, [(1, 0xFFFF)]), completed(0, [(1, 2)])]
        XCTAssertEqual(batch.coalescingCompletedPackets(), [completed(0, [(1, 0xFFFF)])])
    }

    /// Review finding F3: reports for more handles than one event carries are split, the rest
    /// going at the batch's end, each event within its length byte.
    func testReportsForMoreHandlesThanOneEventCarriesAreSplit() {
        let handles = (0..<70).map { UInt16(0x40 + $0) }
        let batch = handles.map { completed(0, [($0, 1)]) } + [data(1, 0xA)]
        let out = batch.coalescingCompletedPackets()
        XCTAssertEqual(out, [completed(0, handles.prefix(63).map { ($0, 1) }), data(1, 0xA), completed(0, handles.dropFirst(63).map { ($0, 1) })])
    }
}

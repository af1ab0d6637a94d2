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

    /// The batch's tally writes a one-handle report as its entry alone (`Delivery(to:completedPackets:)`):
    /// it is the same event, goes out in the same bytes, and merges like any other report.
    func testAOneEntryReportIsTheEventAndMergesWithOthers() {
        let entry = CompletedPackets(handle: 1, count: 2)
        let single = VirtualMedium.Delivery(to: ID(rawValue: 0), completedPackets: entry)
        XCTAssertEqual(single, completed(0, [(1, 2)]))
        XCTAssertEqual(single.h4Frame, completed(0, [(1, 2)]).h4Frame)
        XCTAssertTrue(single.isCompletedPackets)
        let batch = [single, data(1, 0xA), completed(0, [(2, 1), (1, 1)])]
        XCTAssertEqual(batch.coalescingCompletedPackets(), [completed(0, [(1, 3), (2, 1)]), data(1, 0xA)])
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

    // MARK: - The batch's tally, which counts credits instead of making one event per packet

    func testTheTallyGivesEachHostOneReportWhereItsFirstCreditStoodWithCountsPerHandle() {
        var tally = VirtualMedium.CompletedPacketsTally()
        var out: [VirtualMedium.Delivery] = []
        tally.credit(handle: 1, to: ID(rawValue: 0), in: &out)
        out.append(data(1, 0xA))
        tally.credit(handle: 2, to: ID(rawValue: 0), in: &out)
        tally.credit(handle: 7, to: ID(rawValue: 1), in: &out)
        tally.credit(handle: 1, to: ID(rawValue: 0), in: &out)
        tally.credit(handle: 7, to: ID(rawValue: 1), in: &out)
        tally.credit(handle: 8, to: ID(rawValue: 1), in: &out)
        tally.write(into: &out)
        XCTAssertEqual(out, [completed(0, [(1, 2), (2, 1)]), data(1, 0xA), completed(1, [(7, 2), (8, 1)])])
        XCTAssertEqual(out.coalescingCompletedPackets(), out, "already one report per host")
        // It starts over: the next batch's credits are its own.
        var next: [VirtualMedium.Delivery] = []
        tally.credit(handle: 3, to: ID(rawValue: 1), in: &next)
        tally.write(into: &next)
        XCTAssertEqual(next, [completed(1, [(3, 1)])])
    }

    func testTheTallysCountsSaturateAndItsReportsForManyHandlesAreSplit() {
        var tally = VirtualMedium.CompletedPacketsTally()
        var out: [VirtualMedium.Delivery] = []
        for _ in 0..<0x1_0001 { tally.credit(handle: 1, to: ID(rawValue: 0), in: &out) }
        tally.write(into: &out)
        XCTAssertEqual(out, [completed(0, [(1, 0xFFFF)])])
        let handles = (0..<70).map { UInt16(0x40 + $0) }
        out = []
        for h in handles { tally.credit(handle: h, to: ID(rawValue: 0), in: &out) }
        out.append(data(1, 0xA))
        tally.write(into: &out)
        XCTAssertEqual(out, [completed(0, handles.prefix(63).map { ($0, 1) }), data(1, 0xA), completed(0, handles.dropFirst(63).map { ($0, 1) })])
    }
}

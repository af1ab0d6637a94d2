import BLEHCI
import BLEWire
@testable import BLEHost
import XCTest

/// Extended advertisements put back together from the reports a controller cuts them into
/// (Core spec Vol 4 Part E §7.7.65.13 Data_Status): whole when the chain ends complete, marked
/// truncated when it does not, never a partial one passed off as complete, memory bounded.
final class ExtendedReportAssemblerTests: XCTestCase {
    typealias Assembler = ExtendedReportAssembler<ExtendedAdvertisementKey>
    let a = ExtendedAdvertisementKey(address: DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random), sid: 1, scanResponse: false)
    let b = ExtendedAdvertisementKey(address: DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_02), type: .random), sid: 1, scanResponse: false)

    func testACompleteReportPassesStraightThrough() {
        var assembler = Assembler()
        XCTAssertEqual(assembler.receive(a, status: .complete, data: [1, 2]), .init(data: [1, 2], truncated: false))
        XCTAssertTrue(assembler.isEmpty)
    }

    func testAChainIsHandedOnWholeAtItsLastReport() {
        var assembler = Assembler()
        XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: [1, 2]))
        XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: [3]))
        XCTAssertFalse(assembler.isEmpty)
        XCTAssertEqual(assembler.receive(a, status: .complete, data: [4, 5]), .init(data: [1, 2, 3, 4, 5], truncated: false))
        XCTAssertTrue(assembler.isEmpty)
    }

    func testATruncatedChainIsMarkedTruncated() {
        var assembler = Assembler()
        XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: [1, 2]))
        XCTAssertEqual(assembler.receive(a, status: .incompleteTruncated, data: [3]), .init(data: [1, 2, 3], truncated: true))
        XCTAssertEqual(assembler.receive(a, status: .incompleteTruncated, data: []), .init(data: [], truncated: true),
                       "a single truncated report is truncated too")
        XCTAssertEqual(assembler.receive(a, status: .reserved, data: [9]), .init(data: [9], truncated: true),
                       "a reserved status is never taken for complete")
    }

    func testInterleavedChainsOfTwoAdvertisersAndOfAScanResponseStayApart() {
        var assembler = Assembler()
        var response = a
        response.scanResponse = true
        XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: [1]))
        XCTAssertNil(assembler.receive(b, status: .incompleteMoreToCome, data: [10]))
        XCTAssertNil(assembler.receive(response, status: .incompleteMoreToCome, data: [20]))
        XCTAssertEqual(assembler.receive(b, status: .complete, data: [11]), .init(data: [10, 11], truncated: false))
        XCTAssertEqual(assembler.receive(response, status: .complete, data: [21]), .init(data: [20, 21], truncated: false))
        XCTAssertEqual(assembler.receive(a, status: .complete, data: [2]), .init(data: [1, 2], truncated: false))
    }

    func testDataBeyondTheMaximumIsHandedOnTruncatedAndTheRestOfItsChainSkipped() {
        var assembler = Assembler()
        let fragment = [UInt8](repeating: 7, count: 251)
        for _ in 0..<6 { XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: fragment)) }
        let cut = assembler.receive(a, status: .incompleteMoreToCome, data: fragment)
        XCTAssertEqual(cut?.data.count, Assembler.maximumDataLength)
        XCTAssertEqual(cut?.truncated, true)
        XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: fragment), "the rest is skipped")
        XCTAssertNil(assembler.receive(a, status: .complete, data: [1]), "up to its last report")
        XCTAssertEqual(assembler.receive(a, status: .complete, data: [2]), .init(data: [2], truncated: false), "then the next one is new")
    }

    func testTheOldestPartialGoesForANewOneAndItsTailIsNeverPassedOffAsWhole() {
        var assembler = Assembler()
        let keys = (0..<(Assembler.maximumPending + 1)).map {
            ExtendedAdvertisementKey(address: DeviceAddress(BDAddress(rawValue: 0xD0_00_00_00_00_00 + UInt64($0)), type: .random), sid: 0, scanResponse: false)
        }
        for key in keys { XCTAssertNil(assembler.receive(key, status: .incompleteMoreToCome, data: [1])) }
        XCTAssertEqual(assembler.dropped, 1)
        XCTAssertNil(assembler.receive(keys[0], status: .incompleteMoreToCome, data: [2]), "the dropped chain's middle is skipped")
        XCTAssertNil(assembler.receive(keys[0], status: .complete, data: [3]), "and its end is not an advertisement")
        XCTAssertEqual(assembler.receive(keys[0], status: .complete, data: [4]), .init(data: [4], truncated: false))
        XCTAssertEqual(assembler.receive(keys[1], status: .complete, data: [5]), .init(data: [1, 5], truncated: false), "the others were kept")
    }

    func testForgettingAKeyDropsItsPartialData() {
        var assembler = Assembler()
        XCTAssertNil(assembler.receive(a, status: .incompleteMoreToCome, data: [1]))
        assembler.forget(a)
        XCTAssertTrue(assembler.isEmpty)
        XCTAssertEqual(assembler.receive(a, status: .complete, data: [2]), .init(data: [2], truncated: false))
    }

    /// Chains whose beginnings were dropped to make room are skipped to their end, for as many
    /// as `maximumSkipped` at once: 24 dropped chains' tails are none of them passed off as
    /// whole advertisements.
    func testTheTailsOfManyDroppedChainsAreSkipped() {
        var assembler = Assembler()
        let keys = (0..<(Assembler.maximumPending + 24)).map {
            ExtendedAdvertisementKey(address: DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_10_00 + UInt64($0)), type: .random), sid: 1, scanResponse: false)
        }
        for key in keys { XCTAssertNil(assembler.receive(key, status: .incompleteMoreToCome, data: [1])) }
        XCTAssertEqual(assembler.dropped, 24)
        for key in keys.prefix(24) { XCTAssertNil(assembler.receive(key, status: .complete, data: [2]), "a tail passed as whole") }
        for key in keys.suffix(Assembler.maximumPending) {
            XCTAssertEqual(assembler.receive(key, status: .complete, data: [2]), .init(data: [1, 2], truncated: false))
        }
        XCTAssertTrue(assembler.isEmpty)
    }
}

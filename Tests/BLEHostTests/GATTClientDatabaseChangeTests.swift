import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// GATT client procedures across a change of the server's database: a Service Changed
/// indication (Core spec Vol 3 Part G §7.1, value handle 0x0008 in these scripts) that arrives
/// while a request is outstanding. An answer that may come from what is now another attribute is
/// never the output (`.databaseChanged` instead); a discovery walks the changed part again; a
/// procedure whose handles the change does not reach goes on as it is.
final class GATTClientDatabaseChangeTests: XCTestCase {
    /// Service Changed for 0x0010...0x0020, and its confirmation.
    static let changed10to20 = ["S: 1d 0800 1000 2000", "C: 1e"]

    // MARK: Reads and writes

    func testAReadAnsweredAfterAChangeCoveringItsHandleEndsWithDatabaseChanged() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 0x12), serviceChangedHandle: 0x0008,
                                          ["C: 0a 1200"] + Self.changed10to20 + ["S: 0b 01"])
        XCTAssertEqual(outcome.result, .failure(.databaseChanged(0x0010...0x0020)))
        XCTAssertEqual(outcome.result?.gattError?.description,
                       "the server's database changed (handles 0x0010...0x0020) during the request; no answer to it was used")
    }

    func testAnErrorAnswerAfterTheChangeIsNotTakenEither() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 0x12), serviceChangedHandle: 0x0008,
                                          ["C: 0a 1200"] + Self.changed10to20 + ["S: 01 0a 1200 01"])
        XCTAssertEqual(outcome.result, .failure(.databaseChanged(0x0010...0x0020)))
    }

    func testAReadWhoseHandleTheChangeMissesKeepsItsValue() {
        let outcome = runGATTClientScript(ReadProcedure(handle: 0x12), serviceChangedHandle: 0x0008,
                                          ["C: 0a 1200", "S: 1d 0800 3000 4000", "C: 1e", "S: 0b 01"])
        XCTAssertEqual(outcome.result, .success(.value([0x01])))
    }

    /// Parts from before and after the change would not make one value: no Read Blob follows.
    func testALongReadInterruptedAsksForNoMoreParts() {
        let part = [UInt8](repeating: 0x22, count: 22)
        let outcome = runGATTClientScript(ReadLongProcedure(handle: 0x12), serviceChangedHandle: 0x0008,
                                          ["C: 0a 1200"] + Self.changed10to20 + ["S: 0b \(part.hexString)"])
        XCTAssertEqual(outcome.result, .failure(.databaseChanged(0x0010...0x0020)))
    }

    /// The prepared part may sit in the queue of what is now another attribute: the writes are
    /// cancelled (Execute Write, flags 0x00, Vol 3 Part F §3.4.6.3), never executed.
    func testALongWriteInterruptedWhilePreparingCancelsItsQueuedWrites() {
        let value = (0..<30).map { UInt8($0) }
        let first = Array(value[0..<18]).hexString
        let outcome = runGATTClientScript(LongWriteProcedure(handle: 0x12, value: value), serviceChangedHandle: 0x0008, [
            "C: 16 1200 0000 \(first)",
        ] + Self.changed10to20 + [
            "S: 17 1200 0000 \(first)",
            "C: 18 00",
            "S: 19",
        ])
        XCTAssertEqual(outcome.result, .failure(.databaseChanged(0x0010...0x0020)))
    }

    func testExchangeMTUIsNotAffected() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(clientMTU: 517), serviceChangedHandle: 0x0008,
                                          ["C: 02 0502", "S: 1d 0800 0100 ffff", "C: 1e", "S: 03 f700"])
        XCTAssertEqual(outcome.result, .success(.mtu(247)))
    }

    /// A write queued behind a read when the change arrives was aimed at the old layout: it ends
    /// without being sent.
    func testAQueuedWriteToAChangedHandleIsNeverSent() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.submit(ReadProcedure(handle: 0x30), id: 1, now: .zero), [.send([0x0A, 0x30, 0x00])])
        XCTAssertEqual(bearer.submit(WriteValueProcedure(handle: 0x12, value: [0xAA]), id: 2, now: .zero), [])
        XCTAssertEqual(bearer.submit(WriteValueProcedure(handle: 0x40, value: [0xBB]), id: 3, now: .zero), [])
        XCTAssertEqual(bearer.serverDatabaseChanged(0x0010...0x0020), [.complete(id: 2, .failure(.databaseChanged(0x0010...0x0020)))])
        XCTAssertEqual(bearer.receive([0x0B, 0x01], now: .seconds(1)), [
            .complete(id: 1, .success(.value([0x01]))),
            .send([0x12, 0x40, 0x00, 0xBB]),
        ])
    }

    /// With Enhanced ATT the change reaches the procedure on every bearer and the waiting ones
    /// (one server database for all of them), whichever bearer the indication came on.
    func testEveryBearerOfTheSetIsTold() {
        var s = ATTClientBearerSet(unenhanced: ATTClientBearer())
        XCTAssertEqual(s.add(.enhanced(cid: 0x40), bearer: ATTClientBearer(mtu: 64), now: .zero), [])
        let onEnhanced = ATTBearerID.enhanced(cid: 0x40)
        _ = s.submit(ReadProcedure(handle: 0x12), id: 1, now: .zero)
        _ = s.submit(ReadProcedure(handle: 0x14), id: 2, now: .zero)
        XCTAssertEqual(s.submit(WriteValueProcedure(handle: 0x16, value: [1]), id: 3, now: .zero), [])
        XCTAssertEqual(s.bearer(running: 2), onEnhanced)
        XCTAssertEqual(s.serverDatabaseChanged(0x0010...0x0020, now: .seconds(1)), [
            ATTBearerSetAction(bearer: .unenhanced, action: .complete(id: 3, .failure(.databaseChanged(0x0010...0x0020)))),
        ])
        XCTAssertEqual(s.waitingCount, 0)
        XCTAssertEqual(s.receive([0x0B, 0x02], on: onEnhanced, now: .seconds(2)), [
            ATTBearerSetAction(bearer: onEnhanced, action: .complete(id: 2, .failure(.databaseChanged(0x0010...0x0020)))),
        ])
        XCTAssertEqual(s.receive([0x0B, 0x01], on: .unenhanced, now: .seconds(2)), [
            ATTBearerSetAction(bearer: .unenhanced, action: .complete(id: 1, .failure(.databaseChanged(0x0010...0x0020)))),
        ])
    }

    // MARK: Discovery walks the changed part again

    /// A service added while the search is past it is found: the answer outstanding at the change
    /// is dropped and the walk asks again from where the change starts.
    func testAServiceAddedDuringServiceDiscoveryIsFound() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), serviceChangedHandle: 0x0008, [
            "C: 10 0100 ffff 0028", "S: 11 06 0100 0500 0018 0600 0d00 0118",
            "C: 10 0e00 ffff 0028", "S: 1d 0800 2000 2f00", "C: 1e", "S: 01 10 0e00 0a",
            "C: 10 0e00 ffff 0028", "S: 11 06 2000 2f00 f0ff",
            "C: 10 3000 ffff 0028", "S: 01 10 3000 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.services?.map(\.uuid),
                       [GATTUUID.genericAccessService, GATTUUID.genericAttributeService, BluetoothUUID(0xFFF0)])
    }

    /// A service already found in the changed range is dropped and searched again.
    func testAServiceReplacedBehindTheSearchIsFoundAgain() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), serviceChangedHandle: 0x0008, [
            "C: 10 0100 ffff 0028", "S: 11 06 0100 0500 0018 0600 0d00 0118 1000 1400 f0ff",
            "C: 10 1500 ffff 0028", "S: 1d 0800 1000 1400", "C: 1e", "S: 01 10 1500 0a",
            "C: 10 1000 ffff 0028", "S: 11 06 1000 1400 f5ff",
            "C: 10 1500 ffff 0028", "S: 01 10 1500 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.services?.map(\.uuid),
                       [GATTUUID.genericAccessService, GATTUUID.genericAttributeService, BluetoothUUID(0xFFF5)])
    }

    func testACharacteristicAddedDuringCharacteristicDiscoveryIsFound() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0x0010...0x001F), serviceChangedHandle: 0x0008, [
            "C: 08 1000 1f00 0328", "S: 09 07 1100 0a 1200 f1ff",
            "C: 08 1200 1f00 0328", "S: 1d 0800 1300 1f00", "C: 1e", "S: 01 08 1200 0a",
            "C: 08 1200 1f00 0328", "S: 09 07 1300 02 1400 f2ff",
            "C: 08 1400 1f00 0328", "S: 01 08 1400 0a",
        ])
        let found = outcome.result?.gattOutput?.characteristics
        XCTAssertEqual(found?.map(\.uuid), [BluetoothUUID(0xFFF1), BluetoothUUID(0xFFF2)])
        XCTAssertEqual(found?.map(\.endHandle), [0x0012, 0x001F])
    }

    /// Bounded: the fourth change during one walk ends it with `.databaseChanged`.
    func testAWalkGoesBackAtMostThreeTimes() {
        let change = ["S: 1d 0800 0100 ffff", "C: 1e"]
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), serviceChangedHandle: 0x0008,
                                          ["C: 10 0100 ffff 0028"] + change + change + change + change + ["S: 01 10 0100 0a"])
        XCTAssertEqual(GATTDatabaseChangeEffect.coverAgainLimit, 3)
        XCTAssertEqual(outcome.result, .failure(.databaseChanged(0x0001...0xFFFF)))
    }

    /// A change outside the walk's range leaves it alone.
    func testAChangeOutsideTheRangeDoesNotSendTheWalkBack() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0x0010...0x001F), serviceChangedHandle: 0x0008, [
            "C: 08 1000 1f00 0328", "S: 1d 0800 3000 3f00", "C: 1e", "S: 09 07 1100 0a 1200 f1ff",
            "C: 08 1200 1f00 0328", "S: 01 08 1200 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.characteristics?.map(\.valueHandle), [0x0012])
    }

    /// The UUID of a 128-bit included service being read back when the change arrives is read
    /// again, after the include declarations of the changed part.
    func testFindIncludedServicesReadsAgainAfterAChange() {
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(range: 0x0010...0x001F), serviceChangedHandle: 0x0008, [
            "C: 08 1000 1f00 0228", "S: 09 06 1100 3000 3400",
            "C: 0a 3000", "S: 1d 0800 1000 1f00", "C: 1e", "S: 0b \(gattScriptUUID128Hex)",
            "C: 08 1000 1f00 0228", "S: 09 06 1100 4000 4400",
            "C: 0a 4000", "S: 0b \(gattScriptUUID128Hex)",
            "C: 08 1200 1f00 0228", "S: 01 08 1200 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.includedServices?.map(\.serviceHandleRange), [0x0040...0x0044])
    }

    /// A second change while the dropped read-back is still outstanding: the include it was for
    /// is gone from the walk's entries, and the walk still covers the range again and ends.
    func testFindIncludedServicesTakesASecondChangeWhileAUUIDReadIsOutstanding() {
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(range: 0x0010...0x001F), serviceChangedHandle: 0x0008, [
            "C: 08 1000 1f00 0228", "S: 09 06 1100 3000 3400",
            "C: 0a 3000",
            "S: 1d 0800 1000 1f00", "C: 1e",
            "S: 1d 0800 1000 1f00", "C: 1e",
            "S: 0b \(gattScriptUUID128Hex)",
            "C: 08 1000 1f00 0228", "S: 01 08 1000 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.includedServices?.count, 0)
    }

    /// A characteristic's descriptor range is its own as known before the change: descriptors
    /// found there may be another characteristic's now.
    func testDescriptorDiscoveryReachedByTheChangeEndsWithDatabaseChanged() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0013...0x0015), serviceChangedHandle: 0x0008,
                                          ["C: 04 1300 1500"] + Self.changed10to20 + ["S: 05 01 1300 0229"])
        XCTAssertEqual(outcome.result, .failure(.databaseChanged(0x0010...0x0020)))
    }

    /// The Database Hash answered across a change may be the old database's: read again.
    func testTheDatabaseHashIsReadAgainAfterAChange() {
        let old = String(repeating: "11", count: 16), new = String(repeating: "22", count: 16)
        let outcome = runGATTClientScript(ReadDatabaseHashProcedure(), serviceChangedHandle: 0x0008, [
            "C: 08 0100 ffff 2a2b", "S: 1d 0800 0100 ffff", "C: 1e", "S: 09 12 0c00 \(old)",
            "C: 08 0100 ffff 2a2b", "S: 09 12 0c00 \(new)",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.handleValues?.first?.value.hexString, new)
    }
}

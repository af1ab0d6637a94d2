import XCTest
import BLEHCI
import BLEWire
@testable import BLEHost

/// The central's connection attempt: every way it ends, and the race with a cancel.
final class ConnectionInitiatorTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)

    func testOneAttemptAtATimeAndItsLink() {
        var initiator = ConnectionInitiator()
        let id = initiator.begin(peer: peer, deadline: .seconds(10))
        XCTAssertNotNil(id)
        XCTAssertNil(initiator.begin(peer: peer, deadline: .seconds(10)), "the controller has one initiator")
        XCTAssertEqual(initiator.connectionComplete(status: .success, handle: 0x40), .connected(attempt: id ?? 0, handle: 0x40))
        initiator.end(id ?? 0)
        XCTAssertFalse(initiator.isBusy)
    }

    func testTimeoutSendsOneCancelAndTheCancelledCompletionIsATimeout() {
        var initiator = ConnectionInitiator()
        let id = initiator.begin(peer: peer, deadline: .seconds(10)) ?? 0
        XCTAssertEqual(initiator.nextDeadline, .seconds(10))
        XCTAssertFalse(initiator.expire(now: .seconds(9)))
        XCTAssertTrue(initiator.expire(now: .seconds(10)))
        XCTAssertFalse(initiator.expire(now: .seconds(11)), "one cancel per attempt")
        XCTAssertNil(initiator.nextDeadline, "no deadline once the cancel is out")
        XCTAssertEqual(initiator.connectionComplete(status: .unknownConnectionIdentifier, handle: 0),
                       .failed(attempt: id, .timeout(peer)))
    }

    func testALinkThatWinsTheRaceWithTheCancelIsUnwanted() {
        var initiator = ConnectionInitiator()
        let id = initiator.begin(peer: peer, deadline: .seconds(10)) ?? 0
        XCTAssertTrue(initiator.cancelByCaller(id))
        XCTAssertEqual(initiator.connectionComplete(status: .success, handle: 0x41),
                       .unwanted(handle: 0x41, attempt: id, failure: .cancelled))
    }

    func testNoCancelOnceTheCompletionHasDecidedTheAttempt() {
        var initiator = ConnectionInitiator()
        let id = initiator.begin(peer: peer, deadline: .seconds(5)) ?? 0
        XCTAssertEqual(initiator.connectionComplete(status: .success, handle: 0x40), .connected(attempt: id, handle: 0x40))
        // The caller has not taken its answer yet (its task waits for the actor), and meanwhile
        // the deadline passes and the caller's task is cancelled: neither may send a cancel, which
        // would stop the next attempt on the controller.
        XCTAssertNil(initiator.nextDeadline)
        XCTAssertFalse(initiator.expire(now: .seconds(6)))
        XCTAssertFalse(initiator.cancelByCaller(id))
        XCTAssertNil(initiator.abandoned(id))
        // A second completion is not about this attempt.
        XCTAssertEqual(initiator.connectionComplete(status: .success, handle: 0x41), .unwanted(handle: 0x41, attempt: nil, failure: nil))
    }

    func testAStaleCancelNeverStopsALaterAttempt() {
        var initiator = ConnectionInitiator()
        let first = initiator.begin(peer: peer, deadline: .seconds(10)) ?? 0
        initiator.end(first)
        let second = initiator.begin(peer: peer, deadline: .seconds(10)) ?? 0
        XCTAssertFalse(initiator.cancelByCaller(first))
        XCTAssertEqual(initiator.connectionComplete(status: .success, handle: 0x40), .connected(attempt: second, handle: 0x40))
    }

    func testRefusalLostEventAndNobodyWaiting() {
        var initiator = ConnectionInitiator()
        let id = initiator.begin(peer: peer, deadline: .seconds(10)) ?? 0
        XCTAssertNil(initiator.abandoned(id), "nothing to abandon before a cancel")
        XCTAssertEqual(initiator.connectionComplete(status: .connectionFailedToBeEstablished, handle: 0),
                       .failed(attempt: id, .refused(.connectionFailedToBeEstablished)))
        initiator.end(id)
        let second = initiator.begin(peer: peer, deadline: .seconds(10)) ?? 0
        XCTAssertTrue(initiator.cancelByCaller(second))
        XCTAssertEqual(initiator.abandoned(second), .cancelled, "a lost completion still ends the attempt")
        initiator.end(second)
        XCTAssertEqual(initiator.connectionComplete(status: .success, handle: 0x42), .unwanted(handle: 0x42, attempt: nil, failure: nil))
        XCTAssertEqual(initiator.connectionComplete(status: .unknownConnectionIdentifier, handle: 0), .ignored)
    }
}

/// The scans on one controller: each with its own deadline (starting when the controller
/// confirms), filter and device table; reports into devices.
final class ScannerTests: XCTestCase {
    let address = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_02), type: .random)

    func testEachScanHasItsOwnDeadlineStartingWhenEnabled() {
        var scanner = Scanner()
        let id = scanner.begin(active: false, filter: ScanFilter(), timeout: .seconds(5)) ?? 0
        XCTAssertNil(scanner.nextDeadline, "the timeout waits for the controller")
        scanner.enabled(id, now: .seconds(1))
        let second = scanner.begin(active: true, filter: ScanFilter(), timeout: .seconds(2)) ?? 0
        XCTAssertNotEqual(id, second)
        scanner.enabled(second, now: .seconds(3))
        scanner.enabled(id, now: .seconds(3))
        XCTAssertEqual(scanner.nextDeadline, .seconds(5), "the earlier of 1+5 and 3+2; a second confirmation moves nothing")
        XCTAssertTrue(scanner.wantsActiveScanning)
        XCTAssertEqual(scanner.expired(now: .seconds(4)), [])
        XCTAssertEqual(scanner.expired(now: .seconds(6)), [id, second])
        XCTAssertTrue(scanner.end(second))
        XCTAssertFalse(scanner.wantsActiveScanning)
        XCTAssertTrue(scanner.end(id))
        XCTAssertFalse(scanner.end(id), "ends once")
        XCTAssertEqual(scanner.runningIDs, [])
    }

    func testTheNumberOfScansIsBounded() {
        var scanner = Scanner()
        let ids = (0..<Scanner.maximumScans).compactMap { _ in scanner.begin(active: false, filter: ScanFilter(), timeout: nil) }
        XCTAssertEqual(ids.count, Scanner.maximumScans)
        XCTAssertNil(scanner.begin(active: false, filter: ScanFilter(), timeout: nil))
        XCTAssertTrue(scanner.end(ids[0]))
        XCTAssertNotNil(scanner.begin(active: false, filter: ScanFilter(), timeout: nil))
    }

    func testReportsBecomeDevicesOnlyWhileScanning() {
        var scanner = Scanner()
        let data = AdvertisingData.Builder().localName("Thermo").build().encode()
        let report = LEAdvertisingReport(legacy: .advNonconnInd, address: address, data: data, rssi: -40)
        XCTAssertTrue(scanner.receive(report, now: .zero).isEmpty, "no scan, no devices")
        let id = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
        let out = scanner.receive(report, now: .seconds(1))
        XCTAssertEqual(out.map(\.id), [id].compactMap { $0 })
        XCTAssertEqual(out.first?.devices.map(\.address), [address])
        XCTAssertEqual(out.first?.devices.first?.advertisement.localName, "Thermo")
    }

    /// An extended advertisement that is connectable but not scannable has no scan response to
    /// wait for: an active scan reports it at once (it was held until the device's next
    /// advertisement, as if it were an ADV_IND), connectable; a scannable one is still held.
    func testAnActiveScanReportsAConnectableNonScannableExtendedAdvertisementAtOnce() {
        var scanner = Scanner()
        let id = scanner.begin(active: true, filter: ScanFilter(), timeout: nil) ?? 0
        let data = AdvertisingData.Builder().localName("Tracker").build().encode()
        let connectable = LEAdvertisingReport(properties: [.connectable], address: address, rssi: -40, data: data)
        let out = scanner.receive(connectable, now: .seconds(1))
        XCTAssertEqual(out.map(\.id), [id])
        XCTAssertEqual(out.first?.devices.first?.isConnectable, true)
        let other = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_03), type: .random)
        let scannable = LEAdvertisingReport(properties: [.scannable], address: other, rssi: -40, data: data)
        XCTAssertTrue(scanner.receive(scannable, now: .seconds(1)).isEmpty, "held for its scan response")
        let response = LEAdvertisingReport(properties: [.scannable, .scanResponse], address: other, rssi: -40, data: data)
        XCTAssertEqual(scanner.receive(response, now: .seconds(1)).first?.devices.first?.isConnectable, false)
    }

    /// Each scan filters for itself, and keeps its own table: a device already reported to
    /// one scan is new to a scan that starts later.
    func testScansFilterAndRememberDevicesEachForThemselves() {
        var scanner = Scanner()
        let thermo = LEAdvertisingReport(legacy: .advNonconnInd, address: address,
                                         data: AdvertisingData.Builder().localName("Thermo").build().encode(), rssi: -40)
        let everything = scanner.begin(active: false, filter: ScanFilter(), timeout: nil) ?? 0
        let named = scanner.begin(active: false, filter: ScanFilter(nameContains: "HRM"), timeout: nil) ?? 0
        XCTAssertEqual(scanner.receive(thermo, now: .seconds(1)).map(\.id), [everything], "the HRM scan does not see Thermo")
        XCTAssertEqual(scanner.receive(thermo, now: .seconds(2)).map(\.id), [], "a duplicate, for the first scan")
        let later = scanner.begin(active: false, filter: ScanFilter(), timeout: nil) ?? 0
        XCTAssertEqual(scanner.receive(thermo, now: .seconds(3)).map(\.id), [later], "new to the scan that started later")
        _ = named
    }
}

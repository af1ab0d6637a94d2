import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// An active scan holds a device's first scannable advertisement until its scan response (Core
/// spec Vol 6 Part B §4.4.3.2), through lost scan requests and a response reported after the
/// next advertisement, so the first report of the device is the merged one; it gives up after
/// `ScanAggregator.scanResponseWaitEvents` advertisements or `scanResponseWaitTime`. Nothing else
/// is held. The scanner is fed reports at given times (its clock is the caller's `now`).
final class GAPScanResponseWaitTests: XCTestCase {
    let device = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    /// Flags and the 16-bit service 180D: no name.
    let advertisement: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18]
    /// The complete local name "HRM".
    let scanResponse: [UInt8] = [0x04, 0x09, 0x48, 0x52, 0x4D]

    func advertising(_ type: LegacyAdvertisingEventType = .advInd) -> LEAdvertisingReport {
        LEAdvertisingReport(legacy: type, address: device, data: advertisement, rssi: -50)
    }

    var response: LEAdvertisingReport { LEAdvertisingReport(legacy: .scanRsp, address: device, data: scanResponse, rssi: -51) }

    func scanner(active: Bool = true, allowDuplicates: Bool = false) -> BLEHost.Scanner {
        var scanner = BLEHost.Scanner()
        _ = scanner.begin(active: active, filter: ScanFilter(allowDuplicates: allowDuplicates), timeout: nil)
        return scanner
    }

    /// The names of the devices `scanner` delivers for `report` heard at `ms` milliseconds
    /// ("-" for a device without one).
    func names(_ scanner: inout BLEHost.Scanner, _ report: LEAdvertisingReport, at ms: Int64) -> [String] {
        scanner.receive(report, now: .milliseconds(ms)).flatMap(\.devices).map { $0.advertisement.localName ?? "-" }
    }

    func testAScanResponseReportedAfterTheNextAdvertisementIsInTheFirstReport() {
        var s = scanner()
        XCTAssertEqual(names(&s, advertising(), at: 0), [])
        XCTAssertEqual(names(&s, advertising(), at: 100), [], "still waiting for the response")
        XCTAssertEqual(names(&s, response, at: 100), ["HRM"])
    }

    func testTwoLostScanRequestsAndALateResponseStillGiveOneMergedFirstReport() {
        var s = scanner()
        for ms in stride(from: Int64(0), through: 300, by: 100) {
            XCTAssertEqual(names(&s, advertising(), at: ms), [], "advertisement at \(ms) ms")
        }
        XCTAssertEqual(names(&s, response, at: 300), ["HRM"], "the answer to the third request, after the fourth advertisement")
    }

    func testAResponseThatNeverComesIsWaitedForFourMoreAdvertisements() {
        var s = scanner(allowDuplicates: true)
        for ms in stride(from: Int64(0), through: 300, by: 100) {
            XCTAssertEqual(names(&s, advertising(), at: ms), [], "advertisement at \(ms) ms")
        }
        let out = s.receive(advertising(), now: .milliseconds(400)).flatMap(\.devices)
        XCTAssertEqual(out.count, 1, "reported at the fourth advertisement after the first")
        XCTAssertEqual(out.first?.hasScanResponse, false)
        XCTAssertEqual(out.first?.advertisement.serviceUUIDs, [BluetoothUUID(0x180D)])
        // After a wait that ran out, a hold lasts until the next advertisement only.
        XCTAssertEqual(names(&s, advertising(), at: 500), [])
        XCTAssertEqual(names(&s, advertising(), at: 600), ["-"])
        XCTAssertEqual(names(&s, response, at: 600), ["HRM"], "a response that comes at last is merged and reported")
    }

    /// A device that advertises slowly: the wait's time bound, which the owner's timer runs at
    /// the scanner's `nextDeadline`.
    func testAResponseThatNeverComesIsWaitedForAtMostTheWaitTime() {
        var s = scanner(allowDuplicates: true)
        XCTAssertEqual(names(&s, advertising(), at: 1000), [])
        let deadline = Duration.milliseconds(1000) + ScanAggregator.scanResponseWaitTime
        XCTAssertEqual(s.nextDeadline, deadline)
        var deliveries = BLEHost.Scanner.Deliveries()
        s.releaseHolds(now: deadline - .milliseconds(1), into: &deliveries)
        XCTAssertTrue(deliveries.isEmpty, "not before the deadline")
        s.releaseHolds(now: deadline, into: &deliveries)
        XCTAssertEqual(deliveries.devices.map(\.address), [device])
        XCTAssertEqual(deliveries.devices.first?.hasScanResponse, false)
        XCTAssertNil(s.nextDeadline)
        // Its next advertisement waits for the one after, within the same time bound.
        XCTAssertEqual(names(&s, advertising(), at: 4000), [])
        XCTAssertEqual(s.nextDeadline, .milliseconds(4000) + ScanAggregator.scanResponseWaitTime)
        XCTAssertEqual(names(&s, advertising(), at: 5000), ["-"])
    }

    func testAResponseInTimeLeavesNoDeadline() {
        var s = scanner()
        XCTAssertEqual(names(&s, advertising(), at: 0), [])
        XCTAssertNotNil(s.nextDeadline)
        XCTAssertEqual(names(&s, response, at: 5), ["HRM"])
        XCTAssertNil(s.nextDeadline, "the owner's timer need not wake for it")
    }

    /// A scan that ends hands over what it holds; another scan's hold goes on.
    func testEndingAScanReportsWhatItHolds() {
        var s = BLEHost.Scanner()
        let first = s.begin(active: true, filter: ScanFilter(), timeout: nil)
        let second = s.begin(active: true, filter: ScanFilter(), timeout: nil)
        XCTAssertEqual(names(&s, advertising(), at: 0), [])
        var deliveries = BLEHost.Scanner.Deliveries()
        s.releaseAllHolds(of: first ?? 0, into: &deliveries)
        XCTAssertEqual(deliveries.devices.map(\.address), [device])
        XCTAssertEqual(deliveries.ids, [first ?? 0])
        XCTAssertTrue(s.end(first ?? 0))
        XCTAssertEqual(s.nextDeadline, ScanAggregator.scanResponseWaitTime, "the second scan still waits")
        XCTAssertEqual(s.receive(response, now: .milliseconds(10)).map(\.id), [second ?? 0])
    }

    func testOnceAResponseIsMergedTheNextAdvertisementEndsAHold() {
        var s = scanner(allowDuplicates: true)
        XCTAssertEqual(names(&s, advertising(), at: 0), [])
        XCTAssertEqual(names(&s, response, at: 0), ["HRM"])
        XCTAssertEqual(names(&s, advertising(), at: 100), [])
        XCTAssertEqual(names(&s, advertising(), at: 200), ["HRM"], "its request lost: reported with the last response's name")
    }

    /// A later hold whose scan response is lost, the device then quiet: the held report is
    /// delivered at the wait time, not kept until ageing drops it.
    func testALaterHoldWhoseResponseIsLostIsReportedAtTheWaitTime() {
        var s = scanner()
        XCTAssertEqual(names(&s, advertising(), at: 0), [])
        XCTAssertEqual(names(&s, response, at: 0), ["HRM"])
        let changed = LEAdvertisingReport(legacy: .advInd, address: device, data: advertisement + [0x02, 0x0A, 0x04], rssi: -50)
        XCTAssertEqual(names(&s, changed, at: 100), [], "held for its scan response, which is lost")
        let deadline = Duration.milliseconds(100) + ScanAggregator.scanResponseWaitTime
        XCTAssertEqual(s.nextDeadline, deadline)
        var deliveries = BLEHost.Scanner.Deliveries()
        s.releaseHolds(now: deadline - .milliseconds(1), into: &deliveries)
        XCTAssertTrue(deliveries.isEmpty, "not before the deadline")
        s.releaseHolds(now: deadline, into: &deliveries)
        XCTAssertEqual(deliveries.devices.map(\.advertisement.txPowerLevel), [4], "the held advertisement, with the last response")
        XCTAssertEqual(deliveries.devices.map(\.advertisement.localName), ["HRM"])
        XCTAssertNil(s.nextDeadline)
    }

    /// Many devices that never answer, first heard within one step of the deadline grid
    /// (`ScanAggregator.holdDeadlineStep`): their holds share one deadline, so the owner's timer
    /// wakes once for all of them.
    func testHoldsStartedWithinOneGridStepShareOneDeadline() {
        var s = scanner()
        let step = ScanAggregator.holdDeadlineStep
        let count = 50
        for i in 0..<count {
            let address = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_10_00 + UInt64(i)), type: .random)
            let report = LEAdvertisingReport(legacy: .advInd, address: address, data: advertisement, rssi: -50)
            // Spread over (1 s, 1 s + step].
            let now = Duration.seconds(1) + step / count * (i + 1)
            XCTAssertTrue(s.receive(report, now: now).isEmpty)
        }
        let deadline = Duration.seconds(1) + step + ScanAggregator.scanResponseWaitTime
        XCTAssertEqual(s.nextDeadline, deadline)
        var deliveries = BLEHost.Scanner.Deliveries()
        s.releaseHolds(now: deadline - .milliseconds(1), into: &deliveries)
        XCTAssertTrue(deliveries.isEmpty, "not before the shared deadline")
        s.releaseHolds(now: deadline, into: &deliveries)
        XCTAssertEqual(deliveries.devices.count, count, "every hold ends at the one wake-up")
        XCTAssertNil(s.nextDeadline)
    }

    func testNonScannableAdvertisementsAreReportedAtOnce() {
        var s = scanner()
        for (i, type) in [LegacyAdvertisingEventType.advNonconnInd, .advDirectInd].enumerated() {
            let other = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_10 + UInt64(i)), type: .random)
            let report = LEAdvertisingReport(legacy: type, address: other, data: advertisement, rssi: -50)
            XCTAssertEqual(s.receive(report, now: .zero).flatMap(\.devices).count, 1, "\(type)")
        }
        let extended = LEAdvertisingReport(properties: [.connectable], address: device, rssi: -50, data: advertisement)
        XCTAssertEqual(s.receive(extended, now: .zero).flatMap(\.devices).count, 1, "extended, connectable, not scannable")
        XCTAssertNil(s.nextDeadline, "nothing waits")
    }

    /// A device advertising a non-scannable set beside its scannable one at the same address
    /// (ADV_NONCONN_IND, or an extended set with another SID): the other set's report is merged
    /// as the device's latest data and the first wait goes on, so one lost scan request still
    /// gives a first report with the name.
    func testANonScannableSetAtTheSameAddressDoesNotEndTheFirstWait() {
        var s = scanner()
        let otherSet = LEAdvertisingReport(properties: [], address: device, rssi: -50, data: [0x03, 0xFF, 0x59, 0x00])
        let legacyOtherSet = LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: [0x03, 0xFF, 0x59, 0x00], rssi: -50)
        XCTAssertEqual(names(&s, advertising(), at: 0), [], "its scan request lost")
        XCTAssertEqual(names(&s, otherSet, at: 30), [], "the extended non-scannable set's event")
        XCTAssertEqual(names(&s, legacyOtherSet, at: 60), [], "an ADV_NONCONN_IND")
        XCTAssertEqual(s.nextDeadline, ScanAggregator.scanResponseWaitTime, "the wait keeps its time bound")
        XCTAssertEqual(names(&s, advertising(), at: 100), [])
        XCTAssertEqual(names(&s, response, at: 100), ["HRM"])
    }

    /// The other set's reports do not count towards `scanResponseWaitEvents` (they give no
    /// chance of a scan request); the time bound still ends the wait.
    func testANonScannableSetsReportsEndTheFirstWaitOnlyAtTheWaitTime() {
        var s = scanner()
        let otherSet = LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: [0x03, 0xFF, 0x59, 0x00], rssi: -50)
        XCTAssertEqual(names(&s, advertising(), at: 0), [])
        for ms in stride(from: Int64(20), through: 1980, by: 20) {
            XCTAssertEqual(names(&s, otherSet, at: ms), [], "the other set at \(ms) ms")
        }
        XCTAssertEqual(names(&s, otherSet, at: 2000), ["-"], "reported when the wait time is up")
    }

    func testAPassiveScanReportsAScannableAdvertisementAtOnce() {
        var s = scanner(active: false)
        XCTAssertEqual(names(&s, advertising(), at: 0), ["-"])
        XCTAssertNil(s.nextDeadline, "nothing waits")
    }

    func testAnExtendedScannableAdvertisementWaitsForItsExtendedScanResponse() {
        var s = scanner()
        // Scannable extended advertising carries no data (Vol 4 Part E §7.8.54): all is in the response.
        let empty = LEAdvertisingReport(properties: [.connectable, .scannable], address: device, rssi: -50, data: [])
        let extendedResponse = LEAdvertisingReport(properties: [.connectable, .scannable, .scanResponse], address: device,
                                                   rssi: -50, data: advertisement + scanResponse)
        XCTAssertEqual(names(&s, empty, at: 0), [])
        XCTAssertEqual(names(&s, empty, at: 100), [], "its request lost")
        let out = s.receive(extendedResponse, now: .milliseconds(100)).flatMap(\.devices)
        XCTAssertEqual(out.map(\.advertisement.localName), ["HRM"])
        XCTAssertEqual(out.first?.isConnectable, true)
    }
}

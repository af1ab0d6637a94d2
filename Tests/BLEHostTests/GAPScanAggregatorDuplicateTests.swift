import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// What the aggregator's one-entry-per-device table must keep from the table-per-field one it
/// replaced: a duplicate is data equal in meaning to what was last reported (not to what was
/// last heard), repeated bytes are not merged again but still refresh the device, and a
/// scan response is merged whenever it changes. Virtual time: every `now` is given.
final class GAPScanAggregatorDuplicateTests: XCTestCase {
    let device = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let samePublic = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .public)
    let hrm = AdvertisingData.Builder().flags([.leGeneralDiscoverable]).localName("HRM").build().encode()
    let other = AdvertisingData.Builder().flags([.leGeneralDiscoverable]).localName("HRX").build().encode()

    func report(_ kind: AdvertisingEventKind, _ data: [UInt8], rssi: Int8? = -50, address: DeviceAddress? = nil) -> AdvertisingReportInput {
        AdvertisingReportInput(kind: kind, address: address ?? device, data: data, rssi: rssi)
    }

    /// Data the filter turned away (too weak) was never reported, so the first data heard
    /// again is still a duplicate of what the consumer has.
    func testADuplicateIsOfTheLastReportedDataNotTheLastHeard() {
        var a = ScanAggregator(active: false, filter: ScanFilter(minimumRSSI: -70))
        XCTAssertEqual(a.receive(report(.nonConnectable, hrm, rssi: -50), now: .seconds(1)).count, 1)
        XCTAssertEqual(a.receive(report(.nonConnectable, other, rssi: -90), now: .seconds(2)).count, 0, "too weak")
        XCTAssertEqual(a.devices[device]?.advertisement.localName, "HRX", "the table has the data last heard")
        XCTAssertEqual(a.receive(report(.nonConnectable, hrm, rssi: -50), now: .seconds(3)).count, 0,
                       "what was reported last: a duplicate")
        XCTAssertEqual(a.receive(report(.nonConnectable, other, rssi: -50), now: .seconds(4)).first?.advertisement.localName, "HRX")
    }

    /// Bytes that differ only in padding after a zero length mean the same advertisement.
    func testPaddingIsNoChange() {
        var a = ScanAggregator(active: false, filter: ScanFilter())
        XCTAssertEqual(a.receive(report(.nonConnectable, hrm), now: .seconds(1)).count, 1)
        XCTAssertEqual(a.receive(report(.nonConnectable, hrm + [0, 0, 0]), now: .seconds(2)).count, 0)
        XCTAssertEqual(a.devices[device]?.lastSeen, .seconds(2))
    }

    /// Repeated bytes refresh RSSI, time and connectability without being reported again.
    func testRepeatedDataRefreshesTheDevice() throws {
        var a = ScanAggregator(active: false, filter: ScanFilter())
        _ = a.receive(report(.connectableUndirected, hrm, rssi: -60), now: .seconds(1))
        XCTAssertTrue(a.receive(report(.nonConnectable, hrm, rssi: nil), now: .seconds(2)).isEmpty)
        XCTAssertTrue(a.receive(report(.nonConnectable, hrm, rssi: -45), now: .seconds(3)).isEmpty)
        let d = try XCTUnwrap(a.devices[device])
        XCTAssertEqual(d.rssi, -45)
        XCTAssertEqual(d.lastSeen, .seconds(3))
        XCTAssertEqual(d.firstSeen, .seconds(1))
        XCTAssertFalse(d.isConnectable)
        XCTAssertEqual(d.advertisement.localName, "HRM")
    }

    /// A changed scan response is merged in and reported; the same one again is not.
    func testAChangedScanResponseIsMergedAgain() {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        let power4 = AdvertisingData.Builder().txPowerLevel(4).build().encode()
        let power8 = AdvertisingData.Builder().txPowerLevel(8).build().encode()
        _ = a.receive(report(.connectableUndirected, hrm), now: .seconds(1))
        XCTAssertEqual(a.receive(report(.scanResponse, power4), now: .seconds(1)).first?.advertisement.txPowerLevel, 4)
        _ = a.receive(report(.connectableUndirected, hrm), now: .seconds(2))
        XCTAssertTrue(a.receive(report(.scanResponse, power4), now: .seconds(2)).isEmpty, "nothing changed")
        _ = a.receive(report(.connectableUndirected, hrm), now: .seconds(3))
        let out = a.receive(report(.scanResponse, power8), now: .seconds(3))
        XCTAssertEqual(out.first?.advertisement.txPowerLevel, 8)
        XCTAssertEqual(out.first?.advertisement.localName, "HRM")
        XCTAssertEqual(a.devices[device]?.hasScanResponse, true)
    }

    /// The same 48 bits as a public and as a random address are two devices.
    func testTheAddressTypeIsPartOfTheKey() {
        var a = ScanAggregator(active: false, filter: ScanFilter())
        XCTAssertEqual(a.receive(report(.nonConnectable, hrm), now: .seconds(1)).count, 1)
        XCTAssertEqual(a.receive(report(.nonConnectable, hrm, address: samePublic), now: .seconds(1)).count, 1)
        XCTAssertEqual(a.devices.count, 2)
        XCTAssertEqual(a.deviceCount, 2)
    }

    /// `receive(_:now:into:)` appends to the owner's buffer; several scans are told apart by id.
    func testTheScannerTagsEachDeliveryWithItsScan() {
        var scanner = Scanner()
        let first = scanner.begin(active: false, filter: ScanFilter(), timeout: nil) ?? 0
        let second = scanner.begin(active: false, filter: ScanFilter(nameContains: "hrm"), timeout: nil) ?? 0
        var deliveries = Scanner.Deliveries()
        scanner.receive(LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: hrm, rssi: -40), now: .seconds(1), into: &deliveries)
        XCTAssertEqual(deliveries.ids, [first, second])
        XCTAssertEqual(deliveries.devices.map(\.address), [device, device])
        deliveries.removeAll()
        XCTAssertTrue(deliveries.isEmpty)
        scanner.receive(LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: other, rssi: -40), now: .seconds(2), into: &deliveries)
        XCTAssertEqual(deliveries.ids, [first], "the name filter turns HRX away")
    }
}

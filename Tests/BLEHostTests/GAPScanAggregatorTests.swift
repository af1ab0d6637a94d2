import BLEHost
import BLEWire
import XCTest

final class GAPScanAggregatorTests: XCTestCase {
    let hrm = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let other = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_01_02_03), type: .public)
    // flags 06, 16-bit services [180D], complete name "HRM"
    let advertisement: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x04, 0x09, 0x48, 0x52, 0x4D]
    // complete 16-bit list [180F] and TX power 4
    let scanResponse: [UInt8] = [0x03, 0x03, 0x0F, 0x18, 0x02, 0x0A, 0x04]

    func report(_ kind: AdvertisingEventKind, _ address: DeviceAddress, _ data: [UInt8], rssi: Int8? = -50) -> AdvertisingReportInput {
        AdvertisingReportInput(kind: kind, address: address, data: data, rssi: rssi)
    }

    func testPassiveScanReportsAtOnceAndFiltersDuplicates() {
        var a = ScanAggregator(active: false, filter: ScanFilter())
        XCTAssertEqual(a.receive(report(.connectableUndirected, hrm, advertisement), now: .seconds(1)).count, 1)
        XCTAssertEqual(a.receive(report(.connectableUndirected, hrm, advertisement), now: .seconds(2)).count, 0, "same data again is a duplicate")
        XCTAssertEqual(a.devices[hrm]?.lastSeen, .seconds(2), "a duplicate still refreshes last-seen")
        let changed = advertisement.dropLast(5) + [0x04, 0x09, 0x48, 0x52, 0x58]
        XCTAssertEqual(a.receive(report(.connectableUndirected, hrm, Array(changed)), now: .seconds(3)).first?.advertisement.localName, "HRX")
    }

    func testActiveScanMergesScanResponseIntoOneReport() throws {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        XCTAssertTrue(a.receive(report(.connectableUndirected, hrm, advertisement), now: .seconds(1)).isEmpty, "held for the scan response")
        let out = a.receive(report(.scanResponse, hrm, scanResponse, rssi: -48), now: .seconds(1))
        XCTAssertEqual(out.count, 1)
        let d = try XCTUnwrap(out.first)
        XCTAssertEqual(Set(d.advertisement.serviceUUIDs), [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        XCTAssertEqual(d.advertisement.localName, "HRM")
        XCTAssertEqual(d.advertisement.txPowerLevel, 4)
        XCTAssertEqual(d.rssi, -48)
        XCTAssertTrue(d.hasScanResponse)
        XCTAssertTrue(d.isConnectable)
    }

    func testActiveScanReportsHeldReportWithoutItsScanResponseWhenTheWaitRunsOut() throws {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        for ms in stride(from: Int64(1000), through: 1300, by: 100) {
            XCTAssertTrue(a.receive(report(.connectableUndirected, hrm, advertisement), now: .milliseconds(ms)).isEmpty, "waiting at \(ms) ms")
        }
        let out = a.receive(report(.connectableUndirected, hrm, advertisement), now: .milliseconds(1400))
        XCTAssertEqual(out.count, 1, "the held advertisement is reported without its scan response")
        XCTAssertFalse(try XCTUnwrap(out.first).hasScanResponse)
    }

    func testNonScannableReportedAtOnceInActiveScan() {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        let out = a.receive(report(.nonConnectable, other, [0x02, 0x01, 0x04]), now: .zero)
        XCTAssertEqual(out.count, 1)
        XCTAssertFalse(out[0].isConnectable)
    }

    func testFilters() {
        var byService = ScanAggregator(active: false, filter: ScanFilter(serviceUUIDs: [BluetoothUUID(0x180D)]))
        XCTAssertEqual(byService.receive(report(.connectableUndirected, hrm, advertisement), now: .zero).count, 1)
        XCTAssertEqual(byService.receive(report(.connectableUndirected, other, [0x02, 0x01, 0x06]), now: .zero).count, 0)

        var byName = ScanAggregator(active: false, filter: ScanFilter(nameContains: "hr"))
        XCTAssertEqual(byName.receive(report(.connectableUndirected, hrm, advertisement), now: .zero).count, 1, "name match is case-insensitive")
        XCTAssertEqual(byName.receive(report(.connectableUndirected, other, [0x02, 0x01, 0x06]), now: .zero).count, 0, "no name, no match")

        var byRSSI = ScanAggregator(active: false, filter: ScanFilter(minimumRSSI: -70))
        XCTAssertEqual(byRSSI.receive(report(.connectableUndirected, hrm, advertisement, rssi: -80), now: .zero).count, 0)
        XCTAssertEqual(byRSSI.receive(report(.connectableUndirected, other, advertisement, rssi: -60), now: .zero).count, 1)
        XCTAssertEqual(byRSSI.receive(report(.connectableUndirected, hrm, advertisement, rssi: nil), now: .zero).count, 0, "unknown RSSI fails a minimum")
    }

    func testAllowDuplicatesReportsEveryTime() {
        var a = ScanAggregator(active: false, filter: ScanFilter(allowDuplicates: true))
        for i in 0..<3 {
            XCTAssertEqual(a.receive(report(.connectableUndirected, hrm, advertisement), now: .seconds(Int64(i))).count, 1)
        }
    }

    func testStaleDevicesAgeOut() {
        var a = ScanAggregator(active: false, filter: ScanFilter())
        _ = a.receive(report(.connectableUndirected, hrm, advertisement), now: .seconds(0))
        _ = a.receive(report(.connectableUndirected, other, advertisement), now: .seconds(8))
        let stale = a.removeStale(olderThan: .seconds(10), now: .seconds(11))
        XCTAssertEqual(stale.map(\.address), [hrm])
        XCTAssertNil(a.devices[hrm])
        XCTAssertNotNil(a.devices[other])
        XCTAssertEqual(a.receive(report(.connectableUndirected, hrm, advertisement), now: .seconds(12)).count, 1, "a device heard again after ageing out is new")
    }

    func testScanResponseBeforeAdvertisementIsKept() {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        XCTAssertTrue(a.receive(report(.scanResponse, hrm, scanResponse), now: .zero).isEmpty)
        _ = a.receive(report(.connectableUndirected, hrm, advertisement), now: .zero)
        let out = a.receive(report(.scanResponse, hrm, scanResponse), now: .zero)
        XCTAssertEqual(out.first?.advertisement.txPowerLevel, 4)
    }

    /// A scan response whose advertisement never came ages out like a device: heard again long
    /// after, the device's advertisement is not merged with that old response.
    func testALoneScanResponseAgesOut() {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        XCTAssertTrue(a.receive(report(.scanResponse, hrm, scanResponse), now: .seconds(1)).isEmpty)
        XCTAssertTrue(a.removeStale(olderThan: .seconds(10), now: .seconds(12)).isEmpty, "never reported, so not reported stale")
        let out = a.receive(report(.nonConnectable, hrm, advertisement), now: .seconds(13))
        XCTAssertEqual(out.count, 1)
        XCTAssertFalse(out[0].hasScanResponse, "the old scan response was forgotten")
        XCTAssertNil(out[0].advertisement.txPowerLevel)
    }

    func testARecentLoneScanResponseIsKept() {
        var a = ScanAggregator(active: true, filter: ScanFilter())
        XCTAssertTrue(a.receive(report(.scanResponse, hrm, scanResponse), now: .seconds(5)).isEmpty)
        XCTAssertTrue(a.removeStale(olderThan: .seconds(10), now: .seconds(12)).isEmpty)
        let out = a.receive(report(.nonConnectable, hrm, advertisement), now: .seconds(13))
        XCTAssertEqual(out.first?.advertisement.txPowerLevel, 4, "heard within the age limit, it is still merged")
    }
}

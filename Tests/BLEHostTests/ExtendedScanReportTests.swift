import BLEHCI
@testable import BLEHost
import BLEWire
import XCTest

/// What a scan makes of LE Extended Advertising Reports (Core spec Vol 4 Part E §7.7.65.13): an
/// advertisement the controller cuts into several reports reaches the scan whole, once; one whose
/// chain was cut short reaches it marked truncated, never as complete; and the set, PHYs,
/// transmit power and periodic interval of each reach the device. Both ways in: the decoded
/// report and the event read in place (the host's path).
final class ExtendedScanReportTests: XCTestCase {
    let address = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_0E), type: .random)
    /// A name long enough that cutting the data in two splits an AD structure.
    let data = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("Long Range Sensor 0042").build().encode()

    func report(_ status: AdvertisingDataStatus, _ data: [UInt8], sid: UInt8? = 5,
                scanResponse: Bool = false) -> LEAdvertisingReport {
        var properties: AdvertisingEventProperties = scanResponse ? [.scannable, .scanResponse] : []
        properties.dataStatus = status
        return LEAdvertisingReport(properties: properties, address: address, primaryPHY: .leCoded, secondaryPHY: .le2M,
                                   advertisingSID: sid, txPower: -4, rssi: -80, periodicAdvertisingInterval: 0x0320,
                                   data: data)
    }

    /// The devices scan `id` gets from `reports`, each report fed as the host feeds it: the event
    /// bytes read in place (`inPlace`), or the decoded report.
    func delivered(_ reports: [LEAdvertisingReport], inPlace: Bool, scanner: inout BLEHost.Scanner) -> [ScannedDevice] {
        var devices: [ScannedDevice] = []
        for (n, report) in reports.enumerated() {
            var deliveries = BLEHost.Scanner.Deliveries()
            if inPlace {
                let event = HCIEvent.le(.extendedAdvertisingReport([report])).h4Frame.payload
                XCTAssertTrue(scanner.receive(event: event, now: .seconds(Int64(n)), into: &deliveries))
            } else {
                scanner.receive(report, now: .seconds(Int64(n)), into: &deliveries)
            }
            devices += deliveries.devices
        }
        return devices
    }

    func testAnAdvertisementCutIntoReportsReachesTheScanWholeOnceWithItsSetAndPHYs() throws {
        for inPlace in [false, true] {
            var scanner = BLEHost.Scanner()
            _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
            let cut = data.count / 2
            let parts = [report(.incompleteMoreToCome, Array(data[..<cut])), report(.complete, Array(data[cut...]))]
            let devices = delivered(parts, inPlace: inPlace, scanner: &scanner)
            XCTAssertEqual(devices.count, 1, "nothing for the first part, the whole at the last")
            let device = try XCTUnwrap(devices.first)
            XCTAssertEqual(device.advertisement.localName, "Long Range Sensor 0042")
            XCTAssertFalse(device.isTruncated)
            XCTAssertEqual(device.extended, ExtendedAdvertisingInfo(advertisingSID: 5, primaryPHY: .leCoded, secondaryPHY: .le2M,
                                                                    txPower: -4, periodicAdvertisingInterval: 0x0320))
            XCTAssertEqual(device.extended?.periodicInterval, .seconds(1))
        }
    }

    func testAChainTheControllerCutShortReachesTheScanMarkedTruncated() throws {
        for inPlace in [false, true] {
            var scanner = BLEHost.Scanner()
            _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
            let first = Array(data[..<3])
            let devices = delivered([report(.incompleteMoreToCome, first), report(.incompleteTruncated, [])],
                                    inPlace: inPlace, scanner: &scanner)
            let device = try XCTUnwrap(devices.first)
            XCTAssertTrue(device.isTruncated, "what arrived, and said to be cut short")
            XCTAssertNil(device.advertisement.localName)

            // The next advertisement of the set comes whole: the device is no longer truncated.
            let whole = delivered([report(.complete, data)], inPlace: inPlace, scanner: &scanner)
            XCTAssertEqual(whole.first?.isTruncated, false)
            XCTAssertEqual(whole.first?.advertisement.localName, "Long Range Sensor 0042")
        }
    }

    /// Two sets of one advertiser (two SIDs) cut into reports that interleave: each is put
    /// together from its own parts.
    func testInterleavedChainsOfTwoSetsArePutTogetherApart() throws {
        var scanner = BLEHost.Scanner()
        _ = scanner.begin(active: false, filter: ScanFilter(allowDuplicates: true), timeout: nil)
        let other = AdvertisingData.Builder().localName("Second Set Of The Same Device").build().encode()
        let devices = delivered([
            report(.incompleteMoreToCome, Array(data[..<4]), sid: 1),
            report(.incompleteMoreToCome, Array(other[..<6]), sid: 2),
            report(.complete, Array(data[4...]), sid: 1),
            report(.complete, Array(other[6...]), sid: 2),
        ], inPlace: true, scanner: &scanner)
        XCTAssertEqual(devices.map(\.advertisement.localName), ["Long Range Sensor 0042", "Second Set Of The Same Device"])
        XCTAssertEqual(devices.map { $0.extended?.advertisingSID }, [1, 2])
    }

    /// Found in review: a scan that ends while the controller scans on for the next one (it
    /// began before the radio was turned off) must not drop the head of a chain, or its tail
    /// reaches the next scan passed off as a whole advertisement.
    func testAChainUnderWayAsOneScanEndsAndTheNextJoinsTheRunningScannerIsPutTogether() {
        var scanner = BLEHost.Scanner()
        let first = scanner.begin(active: false, filter: ScanFilter(), timeout: nil) ?? 0
        XCTAssertTrue(delivered([report(.incompleteMoreToCome, Array(data[..<5]))], inPlace: true, scanner: &scanner).isEmpty)
        XCTAssertTrue(scanner.end(first))
        _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
        let devices = delivered([report(.complete, Array(data[5...]))], inPlace: true, scanner: &scanner)
        XCTAssertEqual(devices.first?.advertisement.localName, "Long Range Sensor 0042", "the head and the tail, whole")
        XCTAssertEqual(devices.first?.isTruncated, false)
    }

    /// When the controller stops scanning the rest of a chain will not come: its head is
    /// forgotten, and the next advertisement of the set is not glued to it.
    func testAChainUnderWayWhenTheControllerStopsScanningIsForgotten() {
        var scanner = BLEHost.Scanner()
        _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
        let stale = AdvertisingData.Builder().localName("Stale").build().encode()
        XCTAssertTrue(delivered([report(.incompleteMoreToCome, Array(stale[..<3]))], inPlace: true, scanner: &scanner).isEmpty)
        scanner.controllerStoppedScanning()
        let devices = delivered([report(.incompleteMoreToCome, Array(data[..<5])), report(.complete, Array(data[5...]))],
                                inPlace: true, scanner: &scanner)
        XCTAssertEqual(devices.first?.advertisement.localName, "Long Range Sensor 0042", "the new advertisement alone")
    }

    func testALegacyAdvertisementHasNoExtendedFields() throws {
        var scanner = BLEHost.Scanner()
        _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
        let legacy = LEAdvertisingReport(legacy: .advNonconnInd, address: address, data: Array(data[..<3]), rssi: -40)
        var deliveries = BLEHost.Scanner.Deliveries()
        XCTAssertTrue(scanner.receive(event: HCIEvent.le(.extendedAdvertisingReport([legacy])).h4Frame.payload, now: .zero,
                                      into: &deliveries))
        let device = try XCTUnwrap(deliveries.devices.first)
        XCTAssertNil(device.extended)
        XCTAssertFalse(device.isTruncated)
    }

    /// A device is copied on every delivery, and a copy of a value larger than 128 bytes is a
    /// call to `memcpy` (about 3 % of `ble-bench scan`'s instructions per report when the
    /// extended fields first pushed it over): the extended fields must fit in what it had.
    func testAScannedDeviceStaysWithin128Bytes() {
        XCTAssertLessThanOrEqual(MemoryLayout<ScannedDevice>.size, 128)
    }

    /// A change of the extended fields alone (the set starting periodic advertising, with the
    /// same data) is a new advertisement for a scan that filters duplicates.
    func testAChangeOfTheExtendedFieldsAloneIsDeliveredAgain() throws {
        for inPlace in [false, true] {
            var scanner = BLEHost.Scanner()
            _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
            var without = report(.complete, data)
            without.periodicAdvertisingInterval = 0
            let devices = delivered([without, without, report(.complete, data)], inPlace: inPlace, scanner: &scanner)
            XCTAssertEqual(devices.map { $0.extended?.periodicAdvertisingInterval }, [nil, 0x0320])
        }
    }

    /// The values a report uses for "none" (SID 0xFF, TX power 127, secondary PHY 0, interval
    /// 0) mean none when given to `ExtendedAdvertisingInfo` too, and read back so.
    func testTheReportsNoneValuesMeanNoneInExtendedAdvertisingInfo() {
        let info = ExtendedAdvertisingInfo(advertisingSID: 0xFF, primaryPHY: .le1M, secondaryPHY: LEPHY(rawValue: 0),
                                           txPower: LEAdvertisingReport.unavailable, periodicAdvertisingInterval: 0)
        XCTAssertNil(info.advertisingSID)
        XCTAssertNil(info.secondaryPHY)
        XCTAssertNil(info.txPower)
        XCTAssertNil(info.periodicAdvertisingInterval)
        var device = ScannedDevice(address: address, advertisement: AdvertisingData(), rssi: nil, isConnectable: false,
                                   lastSeen: .zero, firstSeen: .zero, hasScanResponse: false)
        device.extended = info
        XCTAssertEqual(device.extended, info)
    }

    /// One address sending the same data in legacy PDUs and in an extended set (or in two
    /// sets) is not a new device at every report for a scan that filters duplicates.
    func testLegacyAndExtendedPDUsFromOneAddressAreNotNewAtEachReport() {
        for inPlace in [false, true] {
            var scanner = BLEHost.Scanner()
            _ = scanner.begin(active: false, filter: ScanFilter(), timeout: nil)
            let legacy = LEAdvertisingReport(legacy: .advNonconnInd, address: address, data: data, rssi: -60)
            let other = report(.complete, data, sid: 9)
            let reports = (0..<10).flatMap { _ in [legacy, report(.complete, data), other] }
            let devices = delivered(reports, inPlace: inPlace, scanner: &scanner)
            XCTAssertEqual(devices.count, 1)
        }
    }
}

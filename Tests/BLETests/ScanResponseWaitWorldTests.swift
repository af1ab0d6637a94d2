import BLE
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import BLEWire
import XCTest

/// A central's scan against a peripheral that advertises its service and puts its name in the
/// scan response, while scan responses go wrong on the air (some requests unanswered, answers
/// reported after the next advertisement), in virtual time: the first report of the device is
/// the merged one; a device that never answers is reported without its response, at the event bound.
final class ScanResponseWaitWorldTests: XCTestCase {
    static let service = BluetoothUUID(0x181A)

    /// The first device a central's active scan for `service` reports, against a peripheral
    /// named `name` (in its scan response only) whose responses fail as `fault` says.
    static func firstReport(name: String, fault: VirtualMedium.ScanResponseFault) async throws -> ScannedDevice? {
        try await VirtualWorld.run { world in
            let (manager, peripheral) = try await world.addPeripheralManager(name: name)
            await world.radio.setScanResponseFault(peripheral.id, fault)
            try await manager.startAdvertising(
                AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).serviceUUIDs([service]).build(),
                scanResponse: AdvertisingData.Builder().localName(name).build())
            let (central, _) = try await world.addCentral()
            var first: ScannedDevice?
            for try await device in central.scan(filter: ScanFilter(serviceUUIDs: [service]), active: true, timeout: .seconds(10)) {
                first = device
                break
            }
            await manager.close()
            await central.close()
            return first
        }
    }

    func testTheFirstReportHasTheNameWhenTwoRequestsAreLostAndTheAnswerIsLate() async throws {
        let first = try await Self.firstReport(name: "Thermo", fault: VirtualMedium.ScanResponseFault(lostRequests: [0, 1], lateByEvents: 1))
        XCTAssertEqual(first?.advertisement.localName, "Thermo")
        XCTAssertEqual(first?.hasScanResponse, true)
    }

    func testTheFirstReportHasTheNameWhenEveryAnswerIsLate() async throws {
        let first = try await Self.firstReport(name: "Thermo", fault: VirtualMedium.ScanResponseFault(lateByEvents: 1))
        XCTAssertEqual(first?.advertisement.localName, "Thermo")
    }

    /// Advertising every 100 ms: reported at the fourth advertisement after the first, 400 ms on.
    func testADeviceThatNeverAnswersIsReportedWithoutItsResponseAtTheEventBound() async throws {
        let first = try await Self.firstReport(name: "Thermo", fault: VirtualMedium.ScanResponseFault(lostRequests: Set(0..<1000)))
        let device = try XCTUnwrap(first)
        XCTAssertNil(device.advertisement.localName)
        XCTAssertFalse(device.hasScanResponse)
        XCTAssertEqual(device.lastSeen - device.firstSeen, .milliseconds(100) * ScanAggregator.scanResponseWaitEvents)
    }
}

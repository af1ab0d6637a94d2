import BLEHCI
import BLEVirtualRadio
import BLEWire
import XCTest

/// The medium's scan-response faults: an advertiser's answers to chosen scan requests lost, and
/// answered ones reported after later advertising events, per scanner.
final class VirtualMediumScanResponseFaultTests: XCTestCase {
    var medium = VirtualMedium()
    var peripheral = VirtualMedium.ControllerID(rawValue: 0)
    var central = VirtualMedium.ControllerID(rawValue: 0)
    let advertiser = DeviceAddress(BDAddress(rawValue: 0x00_00_00_00_00_AA), type: .public)

    override func setUp() {
        medium = VirtualMedium()
        medium.airTimeModel = false
        peripheral = medium.add(VirtualController(address: advertiser.address))
        central = medium.add(VirtualController(address: BDAddress(rawValue: 0x00_00_00_00_00_BB)))
        for id in [peripheral, central] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), from: peripheral, now: .zero)
        _ = medium.receive(.leSetAdvertisingData([4, 9, 0x41, 0x42, 0x43]), from: peripheral, now: .zero)
        _ = medium.receive(.leSetScanResponseData([2, 0x0A, 4]), from: peripheral, now: .zero)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: peripheral, now: .zero)
        _ = medium.receive(.leSetScanParameters(type: .active, interval: 16, window: 16), from: central, now: .zero)
        _ = medium.receive(.leSetScanEnable(enable: true), from: central, now: .zero)
    }

    /// The central's reports of the advertising event at `event` × 100 ms: "ADV" or "RSP".
    func reports(atEvent event: Int) -> [String] {
        medium.advance(to: .milliseconds(100 * Int64(event))).compactMap { d -> String? in
            guard d.to == central, case let .event(.le(.advertisingReport(r))) = d.packet, let report = r.first else { return nil }
            XCTAssertEqual(report.address, advertiser)
            return report.isScanResponse ? "RSP" : "ADV"
        }
    }

    func testChosenScanRequestsGoUnanswered() {
        medium.setScanResponseFault(peripheral, VirtualMedium.ScanResponseFault(lostRequests: [0, 1]))
        XCTAssertEqual((0..<4).map { reports(atEvent: $0) }, [["ADV"], ["ADV"], ["ADV", "RSP"], ["ADV", "RSP"]])
    }

    func testALateResponseComesAfterTheNextAdvertisement() {
        medium.setScanResponseFault(peripheral, VirtualMedium.ScanResponseFault(lostRequests: [1], lateByEvents: 1))
        XCTAssertEqual((0..<4).map { reports(atEvent: $0) }, [["ADV"], ["ADV", "RSP"], ["ADV"], ["ADV", "RSP"]],
                       "request 0's response after event 1's advertisement; request 1's lost; request 2's after event 3's")
    }

    func testRemovingTheFaultAnswersAtOnceAgain() {
        medium.setScanResponseFault(peripheral, VirtualMedium.ScanResponseFault(lostRequests: [0], lateByEvents: 2))
        XCTAssertEqual(reports(atEvent: 0), ["ADV"])
        medium.setScanResponseFault(peripheral, nil)
        XCTAssertEqual(reports(atEvent: 1), ["ADV", "RSP"])
    }
}

@testable import BLE
import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import Synchronization
import XCTest
import BLETestSupport

final class HostScanTests: XCTestCase {
    let device = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let advertisement: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x04, 0x09, 0x48, 0x52, 0x4D]
    let scanResponse: [UInt8] = [0x02, 0x0A, 0x04]

    func testActiveScanMergesTheScanResponseAndStopsWhenTheConsumerStops() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let scan = Task { () -> ScannedDevice? in
            for try await d in central.scan(filter: ScanFilter(serviceUUIDs: [BluetoothUUID(0x180D)]), active: true) { return d }
            return nil
        }
        let params = try await t.controller.waitForCommand(.leSetScanParameters)
        XCTAssertEqual(params.parameters.first, 0x01, "active")
        let enable = try await t.controller.waitForCommand(.leSetScanEnable)
        XCTAssertEqual(enable.parameters.first, 0x01)
        await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .advInd, address: device, data: advertisement, rssi: -40)])))
        await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .scanRsp, address: device, data: scanResponse, rssi: -41)])))
        let found = try await scan.value
        XCTAssertEqual(found?.address, device)
        XCTAssertEqual(found?.advertisement.localName, "HRM")
        XCTAssertEqual(found?.advertisement.txPowerLevel, 4)
        XCTAssertEqual(found?.rssi, -41)
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x00 }
        await central.close()
    }

    /// The host hands a scan's devices over at the end of each burst of frames; a scan that
    /// ends within the burst (here a Hardware Error after the report, queued together so the
    /// host reads them in one turn) still gets the device first, then the error.
    func testADeviceHeardInTheBurstThatEndsTheScanIsDeliveredBeforeTheEnd() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let scan = Task { () -> ([DeviceAddress], (any Error)?) in
            var heard: [DeviceAddress] = []
            do {
                for try await d in central.scan(active: false) { heard.append(d.address) }
            } catch {
                return (heard, error)
            }
            return (heard, nil)
        }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x01 }
        let queue = try XCTUnwrap(t.hostEnd.incomingQueue)
        queue.push(contentsOf: [
            HCIEvent.le(.advertisingReport([LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: advertisement, rssi: -40)])).h4Frame,
            HCIEvent.hardwareError(code: 0x42).h4Frame,
        ])
        let (heard, error) = await scan.value
        XCTAssertEqual(heard, [device])
        guard case BLEError.hci(.hardwareError(code: 0x42))? = error else {
            return XCTFail("the scan should end with the hardware error, not \(String(describing: error))")
        }
        await central.close()
    }

    func testScanEndsAtItsTimeout() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let scan = Task { () -> Int in
            var n = 0
            for try await _ in central.scan(active: false, timeout: .seconds(10)) { n += 1 }
            return n
        }
        _ = try await t.controller.waitForCommand(.leSetScanEnable)
        await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: advertisement, rssi: -40)])))
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(10) }
        clock.advance(by: .seconds(10))
        let count = try await scan.value
        XCTAssertEqual(count, 1)
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x00 }
        await central.close()
    }

    /// A second scan joins the one the controller runs (no second LE Set Scan Parameters or
    /// Enable), each gets what its filter lets through, and only the last to end turns the
    /// controller's scanner off.
    func testASecondScanJoinsTheRadioScanAndTheLastToEndStopsIt() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let all = Task { () -> ScannedDevice? in
            for try await d in central.scan(active: false) { return d }
            return nil
        }
        _ = try await t.controller.waitForCommand(.leSetScanEnable)
        let namedHeard = Mutex(false)
        let named = Task { () -> ScannedDevice? in
            for try await d in central.scan(filter: ScanFilter(nameContains: "HRM"), active: false) {
                namedHeard.withLock { $0 = true }
                return d
            }
            return nil
        }
        let other = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_66), type: .random)
        // Reports until the HRM scan (whose start sends nothing) has heard one.
        let device = self.device, advertisement = self.advertisement
        let heard = await waitUntil(within: .seconds(10)) {
            await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .advNonconnInd, address: other, data: [0x02, 0x01, 0x06], rssi: -50)])))
            await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .advNonconnInd, address: device, data: advertisement, rssi: -40)])))
            return namedHeard.withLock { $0 }
        }
        XCTAssertTrue(heard)
        let first = try await all.value
        let second = try await named.value
        XCTAssertNotNil(first)
        XCTAssertEqual(second?.address, device, "the name filter of the second scan")
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x00 }
        let commands = await t.controller.commands
        XCTAssertEqual(commands.filter { $0.opcode == .leSetScanParameters }.count, 1, "the second scan joined")
        XCTAssertEqual(commands.filter { $0.opcode == .leSetScanEnable }.count, 2, "on once, off once, after both ended")
        await central.close()
    }

}

@testable import BLE
import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import Synchronization
import XCTest
import BLETestSupport

/// The host's side of holding a scannable advertisement for its scan response: the wait's time
/// bound runs on the host's clock and timer, and a scan that ends hands over what it held.
final class HostScanResponseWaitTests: XCTestCase {
    let device = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    let beacon = DeviceAddress(BDAddress(rawValue: 0xC0_11_22_33_44_66), type: .random)
    /// Flags and the 16-bit service 180D.
    let advertisement: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18]

    func advertisingReport(_ type: LegacyAdvertisingEventType, _ address: DeviceAddress) -> HCIEvent {
        .le(.advertisingReport([LEAdvertisingReport(legacy: type, address: address, data: advertisement, rssi: -40)]))
    }

    /// An ADV_IND whose scan response never comes: the device is delivered, without it, when the
    /// wait's time runs out on the host's clock, not before.
    func testAFirstAdvertisementWithoutItsResponseIsDeliveredWhenTheWaitRunsOut() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let scan = Task { () -> (ScannedDevice, Duration)? in
            for try await d in central.scan(active: true) { return (d, clock.now()) }
            return nil
        }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x01 }
        let start = clock.now()
        await t.controller.sendNow(advertisingReport(.advInd, device))
        let wait = ScanAggregator.scanResponseWaitTime
        let timed = await clock.waitForSleepers(within: .seconds(10)) { $0.min() == start + wait }
        XCTAssertTrue(timed, "the host arms its timer for the wait")
        guard timed else {
            await central.close()
            _ = try? await scan.value
            return
        }
        clock.advance(by: wait - .milliseconds(1))
        clock.advance(by: .milliseconds(1))
        let found = try await scan.value
        XCTAssertEqual(found?.0.address, device)
        XCTAssertEqual(found?.0.hasScanResponse, false)
        XCTAssertEqual(found?.1, start + wait, "delivered when the wait ran out")
        await central.close()
    }

    /// A scan that ends (here at its timeout) while a device waits for its scan response hands
    /// the device over before its end.
    func testAScanEndingWhileADeviceWaitsDeliversTheDevice() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let heard = SharedValue<[DeviceAddress]>([])
        let scan = Task {
            for try await d in central.scan(active: true, timeout: .milliseconds(500)) { heard.withLock { $0.append(d.address) } }
        }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x01 }
        await t.controller.sendNow(advertisingReport(.advInd, device))
        // A beacon after it, delivered at once: once it is there, the ADV_IND before it was taken.
        await t.controller.sendNow(advertisingReport(.advNonconnInd, beacon))
        let beacon = self.beacon
        let beaconHeard = await heard.wait("the beacon", within: .seconds(10)) { $0.contains(beacon) }
        XCTAssertTrue(beaconHeard)
        XCTAssertEqual(heard.withLock { $0 }, [beacon], "the ADV_IND waits for its response")
        clock.advance(by: .milliseconds(500))
        try await scan.value
        XCTAssertEqual(heard.withLock { $0 }, [beacon, device], "the held device, delivered as the scan ended")
        await central.close()
    }
    /// A device whose scan response was merged already, then a changed ADV_IND whose scan
    /// response is lost, and the device quiet: the held report is delivered when the wait's time
    /// runs out on the host's clock.
    func testALaterAdvertisementWithoutItsResponseIsDeliveredWhenTheWaitRunsOut() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let heard = SharedValue<[ScannedDevice]>([])
        let scan = Task {
            for try await d in central.scan(active: true) { heard.withLock { $0.append(d) } }
        }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x01 }
        let name: [UInt8] = [0x04, 0x09, 0x48, 0x52, 0x4D]
        await t.controller.sendNow(advertisingReport(.advInd, device))
        await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .scanRsp, address: device, data: name, rssi: -40)])))
        let merged = await heard.wait("the merged report", within: .seconds(10)) { $0.count == 1 }
        XCTAssertTrue(merged)
        clock.advance(by: .milliseconds(100))
        let start = clock.now()
        let changed = advertisement + [0x02, 0x0A, 0x04]
        await t.controller.sendNow(.le(.advertisingReport([LEAdvertisingReport(legacy: .advInd, address: device, data: changed, rssi: -40)])))
        let deadline = ScanAggregator.holdDeadline(startingAt: start)
        let timed = await clock.waitForSleepers(within: .seconds(10)) { $0.min() == deadline }
        XCTAssertTrue(timed, "the host arms its timer for the later hold")
        if timed {
            clock.advance(by: deadline - clock.now())
            let delivered = await heard.wait("the held report", within: .seconds(10)) { $0.count == 2 }
            XCTAssertTrue(delivered, "delivered when the wait ran out")
            XCTAssertEqual(heard.withLock { $0.last?.advertisement.txPowerLevel }, 4)
            XCTAssertEqual(heard.withLock { $0.last?.advertisement.localName }, "HRM", "with the last response")
        }
        scan.cancel()
        await central.close()
    }

    /// Devices that never answer, first heard over one step of the deadline grid: the host's
    /// timer is armed for one deadline, and that one wake-up delivers them all.
    func testDevicesHeardWithinOneGridStepShareOneTimerWakeUp() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let heard = SharedValue<Set<DeviceAddress>>([])
        let scan = Task {
            for try await d in central.scan(active: true) { _ = heard.withLock { $0.insert(d.address) } }
        }
        _ = try await t.controller.waitForCommand { $0.opcode == .leSetScanEnable && $0.parameters.first == 0x01 }
        let step = ScanAggregator.holdDeadlineStep
        let count = 10
        clock.advance(by: .seconds(1))
        let devices = (0..<count).map { DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_20_00 + UInt64($0)), type: .random) }
        for (i, device) in devices.enumerated() {
            clock.advance(by: step / count)
            await t.controller.sendNow(advertisingReport(.advInd, device))
            // A beacon after it, delivered at once: once it is there, the ADV_IND was taken at this time.
            let beacon = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_30_00 + UInt64(i)), type: .random)
            await t.controller.sendNow(advertisingReport(.advNonconnInd, beacon))
            let taken = await heard.wait("the beacon", within: .seconds(10)) { $0.contains(beacon) }
            XCTAssertTrue(taken)
        }
        let deadline = Duration.seconds(1) + step + ScanAggregator.scanResponseWaitTime
        let timed = await clock.waitForSleepers(within: .seconds(10)) { $0.min() == deadline }
        XCTAssertTrue(timed, "one deadline for the devices heard within one step")
        if timed {
            clock.advance(by: deadline - clock.now())
            let all = await heard.wait("every device", within: .seconds(10)) { $0.isSuperset(of: devices) }
            XCTAssertTrue(all, "one wake-up delivers them all")
            XCTAssertNil(clock.nextDeadline, "no other wake-up is armed")
        }
        scan.cancel()
        await central.close()
    }
}

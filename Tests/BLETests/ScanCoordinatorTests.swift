@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `ScanCoordinator` on its own, driven by a `ScanDriver` double instead of a host: what it
/// asks of the controller as scans come and go, and what it hands its consumers.
final class ScanCoordinatorTests: XCTestCase {
    /// Answers every command at once (or fails the ones `failing` names), records them, and
    /// keeps the time where the test puts it.
    actor Driver: ScanDriver, RecordingDriver {
        let scanning = ScanCoordinator()
        var now: Duration = .zero
        var record = DriverRecord()
        var radioPreparations = 0
        var identities: [DeviceAddress: DeviceAddress] = [:]

        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            await Task.yield()
            return try record.answer(cmd)
        }
        func prepareRadioForScanning() async { radioPreparations += 1 }
        func identity(of address: DeviceAddress) -> DeviceAddress? { identities[address] }

        func set(failing opcodes: Set<HCIOpcode>) { record.failing = opcodes }
        func add(identity: DeviceAddress, for address: DeviceAddress) { identities[address] = identity }
        /// The scan-enable commands sent so far, as on (true) / off (false).
        var enables: [Bool] {
            commands.filter { $0.opcode == .leSetScanEnable }.map { $0.parameters.first == 1 }
        }
        var scanTypes: [LEScanType] {
            commands.filter { $0.opcode == .leSetScanParameters }.compactMap { $0.parameters.first.flatMap(LEScanType.init(rawValue:)) }
        }
        func start(active: Bool, _ buffer: ScanBuffer, timeout: Duration? = nil) async throws -> UInt64 {
            try await scanning.start(active: active, filter: ScanFilter(allowDuplicates: true), timeout: timeout,
                                     ownAddressType: .public, consumer: buffer, self)
        }
        func finish(_ id: UInt64) { scanning.finish(id, self) }
        func stop() async { await scanning.stop(self) }
        func hear(_ address: DeviceAddress) {
            scanning.receive([LEAdvertisingReport(legacy: .advInd, address: address, data: [0x02, 0x01, 0x06], rssi: -50)], self)
            scanning.deliver(self)
        }
        func expire(at t: Duration) { now = t; scanning.expire(now: t, self) }
        func radioIsEnabled() -> Bool { scanning.isRadioEnabled }
    }

    let device = DeviceAddress(BDAddress(rawValue: 0x11_22_33_44_55_66), type: .random)

    /// Two scans share the scanner: the first turns it on (after the radio is made ready), the
    /// second joins it; the first's end leaves it on (its background work run), and only the
    /// last's turns it off.
    func testScansShareTheScannerAndTheLastTurnsItOff() async throws {
        let d = Driver()
        let first = try await d.start(active: false, ScanBuffer())
        let second = try await d.start(active: false, ScanBuffer())
        let prepared = await d.radioPreparations
        XCTAssertEqual(prepared, 1)
        await d.finish(first)
        await d.runSpawned()
        var enables = await d.enables
        XCTAssertEqual(enables, [true], "the scanner went off while a scan still runs")
        await d.finish(second)
        await d.runSpawned()
        enables = await d.enables
        XCTAssertEqual(enables, [true, false], "the last scan's end turns the scanner off")
    }

    /// A scan that wants scan responses joining a passive one turns the scanner active: off,
    /// new parameters, on again.
    func testAnActiveScanJoiningAPassiveOneMakesTheScannerActive() async throws {
        let d = Driver()
        _ = try await d.start(active: false, ScanBuffer())
        _ = try await d.start(active: true, ScanBuffer())
        let enables = await d.enables, types = await d.scanTypes
        XCTAssertEqual(enables, [true, false, true])
        XCTAssertEqual(types, [.passive, .active])
    }

    /// The controller refusing to scan ends the scan with its error, and the scanner is off.
    func testAScannerTheControllerRefusesEndsTheScanWithTheError() async throws {
        let d = Driver()
        await d.set(failing: [.leSetScanEnable])
        do {
            _ = try await d.start(active: false, ScanBuffer())
            XCTFail("started a scan the controller refused")
        } catch let BLEError.hci(.commandFailed(opcode, status)) {
            XCTAssertEqual(opcode, .leSetScanEnable)
            XCTAssertEqual(status, .commandDisallowed)
        }
        let on = await d.radioIsEnabled()
        XCTAssertFalse(on)
    }

    /// Devices go to the scan's consumer with the identity the driver resolves them to, and a
    /// scan past its timeout ends its stream.
    func testDevicesReachTheConsumerResolvedAndATimedOutScanEnds() async throws {
        let d = Driver()
        let identity = DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_77), type: .public)
        await d.add(identity: identity, for: device)
        let buffer = ScanBuffer()
        _ = try await d.start(active: false, buffer, timeout: .seconds(5))
        await d.hear(device)
        var batch: [ScannedDevice] = []
        let more = try await buffer.next(into: &batch)
        XCTAssertTrue(more)
        XCTAssertEqual(batch.map(\.address), [device])
        XCTAssertEqual(batch.first?.identity, identity)
        await d.expire(at: .seconds(6))
        batch = []
        let after = try await buffer.next(into: &batch)
        XCTAssertFalse(after, "the scan ended at its timeout")
    }
}

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
        var usesExtendedCommands = false
        var supportedPHYs: LEPHYSet = [.le1M, .le2M, .leCoded]
        /// While set, the radio's preparation waits until `releasePreparation`.
        var holdsPreparation = false
        private var preparationGate: CheckedContinuation<Void, Never>?

        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            await Task.yield()
            return try record.answer(cmd)
        }
        func prepareRadioForScanning() async {
            radioPreparations += 1
            if holdsPreparation { await withCheckedContinuation { preparationGate = $0 } }
        }
        func holdPreparation() { holdsPreparation = true }
        func releasePreparation() {
            holdsPreparation = false
            preparationGate?.resume()
            preparationGate = nil
        }
        var isPreparationHeld: Bool { preparationGate != nil }
        func lacksCoded() { supportedPHYs = [.le1M, .le2M] }
        func failOnce(_ opcode: HCIOpcode) { record.failingOnce.insert(opcode) }
        func pause() async { await scanning.withRadioPaused(self) { _ in } }
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
        func start(active: Bool, _ buffer: ScanBuffer, timeout: Duration? = nil, phys: LEPHYSet = .le1M) async throws -> UInt64 {
            try await scanning.start(active: active, phys: phys, filter: ScanFilter(allowDuplicates: true), timeout: timeout,
                                     ownAddressType: .public, consumer: buffer, self)
        }
        func useExtendedCommands() { usesExtendedCommands = true }
        /// The extended scan-enable commands sent so far, as on (true) / off (false).
        var extendedEnables: [Bool] {
            commands.filter { $0.opcode == .leSetExtendedScanEnable }.map { $0.parameters.first == 1 }
        }
        /// Scanning_PHYs and each PHY's scan type of every LE Set Extended Scan Parameters sent.
        var extendedParameters: [(phys: UInt8, types: [UInt8])] {
            commands.filter { $0.opcode == .leSetExtendedScanParameters }.map { c in
                (c.parameters[2], stride(from: 3, to: c.parameters.count, by: 5).map { c.parameters[$0] })
            }
        }
        func finish(_ id: UInt64) { scanning.finish(id, self) }
        func stop() async { await scanning.stop(self) }
        func hear(_ address: DeviceAddress) {
            scanning.receive([LEAdvertisingReport(legacy: .advInd, address: address, data: [0x02, 0x01, 0x06], rssi: -50)], self)
            scanning.deliver(self)
        }
        func expire(at t: Duration) { now = t; scanning.expire(now: t, self) }
        func radioIsEnabled() -> Bool { scanning.isRadioEnabled }
        func radioIsRunningScans() -> Bool { scanning.hasRunningScans }
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

    /// With the extended commands the scanner is driven by LE Set Extended Scan Parameters and
    /// Enable (Vol 4 Part E §7.8.64–65), never the legacy ones (§3.1.1): one entry per PHY; a
    /// scan on LE Coded joining one on LE 1M turns the scanner off and on again on both; the
    /// last scan's end turns it off with the extended command.
    func testWithTheExtendedCommandsScansAreDrivenByTheExtendedScanCommands() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        let first = try await d.start(active: false, ScanBuffer())
        let second = try await d.start(active: true, ScanBuffer(), phys: .leCoded)
        // A third on LE 1M alone, passive, is already covered: nothing is sent for it.
        let third = try await d.start(active: false, ScanBuffer())
        let parameters = await d.extendedParameters
        XCTAssertEqual(parameters.map(\.phys), [0x01, 0x05])
        XCTAssertEqual(parameters.map(\.types), [[LEScanType.passive.rawValue],
                                                 [LEScanType.active.rawValue, LEScanType.active.rawValue]])
        for id in [first, second, third] { await d.finish(id) }
        await d.runSpawned()
        let enables = await d.extendedEnables
        XCTAssertEqual(enables, [true, false, true, false])
        let legacy = await d.opcodes.filter { [.leSetScanParameters, .leSetScanEnable].contains($0) }
        XCTAssertEqual(legacy, [], "legacy scan commands mixed in")
    }

    /// On the legacy commands a scan on LE Coded ends with `unsupported`, and one on LE 2M (a
    /// PHY that carries only auxiliary packets) with `invalidArgument`, before any command.
    func testTheCodedPHYNeedsTheExtendedCommandsAndLE2MIsNotScanned() async throws {
        let d = Driver()
        do {
            _ = try await d.start(active: true, ScanBuffer(), phys: [.le1M, .leCoded])
            XCTFail("scanned on LE Coded with the legacy commands")
        } catch BLEError.unsupported {}
        await d.useExtendedCommands()
        do {
            _ = try await d.start(active: true, ScanBuffer(), phys: .le2M)
            XCTFail("scanned on LE 2M")
        } catch BLEError.invalidArgument {}
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [])
    }

    /// A scan on LE Coded on a controller whose LE features lack it is refused with
    /// `unsupported` before any command, and the scan already running on LE 1M goes on (a
    /// refused LE Set Extended Scan Parameters would have ended it).
    func testACodedScanOnAControllerWithoutCodedIsRefusedAndTheRunningScanGoesOn() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        await d.lacksCoded()
        let running = ScanBuffer()
        _ = try await d.start(active: false, running)
        let sent = await d.opcodes.count
        do {
            _ = try await d.start(active: false, ScanBuffer(), phys: [.le1M, .leCoded])
            XCTFail("a coded scan on a controller without LE Coded")
        } catch BLEError.unsupported {}
        let after = await d.opcodes.count
        XCTAssertEqual(after, sent, "no command for the refused scan")
        await d.hear(device)
        var batch: [ScannedDevice] = []
        let more = try await running.next(into: &batch)
        XCTAssertTrue(more, "the running scan ended")
        XCTAssertEqual(batch.map(\.address), [device])
    }

    /// With the extended commands a pause for a new RPA turns the scanner off and on with the
    /// extended enable, never the legacy one.
    func testWithTheExtendedCommandsAPauseUsesTheExtendedEnable() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        _ = try await d.start(active: false, ScanBuffer())
        await d.pause()
        let enables = await d.extendedEnables
        XCTAssertEqual(enables, [true, false, true])
        let legacy = await d.opcodes.filter { [.leSetScanParameters, .leSetScanEnable].contains($0) }
        XCTAssertEqual(legacy, [])
    }

    /// A scan that ends while the radio is being made ready for it (a connect's `stop`) sends
    /// no scan parameters: with no scan left there is no PHY to give (Scanning_PHYs 0 is
    /// invalid, §7.8.64), and its start ends with `CancellationError`.
    func testAScanStoppedWhileTheRadioIsMadeReadySendsNoParameters() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        await d.holdPreparation()
        let start = Task { try await d.start(active: false, ScanBuffer(), phys: .leCoded) }
        // Each wait for the other task is bounded in turns, so a change that never reaches the
        // point fails the test rather than hang it.
        try await until("the start prepares the radio") { await d.isPreparationHeld }
        // `stop` ends the scan at once, then waits for the start under way to settle.
        let stop = Task { await d.stop() }
        try await until("the stop ends the scan") { await !d.radioIsRunningScans() }
        await d.releasePreparation()
        await stop.value
        do {
            _ = try await start.value
            XCTFail("a scan stopped while starting started")
        } catch is CancellationError {}
        let opcodes = await d.opcodes
        XCTAssertFalse(opcodes.contains(.leSetExtendedScanParameters), "\(opcodes)")
    }

    struct NeverHappened: Error { let what: String }

    /// Yields until `condition` holds, at most `turns` times; fails the test when it never does.
    func until(_ what: String, turns: Int = 100_000, _ condition: () async -> Bool) async throws {
        for _ in 0..<turns where await !condition() { await Task.yield() }
        guard await condition() else { throw NeverHappened(what: what) }
    }

    /// A scan whose parameters the controller refuses after the scanner went off for it ends
    /// with the error, and the scan already running gets the scanner back as it had it (its
    /// own parameters, then enable) and goes on.
    func testARefusedJoinGivesTheRunningScanTheScannerBack() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        let running = ScanBuffer()
        _ = try await d.start(active: false, running)
        await d.failOnce(.leSetExtendedScanParameters)
        do {
            _ = try await d.start(active: false, ScanBuffer(), phys: [.le1M, .leCoded])
            XCTFail("a refused scan started")
        } catch BLEError.hci {}
        let parameters = await d.extendedParameters
        XCTAssertEqual(parameters.map(\.phys), [0x01, 0x05, 0x01], "the refused coded one, then the running scan's again")
        let enables = await d.extendedEnables
        XCTAssertEqual(enables, [true, false, true])
        await d.hear(device)
        var batch: [ScannedDevice] = []
        let more = try await running.next(into: &batch)
        XCTAssertTrue(more, "the running scan ended with the other's error")
        XCTAssertEqual(batch.map(\.address), [device])
    }
}

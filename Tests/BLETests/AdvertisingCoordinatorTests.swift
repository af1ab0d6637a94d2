@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `AdvertisingCoordinator` on its own, driven by an `AdvertisingDriver` double instead of a
/// host: the commands it sends, its restarts around connections, and what it reports.
final class AdvertisingCoordinatorTests: XCTestCase {
    actor Driver: AdvertisingDriver, RecordingDriver {
        let advertising = AdvertisingCoordinator()
        var record = DriverRecord()
        var ownAddressType: OwnAddressType = .public
        var reports: [PeripheralManagerEvent] = []
        var radioPreparations = 0

        func prepareRadioForAdvertising() async {
            radioPreparations += 1
            // What privacy does with a resolvable private address: the type turns random.
            ownAddressType = .random
        }
        func report(_ event: PeripheralManagerEvent) { reports.append(event) }

        func start(_ parameters: AdvertisingParameters = AdvertisingParameters(), data: AdvertisingData) async throws {
            try await advertising.start(parameters, data: data, scanResponse: nil, self)
        }
        func stop() async throws { try await advertising.stop(self) }
        func connected() { advertising.endedByConnection(self) }
        func disconnected() { advertising.restartIfWanted(afterConnection: false, self) }
        func pause() async throws { try await advertising.pause(self) }
        func resume() async { await advertising.resume(self) }
        var enabled: Bool { advertising.isEnabled }
        func clearCommands() { record.commands = [] }
        func fail(_ opcode: HCIOpcode) { record.failing.insert(opcode) }
    }

    let data = AdvertisingData.Builder().localName("Tag").build()

    /// Parameters (with the own address type the radio's preparation left), data, scan
    /// response, enable: in that order, after the radio was made ready.
    func testStartSendsItsCommandsInOrderAfterTheRadioIsReady() async throws {
        let d = Driver()
        try await d.start(data: data)
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable])
        let parameters = await d.record.commands.first?.parameters
        XCTAssertEqual(parameters?[5], OwnAddressType.random.rawValue, "the own address type after privacy's preparation")
        let enabled = await d.enabled
        XCTAssertTrue(enabled)
    }

    /// Data over the legacy 31 octets is refused before anything is sent.
    func testDataOverTheLegacyLimitIsRefusedBeforeAnyCommand() async throws {
        let d = Driver()
        let long = AdvertisingData.Builder().localName(String(repeating: "x", count: 40)).build()
        do {
            try await d.start(data: long)
            XCTFail("advertised 40-octet data with legacy PDUs")
        } catch BLEError.invalidArgument {}
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [])
    }

    /// Connectable advertising ends with a connection; with `restartAfterDisconnect` (and not
    /// `continueWhileConnected`) it comes back when the link ends, and the application hears so.
    func testAdvertisingComesBackAfterTheLinkEndsWhenAskedTo() async throws {
        let d = Driver()
        let parameters = AdvertisingParameters(restartAfterDisconnect: true, continueWhileConnected: false)
        try await d.start(parameters, data: data)
        await d.connected()
        await d.runSpawned()
        var enabled = await d.enabled
        XCTAssertFalse(enabled, "a connection ended legacy connectable advertising")
        await d.clearCommands()
        await d.disconnected()
        await d.runSpawned()
        enabled = await d.enabled
        XCTAssertTrue(enabled)
        let opcodes = await d.opcodes, reports = await d.reports
        XCTAssertEqual(opcodes, [.leSetAdvertisingEnable])
        guard case .advertisingStarted? = reports.last else { return XCTFail("\(reports)") }
    }

    /// A restart scheduled before `stop` does nothing after it.
    func testARestartScheduledBeforeAStopDoesNothing() async throws {
        let d = Driver()
        let parameters = AdvertisingParameters(restartAfterDisconnect: true, continueWhileConnected: false)
        try await d.start(parameters, data: data)
        await d.connected()
        await d.disconnected()
        try await d.stop()
        await d.runSpawned()
        let enabled = await d.enabled
        XCTAssertFalse(enabled)
        let reports = await d.reports
        XCTAssertTrue(reports.isEmpty, "\(reports)")
    }

    /// A pause (for a new RPA) turns advertising off; the resume turns it on again, and a
    /// failed resume is reported to the application.
    func testAPauseAndResumeAndAFailedResume() async throws {
        let d = Driver()
        try await d.start(data: data)
        try await d.pause()
        var enabled = await d.enabled
        XCTAssertFalse(enabled)
        await d.resume()
        enabled = await d.enabled
        XCTAssertTrue(enabled)
        try await d.pause()
        await d.fail(.leSetAdvertisingEnable)
        await d.resume()
        let reports = await d.reports
        guard case .advertisingFailed? = reports.last else { return XCTFail("\(reports)") }
    }
}

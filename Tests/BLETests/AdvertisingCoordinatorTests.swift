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
        var ownRandomAddress: BDAddress? = BDAddress(rawValue: 0x4A_00_00_00_00_01)
        var usesExtendedCommands = false
        var advertisingSetZeroInUse = false
        var reports: [PeripheralManagerEvent] = []
        var radioPreparations = 0

        /// Whether the radio's preparation leaves the public address (no privacy).
        var staysPublic = false
        func prepareRadioForAdvertising() async {
            radioPreparations += 1
            // What privacy does with a resolvable private address: the type turns random.
            if !staysPublic { ownAddressType = .random }
        }
        func keepPublic() { staysPublic = true }
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
        func useExtendedCommands() { usesExtendedCommands = true }
        func failOnce(_ opcode: HCIOpcode) { record.failingOnce.insert(opcode) }
        func start(_ kind: AdvertisingParameters.Kind, scanResponse: AdvertisingData? = nil) async throws {
            var parameters = AdvertisingParameters()
            parameters.kind = kind
            try await advertising.start(parameters, data: AdvertisingData.Builder().localName("Tag").build(), scanResponse: scanResponse, self)
        }
        func fail(_ opcode: HCIOpcode) { record.failing.insert(opcode) }
        func setTerminated(_ status: HCIStatus) { advertising.setTerminated(LEAdvertisingSetTerminated(status: status, advertisingHandle: 0, connectionHandle: 0x40, completedEvents: 1), self) }
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

    /// With the extended commands set 0's end comes as LE Advertising Set Terminated (Vol 4 Part
    /// E §7.7.65.18): a connection made from it restarts it as the parameters ask; an end for
    /// another reason leaves it off and says so.
    func testSetZeroEndsWithLEAdvertisingSetTerminated() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        try await d.start(AdvertisingParameters(continueWhileConnected: true), data: data)
        await d.clearCommands()
        await d.setTerminated(.success)
        await d.runSpawned()
        var enabled = await d.enabled
        XCTAssertTrue(enabled, "advertising again after the connection")
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes.last, .leSetExtendedAdvertisingEnable)
        await d.setTerminated(.advertisingTimeout)
        enabled = await d.enabled
        XCTAssertFalse(enabled)
        let reports = await d.reports
        guard case .advertisingFailed? = reports.last else { return XCTFail("\(reports)") }
    }

    /// A resume without a pause of its own (privacy paused only the advertising sets) leaves
    /// advertising off that a connection ended and `continueWhileConnected: false` keeps off.
    func testAResumeWithoutAPauseTurnsNothingOn() async throws {
        let d = Driver()
        try await d.start(AdvertisingParameters(restartAfterDisconnect: true, continueWhileConnected: false), data: data)
        await d.connected()
        try await d.pause()
        await d.clearCommands()
        await d.resume()
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [], "connected, and not to advertise while connected")
    }

    /// A restart that falls in a pause waits for the resume.
    func testARestartDuringAPauseWaitsForTheResume() async throws {
        let d = Driver()
        try await d.start(AdvertisingParameters(restartAfterDisconnect: true, continueWhileConnected: false), data: data)
        await d.connected()
        try await d.pause()
        await d.disconnected()
        await d.runSpawned()
        var enabled = await d.enabled
        XCTAssertFalse(enabled, "not while paused")
        await d.resume()
        enabled = await d.enabled
        XCTAssertTrue(enabled, "on at the resume")
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

    /// With the extended commands the same advertising goes out as set 0 with legacy PDUs (Vol
    /// 4 Part E §7.8.53–56), never through the legacy commands (§3.1.1): its parameters (the
    /// legacy PDU's properties, the own address type), data, scan response when the PDU is
    /// scannable, the host's random address for the set (§7.8.52), then enable; stop, pause and
    /// resume use the extended enable, and a resume gives the set the address again.
    func testWithTheExtendedCommandsAdvertisingIsSetZeroWithLegacyPDUs() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        try await d.start(.connectable)
        var opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData,
                                 .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingEnable])
        let commands = await d.record.commands
        // Handle 0, properties ADV_IND (legacy, connectable, scannable), intervals, channel map, then
        // the own address type.
        XCTAssertEqual(commands[0].parameters[0], 0)
        XCTAssertEqual(UInt16(commands[0].parameters[1]) | UInt16(commands[0].parameters[2]) << 8, 0x13)
        XCTAssertEqual(commands[0].parameters[10], OwnAddressType.random.rawValue)
        XCTAssertEqual(Array(commands[3].parameters), [0] + BDAddress(rawValue: 0x4A_00_00_00_00_01).littleEndianBytes)
        // Enable: on, one set, handle 0, no duration, no event limit.
        XCTAssertEqual(commands[4].parameters, [1, 1, 0, 0, 0, 0])
        await d.clearCommands()
        try await d.pause()
        await d.resume()
        try await d.stop()
        opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leSetExtendedAdvertisingEnable, .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingEnable,
                                 .leSetExtendedAdvertisingEnable])
        let enables = await d.record.commands.filter { $0.opcode == .leSetExtendedAdvertisingEnable }.map { $0.parameters[0] }
        XCTAssertEqual(enables, [0, 1, 0])
    }

    /// A non-connectable set with legacy PDUs (ADV_NONCONN_IND) is not scannable, so it gets no
    /// scan response command (the controller refuses one, §7.8.55); a scannable one
    /// (ADV_SCAN_IND) does.
    func testWithTheExtendedCommandsOnlyAScannableSetGetsAScanResponse() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        try await d.start(.nonConnectable)
        var opcodes = await d.opcodes
        XCTAssertFalse(opcodes.contains(.leSetExtendedScanResponseData))
        var properties = await d.record.commands.first?.parameters[1]
        XCTAssertEqual(properties, 0x10)
        try await d.stop()
        await d.clearCommands()
        try await d.start(.scannable)
        opcodes = await d.opcodes
        XCTAssertTrue(opcodes.contains(.leSetExtendedScanResponseData))
        properties = await d.record.commands.first?.parameters[1]
        XCTAssertEqual(properties, 0x12)
    }

    /// Set 0 keeps a scan response until it is replaced: before it is given non-scannable
    /// parameters its scan response is emptied, while it is still scannable (a set that is not
    /// scannable yet holds one is refused, §7.8.55; rootcanal does).
    func testAScanResponseIsEmptiedBeforeTheSetBecomesNonScannable() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        try await d.start(.connectable, scanResponse: AdvertisingData.Builder().txPowerLevel(4).build())
        try await d.stop()
        await d.clearCommands()
        try await d.start(.nonConnectable)
        let commands = await d.record.commands
        XCTAssertEqual(commands.first?.opcode, .leSetExtendedScanResponseData)
        XCTAssertEqual(commands.first?.parameters[3], 0, "an empty scan response, before the new parameters")
        XCTAssertEqual(commands.dropFirst().first?.opcode, .leSetExtendedAdvertisingParameters)
        // Emptied once: the next non-scannable start needs no more.
        try await d.stop()
        await d.clearCommands()
        try await d.start(.nonConnectable)
        let again = await d.opcodes
        XCTAssertFalse(again.contains(.leSetExtendedScanResponseData))
    }

    /// From the public address a set gets no random address (only a random own address type
    /// uses the set's, §7.8.52).
    func testAPublicSetGetsNoRandomAddress() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        await d.keepPublic()
        try await d.start(.connectable)
        let opcodes = await d.opcodes
        XCTAssertFalse(opcodes.contains(.leSetAdvertisingSetRandomAddress))
        XCTAssertEqual(opcodes.last, .leSetExtendedAdvertisingEnable)
    }

    /// A restart whose disable failed leaves the set possibly advertising: its scan response is
    /// not emptied then (it would go on advertising without it when the new parameters are
    /// refused, as a controller refuses them for a set that is on).
    func testAScanResponseIsKeptWhenTheSetMayStillBeAdvertising() async throws {
        let d = Driver()
        await d.useExtendedCommands()
        try await d.start(.connectable, scanResponse: AdvertisingData.Builder().txPowerLevel(4).build())
        await d.clearCommands()
        await d.failOnce(.leSetExtendedAdvertisingEnable)
        try? await d.start(.nonConnectable)
        let responses = await d.record.commands.filter { $0.opcode == .leSetExtendedScanResponseData }
        XCTAssertEqual(responses, [], "the scan response emptied while the set may be on")
    }
}

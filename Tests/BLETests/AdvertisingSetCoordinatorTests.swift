@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `AdvertisingSetCoordinator` on its own, driven by a double of the host (`Driver`, in
/// AdvertisingSetCoordinatorTests+Driver.swift): the commands a set's start, change, pause and
/// stop send, the checks made before any is sent, the handles and SIDs it picks. What LE
/// Advertising Set Terminated and pauses do is in AdvertisingSetTerminationTests.swift.
final class AdvertisingSetCoordinatorTests: XCTestCase {

    /// The (operation, length) of every data command of `opcode` sent.
    func fragments(_ commands: [HCICommand], _ opcode: HCIOpcode) -> [(UInt8, Int)] {
        commands.filter { $0.opcode == opcode }.map { ($0.parameters[1], $0.parameters.count - (opcode == .leSetPeriodicAdvertisingData ? 3 : 4)) }
    }

    func testAStartSendsParametersDataInFragmentsThenEnableWithTheDurationAndEventLimit() async throws {
        let d = Driver()
        var p = AdvertisingSetParameters(primaryPHY: .leCoded, secondaryPHY: .le2M, txPower: -4, includeTxPower: true,
                                         duration: .milliseconds(1500), maxEvents: 9)
        p.kind = .nonConnectable
        let set = try await d.start(p, data: [UInt8](repeating: 0x42, count: 600))
        XCTAssertEqual(set.handle, 1, "set 0 is startAdvertising's")
        XCTAssertEqual(set.sid, 0)
        XCTAssertEqual(set.txPower, 5, "the TX power the controller chose")
        XCTAssertEqual(set.extended, true)
        let commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingData,
                                                .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingEnable])
        let parameters = commands[0].parameters
        XCTAssertEqual(parameters[0], 1, "the handle")
        XCTAssertEqual(UInt16(parameters[1]) | UInt16(parameters[2]) << 8, AdvertisingEventProperties.includeTxPower.rawValue, "extended, neither connectable nor scannable")
        XCTAssertEqual(Int8(bitPattern: parameters[19]), -4)
        XCTAssertEqual(parameters[20], LEPHY.leCoded.rawValue)
        XCTAssertEqual(parameters[22], LEPHY.le2M.rawValue)
        XCTAssertEqual(fragments(commands, .leSetExtendedAdvertisingData).map(\.0), [1, 0, 2], "first, intermediate, last")
        XCTAssertEqual(fragments(commands, .leSetExtendedAdvertisingData).map(\.1), [251, 251, 98])
        // Enable: on, one set, handle 1, duration 150 (10 ms units), 9 events.
        XCTAssertEqual(commands[4].parameters, [1, 1, 1, 150, 0, 9])
    }

    func testASetFromItsOwnRandomAddressGivesItToTheControllerBeforeEnabling() async throws {
        let d = Driver()
        let own = BDAddress(rawValue: 0xC1_22_33_44_55_66)
        let set = try await d.start(AdvertisingSetParameters(address: .random(own)))
        XCTAssertEqual(set.address, DeviceAddress(own, type: .random))
        let commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingParameters, .leSetAdvertisingSetRandomAddress,
                                                .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingEnable])
        XCTAssertEqual(commands[0].parameters[10], OwnAddressType.random.rawValue)
        XCTAssertEqual(commands[1].parameters, [1] + own.littleEndianBytes)
    }

    func testSetsTakeTheNextHandleAndSIDUntilTheControllerHasNoMore() async throws {
        let d = Driver()
        await d.setInfo(Driver.extendedInfo(sets: 3))
        let first = try await d.start()
        let second = try await d.start()
        let last = try await d.start()
        XCTAssertEqual([first.handle, second.handle, last.handle], [1, 2, 0], "set 0 last, while startAdvertising does not use it")
        XCTAssertEqual([first.sid, second.sid, last.sid], [0, 1, 2])
        do {
            _ = try await d.start()
            XCTFail("a fourth set on a controller with three")
        } catch BLEError.unsupported {}
        try await d.stop(1)
        let third = try await d.start()
        XCTAssertEqual(third.handle, 1, "a stopped set's handle is free again")
    }

    /// A controller with one set: it goes to the application's set while `startAdvertising` does
    /// not use it, and each refuses while the other holds it.
    func testOneSetIsSharedWithStartAdvertisingOneAtATime() async throws {
        let d = Driver()
        await d.setInfo(Driver.extendedInfo(sets: 1))
        let set = try await d.start()
        XCTAssertEqual(set.handle, 0)
        do {
            try await d.startLegacy()
            XCTFail("startAdvertising while an advertising set holds set 0")
        } catch BLEError.unsupported {}
        try await d.stop(0)
        try await d.startLegacy()
        do {
            _ = try await d.start()
            XCTFail("a set while startAdvertising holds set 0")
        } catch BLEError.unsupported {}
    }

    func testWhatTheSpecForbidsIsRefusedBeforeAnyCommand() async throws {
        let d = Driver()
        func refused(_ what: String, _ body: () async throws -> Void) async {
            do {
                try await body()
                XCTFail("\(what) was accepted")
            } catch let error as BLEError {
                switch error {
                case .invalidArgument, .unsupported: break
                default: XCTFail("\(what): \(error)")
                }
            } catch { XCTFail("\(what): \(error)") }
        }
        await refused("data over the controller's maximum") { _ = try await d.start(data: [UInt8](repeating: 1, count: 1651)) }
        await refused("legacy PDUs with 32 octets") { _ = try await d.start(AdvertisingSetParameters(legacyPDUs: true), data: [UInt8](repeating: 1, count: 32)) }
        await refused("a scannable extended set without a scan response") { _ = try await d.start(AdvertisingSetParameters(kind: .scannable)) }
        await refused("a scan response on a set that is not scannable") { _ = try await d.start(scanResponse: [2, 1, 6]) }
        await refused("a connectable anonymous set") { _ = try await d.start(AdvertisingSetParameters(kind: .connectable, anonymous: true)) }
        await refused("legacy PDUs on LE Coded") { _ = try await d.start(AdvertisingSetParameters(legacyPDUs: true, primaryPHY: .leCoded)) }
        await refused("a primary PHY of LE 2M") { _ = try await d.start(AdvertisingSetParameters(primaryPHY: .le2M)) }
        await refused("a 10 ms interval") { _ = try await d.start(AdvertisingSetParameters(interval: .milliseconds(10))) }
        await refused("SID 16") { _ = try await d.start(AdvertisingSetParameters(sid: 16)) }
        await refused("0 events") { _ = try await d.start(AdvertisingSetParameters(maxEvents: 0)) }
        await refused("a duration of 700 s") { _ = try await d.start(AdvertisingSetParameters(duration: .seconds(700))) }
        await refused("a random address with 10 on top (resolvable)") {
            _ = try await d.start(AdvertisingSetParameters(address: .random(BDAddress(rawValue: 0x40_00_00_00_00_01))))
        }
        await refused("periodic advertising on a connectable set") {
            _ = try await d.start(AdvertisingSetParameters(kind: .connectable), periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), [2, 1, 6]))
        }
        await refused("a periodic interval of 5 ms") {
            _ = try await d.start(periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(5)), [2, 1, 6]))
        }
        await d.setInfo(Driver.extendedInfo(features: []))
        await refused("LE Coded on a controller without it") { _ = try await d.start(AdvertisingSetParameters(primaryPHY: .leCoded)) }
        await refused("LE 2M on a controller without it") { _ = try await d.start(AdvertisingSetParameters(secondaryPHY: .le2M)) }
        await d.legacyHost()
        await refused("a set on a host driving the legacy commands") { _ = try await d.start() }
        let commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [], "nothing was sent")
    }

    /// A command refused part-way: the half-made set is removed, and its handle is free again.
    func testAFailedStartRemovesTheSet() async throws {
        let d = Driver()
        await d.fail(.leSetExtendedAdvertisingEnable)
        do {
            _ = try await d.start()
            XCTFail("the enable was refused")
        } catch BLEError.hci {}
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes.last, .leRemoveAdvertisingSet)
        let running = await d.runningSets
        XCTAssertEqual(running, 0)
    }

    func testPeriodicAdvertisingIsSetUpAndEnabledBeforeTheSet() async throws {
        let d = Driver()
        _ = try await d.start(periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), [UInt8](repeating: 7, count: 300)))
        let commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingParameters, .leSetPeriodicAdvertisingParameters,
                                                .leSetPeriodicAdvertisingData, .leSetPeriodicAdvertisingData, .leSetPeriodicAdvertisingEnable,
                                                .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingEnable])
        XCTAssertEqual(commands[1].parameters, [1, 80, 0, 80, 0, 0, 0], "100 ms is 80 units of 1.25 ms")
        XCTAssertEqual(fragments(commands, .leSetPeriodicAdvertisingData).map(\.0), [1, 2])
        XCTAssertEqual(fragments(commands, .leSetPeriodicAdvertisingData).map(\.1), [252, 48])
        XCTAssertEqual(commands[4].parameters, [1, 1])
        await d.clearCommands()
        try await d.stop(1)
        let stopped = await d.commands
        XCTAssertEqual(stopped.map(\.opcode), [.leSetExtendedAdvertisingEnable, .leSetPeriodicAdvertisingEnable, .leRemoveAdvertisingSet],
                       "both off before the set is removed (Vol 4 Part E §7.8.59)")
        XCTAssertEqual(stopped[1].parameters, [0, 1])
    }

    /// Data in one command changes while the set runs; data in several needs the set off
    /// (Vol 4 Part E §7.8.54), and on again after.
    func testLongDataChangesWithTheSetOffForAMoment() async throws {
        let d = Driver()
        _ = try await d.start()
        await d.clearCommands()
        try await d.update(1, .advertising, [2, 1, 4])
        var commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingData])
        XCTAssertEqual(commands[0].parameters[1], AdvertisingDataOperation.complete.rawValue)
        await d.clearCommands()
        try await d.update(1, .advertising, [UInt8](repeating: 3, count: 400))
        commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingEnable, .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingData,
                                                .leSetExtendedAdvertisingEnable])
        XCTAssertEqual(commands[0].parameters.first, 0)
        XCTAssertEqual(commands[3].parameters.first, 1)
        let enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, true)
        do {
            try await d.update(1, .scanResponse, [2, 1, 6])
            XCTFail("a scan response for a set that is not scannable")
        } catch BLEError.invalidArgument {}
        do {
            try await d.update(1, .advertising, [UInt8](repeating: 3, count: 1651))
            XCTFail("data over the maximum")
        } catch BLEError.invalidArgument {}
        do {
            try await d.update(9, .advertising, [])
            XCTFail("no set 9")
        } catch BLEError.invalidArgument {}
    }

    // MARK: Review findings

    /// A refused LE Set Extended Advertising Parameters fails the start (and removes the set),
    /// instead of going on with the set as the controller had it.
    func testRefusedParametersFailTheStart() async throws {
        let d = Driver()
        await d.fail(.leSetExtendedAdvertisingParameters)
        do {
            _ = try await d.start()
            XCTFail("the parameters were refused")
        } catch BLEError.hci {}
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leSetExtendedAdvertisingParameters, .leRemoveAdvertisingSet])
        let running = await d.runningSets
        XCTAssertEqual(running, 0)
    }

    /// A scannable extended set carries no advertising data (AUX_ADV_IND of a scannable set
    /// has none, Vol 4 Part E §7.8.54): none is sent, and data for it is refused.
    func testAScannableExtendedSetIsSentNoAdvertisingData() async throws {
        let d = Driver()
        _ = try await d.start(AdvertisingSetParameters(kind: .scannable), data: [], scanResponse: [2, 1, 6])
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leSetExtendedAdvertisingParameters, .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable])
        do {
            _ = try await d.start(AdvertisingSetParameters(kind: .scannable), data: [2, 1, 6], scanResponse: [2, 1, 6])
            XCTFail("advertising data on a scannable extended set")
        } catch BLEError.invalidArgument {}
        do {
            try await d.update(1, .advertising, [2, 1, 6])
            XCTFail("advertising data on a scannable extended set")
        } catch BLEError.invalidArgument {}
    }

    /// Two starts at once (the host is reentrant at each command) get two handles and two SIDs.
    func testConcurrentStartsTakeDifferentHandlesAndSIDs() async throws {
        let d = Driver()
        await d.yieldOnCommands()
        async let a = d.start()
        async let b = d.start()
        let (first, second) = try await (a, b)
        XCTAssertNotEqual(first.handle, second.handle)
        XCTAssertNotEqual(first.sid, second.sid)
        let running = await d.runningSets
        XCTAssertEqual(running, 2)
    }

    /// While privacy has the sets paused, a restart (after a connection) and a new set wait for
    /// the resume instead of turning a set on under it (§7.8.38 needs advertising off).
    func testNothingTurnsOnWhilePaused() async throws {
        let d = Driver()
        _ = try await d.start(AdvertisingSetParameters(kind: .connectable, continueWhileConnected: true))
        await d.connect(handle: 0x40)
        try await d.pause()
        await d.clearCommands()
        _ = await d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 1, connectionHandle: 0x40, completedEvents: 1))
        await d.runSpawned()
        _ = try await d.start()
        var opcodes = await d.opcodes
        XCTAssertFalse(opcodes.contains(.leSetExtendedAdvertisingEnable), "\(opcodes)")
        await d.clearCommands()
        await d.resume()
        opcodes = await d.opcodes
        XCTAssertEqual(opcodes.filter { $0 == .leSetExtendedAdvertisingEnable }.count, 2, "both on after the resume: \(opcodes)")
        let enabled = [await d.isEnabled(1), await d.isEnabled(2)]
        XCTAssertEqual(enabled, [true, true])
    }

    /// A stop always disables (harmless for a set already off, §7.8.56), and keeps the set when
    /// the controller refuses to remove it, so a retry can.
    func testAStopThatFailsKeepsTheSet() async throws {
        let d = Driver()
        _ = try await d.start()
        _ = await d.terminated(LEAdvertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 1, connectionHandle: 0, completedEvents: 1))
        await d.clearCommands()
        await d.failOnce(.leRemoveAdvertisingSet)
        do {
            try await d.stop(1)
            XCTFail("the remove was refused")
        } catch BLEError.hci {}
        var running = await d.runningSets
        XCTAssertEqual(running, 1)
        try await d.stop(1)
        running = await d.runningSets
        XCTAssertEqual(running, 0)
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes, [.leSetExtendedAdvertisingEnable, .leRemoveAdvertisingSet, .leSetExtendedAdvertisingEnable, .leRemoveAdvertisingSet])
    }

    /// A long data change whose disable is refused leaves the set on (as the controller has
    /// it); one whose data is refused after the disable turns the set on again.
    func testAFailedLongChangeLeavesTheSetAsTheControllerHasIt() async throws {
        let d = Driver()
        _ = try await d.start()
        await d.failOnce(.leSetExtendedAdvertisingEnable)
        do {
            try await d.update(1, .advertising, [UInt8](repeating: 3, count: 400))
            XCTFail("the disable was refused")
        } catch BLEError.hci {}
        var enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, true)
        await d.failOnce(.leSetExtendedAdvertisingData)
        await d.clearCommands()
        do {
            try await d.update(1, .advertising, [UInt8](repeating: 3, count: 400))
            XCTFail("the data was refused")
        } catch BLEError.hci {}
        enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, true)
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes.last, .leSetExtendedAdvertisingEnable)
    }

    /// LE Advertising Set Terminated that comes before the enable's answer is resumed on: the set
    /// is off, not believed on.
    func testATerminationDuringTheEnableIsKept() async throws {
        let d = Driver()
        await d.terminate(onEnable: LEAdvertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 1, connectionHandle: 0, completedEvents: 1))
        _ = try await d.start(AdvertisingSetParameters(duration: .milliseconds(10)))
        let enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, false)
        let reports = await d.reports
        guard case let .advertisingSetTerminated(t)? = reports.last else { return XCTFail("\(reports)") }
        XCTAssertEqual(t.reason, .timeout)
    }

    /// A one-set controller: set 0 used by an application set and removed is not believed to
    /// hold `startAdvertising`'s old scan response.
    func testSetZeroTakenByASetForgetsTheLegacyScanResponse() async throws {
        let d = Driver()
        await d.setInfo(Driver.extendedInfo(sets: 1))
        try await d.startLegacy(.scannable, scanResponse: AdvertisingData.Builder().localName("R").build())
        try await d.stopLegacy()
        let set = try await d.start()
        try await d.stop(set.handle)
        await d.clearCommands()
        try await d.startLegacy(.nonConnectable, scanResponse: nil)
        let opcodes = await d.opcodes
        XCTAssertFalse(opcodes.contains(.leSetExtendedScanResponseData), "\(opcodes)")
    }

    /// Durations too long for any field are refused, not trapped on.
    func testHugeDurationsAreRefused() async throws {
        let d = Driver()
        for p in [AdvertisingSetParameters(interval: .seconds(Int64.max)), AdvertisingSetParameters(duration: .seconds(Int64.max / 2))] {
            do {
                _ = try await d.start(p)
                XCTFail("\(p)")
            } catch BLEError.invalidArgument {}
        }
        do {
            _ = try await d.start(periodic: (PeriodicAdvertisingParameters(interval: .seconds(Int64.max)), [2, 1, 6]))
            XCTFail("periodic interval")
        } catch BLEError.invalidArgument {}
    }

    // MARK: Second review's findings

    /// A termination during a long change's disable is kept: the set stays off.
    func testATerminationDuringALongChangeIsKept() async throws {
        let d = Driver()
        _ = try await d.start()
        await d.during(.leSetExtendedAdvertisingEnable, first: 0) { d in
            _ = d.advertisingSets.terminated(LEAdvertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 1, connectionHandle: 0,
                                                                        completedEvents: 1), d)
        }
        await d.clearCommands()
        try await d.update(1, .advertising, [UInt8](repeating: 3, count: 400))
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes.filter { $0 == .leSetExtendedAdvertisingEnable }.count, 1, "the disable only: \(opcodes)")
        let enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, false)
    }

    /// LE Advertising Set Terminated for the handle of a set still starting belongs to an earlier
    /// set: it is not reported, and the new set comes up.
    func testATerminationForASetStillStartingIsAnEarlierSets() async throws {
        let d = Driver()
        await d.during(.leSetExtendedAdvertisingParameters) { d in
            let ours = d.advertisingSets.terminated(LEAdvertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 1, connectionHandle: 0,
                                                                               completedEvents: 1), d)
            XCTAssertTrue(ours)
        }
        _ = try await d.start()
        let enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, true)
        let reports = await d.reports
        XCTAssertTrue(reports.isEmpty, "\(reports)")
    }

    /// A pause while an enable is in flight turns that set off too, and the resume on again.
    func testAPauseDuringAnEnableTurnsThatSetOffToo() async throws {
        let d = Driver()
        await d.during(.leSetExtendedAdvertisingEnable, first: 1) { d in try? await d.advertisingSets.pause(d) }
        _ = try await d.start()
        var enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, false, "paused")
        let opcodes = await d.opcodes
        XCTAssertEqual(opcodes.suffix(2), [.leSetExtendedAdvertisingEnable, .leSetExtendedAdvertisingEnable], "on, then off by the pause")
        await d.resume()
        enabled = await d.isEnabled(1)
        XCTAssertEqual(enabled, true)
    }
}

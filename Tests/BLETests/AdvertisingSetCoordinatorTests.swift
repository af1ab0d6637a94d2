@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// `AdvertisingSetCoordinator` on its own, driven by a double of the host: the commands a set's
/// start, change, pause and stop send, the checks made before any is sent, the handles and SIDs
/// it picks, and what LE Advertising Set Terminated does.
final class AdvertisingSetCoordinatorTests: XCTestCase {
    actor Driver: AdvertisingSetDriver, LinkTableDouble, RecordingDriver {
        let advertising = AdvertisingCoordinator()
        let advertisingSets = AdvertisingSetCoordinator()
        var record = DriverRecord()
        var links = LinkTable()
        var ownAddressType: OwnAddressType = .public
        var ownRandomAddress: BDAddress?
        var usesExtendedCommands = true
        var info: ControllerInfo? = Driver.extendedInfo()
        var reports: [PeripheralManagerEvent] = []
        var advertisingSetZeroInUse: Bool { advertisingSets.holdsSetZero }
        var ownAdvertisingAddress: DeviceAddress { DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_01), type: .public) }

        init() { record.answers[.leSetExtendedAdvertisingParameters] = [0x05] }

        /// Each command gives the actor up once before its answer, as a real controller's round
        /// trip does, so other calls on the host can run in between.
        var yields = false
        /// Delivered as if it arrived while LE Set Extended Advertising Enable (on) was in flight.
        var terminateOnEnable: LEAdvertisingSetTerminated?
        /// Run once when the command of this opcode (and first parameter octet, if given) is sent,
        /// before its answer: what arrives or runs while it is in flight.
        var onCommand: [(opcode: HCIOpcode, first: UInt8?, body: @Sendable (isolated Driver) async -> Void)] = []
        func during(_ opcode: HCIOpcode, first: UInt8? = nil, _ body: @escaping @Sendable (isolated Driver) async -> Void) {
            onCommand.append((opcode, first, body))
        }
        func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] {
            if yields { await Task.yield() }
            if let i = onCommand.firstIndex(where: { $0.opcode == cmd.opcode && ($0.first == nil || $0.first == cmd.parameters.first) }) {
                let hook = onCommand.remove(at: i)
                let sent = Result { try record.answer(cmd) }
                await hook.body(self)
                // The hook may have made this command fail (`failAnswer`).
                if failAnswer {
                    failAnswer = false
                    throw BLEError.busy("the controller refused \(cmd.opcode)")
                }
                return try sent.get()
            }
            if cmd.opcode == .leSetExtendedAdvertisingEnable, cmd.parameters.first == 1, let t = terminateOnEnable {
                terminateOnEnable = nil
                let answer = try record.answer(cmd)
                _ = advertisingSets.terminated(t, self)
                return answer
            }
            return try record.answer(cmd)
        }
        func yieldOnCommands() { yields = true }
        /// Set by a `during` hook: the command in flight fails.
        var failAnswer = false
        /// A task a hook started (its outcome read by the test).
        var pending: Task<Void, any Error>?
        func failInFlight() { failAnswer = true }
        func terminate(onEnable t: LEAdvertisingSetTerminated) { terminateOnEnable = t }
        func failOnce(_ opcode: HCIOpcode) { record.failingOnce.insert(opcode) }
        func succeed(_ opcode: HCIOpcode) { record.failing.remove(opcode) }
        func startLegacy(_ kind: AdvertisingParameters.Kind, scanResponse: AdvertisingData?) async throws {
            try await advertising.start(AdvertisingParameters(kind: kind), data: AdvertisingData.Builder().localName("L").build(), scanResponse: scanResponse, self)
        }
        func stopLegacy() async throws { try await advertising.stop(self) }
        func legacyTerminated(_ event: LEAdvertisingSetTerminated) { advertising.setTerminated(event, self) }
        func startLegacy(_ parameters: AdvertisingParameters) async throws {
            try await advertising.start(parameters, data: AdvertisingData.Builder().localName("L").build(), scanResponse: nil, self)
        }
        func pauseLegacy() async throws { try await advertising.pause(self) }
        func resumeLegacy() async { await advertising.resume(self) }
        var legacyEnabled: Bool? { advertising.state?.enabled }

        static func extendedInfo(sets: Int = 4, maximum: Int = 1650, features: LESupportedFeatures = [.le2MPHY, .leCodedPHY]) -> ControllerInfo {
            var info = ControllerInfo(address: BDAddress(rawValue: 0x00_1B_DC_00_00_01), version: nil,
                                      supportedCommands: LocalSupportedCommands(octets: [UInt8](repeating: 0xFF, count: 64)),
                                      features: nil, leFeatures: features, aclBufferLength: 27, aclBufferCount: 4)
            info.advertisingSets = sets
            info.maximumAdvertisingDataLength = maximum
            return info
        }

        func prepareRadioForAdvertising() async {}
        func report(_ event: PeripheralManagerEvent) { reports.append(event) }
        func setInfo(_ info: ControllerInfo?) { self.info = info }
        func legacyHost() { usesExtendedCommands = false }
        func usePrivacy(_ address: BDAddress) {
            ownAddressType = .random
            ownRandomAddress = address
        }
        func fail(_ opcode: HCIOpcode) { record.failing.insert(opcode) }
        func clearCommands() { record.commands = [] }

        func start(_ parameters: AdvertisingSetParameters = AdvertisingSetParameters(), data: [UInt8] = [2, 1, 6], scanResponse: [UInt8]? = nil,
                   periodic: (parameters: PeriodicAdvertisingParameters, data: [UInt8])? = nil) async throws -> AdvertisingSet {
            try await advertisingSets.start(parameters, data: data, scanResponse: scanResponse, periodic: periodic, self)
        }
        func update(_ handle: UInt8, _ kind: AdvertisingDataKind, _ bytes: [UInt8]) async throws {
            try await advertisingSets.update(handle, kind, bytes, self)
        }
        func stop(_ handle: UInt8) async throws { try await advertisingSets.stop(handle, self) }
        func connect(handle: UInt16) {
            links[handle] = .testPeripheralLink(handle: handle)
            advertisingSets.linkOpened(handle: handle, self)
        }
        func terminated(_ event: LEAdvertisingSetTerminated) -> Bool { advertisingSets.terminated(event, self) }
        func linkEnded(_ handle: UInt16) { advertisingSets.linkEnded(handle: handle, self) }
        func pause() async throws { try await advertisingSets.pause(self) }
        func resume() async { await advertisingSets.resume(self) }
        func isEnabled(_ handle: UInt8) -> Bool? { advertisingSets.records[handle]?.enabled }
        var runningSets: Int { advertisingSets.records.count }
        func startLegacy() async throws {
            try await advertising.start(AdvertisingParameters(), data: AdvertisingData.Builder().localName("L").build(), scanResponse: nil, self)
        }
    }

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

    /// A connection made from a connectable set is the set's: the event says so, and the set
    /// advertises again at once (`continueWhileConnected`) or when that link ends.
    func testAConnectionEndsTheSetWhichAdvertisesAgainAsAsked() async throws {
        let d = Driver()
        _ = try await d.start(AdvertisingSetParameters(kind: .connectable, continueWhileConnected: true))
        _ = try await d.start(AdvertisingSetParameters(kind: .connectable, continueWhileConnected: false))
        await d.connect(handle: 0x40)
        await d.clearCommands()
        let ours = await d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 1, connectionHandle: 0x40, completedEvents: 12))
        XCTAssertTrue(ours)
        let reports = await d.reports
        guard case let .advertisingSetTerminated(t)? = reports.last, case let .connected(central) = t.reason else {
            return XCTFail("\(reports)")
        }
        XCTAssertEqual(central.id, 0x40)
        XCTAssertEqual(t.set, 1)
        XCTAssertEqual(t.completedEvents, 12)
        XCTAssertTrue(t.restarting)
        await d.runSpawned()
        var commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingEnable])
        XCTAssertEqual(commands.first?.parameters, [1, 1, 1, 0, 0, 0])

        await d.connect(handle: 0x41)
        await d.clearCommands()
        _ = await d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 2, connectionHandle: 0x41, completedEvents: 3))
        await d.runSpawned()
        commands = await d.commands
        XCTAssertEqual(commands, [], "set 2 waits for its link to end")
        await d.linkEnded(0x41)
        await d.runSpawned()
        commands = await d.commands
        XCTAssertEqual(commands.first?.parameters, [1, 1, 2, 0, 0, 0])
        let enabled = await d.isEnabled(2)
        XCTAssertEqual(enabled, true)
        let zero = await d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 0, connectionHandle: 0x42, completedEvents: 1))
        XCTAssertFalse(zero, "set 0 is not one of the application's sets")
    }

    /// Some controllers send LE Advertising Set Terminated before the connection's LE
    /// Connection Complete: the termination waits for the link and is then the set's, as when
    /// it comes after.
    func testASetTerminatedBeforeItsConnectionCompleteIsTheConnections() async throws {
        let d = Driver()
        _ = try await d.start(AdvertisingSetParameters(kind: .connectable, continueWhileConnected: true))
        let ours = await d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 1, connectionHandle: 0x40, completedEvents: 5))
        XCTAssertTrue(ours)
        var reports = await d.reports
        XCTAssertFalse(reports.contains { if case .advertisingSetTerminated = $0 { return true } else { return false } },
                       "nothing is said before the link is known")
        await d.connect(handle: 0x40)
        reports = await d.reports
        guard case let .advertisingSetTerminated(t)? = reports.last, case let .connected(central) = t.reason else {
            return XCTFail("\(reports)")
        }
        XCTAssertEqual(central.id, 0x40)
        XCTAssertTrue(t.restarting)
    }

    /// A restart that came while a pause's disable was in flight waits for the resume; when
    /// the controller refuses the disable there is no resume, and the restart goes out then.
    func testARestartDeferredByAPauseWhoseDisableFailsStillGoesOut() async throws {
        let d = Driver()
        _ = try await d.start(AdvertisingSetParameters(kind: .nonConnectable, sid: 1))
        _ = try await d.start(AdvertisingSetParameters(kind: .connectable, sid: 2, continueWhileConnected: true))
        await d.during(.leSetExtendedAdvertisingEnable, first: 0) { d in
            d.connect(handle: 0x40)
            _ = d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 2, connectionHandle: 0x40, completedEvents: 1))
            await d.runSpawned()
            d.failInFlight()
        }
        await d.clearCommands()
        do {
            try await d.pause()
            XCTFail("the disable was refused")
        } catch {}
        await d.runSpawned()
        let commands = await d.commands
        XCTAssertTrue(commands.contains { $0.opcode == .leSetExtendedAdvertisingEnable && $0.parameters == [1, 1, 2, 0, 0, 0] },
                      "set 2's restart went out: \(commands)")
        let enabled = await d.isEnabled(2)
        XCTAssertEqual(enabled, true)
    }

    /// `startAdvertising` on set 0: a connection whose Set Terminated comes while the enable is
    /// in flight ends this advertising; the enable's confirmation after it does not turn it on.
    func testAConnectionDuringStartAdvertisingsEnableEndsIt() async throws {
        let d = Driver()
        await d.during(.leSetExtendedAdvertisingEnable, first: 1) { d in
            d.connect(handle: 0x40)
            d.legacyTerminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 0, connectionHandle: 0x40, completedEvents: 1))
        }
        try await d.startLegacy(.connectable, scanResponse: nil)
        let enabled = await d.legacyEnabled
        XCTAssertEqual(enabled, false, "the controller ended it with the connection")
    }

    /// A Set Terminated parked for a link that never came is dropped with its set: a new set
    /// on the same handle, connected on the same link handle, is not ended by it.
    func testAParkedSetTerminatedDoesNotEndALaterSetOnTheSameHandle() async throws {
        let d = Driver()
        let first = try await d.start(AdvertisingSetParameters(kind: .connectable))
        _ = await d.terminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: first.handle, connectionHandle: 0x40, completedEvents: 1))
        try await d.stop(first.handle)
        let second = try await d.start(AdvertisingSetParameters(kind: .connectable))
        XCTAssertEqual(second.handle, first.handle)
        await d.connect(handle: 0x40)
        let reports = await d.reports
        XCTAssertFalse(reports.contains { if case .advertisingSetTerminated = $0 { return true } else { return false } }, "\(reports)")
        let enabled = await d.isEnabled(second.handle)
        XCTAssertEqual(enabled, true)
    }

    /// A set whose enable is in flight when a pause begins, and goes through: when the
    /// controller then refuses the pause's disable, the set is on, as the controller has it.
    /// The pause starts while the enable is out (in its hook) and its disable is answered after
    /// the enable, as a controller answers commands in order.
    func testAnEnableInFlightWhenARefusedPauseBeganLeavesTheSetOn() async throws {
        let d = Driver()
        await d.yieldOnCommands()
        await d.during(.leSetExtendedAdvertisingEnable, first: 0) { d in d.failInFlight() }
        await d.during(.leSetExtendedAdvertisingEnable, first: 1) { d in
            let before = d.advertisingSets.records[1]?.generation
            d.pending = Task { try await d.pause() }
            // Until the pause has begun (it bumps the set's generation) and waits on its disable.
            while d.advertisingSets.records[1]?.generation == before { await Task.yield() }
        }
        let set = try await d.start(AdvertisingSetParameters(kind: .nonConnectable, sid: 1))
        XCTAssertEqual(set.handle, 1)
        do {
            try await d.pending?.value
            XCTFail("the disable was refused")
        } catch {}
        let enabled = await d.isEnabled(set.handle)
        XCTAssertEqual(enabled, true)
    }

    /// Set 0: a restart a pause held back goes out when the controller refuses the pause's
    /// disable (no resume will come).
    func testStartAdvertisingsRestartHeldBackByARefusedPauseGoesOut() async throws {
        let d = Driver()
        try await d.startLegacy(AdvertisingParameters(kind: .connectable, continueWhileConnected: true))
        await d.during(.leSetExtendedAdvertisingEnable, first: 0) { d in
            d.connect(handle: 0x40)
            d.legacyTerminated(LEAdvertisingSetTerminated(status: .success, advertisingHandle: 0, connectionHandle: 0x40, completedEvents: 1))
            await d.runSpawned()
            d.failInFlight()
        }
        await d.clearCommands()
        do {
            try await d.pauseLegacy()
            XCTFail("the disable was refused")
        } catch {}
        await d.runSpawned()
        let commands = await d.commands
        XCTAssertTrue(commands.contains { $0.opcode == .leSetExtendedAdvertisingEnable && $0.parameters == [1, 1, 0, 0, 0, 0] }, "\(commands)")
        let enabled = await d.legacyEnabled
        XCTAssertEqual(enabled, true)
    }

    /// Set 0: a pause that begins while a start's enable is in flight turns it off too; its
    /// resume turns it on.
    func testAPauseDuringStartAdvertisingsEnableTurnsItOffUntilTheResume() async throws {
        let d = Driver()
        await d.during(.leSetExtendedAdvertisingEnable, first: 1) { d in try? await d.pauseLegacy() }
        try await d.startLegacy(.connectable, scanResponse: nil)
        var enabled = await d.legacyEnabled
        XCTAssertEqual(enabled, false, "off for the pause")
        let opcodes = await d.commands.map { "\($0.opcode):\($0.parameters.first ?? 9)" }
        XCTAssertTrue(opcodes.contains("\(HCIOpcode.leSetExtendedAdvertisingEnable):0"), "the pause's disable went out: \(opcodes)")
        await d.resumeLegacy()
        enabled = await d.legacyEnabled
        XCTAssertEqual(enabled, true)
    }

    /// Set 0: a stop while a start still sends its parameters wins: the start ends with
    /// CancellationError and sends no enable.
    func testAStopWhileStartAdvertisingSendsItsParametersWins() async throws {
        let d = Driver()
        await d.during(.leSetExtendedAdvertisingParameters) { d in try? await d.stopLegacy() }
        do {
            try await d.startLegacy(.connectable, scanResponse: nil)
            XCTFail("the start went on after the stop")
        } catch is CancellationError {}
        let commands = await d.commands
        XCTAssertFalse(commands.contains { $0.opcode == .leSetExtendedAdvertisingEnable && $0.parameters.first == 1 }, "\(commands)")
        let enabled = await d.legacyEnabled
        XCTAssertNotEqual(enabled, true)
    }

    /// A duration or event limit ends a set for good: no restart after a link ends.
    func testATimedOutSetStaysOff() async throws {
        let d = Driver()
        _ = try await d.start(AdvertisingSetParameters(kind: .connectable, duration: .seconds(1)))
        await d.clearCommands()
        _ = await d.terminated(LEAdvertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 1, connectionHandle: 0, completedEvents: 10))
        let reports = await d.reports
        guard case let .advertisingSetTerminated(t)? = reports.last else { return XCTFail("\(reports)") }
        XCTAssertEqual(t.reason, .timeout)
        XCTAssertFalse(t.restarting)
        _ = await d.terminated(LEAdvertisingSetTerminated(status: .limitReached, advertisingHandle: 1, connectionHandle: 0, completedEvents: 10))
        guard case let .advertisingSetTerminated(limit)? = await d.reports.last else { return XCTFail() }
        XCTAssertEqual(limit.reason, .limitReached)
        await d.linkEnded(0x40)
        await d.runSpawned()
        let commands = await d.commands
        XCTAssertEqual(commands, [])
        try await d.stop(1)
        let afterStop = await d.opcodes
        XCTAssertEqual(afterStop, [.leSetExtendedAdvertisingEnable, .leRemoveAdvertisingSet],
                       "disabled all the same (it does nothing to a set that is off, and a restart may be in flight), then removed")
    }

    /// Privacy's pause turns every running set off in one command; its resume gives a set from
    /// the host's address the renewed address, then turns it on.
    func testPauseAndResumeFollowTheHostsNewAddress() async throws {
        let d = Driver()
        await d.usePrivacy(BDAddress(rawValue: 0x5A_00_00_00_00_01))
        _ = try await d.start()
        _ = try await d.start(AdvertisingSetParameters(address: .random(BDAddress(rawValue: 0xC0_00_00_00_00_02))))
        await d.clearCommands()
        try await d.pause()
        var commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetExtendedAdvertisingEnable])
        XCTAssertEqual(commands.first?.parameters, [0, 2, 1, 0, 0, 0, 2, 0, 0, 0])
        await d.usePrivacy(BDAddress(rawValue: 0x5A_00_00_00_00_09))
        await d.clearCommands()
        await d.resume()
        commands = await d.commands
        XCTAssertEqual(commands.map(\.opcode), [.leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingEnable, .leSetExtendedAdvertisingEnable])
        XCTAssertEqual(commands.first?.parameters, [1] + BDAddress(rawValue: 0x5A_00_00_00_00_09).littleEndianBytes)
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

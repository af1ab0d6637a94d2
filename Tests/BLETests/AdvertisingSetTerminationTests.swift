@testable import BLE
import BLEHCI
import BLEHost
import BLEWire
import XCTest

/// What ends an advertising set and what a pause does to it: LE Advertising Set Terminated for a
/// connection (also before its LE Connection Complete), a duration or an event limit; restarts;
/// pauses for a new address, refused or not; and the same for `startAdvertising`'s set 0. Driven
/// by `AdvertisingSetCoordinatorTests.Driver`.
final class AdvertisingSetTerminationTests: XCTestCase {
    typealias Driver = AdvertisingSetCoordinatorTests.Driver

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
        // The disable waits until the enable has completed (as the controller answers in
        // order), then is refused.
        await d.during(.leSetExtendedAdvertisingEnable, first: 0) { d in
            while d.advertisingSets.records[1]?.enabling == true { await Task.yield() }
            d.failInFlight()
        }
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

}

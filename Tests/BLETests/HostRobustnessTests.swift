@testable import BLE
import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import BLETestSupport
import Synchronization
import XCTest

/// Races and controller misbehaviour found in review: each used to leave radio work running or
/// a caller waiting forever.
final class HostRobustnessTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)

    /// A scan stopped while it is still starting must never be enabled on the radio.
    func testScanStoppedWhileStartingIsNeverEnabled() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        // Hold the Set Scan Parameters answer until the scan has been stopped.
        let gate = Gate()
        await t.controller.set(.leSetScanParameters) { c in
            gate.open()
            return nil
        }
        let scan = Task { () -> Int in
            var n = 0
            for try await _ in central.scan() { n += 1 }
            return n
        }
        await gate.wait("the Set Scan Parameters command")
        // The stop takes effect (the scan's stream ends) before the controller answers.
        await central.stopScan()
        _ = try? await scan.value
        await t.controller.sendNow(.commandComplete(numHCICommandPackets: 1, opcode: .leSetScanParameters, returnParameters: [0]))
        // Two commands through the host's one-at-a-time command queue: the first goes out only
        // once the answer above has been handled (resuming the starting scan), the second only
        // after the first's answer, by when the resumed start would have queued any Set Scan
        // Enable ahead of it. The fake controller records frames in order, so once it has the
        // second, it has everything the start sent.
        _ = try await central.host.commandReturning(.readBDADDR)
        _ = try await central.host.commandReturning(.readBDADDR)
        let enables = await t.controller.commands.filter { $0.opcode == .leSetScanEnable }.map(\.parameters.first)
        XCTAssertFalse(enables.contains(0x01), "the stopped scan was never turned on: \(enables)")
        await central.close()
    }

    /// Disconnection Complete with an error status: the disconnect fails, the link stays up.
    /// `disconnect()` fails with the controller's Command Disallowed and the link stays up.
    func assertDisconnectRefused(_ p: Peripheral, file: StaticString = #filePath, line: UInt = #line) async throws {
        do {
            try await p.disconnect()
            XCTFail("expected the controller's refusal", file: file, line: line)
        } catch let BLEError.hci(.commandFailed(opcode, status)) {
            XCTAssertEqual(opcode, .disconnect, file: file, line: line)
            XCTAssertEqual(status, .commandDisallowed, file: file, line: line)
        }
        XCTAssertEqual(p.state, .connected, file: file, line: line)
    }

    func testFailedDisconnectIsReportedAndTheLinkStaysUp() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let central = try await Central.open(transport: t.hostEnd)
        let p = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.set(.disconnect) { c in
            [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: c.opcode),
             .disconnectionComplete(status: .commandDisallowed, handle: 0x0040, reason: .success)]
        }
        try await assertDisconnectRefused(p)
        await central.close()
    }

    /// A Disconnect command the controller refuses outright (Command Status with an error): the
    /// call fails, and the link stays up also after the attempt's deadline has passed (the
    /// deadline once tore the live link down in the host while the controller kept it).
    func testRefusedDisconnectCommandLeavesTheLinkUpPastItsDeadline() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let p = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.set(.disconnect) { c in [.commandStatus(status: .commandDisallowed, numHCICommandPackets: 1, opcode: c.opcode)] }
        let baseline = await central.host.run { $0.backgroundTaskCount }
        try await assertDisconnectRefused(p)
        // Past the deadline (command timeout + supervision timeout): first wait until the host's
        // deadline task sleeps on the clock (advancing before it armed would leave it asleep past
        // the test), then until it has run to its end; the link must still be up. The clock has
        // not moved, so the deadline is the only sleeper past the command timeout (a Disconnect
        // command timer the host has yet to cancel would be at the command timeout itself).
        let commandTimeout = HostConfiguration().commandTimeout
        let armed = await clock.waitForSleepers(within: .seconds(10)) { $0.min().map { $0 > commandTimeout } == true }
        XCTAssertTrue(armed, "the host arms the disconnect deadline")
        clock.advance(by: .seconds(60))
        await waitUntil("the disconnect deadline task to end", within: .seconds(10)) {
            await central.host.run { $0.backgroundTaskCount } <= baseline
        }
        XCTAssertEqual(p.state, .connected, "a refused disconnect must not drop the live link later")
        await central.close()
    }

    /// A controller that never reports the disconnect: the call ends at its deadline.
    func testSilentDisconnectEndsAtItsDeadline() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let p = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.set(.disconnect) { c in [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: c.opcode)] }
        let attempt = Task { try await p.disconnect() }
        _ = try await t.controller.waitForCommand(.disconnect)
        await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty }
        clock.advance(by: .seconds(10))
        do {
            try await attempt.value
            XCTFail("expected a timeout")
        } catch BLEError.timeout {}
        XCTAssertEqual(p.state, .disconnected(reason: .connectionTerminatedByLocalHost))
        await central.close()
    }

    /// LE Create Connection Cancel refused and no Connection Complete: connect still ends.
    func testConnectEndsEvenWhenTheCancelIsLost() async throws {
        let t = HostUnderTest()
        await t.controller.configure { $0.acceptConnections = false }
        await t.controller.set(.leCreateConnectionCancel) { c in
            [.commandComplete(numHCICommandPackets: 1, opcode: c.opcode, returnParameters: [HCIStatus.commandDisallowed.rawValue])]
        }
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let peer = self.peer
        let attempt = Task { try await central.connect(peer, timeout: .seconds(1)) }
        _ = try await t.controller.waitForCommand(.leCreateConnection)
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(1) }
        clock.advance(by: .seconds(1))
        _ = try await t.controller.waitForCommand(.leCreateConnectionCancel)
        // No Connection Complete will come: each time the host has armed its next timer, move
        // the clock to it, until the attempt gives up (a bounded number of timers).
        let done = Gate()
        // A timer can be cancelled between the test seeing it and advancing to it (a command
        // answered meanwhile): then look again rather than stop stepping. Every wait is bounded,
        // and giving up closes the central, which ends the attempt, so the test always ends.
        let stepper = Task {
            for _ in 0..<60 {
                guard await firstOf("a host timer or the end of the attempt", within: .seconds(10),
                                    done.opening, { await clock.waitForSleepers(within: .seconds(10)) { !$0.isEmpty } }) != nil
                else { break }
                if done.isOpen { return }
                if let next = clock.nextDeadline { clock.advance(by: max(next - clock.now(), .zero)) }
            }
            XCTFail("the connect attempt did not end while the host's timers were stepped")
            await central.close()
        }
        do {
            defer { done.open() }
            _ = try await attempt.value
            XCTFail("expected a timeout")
        } catch BLEError.timeout {}
        await stepper.value
        await central.close()
    }

    /// Write Without Response on a link whose bearer has closed fails instead of vanishing.
    func testWriteWithoutResponseAfterTheBearerClosedFails() async throws {
        let t = HostUnderTest()
        await t.controller.start()
        let clock = ManualClock()
        let central = try await Central.open(transport: t.hostEnd, clock: clock)
        let p = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.set(.disconnect) { c in [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: c.opcode)] }
        let read = Task { try await p.readShortValue(handle: 3) }
        try await t.controller.waitForL2CAP(channel: 4, within: .seconds(10)) { !$0.isEmpty }
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(30) }
        clock.advance(by: .seconds(30))
        _ = try? await read.value
        do {
            try await p.writeValue([1], handle: 3, type: .withoutResponse)
            XCTFail("a closed bearer must refuse the write")
        } catch BLEError.gatt {}
        await central.close()
    }
}

/// A one-way flag for tests.
final class Gate: Sendable {
    private let flag = SharedValue(false)
    func open() { flag.set(true) }
    var isOpen: Bool { flag.get() }
    /// Waits until the gate is open (its opening is the event), bounded.
    func wait(_ what: String, within bound: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line) async {
        await flag.wait(what, within: bound, file: file, line: line) { $0 }
    }
    /// True once the gate is open (false if cancelled first): an event for `firstOf`.
    @Sendable func opening() async -> Bool { await flag.becomes { $0 } }
}

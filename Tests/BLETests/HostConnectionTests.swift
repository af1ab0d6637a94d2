@testable import BLE
import BLERuntime
import BLEHCI
import BLEHost
import BLETransport
import BLEWire
import XCTest
import BLETestSupport

final class HostConnectionTests: XCTestCase {
    let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)

    func open(_ t: HostUnderTest, clock: any BLEClock = SystemClock()) async throws -> Central {
        await t.controller.start()
        return try await Central.open(transport: t.hostEnd, clock: clock)
    }

    func testConnectSendsCreateConnectionWithThePeerAddress() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        let p = try await central.connect(peer, timeout: .seconds(5))
        XCTAssertEqual(p.state, .connected)
        XCTAssertEqual(p.address, peer)
        let create = try await t.controller.waitForCommand(.leCreateConnection)
        XCTAssertEqual(create.parameters[5], 0x01, "peer address type random")
        XCTAssertEqual(Array(create.parameters[6..<12]), peer.address.littleEndianBytes)
        XCTAssertEqual(p.connectionParameters.interval, 24)
        await central.close()
    }

    func testConnectTimeoutCancelsOnTheRadio() async throws {
        let t = HostUnderTest()
        await t.controller.configure { $0.acceptConnections = false }
        let clock = ManualClock()
        let central = try await open(t, clock: clock)
        let peer = self.peer
        let attempt = Task { try await central.connect(peer, timeout: .seconds(10)) }
        _ = try await t.controller.waitForCommand(.leCreateConnection)
        await clock.waitForSleepers(within: .seconds(10)) { $0.min() == .seconds(10) }
        clock.advance(by: .seconds(10))
        _ = try await t.controller.waitForCommand(.leCreateConnectionCancel)
        do {
            _ = try await attempt.value
            XCTFail("expected a timeout")
        } catch BLEError.timeout {}
        await central.close()
    }

    func testCancellingTheTaskCancelsTheConnectionAttempt() async throws {
        let t = HostUnderTest()
        await t.controller.configure { $0.acceptConnections = false }
        let central = try await open(t)
        let peer = self.peer
        let attempt = Task { try await central.connect(peer, timeout: .seconds(60)) }
        _ = try await t.controller.waitForCommand(.leCreateConnection)
        attempt.cancel()
        _ = try await t.controller.waitForCommand(.leCreateConnectionCancel)
        do {
            _ = try await attempt.value
            XCTFail("expected cancellation")
        } catch is CancellationError {}
        await central.close()
    }

    /// The end of our own high duty cycle directed advertising (LE Connection Complete, status
    /// Advertising Timeout, role peripheral) is not the answer to a connection attempt running at
    /// the same time; a repeated completion for a live handle does not replace its link.
    func testAdvertisingTimeoutAndRepeatedCompletionDoNotDecideTheAttempt() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        let peer = self.peer
        let complete = LEConnectionComplete(status: .success, handle: 0x0040, role: .central, peer: peer,
                                            interval: 24, latency: 0, supervisionTimeout: 420, centralClockAccuracy: 0, format: .legacy)
        await t.controller.set(.leCreateConnection) { c in
            [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: c.opcode),
             .le(.connectionComplete(LEConnectionComplete(status: .advertisingTimeout, handle: 0, role: .peripheral, peer: peer,
                                                        interval: 0, latency: 0, supervisionTimeout: 0, centralClockAccuracy: 0, format: .legacy))),
             .le(.connectionComplete(complete))]
        }
        let p = try await central.connect(peer, timeout: .seconds(5))
        XCTAssertEqual(p.state, .connected)
        // The same completion again, then a command round trip behind it (events are handled in
        // order) and the end of any background work it started.
        let baseline = await central.host.run { $0.backgroundTaskCount }
        await t.controller.sendNow(.le(.connectionComplete(complete)))
        try await p.setPHY(.le1M) // the fake lists LE 1M alone; any command round trip will do
        await waitUntil("background work to end", within: .seconds(10)) { await central.host.run { $0.backgroundTaskCount } <= baseline }
        // It neither replaced the link nor disconnected it as "unwanted".
        let disconnects = await t.controller.commands.filter { $0.opcode == .disconnect }
        XCTAssertEqual(disconnects.count, 0)
        XCTAssertEqual(p.state, .connected)
        await central.close()
    }

    func testFailedConnectionReportsTheStatus() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        let peer = self.peer
        await t.controller.set(.leCreateConnection) { c in
            [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: c.opcode),
             .le(.connectionComplete(LEConnectionComplete(status: .connectionFailedToBeEstablished, handle: 0, role: .central, peer: peer,
                                                        interval: 0, latency: 0, supervisionTimeout: 0, centralClockAccuracy: 0, format: .legacy)))]
        }
        do {
            _ = try await central.connect(peer, timeout: .seconds(5))
            XCTFail("expected failure")
        } catch let BLEError.connectionFailed(status) {
            XCTAssertEqual(status, .connectionFailedToBeEstablished)
        }
        await central.close()
    }

    func testPeerDisconnectIsReportedWithItsReasonAndFailsPendingGATT() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        let p = try await central.connect(peer, timeout: .seconds(5))
        let updates = p.stateUpdates
        let read = Task { try await p.readShortValue(handle: 0x0003) }
        try await t.controller.waitForACL { !$0.isEmpty }
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0040, reason: .remoteUserTerminatedConnection))
        do {
            _ = try await read.value
            XCTFail("expected the read to fail")
        } catch let BLEError.disconnected(reason) {
            XCTAssertEqual(reason, .remoteUserTerminatedConnection)
        }
        var seen: [ConnectionState] = []
        for await s in updates { seen.append(s) }
        XCTAssertEqual(seen, [.connected, .disconnected(reason: .remoteUserTerminatedConnection)])
        XCTAssertEqual(p.disconnectReason, .remoteUserTerminatedConnection)
        await central.close()
    }

    func testLocalDisconnectSendsTheReason() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        let p = try await central.connect(peer, timeout: .seconds(5))
        try await p.disconnect(reason: .remoteDeviceTerminatedPowerOff)
        let d = try await t.controller.waitForCommand(.disconnect)
        XCTAssertEqual(d.parameters, [0x40, 0x00, HCIStatus.remoteDeviceTerminatedPowerOff.rawValue])
        XCTAssertEqual(p.state, .disconnected(reason: .connectionTerminatedByLocalHost))
        await central.close()
    }

    func testSeveralConnectionsAtOnce() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        let a = try await central.connect(peer, timeout: .seconds(5))
        let b = try await central.connect(DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_02), type: .random), timeout: .seconds(5))
        XCTAssertEqual(a.state, .connected)
        XCTAssertEqual(b.state, .connected)
        await t.controller.sendNow(.disconnectionComplete(status: .success, handle: 0x0040, reason: .remoteUserTerminatedConnection))
        await a.waitForState("the first link down") { $0 != .connected }
        XCTAssertEqual(b.state, .connected, "one link going down leaves the other up")
        await central.close()
    }

    func testConnectionParameterUpdateRequestIsAppliedAndAnswered() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        _ = try await central.connect(peer, timeout: .seconds(5))
        // L2CAP Connection Parameter Update Request (Vol 3 Part A §4.20): id 7, interval 40-56, latency 0, timeout 500.
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0005, payload: [0x12, 0x07, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01])
        let update = try await t.controller.waitForCommand(.leConnectionUpdate)
        XCTAssertEqual(Array(update.parameters[0..<10]), [0x40, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01])
        try await t.controller.waitForACL { _ in true }
        try await t.controller.waitForL2CAP(channel: 0x0005, within: .seconds(10)) { !$0.isEmpty }
        let responses = await t.controller.l2capPayloads(channel: 0x0005)
        XCTAssertEqual(responses.first, [0x13, 0x07, 0x02, 0x00, 0x00, 0x00], "Connection Parameter Update Response, accepted")
        await central.close()
    }

    func testUnknownSignalingCommandGetsCommandReject() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        _ = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0005, payload: [0x7F, 0x09, 0x00, 0x00])
        try await t.controller.waitForL2CAP(channel: 0x0005, within: .seconds(10)) { !$0.isEmpty }
        let responses = await t.controller.l2capPayloads(channel: 0x0005)
        XCTAssertEqual(responses.first, [0x01, 0x09, 0x02, 0x00, 0x00, 0x00], "Command Reject, not understood, same identifier")
        await central.close()
    }

    func testAPairingRequestToACentralGetsCommandNotSupported() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        _ = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])
        try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { !$0.isEmpty }
        let responses = await t.controller.l2capPayloads(channel: 0x0006)
        XCTAssertEqual(responses.first, [0x05, 0x07], "Pairing Failed: Command Not Supported (only a peripheral answers pairing)")
        await central.close()
    }

    func testAPeripheralsSecurityRequestMakesTheCentralPair() async throws {
        let t = HostUnderTest()
        let central = try await open(t)
        _ = try await central.connect(peer, timeout: .seconds(5))
        await t.controller.sendL2CAP(handle: 0x0040, channel: 0x0006, payload: [0x0B, 0x01])
        try await t.controller.waitForL2CAP(channel: 0x0006, within: .seconds(10)) { !$0.isEmpty }
        let responses = await t.controller.l2capPayloads(channel: 0x0006)
        // Pairing Request: NoInputNoOutput, no OOB, bonding + Secure Connections, 16 octets,
        // LTK/IRK/CSRK each way.
        XCTAssertEqual(responses.first, [0x01, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07])
        await central.close()
    }
}

import BLERuntime
import BLE
import BLEHCI
import BLETransport
import BLEVirtualRadio
import BLEWire
import XCTest

/// Regression tests from the review of the virtual radio: parameter ranges, scheduling that never
/// beats the air, handle reuse, propagation changes, Command Complete layouts, detached ends,
/// shutdown, Data Length Change times, procedures across a loss of contact, arrival times.
final class VirtualMediumRegressionTests: XCTestCase {
    var medium = VirtualMedium()
    var p = VirtualMedium.ControllerID(rawValue: 0)
    var c = VirtualMedium.ControllerID(rawValue: 0)
    let pAddr = BDAddress(rawValue: 0xAA)
    let cAddr = BDAddress(rawValue: 0xBB)

    override func setUp() {
        medium = VirtualMedium()
        p = medium.add(VirtualController(address: pAddr))
        c = medium.add(VirtualController(address: cAddr))
        for id in [p, c] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
    }

    func events(_ d: [VirtualMedium.Delivery], to id: VirtualMedium.ControllerID) -> [HCIEvent] {
        d.compactMap { x in
            guard x.to == id, case let .event(e) = x.packet else { return nil }
            return e
        }
    }

    func advertise(_ id: VirtualMedium.ControllerID, now: Duration) {
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 32, intervalMax: 32), from: id, now: now)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: id, now: now)
    }

    /// Connects c to `peer` and returns the central's handle (nil when no connection was made).
    func connect(to peer: VirtualMedium.ControllerID, peerAddress: BDAddress, interval: UInt16 = 24, timeout: UInt16 = 400,
                 now: Duration = .zero) -> (UInt16, UInt16, [HCIEvent])? {
        advertise(peer, now: now)
        let create = HCICommand.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(peerAddress, type: .public),
                                                   connectionIntervalMin: interval, connectionIntervalMax: interval, maxLatency: 0,
                                                   supervisionTimeout: timeout)
        let status = events(medium.receive(create, from: c, now: now), to: c)
        let d = medium.advance(to: now)
        guard case let .le(.connectionComplete(ce))? = events(d, to: c).first,
              case let .le(.connectionComplete(pe))? = events(d, to: peer).first else { return nil }
        return (ce.handle, pe.handle, status)
    }

    /// §7.8.12: Connection_Interval 0x0006–0x0C80, Supervision_Timeout 0x000A–0x0C80, and
    /// timeout > (1 + latency) × interval × 2, else Invalid HCI Command Parameters (0x12).
    func testCreateConnectionRejectsOutOfRangeParameters() {
        let create = HCICommand.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(pAddr, type: .public),
                                                   connectionIntervalMin: 0, connectionIntervalMax: 0, maxLatency: 0, supervisionTimeout: 0)
        let status = events(medium.receive(create, from: c, now: .zero), to: c)
        XCTAssertEqual(status, [.commandStatus(status: .invalidHCICommandParameters, numHCICommandPackets: 1, opcode: .leCreateConnection)])
    }

    /// At the shortest interval (7.5 ms), forty 251-octet PDUs on LE 1M take at least 39
    /// back-to-back exchanges of air time, and deadlines never go backwards.
    func testAirNeverCarriesMoreThanBackToBackExchanges() throws {
        var config = VirtualControllerConfiguration()
        config.leACLBufferLength = 251
        medium = VirtualMedium()
        p = medium.add(VirtualController(address: pAddr, configuration: config))
        c = medium.add(VirtualController(address: cAddr, configuration: config))
        for id in [p, c] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
        guard let (ch, _, _) = connect(to: p, peerAddress: pAddr, interval: 6) else { return XCTFail("no link") }
        _ = medium.receive(.leSetDataLength(handle: ch, txOctets: 251, txTime: 2120), from: c, now: .zero)
        let n = 40
        for _ in 0..<n {
            _ = medium.receive(ACLPacket(handle: ch, boundary: .firstNonFlushable, data: [UInt8](repeating: 7, count: 251)).h4Frame, from: c, now: .zero)
        }
        var received = 0
        var last = Duration.zero
        var previous = Duration.zero
        var backwards = 0
        while received < n, let next = medium.nextDeadline {
            if next < previous { backwards += 1 }
            previous = next
            let d = medium.advance(to: next)
            let got = d.filter { $0.to == p && { if case .acl = $0.packet { return true } else { return false } }($0) }.count
            if got > 0 { received += got; last = next }
        }
        let minimum = AirTime.exchange(payload: 251, phy: .le1M) * (n - 1)
        XCTAssertGreaterThanOrEqual(last, minimum, "more data than the air can carry")
        XCTAssertEqual(backwards, 0, "a connection event scheduled before the previous exchange ended")
    }

    /// Handles wrap at 0x0EFF back to 0x0040 without skipping handles still in use.
    func testHandleWrapDoesNotReuseALiveHandle() {
        let p2 = medium.add(VirtualController(address: BDAddress(rawValue: 0xCC)))
        _ = medium.receive(.setEventMask(EventMask.default), from: p2, now: .zero)
        _ = medium.receive(.leSetEventMask(LEEventMask.default), from: p2, now: .zero)
        guard let (first, _, _) = connect(to: p, peerAddress: pAddr) else { return XCTFail("no first link") }
        var collided = false
        for _ in 0..<(0x0EFF - 0x0040 + 2) {
            guard let (h, _, _) = connect(to: p2, peerAddress: BDAddress(rawValue: 0xCC)) else { return XCTFail("no link") }
            if h == first { collided = true; break }
            _ = medium.receive(.disconnect(handle: h), from: c, now: .zero)
        }
        XCTAssertFalse(collided, "handle \(first) handed out again while its link is up")
        XCTAssertEqual(medium.controller(c)?.connections.count, 1, "only the first link is left")
        XCTAssertEqual(medium.controller(c)?.connections[first]?.peer, DeviceAddress(pAddr, type: .public), "and it still leads to its peer")
    }

    /// A propagation change that puts both ends out of range should start the supervision timeout,
    /// as `move` does.
    func testPropagationChangeEndsLinksOutOfRange() {
        guard connect(to: p, peerAddress: pAddr) != nil else { return XCTFail("no link") }
        XCTAssertNil(medium.nextDeadline)
        medium.propagation.sensitivity = 0 // nothing is heard any more
        XCTAssertNil(medium.rssi(from: p, to: c))
        XCTAssertNotNil(medium.nextDeadline, "link out of range but no supervision timeout pending")
    }

    /// Command Complete of LE Set Data Length carries Status and Connection_Handle (§7.8.33).
    func testFailedSetDataLengthStillCarriesTheHandle() {
        let d = medium.receive(.leSetDataLength(handle: 0x0123, txOctets: 251, txTime: 2120), from: c, now: .zero)
        guard case let .commandComplete(_, _, params)? = events(d, to: c).first else { return XCTFail() }
        XCTAssertEqual(params, [0x02, 0x23, 0x01])
    }

    /// dropLinks returns real handles only.
    func testLinkHandlesAfterResetHaveNoPlaceholders() {
        guard connect(to: p, peerAddress: pAddr) != nil else { return XCTFail("no link") }
        _ = medium.receive(.reset, from: c, now: .zero)
        XCTAssertEqual(medium.linkHandles(of: c), [], "placeholder handles of detached ends")
    }
}

final class VirtualRadioShutdownTests: XCTestCase {
    /// `shutdown` says hosts see their transports' streams end.
    func testShutdownEndsTheHostsStreams() async throws {
        let radio = VirtualRadio(clock: ManualClock())
        let transport = await radio.makeController()
        await radio.shutdown()
        let ended = Task { () -> Bool in
            do { for try await _ in transport.incoming {} } catch {}
            return true
        }
        let timer = Task { () -> Bool in
            try? await Task.sleep(for: .seconds(20))
            return false
        }
        let result = await withTaskGroup(of: Bool.self) { g -> Bool in
            g.addTask { await ended.value }
            g.addTask { await timer.value }
            let r = await g.next() ?? false
            ended.cancel(); timer.cancel()
            return r
        }
        XCTAssertTrue(result, "the host's incoming stream never ended after shutdown")
    }
}

extension VirtualMediumRegressionTests {
    /// §7.7.65.7: MaxTxTime/MaxRxTime range 0x0148 (328 µs) to 0x4290; 251 octets on LE 1M is 2120 µs.
    func testDataLengthChangeTimesAreInRange() {
        guard let (ch, _, _) = connect(to: p, peerAddress: pAddr) else { return XCTFail("no link") }
        let d = medium.receive(.leSetDataLength(handle: ch, txOctets: 251, txTime: 2120), from: c, now: .zero)
        for e in events(d, to: c) + events(d, to: p) {
            if case let .le(.dataLengthChange(_, tx, txTime, rx, rxTime)) = e {
                XCTAssertTrue((328...17040).contains(txTime) && (328...17040).contains(rxTime), "out of range: \(txTime) \(rxTime)")
                // (octets + 14) × 8 µs: 27 → 328, 251 → 2120.
                XCTAssertEqual(txTime, (tx + 14) * 8)
                XCTAssertEqual(rxTime, (rx + 14) * 8)
            }
        }
    }
}

extension VirtualMediumRegressionTests {
    /// LE Set PHY accepted (Command Status success) while the peer is out of range: after the link
    /// recovers the host must still get LE PHY Update Complete (or the link must end).
    func testProcedureAcceptedDuringLossCompletesAfterRecovery() {
        guard let (ch, _, _) = connect(to: p, peerAddress: pAddr) else { return XCTFail("no link") }
        medium.move(p, to: .init(x: 100_000, y: 0), now: .zero)
        let s = events(medium.receive(.leSetPHY(handle: ch, tx: .le2M, rx: .le2M), from: c, now: .milliseconds(10)), to: c)
        XCTAssertEqual(s, [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leSetPHY)])
        medium.move(p, to: .origin, now: .milliseconds(20))
        var all: [HCIEvent] = []
        var t = Duration.milliseconds(20)
        while let n = medium.nextDeadline, n < .seconds(60) { t = n; all += events(medium.advance(to: n), to: c) }
        all += events(medium.advance(to: t + .seconds(60)), to: c)
        XCTAssertTrue(all.contains { if case .le(.phyUpdateComplete) = $0 { return true }; if case .disconnectionComplete = $0 { return true }; return false },
                      "accepted LE Set PHY never completes: \(all)")
    }

    /// "A packet reaches the peer's host when its last octet is sent."
    func testPacketArrivesWhenItsLastOctetIsSent() {
        guard let (ch, _, _) = connect(to: p, peerAddress: pAddr) else { return XCTFail("no link") }
        let now = Duration.milliseconds(100)
        _ = medium.receive(ACLPacket(handle: ch, boundary: .firstNonFlushable, data: [UInt8](repeating: 1, count: 27)).h4Frame, from: c, now: now)
        guard let anchor = medium.nextDeadline else { return XCTFail() }
        let d = medium.advance(to: anchor)
        let arrived = d.contains { $0.to == p && { if case .acl = $0.packet { return true } else { return false } }($0) }
        XCTAssertFalse(arrived, "delivered at the start of its exchange, before its last octet is on air")
    }
}

extension VirtualMediumRegressionTests {
    /// §7.8.9: high duty cycle directed advertising ends after 1.28 s with LE Connection Complete,
    /// status Advertising Timeout (0x3C).
    func testHighDutyDirectedAdvertisingTimesOut() {
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 32, intervalMax: 32, type: .connectableDirectedHighDuty,
                                                       peer: DeviceAddress(BDAddress(rawValue: 0xEE), type: .public)), from: p, now: .zero)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: p, now: .zero)
        XCTAssertEqual(events(medium.advance(to: .milliseconds(1270)), to: p), [])
        let ended = events(medium.advance(to: .milliseconds(1300)), to: p)
        guard case let .le(.connectionComplete(e))? = ended.first else { return XCTFail("no timeout: \(ended)") }
        XCTAssertEqual(e.status, HCIStatus(0x3C))
        XCTAssertEqual(medium.controller(p)?.isAdvertising, false)
    }

    /// Commands the spec refuses: a disconnect reason outside §7.1.6's list, a random address
    /// while initiating (§7.8.4), scanning from a random address never set (§7.8.11), and no
    /// PHY at all (§7.8.48/§7.8.49; LE Coded on a controller without it is
    /// `VirtualMediumExtendedAdvertisingTests.testSetPHYToLECodedNeedsAControllerWithIt`).
    func testRefusedCommands() {
        guard let (ch, _, _) = connect(to: p, peerAddress: pAddr) else { return XCTFail("no link") }
        XCTAssertEqual(events(medium.receive(.disconnect(handle: ch, reason: .connectionTimeout), from: c, now: .zero), to: c),
                       [.commandStatus(status: .invalidHCICommandParameters, numHCICommandPackets: 1, opcode: .disconnect)])
        XCTAssertEqual(events(medium.receive(.leSetPHY(handle: ch, tx: [], rx: .leCoded), from: c, now: .zero), to: c),
                       [.commandStatus(status: .unsupportedFeatureOrParameterValue, numHCICommandPackets: 1, opcode: .leSetPHY)])
        XCTAssertEqual(events(medium.receive(.leSetDefaultPHY(tx: [], rx: nil), from: c, now: .zero), to: c),
                       [.commandComplete(numHCICommandPackets: 1, opcode: .leSetDefaultPHY, returnParameters: [0x11])])
        _ = medium.receive(.leSetScanParameters(type: .active, interval: 16, window: 16, ownAddressType: .random), from: c, now: .zero)
        XCTAssertEqual(events(medium.receive(.leSetScanEnable(enable: true, filterDuplicates: false), from: c, now: .zero), to: c),
                       [.commandComplete(numHCICommandPackets: 1, opcode: .leSetScanEnable, returnParameters: [0x12])])
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(BDAddress(rawValue: 0x99), type: .public),
                                               connectionIntervalMin: 24, connectionIntervalMax: 24, maxLatency: 0, supervisionTimeout: 400), from: c, now: .zero)
        XCTAssertEqual(events(medium.receive(.leSetRandomAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01)), from: c, now: .zero), to: c),
                       [.commandComplete(numHCICommandPackets: 1, opcode: .leSetRandomAddress, returnParameters: [0x0C])])
    }
}

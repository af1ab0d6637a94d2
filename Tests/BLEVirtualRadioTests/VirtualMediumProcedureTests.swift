import BLEHCI
import BLEVirtualRadio
import BLEWire
import XCTest

/// The medium's link procedures, air time, propagation and faults, in plain values: each test
/// drives two or three controllers with HCI commands and the time, and checks what each host gets.
final class VirtualMediumProcedureTests: XCTestCase {
    var medium = VirtualMedium()
    var a = VirtualMedium.ControllerID(rawValue: 0) // the peripheral
    var b = VirtualMedium.ControllerID(rawValue: 0) // the central
    let aAddress = DeviceAddress(BDAddress(rawValue: 0x00_00_00_00_00_AA), type: .public)
    let bAddress = DeviceAddress(BDAddress(rawValue: 0x00_00_00_00_00_BB), type: .public)

    override func setUp() {
        medium = VirtualMedium()
        var config = VirtualControllerConfiguration()
        config.leACLBufferLength = 251
        a = medium.add(VirtualController(address: aAddress.address, configuration: config))
        b = medium.add(VirtualController(address: bAddress.address, configuration: config))
        for id in [a, b] { initialise(id) }
    }

    func initialise(_ id: VirtualMedium.ControllerID) {
        _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
        _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
    }

    func events(_ d: [VirtualMedium.Delivery], to id: VirtualMedium.ControllerID) -> [HCIEvent] {
        d.compactMap { x in
            guard x.to == id, case let .event(e) = x.packet else { return nil }
            return e
        }
    }

    func acl(_ d: [VirtualMedium.Delivery], to id: VirtualMedium.ControllerID) -> [ACLPacket] {
        d.compactMap { x in
            guard x.to == id, case let .acl(p) = x.packet else { return nil }
            return p
        }
    }

    func advertise(_ id: VirtualMedium.ControllerID, type: AdvertisingType = .connectableUndirected, peer: DeviceAddress? = nil,
                   filter: AdvertisingFilterPolicy = .acceptAll, now: Duration = .zero) {
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160, type: type, peer: peer, filterPolicy: filter), from: id, now: now)
        _ = medium.receive(.leSetAdvertisingData([2, 1, 6]), from: id, now: now)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: id, now: now)
    }

    /// Connects b (central) to a (peripheral) with a 7.5 ms interval; returns (central, peripheral) handles.
    func connect(interval: UInt16 = 6, timeout: UInt16 = 100) -> (c: UInt16, p: UInt16) {
        advertise(a)
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: aAddress, connectionIntervalMin: interval,
                                               connectionIntervalMax: interval, maxLatency: 0, supervisionTimeout: timeout), from: b, now: .zero)
        let d = medium.advance(to: .zero)
        guard case let .le(.connectionComplete(c))? = events(d, to: b).first,
              case let .le(.connectionComplete(p))? = events(d, to: a).first else {
            XCTFail("no connection: \(d)")
            return (0, 0)
        }
        return (c.handle, p.handle)
    }

    // MARK: Air time

    func testAirTimeFormulaGivesAbout1Point3MbitForLE2MWith251OctetsAt7Point5Ms() {
        // 2+4+2+251+3 octets at 4 µs = 1048 µs, + 150 + 44 (empty PDU) + 150 = 1392 µs per exchange.
        XCTAssertEqual(AirTime.exchange(payload: 251, phy: .le2M), .microseconds(1392))
        XCTAssertEqual(AirTime.packetsPerEvent(payload: 251, phy: .le2M, interval: .microseconds(7500)), 5)
        let bps = AirTime.notificationThroughput(payload: 251, phy: .le2M, interval: .microseconds(7500))
        XCTAssertEqual(bps, 5 * 244 * 8 / 0.0075, accuracy: 1)
        XCTAssertEqual(bps / 1e6, 1.30, accuracy: 0.01)
        // LE 1M, 27 octets: (1+4+2+27+3)·8 = 296 µs + 150 + 80 + 150 = 676 µs: 11 per 7.5 ms.
        XCTAssertEqual(AirTime.packetsPerEvent(payload: 27, phy: .le1M, interval: .microseconds(7500)), 11)
        XCTAssertEqual(AirTime.packetsPerEvent(payload: 251, phy: .le2M, interval: .microseconds(7500), maximumPerEvent: 3), 3)
    }

    func testDataWaitsForConnectionEventsAndCreditsReturnWhenSent() throws {
        let h = connect()
        // Ten 251-octet packets from the peripheral on LE 1M with 27-octet PDUs: each takes 10 PDUs.
        let packet = ACLPacket(handle: h.p, boundary: .firstNonFlushable, data: [UInt8](repeating: 7, count: 251))
        var sent: [VirtualMedium.Delivery] = []
        for _ in 0..<10 { sent += medium.receive(packet.h4Frame, from: a, now: .zero) }
        XCTAssertEqual(acl(sent, to: b), [], "nothing crosses before a connection event")
        XCTAssertEqual(events(sent, to: a), [], "no credit before the packet is sent")
        // LE 1M, 27-octet PDUs: 676 µs per exchange, 11 fit in the 7.5 ms event: one whole packet
        // (10 PDUs) and the first PDU of the next; its buffer comes back as soon as it is sent.
        let first = medium.advance(to: .microseconds(7499))
        XCTAssertEqual(acl(first, to: b).count, 1)
        XCTAssertEqual(events(first, to: a), [.numberOfCompletedPackets([CompletedPackets(handle: h.p, count: 1)])])
        XCTAssertEqual(medium.nextDeadline, .microseconds(7500), "the next event waits for the next anchor")
        // Raise the data length and switch to LE 2M: 1392 µs exchanges, five per event.
        _ = medium.receive(.leSetDataLength(handle: h.p, txOctets: 251, txTime: 2120), from: a, now: .microseconds(7499))
        let phy = medium.receive(.leSetPHY(handle: h.c, tx: .le2M, rx: .le2M), from: b, now: .microseconds(7499))
        XCTAssertEqual(events(phy, to: a), [.le(.phyUpdateComplete(status: .success, handle: h.p, txPHY: .le2M, rxPHY: .le2M))])
        let second = medium.advance(to: .microseconds(14_999))
        XCTAssertEqual(acl(second, to: b).count, 5)
        XCTAssertEqual(acl(medium.advance(to: .microseconds(22_499)), to: b).count, 4, "the last four")
        XCTAssertNil(medium.nextDeadline, "no events scheduled once the queues are empty")
    }

    func testPerEventLimitCapsPackets() {
        var config = VirtualControllerConfiguration()
        config.leACLBufferLength = 251
        config.maximumPDUsPerConnectionEvent = 2
        medium = VirtualMedium()
        a = medium.add(VirtualController(address: aAddress.address, configuration: config))
        b = medium.add(VirtualController(address: bAddress.address))
        for id in [a, b] { initialise(id) }
        let h = connect()
        let packet = ACLPacket(handle: h.p, boundary: .firstNonFlushable, data: [1, 2, 3])
        for _ in 0..<5 { _ = medium.receive(packet.h4Frame, from: a, now: .zero) }
        XCTAssertEqual(acl(medium.advance(to: .microseconds(7499)), to: b).count, 2, "two exchanges, then the event closes")
        XCTAssertEqual(medium.nextDeadline, .microseconds(7500))
    }

    // MARK: Procedures

    func testDataLengthChangeReachesBothHostsOnlyWhenSomethingChanges() {
        let h = connect()
        let d = medium.receive(.leSetDataLength(handle: h.c, txOctets: 200, txTime: 1712), from: b, now: .zero)
        XCTAssertEqual(events(d, to: b).first, .commandComplete(numHCICommandPackets: 1, opcode: .leSetDataLength, returnParameters: [0, UInt8(h.c & 0xFF), UInt8(h.c >> 8)]))
        guard case let .le(.dataLengthChange(_, tx, _, rx, _))? = events(d, to: b).last,
              case let .le(.dataLengthChange(_, ptx, _, prx, _))? = events(d, to: a).last else {
            return XCTFail("no Data Length Change: \(d)")
        }
        XCTAssertEqual([tx, rx], [200, 27])
        XCTAssertEqual([ptx, prx], [27, 200])
        let again = medium.receive(.leSetDataLength(handle: h.c, txOctets: 200, txTime: 1712), from: b, now: .zero)
        XCTAssertEqual(events(again, to: a), [], "no change, no event")
        let bad = medium.receive(.leSetDataLength(handle: h.c, txOctets: 300, txTime: 1712), from: b, now: .zero)
        XCTAssertEqual(events(bad, to: b), [.commandComplete(numHCICommandPackets: 1, opcode: .leSetDataLength, returnParameters: [0x12, UInt8(h.c & 0xFF), UInt8(h.c >> 8)])],
                       "a failed command still returns its Connection_Handle")
    }

    func testPHYStaysLE1MWhenThePeerAcceptsOnlyLE1M() {
        let h = connect()
        _ = medium.receive(.leSetDefaultPHY(tx: .le1M, rx: .le1M), from: a, now: .zero)
        let d = medium.receive(.leSetPHY(handle: h.c, tx: .le2M, rx: .le2M), from: b, now: .zero)
        XCTAssertEqual(events(d, to: b).last, .le(.phyUpdateComplete(status: .success, handle: h.c, txPHY: .le1M, rxPHY: .le1M)))
        XCTAssertEqual(events(d, to: a), [], "unchanged: the peer's host is not told")
        let read = medium.receive(.leReadPHY(handle: h.p), from: a, now: .zero)
        XCTAssertEqual(events(read, to: a), [.commandComplete(numHCICommandPackets: 1, opcode: .leReadPHY, returnParameters: [0, UInt8(h.p & 0xFF), UInt8(h.p >> 8), 1, 1])])
    }

    func testPeripheralParameterRequestGoesToTheCentralsHost() {
        let h = connect()
        let ask = medium.receive(.leConnectionUpdate(handle: h.p, intervalMin: 12, intervalMax: 24, maxLatency: 0, supervisionTimeout: 200), from: a, now: .zero)
        XCTAssertEqual(events(ask, to: b), [.le(.remoteConnectionParameterRequest(handle: h.c, intervalMin: 12, intervalMax: 24, maxLatency: 0, timeout: 200))])
        let reply = medium.receive(.leRemoteConnectionParameterRequestReply(handle: h.c, intervalMin: 12, intervalMax: 24, maxLatency: 0, supervisionTimeout: 200), from: b, now: .zero)
        XCTAssertEqual(events(reply, to: a), [.le(.connectionUpdateComplete(status: .success, handle: h.p, interval: 12, latency: 0, supervisionTimeout: 200))])
        // Refused this time: the peripheral's host learns the reason.
        _ = medium.receive(.leConnectionUpdate(handle: h.p, intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 200), from: a, now: .zero)
        let no = medium.receive(.leRemoteConnectionParameterRequestNegativeReply(handle: h.c, reason: .unacceptableConnectionParameters), from: b, now: .zero)
        XCTAssertEqual(events(no, to: a), [.le(.connectionUpdateComplete(status: .unacceptableConnectionParameters, handle: h.p, interval: 6, latency: 0, supervisionTimeout: 200))])
        XCTAssertEqual(medium.controller(a)?.connections[h.p]?.interval, 12)
    }

    // MARK: Encryption

    func testLEEncryptMatchesFIPS197InHCIByteOrder() throws {
        // FIPS-197 C.1: key 000102...0f, plaintext 00112233...ff → 69c4e0d8 6a7b0430 d8cdb780 70b4c55a.
        let key = (0..<16).map { UInt8($0) }
        let plaintext: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]
        let d = medium.receive(.leEncrypt(key: key.reversed(), plaintext: plaintext.reversed()), from: a, now: .zero)
        let expected: [UInt8] = [0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a]
        XCTAssertEqual(events(d, to: a), [.commandComplete(numHCICommandPackets: 1, opcode: .leEncrypt, returnParameters: [0] + expected.reversed())])
        let r1 = events(medium.receive(.leRand, from: a, now: .zero), to: a)
        let r2 = events(medium.receive(.leRand, from: a, now: .zero), to: a)
        XCTAssertNotEqual(r1, r2, "each LE Rand gives new bytes")
    }

    func testEncryptionStartsWhenBothSidesHaveTheSameKey() {
        let h = connect()
        let key = [UInt8](repeating: 0x42, count: 16)
        let start = medium.receive(.leEnableEncryption(handle: h.c, randomNumber: 7, encryptedDiversifier: 9, longTermKey: key), from: b, now: .zero)
        XCTAssertEqual(events(start, to: b), [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leEnableEncryption)])
        XCTAssertEqual(events(start, to: a), [.le(.longTermKeyRequest(handle: h.p, randomNumber: 7, encryptedDiversifier: 9))])
        let reply = medium.receive(.leLongTermKeyRequestReply(handle: h.p, longTermKey: key), from: a, now: .zero)
        XCTAssertEqual(events(reply, to: a), [
            .commandComplete(numHCICommandPackets: 1, opcode: .leLongTermKeyRequestReply, returnParameters: [0, UInt8(h.p & 0xFF), UInt8(h.p >> 8)]),
            .encryptionChange(status: .success, handle: h.p, enabled: true),
        ])
        XCTAssertEqual(events(reply, to: b), [.encryptionChange(status: .success, handle: h.c, enabled: true)])
        // Again: a key refresh.
        _ = medium.receive(.leEnableEncryption(handle: h.c, randomNumber: 7, encryptedDiversifier: 9, longTermKey: key), from: b, now: .zero)
        let refresh = medium.receive(.leLongTermKeyRequestReply(handle: h.p, longTermKey: key), from: a, now: .zero)
        XCTAssertEqual(events(refresh, to: b), [.encryptionKeyRefreshComplete(status: .success, handle: h.c)])
        // Only the central starts encryption.
        let wrongRole = medium.receive(.leEnableEncryption(handle: h.p, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key), from: a, now: .zero)
        XCTAssertEqual(events(wrongRole, to: a), [.commandStatus(status: .commandDisallowed, numHCICommandPackets: 1, opcode: .leEnableEncryption)])
    }

    func testMissingOrDifferentKeys() {
        let h = connect()
        let key = [UInt8](repeating: 1, count: 16)
        _ = medium.receive(.leEnableEncryption(handle: h.c, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key), from: b, now: .zero)
        let no = medium.receive(.leLongTermKeyRequestNegativeReply(handle: h.p), from: a, now: .zero)
        XCTAssertEqual(events(no, to: b), [.encryptionChange(status: .pinOrKeyMissing, handle: h.c, enabled: false)])
        _ = medium.receive(.leEnableEncryption(handle: h.c, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key), from: b, now: .zero)
        let wrong = medium.receive(.leLongTermKeyRequestReply(handle: h.p, longTermKey: [UInt8](repeating: 2, count: 16)), from: a, now: .zero)
        XCTAssertEqual(events(wrong, to: b), [.disconnectionComplete(status: .success, handle: h.c, reason: HCIStatus(0x3D))])
        XCTAssertTrue(events(wrong, to: a).contains(.disconnectionComplete(status: .success, handle: h.p, reason: HCIStatus(0x3D))))
        let late = medium.receive(.leLongTermKeyRequestReply(handle: h.p, longTermKey: key), from: a, now: .zero)
        XCTAssertEqual(events(late, to: a), [.commandComplete(numHCICommandPackets: 1, opcode: .leLongTermKeyRequestReply, returnParameters: [0x02, UInt8(h.p & 0xFF), UInt8(h.p >> 8)])])
    }

    // MARK: Who hears whom

    func testRSSIFallsWithDistanceAndNothingIsHeardOutOfRange() {
        XCTAssertEqual(medium.rssi(from: a, to: b), -40)
        medium.move(a, to: VirtualMedium.Position(x: 10, y: 0), now: .zero)
        XCTAssertEqual(medium.rssi(from: a, to: b), -60)
        medium.setTxPower(a, 8, now: .zero)
        XCTAssertEqual(medium.rssi(from: a, to: b), -52)
        XCTAssertEqual(medium.rssi(from: b, to: a), -60)
        medium.move(a, to: VirtualMedium.Position(x: 10_000, y: 0), now: .zero)
        XCTAssertNil(medium.rssi(from: a, to: b))
        advertise(a)
        _ = medium.receive(.leSetScanEnable(enable: true, filterDuplicates: false), from: b, now: .zero)
        XCTAssertEqual(events(medium.advance(to: .seconds(1)), to: b), [])
    }

    func testOutOfRangeLinkTimesOutUnlessItComesBack() {
        let h = connect(timeout: 100) // 1 s
        medium.move(a, to: VirtualMedium.Position(x: 10_000, y: 0), now: .zero)
        XCTAssertEqual(medium.nextDeadline, .seconds(1))
        medium.move(a, to: .origin, now: .milliseconds(500))
        XCTAssertNil(medium.nextDeadline, "back in range in time: the link lives")
        medium.move(a, to: VirtualMedium.Position(x: 10_000, y: 0), now: .seconds(2))
        XCTAssertEqual(events(medium.advance(to: .milliseconds(2999)), to: b), [])
        let lost = medium.advance(to: .seconds(3))
        XCTAssertEqual(events(lost, to: b), [.disconnectionComplete(status: .success, handle: h.c, reason: .connectionTimeout)])
        XCTAssertEqual(events(lost, to: a), [.disconnectionComplete(status: .success, handle: h.p, reason: .connectionTimeout)])
    }

    func testPowerOffSilencesTheControllerAndPowerOnResetsIt() {
        let h = connect(timeout: 100)
        _ = medium.setPower(a, on: false, now: .zero)
        XCTAssertEqual(medium.receive(.leRand, from: a, now: .zero), [], "an unpowered controller answers nothing")
        let lost = medium.advance(to: .seconds(1))
        XCTAssertEqual(events(lost, to: b), [.disconnectionComplete(status: .success, handle: h.c, reason: .connectionTimeout)])
        XCTAssertEqual(events(lost, to: a), [])
        _ = medium.setPower(a, on: true, now: .seconds(2))
        XCTAssertEqual(medium.controller(a)?.connections.isEmpty, true)
        XCTAssertEqual(events(medium.receive(.reset, from: a, now: .seconds(2)), to: a).count, 1)
    }

    func testControllerFaultResetTellsItsHostAndThePeerTimesOut() {
        let h = connect(timeout: 100)
        let d = medium.resetController(a, now: .zero)
        XCTAssertEqual(events(d, to: a), [.hardwareError(code: 0)])
        XCTAssertEqual(events(medium.advance(to: .seconds(1)), to: b), [.disconnectionComplete(status: .success, handle: h.c, reason: .connectionTimeout)])
    }

    func testDroppedLinkCarriesNoMoreDataAndTimesOut() {
        let h = connect(timeout: 100)
        XCTAssertTrue(medium.dropLink(b, handle: h.c, now: .zero))
        let packet = ACLPacket(handle: h.c, boundary: .firstNonFlushable, data: [1])
        _ = medium.receive(packet.h4Frame, from: b, now: .zero)
        let d = medium.advance(to: .seconds(1))
        XCTAssertEqual(acl(d, to: a), [])
        XCTAssertEqual(events(d, to: a), [.disconnectionComplete(status: .success, handle: h.p, reason: .connectionTimeout)])
        XCTAssertFalse(medium.dropLink(b, handle: h.c, now: .seconds(1)))
    }

    // MARK: Filters and directed advertising

    func testFilterAcceptListGatesScanningAndInitiating() {
        let third = medium.add(VirtualController(address: BDAddress(rawValue: 0xCC)))
        initialise(third)
        advertise(a)
        advertise(third)
        _ = medium.receive(.leAddDeviceToFilterAcceptList(aAddress), from: b, now: .zero)
        XCTAssertEqual(events(medium.receive(.leReadFilterAcceptListSize, from: b, now: .zero), to: b),
                       [.commandComplete(numHCICommandPackets: 1, opcode: .leReadFilterAcceptListSize, returnParameters: [0, 16])])
        _ = medium.receive(.leSetScanParameters(type: .passive, interval: 16, window: 16, filterPolicy: .filterAcceptListOnly), from: b, now: .zero)
        _ = medium.receive(.leSetScanEnable(enable: true, filterDuplicates: false), from: b, now: .zero)
        let heard = events(medium.advance(to: .zero), to: b)
        XCTAssertEqual(heard.count, 1, "only the listed advertiser: \(heard)")
        let busy = medium.receive(.leClearFilterAcceptList, from: b, now: .zero)
        XCTAssertEqual(events(busy, to: b), [.commandComplete(numHCICommandPackets: 1, opcode: .leClearFilterAcceptList, returnParameters: [0x0C])])
        _ = medium.receive(.leSetScanEnable(enable: false, filterDuplicates: false), from: b, now: .zero)
        // Initiator filter policy: connect to whichever listed device advertises.
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, filterPolicy: .useFilterAcceptList,
                                               peer: DeviceAddress(BDAddress(rawValue: 0), type: .public),
                                               connectionIntervalMin: 6, connectionIntervalMax: 6, maxLatency: 0, supervisionTimeout: 100), from: b, now: .zero)
        let d = medium.advance(to: .milliseconds(100))
        guard case let .le(.connectionComplete(c))? = events(d, to: b).first else { return XCTFail("no connection: \(d)") }
        XCTAssertEqual(c.peer, aAddress)
    }

    func testDirectedAdvertisingReachesOnlyItsTarget() {
        let third = medium.add(VirtualController(address: BDAddress(rawValue: 0xCC)))
        initialise(third)
        advertise(a, type: .connectableDirectedLowDuty, peer: bAddress)
        for id in [b, third] { _ = medium.receive(.leSetScanEnable(enable: true, filterDuplicates: false), from: id, now: .zero) }
        let d = medium.advance(to: .zero)
        XCTAssertEqual(events(d, to: b).count, 1)
        XCTAssertEqual(events(d, to: third), [])
        // Another initiator cannot connect to it.
        _ = medium.receive(.leSetScanEnable(enable: false, filterDuplicates: false), from: third, now: .zero)
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: aAddress, connectionIntervalMin: 6,
                                               connectionIntervalMax: 6, maxLatency: 0, supervisionTimeout: 100), from: third, now: .zero)
        XCTAssertEqual(events(medium.advance(to: .seconds(1)), to: third).filter { if case .le(.connectionComplete) = $0 { return true } else { return false } }, [])
    }
}

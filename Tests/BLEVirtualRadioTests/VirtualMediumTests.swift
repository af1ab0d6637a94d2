import BLEHCI
import BLEVirtualRadio
import BLEWire
import XCTest

/// The medium in plain values: advertising reaches scanners each interval, a connection forms at
/// the target's advertising event, ACL data crosses re-fragmented with credits returned, and a
/// disconnect reaches both ends with the right reasons.
final class VirtualMediumTests: XCTestCase {
    var medium = VirtualMedium()
    var peripheral = VirtualMedium.ControllerID(rawValue: 0)
    var central = VirtualMedium.ControllerID(rawValue: 0)
    let peripheralAddress = BDAddress(rawValue: 0x00_00_00_00_00_AA)
    let centralAddress = BDAddress(rawValue: 0x00_00_00_00_00_BB)

    override func setUp() {
        medium = VirtualMedium()
        // These tests look at single steps: data crosses at once (the air-time model has its own tests).
        medium.airTimeModel = false
        peripheral = medium.add(VirtualController(address: peripheralAddress))
        var config = VirtualControllerConfiguration()
        config.leACLBufferLength = 10
        central = medium.add(VirtualController(address: centralAddress, configuration: config))
        for id in [peripheral, central] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
    }

    func events(_ deliveries: [VirtualMedium.Delivery], to id: VirtualMedium.ControllerID) -> [HCIEvent] {
        deliveries.compactMap { d in
            guard d.to == id, case let .event(e) = d.packet else { return nil }
            return e
        }
    }

    func startAdvertising() {
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), from: peripheral, now: .zero)
        _ = medium.receive(.leSetAdvertisingData([4, 9, 0x41, 0x42, 0x43]), from: peripheral, now: .zero)
        _ = medium.receive(.leSetScanResponseData([2, 0x0A, 4]), from: peripheral, now: .zero)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: peripheral, now: .zero)
    }

    func testActiveScannerGetsAdvertisingAndScanResponseEachInterval() {
        startAdvertising()
        XCTAssertEqual(medium.nextDeadline, .zero)
        _ = medium.receive(.leSetScanParameters(type: .active, interval: 16, window: 16), from: central, now: .zero)
        _ = medium.receive(.leSetScanEnable(enable: true), from: central, now: .zero)
        let first = events(medium.advance(to: .zero), to: central)
        let advertiser = DeviceAddress(peripheralAddress, type: .public)
        XCTAssertEqual(first, [
            .le(.advertisingReport([LEAdvertisingReport(legacy: .advInd, address: advertiser, data: [4, 9, 0x41, 0x42, 0x43], rssi: -40)])),
            .le(.advertisingReport([LEAdvertisingReport(legacy: .scanRsp, address: advertiser, data: [2, 0x0A, 4], rssi: -40)])),
        ])
        XCTAssertEqual(medium.nextDeadline, .milliseconds(100))
        XCTAssertEqual(medium.advance(to: .milliseconds(99)), [])
        XCTAssertEqual(events(medium.advance(to: .milliseconds(100)), to: central).count, 2)
        XCTAssertEqual(events(medium.advance(to: .milliseconds(100)), to: peripheral), [], "an advertiser does not hear itself")
    }

    func testDuplicateFilterReportsEachAdvertiserOnce() {
        startAdvertising()
        _ = medium.receive(.leSetScanEnable(enable: true, filterDuplicates: true), from: central, now: .zero)
        XCTAssertEqual(events(medium.advance(to: .zero), to: central).count, 1, "passive scan: no scan response")
        XCTAssertEqual(events(medium.advance(to: .milliseconds(300)), to: central).count, 0)
    }

    func connect() -> (central: UInt16, peripheral: UInt16) {
        startAdvertising()
        let create = HCICommand.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(peripheralAddress, type: .public),
                                                   connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400)
        let status = events(medium.receive(create, from: central, now: .zero), to: central)
        XCTAssertEqual(status, [.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection)])
        let d = medium.advance(to: .zero)
        guard case let .le(.connectionComplete(c))? = events(d, to: central).first,
              case let .le(.connectionComplete(p))? = events(d, to: peripheral).first else {
            XCTFail("no connection: \(d)")
            return (0, 0)
        }
        XCTAssertEqual(c.role, .central)
        XCTAssertEqual(p.role, .peripheral)
        XCTAssertEqual(c.peer, DeviceAddress(peripheralAddress, type: .public))
        XCTAssertEqual(p.peer, DeviceAddress(centralAddress, type: .public))
        XCTAssertEqual(c.interval, 24)
        XCTAssertEqual(p.interval, 24)
        XCTAssertEqual(medium.controller(peripheral)?.isAdvertising, false, "advertising stops on connection")
        XCTAssertNil(medium.nextDeadline)
        return (c.handle, p.handle)
    }

    func testConnectionACLAndDisconnect() throws {
        let handles = connect()
        // 23 bytes from the peripheral (27-byte buffers) reach the central (10-byte buffers) in three pieces.
        let data = Array(0..<23).map { UInt8($0) }
        let packet = ACLPacket(handle: handles.peripheral, boundary: .firstNonFlushable, data: data)
        let d = medium.receive(packet.h4Frame, from: peripheral, now: .zero)
        XCTAssertEqual(events(d, to: peripheral), [.numberOfCompletedPackets([CompletedPackets(handle: handles.peripheral, count: 1)])])
        let received = d.compactMap { d -> ACLPacket? in
            guard d.to == central, case let .acl(p) = d.packet else { return nil }
            return p
        }
        XCTAssertEqual(received.map(\.data.count), [10, 10, 3])
        XCTAssertEqual(received.map(\.boundary), [.firstFlushable, .continuing, .continuing])
        XCTAssertEqual(received.flatMap(\.data), data)
        XCTAssertTrue(received.allSatisfy { $0.handle == handles.central })

        let update = medium.receive(.leConnectionUpdate(handle: handles.central, intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 300),
                                    from: central, now: .zero)
        XCTAssertEqual(events(update, to: peripheral), [.le(.connectionUpdateComplete(status: .success, handle: handles.peripheral, interval: 6, latency: 0, supervisionTimeout: 300))])

        let bye = medium.receive(.disconnect(handle: handles.central), from: central, now: .zero)
        XCTAssertEqual(events(bye, to: central), [
            .commandStatus(status: .success, numHCICommandPackets: 1, opcode: .disconnect),
            .disconnectionComplete(status: .success, handle: handles.central, reason: .connectionTerminatedByLocalHost),
        ])
        XCTAssertEqual(events(bye, to: peripheral), [.disconnectionComplete(status: .success, handle: handles.peripheral, reason: .remoteUserTerminatedConnection)])
        let again = medium.receive(.disconnect(handle: handles.central), from: central, now: .zero)
        XCTAssertEqual(events(again, to: central), [.commandStatus(status: .unknownConnectionIdentifier, numHCICommandPackets: 1, opcode: .disconnect)])
    }

    func testResetDropsLinksAndThePeerTimesOut() {
        let handles = connect()
        let d = medium.receive(.reset, from: central, now: .zero)
        XCTAssertEqual(events(d, to: peripheral), [], "the peer hears nothing until its supervision timeout")
        let timeout = medium.nextDeadline
        XCTAssertNotNil(timeout)
        XCTAssertEqual(events(medium.advance(to: (timeout ?? .zero) - .milliseconds(1)), to: peripheral), [])
        let lost = medium.advance(to: timeout ?? .zero)
        XCTAssertEqual(events(lost, to: peripheral), [.disconnectionComplete(status: .success, handle: handles.peripheral, reason: .connectionTimeout)])
        XCTAssertEqual(events(lost, to: central), [], "the reset controller has no link left to report")
    }
}

import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import XCTest

/// Each `VirtualControllerQuirk` at the controller, in HCI terms: what a host of a controller
/// with that quirk receives (the host side is in BLETests' ControllerQuirkWorldTests).
final class VirtualControllerQuirkTests: XCTestCase {
    let address = BDAddress(rawValue: 0x00_1B_DC_0A_0B_0C)

    func controller(_ quirks: Set<VirtualControllerQuirk>, base: VirtualControllerConfiguration = VirtualControllerConfiguration()) -> VirtualController {
        var configuration = base
        configuration.quirks = quirks
        return VirtualController(address: address, configuration: configuration)
    }

    func events(_ out: ControllerOutput) -> [HCIEvent] {
        out.toHost.compactMap { if case let .event(e) = $0 { return e } else { return nil } }
    }

    /// Both ends of a link between controllers with these quirks, on a medium without the
    /// air-time model, event masks set.
    func connectedMedium(central: Set<VirtualControllerQuirk>, peripheral: Set<VirtualControllerQuirk>)
        throws -> (VirtualMedium, VirtualMedium.ControllerID, UInt16, VirtualMedium.ControllerID, UInt16) {
        var medium = VirtualMedium()
        medium.airTimeModel = false
        let peripheralAddress = BDAddress(rawValue: 0xAA)
        let p = medium.add(controller(peripheral).withAddress(peripheralAddress))
        let c = medium.add(controller(central).withAddress(BDAddress(rawValue: 0xBB)))
        for id in [p, c] {
            _ = medium.receive(.setEventMask(EventMask.default), from: id, now: .zero)
            _ = medium.receive(.leSetEventMask(LEEventMask.default), from: id, now: .zero)
        }
        _ = medium.receive(.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160), from: p, now: .zero)
        _ = medium.receive(.leSetAdvertisingEnable(enable: true), from: p, now: .zero)
        _ = medium.receive(.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: DeviceAddress(peripheralAddress, type: .public),
                                               connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400),
                           from: c, now: .zero)
        var handles: (UInt16?, UInt16?)
        for d in medium.advance(to: .zero) {
            guard case let .event(.le(.connectionComplete(e))) = d.packet else { continue }
            if d.to == c { handles.0 = e.handle } else { handles.1 = e.handle }
        }
        return (medium, c, try XCTUnwrap(handles.0), p, try XCTUnwrap(handles.1))
    }

    func testSharedACLBuffersAreReportedByReadBufferSizeOnly() throws {
        var c = controller([.sharedACLBuffers])
        _ = c.handle(.reset)
        guard case let .commandComplete(_, _, v1) = events(c.handle(.leReadBufferSizeV1)).first,
              case let .commandComplete(_, _, v2) = events(c.handle(.leReadBufferSizeV2)).first,
              case let .commandComplete(_, _, shared) = events(c.handle(.readBufferSize)).first else { return XCTFail() }
        let le1 = try LEBufferSizeV1(returnParameters: v1)
        let le2 = try LEBufferSizeV2(returnParameters: v2)
        XCTAssertEqual([le1.aclDataPacketLength, UInt16(le1.totalNumACLDataPackets), le2.aclDataPacketLength, UInt16(le2.totalNumACLDataPackets)], [0, 0, 0, 0])
        let buffers = try BufferSize(returnParameters: shared)
        XCTAssertEqual(buffers.aclDataPacketLength, 27)
        XCTAssertEqual(buffers.totalNumACLDataPackets, 8)
    }

    func testCompletedPacketsFollowEachDisconnectionComplete() throws {
        var (medium, c, ch, p, ph) = try connectedMedium(central: [.completedPacketsAfterDisconnection(count: 1)],
                                                         peripheral: [.completedPacketsAfterDisconnection(count: 9)])
        let out = medium.receive(.disconnect(handle: ch, reason: .remoteUserTerminatedConnection), from: c, now: .zero)
        let toCentral = out.filter { $0.to == c }.map(\.packet)
        let toPeripheral = out.filter { $0.to == p }.map(\.packet)
        XCTAssertEqual(toCentral.dropFirst(), [.event(.disconnectionComplete(status: .success, handle: ch, reason: .connectionTerminatedByLocalHost)),
                                               .event(.numberOfCompletedPackets([CompletedPackets(handle: ch, count: 1)]))])
        XCTAssertEqual(toPeripheral, [.event(.disconnectionComplete(status: .success, handle: ph, reason: .remoteUserTerminatedConnection)),
                                      .event(.numberOfCompletedPackets([CompletedPackets(handle: ph, count: 9)]))])
    }

    func testASpontaneousResetCompletionReplacesOneCommand() {
        var c = controller([.spontaneousResetComplete(replacing: .readLocalVersionInformation)])
        // Before the host's Reset the command is answered as usual.
        XCTAssertEqual(events(c.handle(.readLocalVersionInformation)).first?.commandOpcode, .readLocalVersionInformation)
        XCTAssertEqual(events(c.handle(.reset)), [.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0])])
        XCTAssertEqual(events(c.handle(.readLocalVersionInformation)),
                       [.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0])], "Reset again, the read dropped")
        XCTAssertEqual(events(c.handle(.readLocalVersionInformation)).first?.commandOpcode, .readLocalVersionInformation, "once")
    }

    func testTheFirstCommandAfterPowerOnIsLost() {
        var medium = VirtualMedium()
        let id = medium.add(controller([.losesFirstCommand]))
        XCTAssertEqual(medium.receive(.reset, from: id, now: .zero), [])
        XCTAssertEqual(medium.receive(.reset, from: id, now: .zero).map(\.packet),
                       [.event(.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0]))])
        XCTAssertEqual(medium.receive(.readBDADDR, from: id, now: .zero).count, 1)
        // Power off and on: the first command is lost again.
        _ = medium.setPower(id, on: false, now: .zero)
        _ = medium.setPower(id, on: true, now: .zero)
        XCTAssertEqual(medium.receive(.reset, from: id, now: .zero), [])
        XCTAssertEqual(medium.receive(.reset, from: id, now: .zero).count, 1)
    }

    func testResetIsFollowedByACreditOnlyCommandComplete() throws {
        var c = controller([.creditOnlyCommandComplete])
        let out = c.handle(.reset)
        XCTAssertEqual(out.toHost.count, 2)
        // 0E 03 01 00 00: Command Complete, one credit, opcode 0x0000, no return parameters.
        XCTAssertEqual(out.toHost.last?.h4Frame.payload, [0x0E, 0x03, 0x01, 0x00, 0x00])
        XCTAssertEqual(try HCIEvent.decode([0x0E, 0x03, 0x01, 0x00, 0x00]),
                       .commandComplete(numHCICommandPackets: 1, opcode: .noOperation, returnParameters: []))
    }

    func testEveryCommandCompleteComesTwice() {
        var c = controller([.duplicateCommandComplete])
        let e = events(c.handle(.readBDADDR))
        XCTAssertEqual(e.count, 2)
        XCTAssertEqual(e.first, e.last)
        // Command Status is not doubled.
        XCTAssertEqual(events(c.handle(.disconnect(handle: 0x40, reason: .remoteUserTerminatedConnection))).count, 1)
    }

    func testLackedCommandsAreAnsweredWithCommandStatus() {
        var c = controller([.unknownCommandAsCommandStatus], base: VirtualControllerProfile.bluetooth40.configuration)
        XCTAssertEqual(events(c.handle(.leSetDataLength(handle: 0x40, txOctets: 251, txTime: 2120))),
                       [.commandStatus(status: .unknownCommand, numHCICommandPackets: 1, opcode: .leSetDataLength)])
        XCTAssertEqual(events(c.handle(HCICommand(opcode: HCIOpcode(rawValue: 0xFC01)))),
                       [.commandStatus(status: .unknownCommand, numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0xFC01))])
        XCTAssertEqual(events(c.handle(.readBDADDR)).first?.commandOpcode, .readBDADDR, "known commands as before")
    }

    func testListedCommandsAnsweredUnknown() throws {
        let broken: Set<HCIOpcode> = [.leSetResolvablePrivateAddressTimeout, .leSetDataLength]
        var c = controller([.listedButUnknown(broken)])
        guard case let .commandComplete(_, _, params) = events(c.handle(.readLocalSupportedCommands)).first else { return XCTFail() }
        let commands = try LocalSupportedCommands(returnParameters: params)
        XCTAssertTrue(commands.leSetDataLength, "still listed")
        XCTAssertEqual(events(c.handle(.leSetDataLength(handle: 0x40, txOctets: 251, txTime: 2120))),
                       [.commandComplete(numHCICommandPackets: 1, opcode: .leSetDataLength, returnParameters: [0x01])])
    }

    func testAConnectionUpdateIsAcceptedButNeverCompletes() throws {
        var (medium, c, ch, _, _) = try connectedMedium(central: [.silentConnectionUpdate], peripheral: [])
        let out = medium.receive(.leConnectionUpdate(handle: ch, intervalMin: 12, intervalMax: 12, maxLatency: 0, supervisionTimeout: 200),
                                 from: c, now: .zero)
        XCTAssertEqual(out.map(\.packet), [.event(.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leConnectionUpdate))])
        let later = medium.advance(to: .seconds(60))
        XCTAssertFalse(later.contains { if case .event(.le(.connectionUpdateComplete)) = $0.packet { return true } else { return false } })
    }

    func testAdvertisingReportsWithoutRSSIAndMalformedOnes() throws {
        var c = controller([.advertisingReportsWithoutRSSI, .malformedAdvertisingReports])
        _ = c.handle(.setEventMask(EventMask.default))
        _ = c.handle(.leSetEventMask(LEEventMask.default))
        _ = c.handle(.leSetScanParameters(type: .passive, interval: 16, window: 16))
        _ = c.handle(.leSetScanEnable(enable: true))
        let advertiser = DeviceAddress(BDAddress(rawValue: 0xAA), type: .public)
        let packets = c.hear(VirtualAdvertisement(address: advertiser, type: .nonConnectableUndirected, data: [2, 1, 6],
                                                  interval: .milliseconds(100)), rssi: -40)
        XCTAssertEqual(packets.count, 2)
        guard case let .event(.le(.advertisingReport(reports))) = packets[0] else { return XCTFail() }
        XCTAssertEqual(reports.first?.rssi, LEAdvertisingReport.unavailable)
        let bad = packets[1].h4Frame.payload
        XCTAssertEqual(Array(bad.prefix(3)), [0x3E, UInt8(bad.count - 2), 0x02])
        XCTAssertThrowsError(try HCIEvent.decode(bad), "Data_Length runs past the event")
        XCTAssertFalse(HCIEvent.scanAdvertisingReports(bad) { _ in XCTFail("no report read from it") })
    }

    func testACLPacketFollowsTheDisconnectionComplete() throws {
        var (medium, c, ch, p, ph) = try connectedMedium(central: [], peripheral: [.aclAfterDisconnection])
        let out = medium.receive(.disconnect(handle: ch, reason: .remoteUserTerminatedConnection), from: c, now: .zero)
        let toPeripheral = out.filter { $0.to == p }.map(\.packet)
        XCTAssertEqual(toPeripheral.count, 2)
        XCTAssertEqual(toPeripheral.first, .event(.disconnectionComplete(status: .success, handle: ph, reason: .remoteUserTerminatedConnection)))
        guard case let .acl(packet) = toPeripheral.last else { return XCTFail() }
        XCTAssertEqual(packet.handle, ph)
        XCTAssertTrue(medium.controller(p)?.connections.isEmpty ?? false)
    }
}

private extension VirtualController {
    func withAddress(_ address: BDAddress) -> VirtualController {
        VirtualController(address: address, configuration: configuration)
    }
}

private extension HCIEvent {
    var commandOpcode: HCIOpcode? {
        switch self {
        case let .commandComplete(_, opcode, _), let .commandStatus(_, _, opcode): return opcode
        default: return nil
        }
    }
}

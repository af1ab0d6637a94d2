import BLEHCI
import BLEVirtualRadio
import BLEWire
import XCTest

/// Codec-level checks of the virtual controller: every answer to the host's initialisation
/// sequence decodes with the host's own return-parameter types, and the status codes for
/// unknown and disallowed commands are the ones Core spec Vol 4 Part E §7 gives.
final class VirtualControllerTests: XCTestCase {
    let address = BDAddress(rawValue: 0x00_1B_DC_0A_0B_0C)

    /// Sends `command` and returns the single Command Complete's return parameters.
    func returnParameters(_ c: inout VirtualController, _ command: HCICommand, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let out = c.handle(command)
        guard out.toHost.count == 1, case let .event(.commandComplete(n, opcode, params)) = out.toHost[0] else {
            XCTFail("expected one Command Complete, got \(out.toHost)", file: file, line: line)
            return []
        }
        XCTAssertEqual(n, 1, file: file, line: line)
        XCTAssertEqual(opcode, command.opcode, file: file, line: line)
        // The bytes must survive the wire: encode, decode.
        XCTAssertEqual(try HCIEvent.decode(out.toHost[0].h4Frame.payload), .commandComplete(numHCICommandPackets: n, opcode: opcode, returnParameters: params), file: file, line: line)
        return params
    }

    func testAnswersTheInitialisationSequence() throws {
        var c = VirtualController(address: address)
        XCTAssertEqual(returnParameters(&c, .reset), [0x00])
        let version = try LocalVersionInformation(returnParameters: returnParameters(&c, .readLocalVersionInformation))
        XCTAssertEqual(version.hciVersion, 0x0D)
        XCTAssertEqual(version.companyIdentifier, 0xFFFF)
        let commands = try LocalSupportedCommands(returnParameters: returnParameters(&c, .readLocalSupportedCommands))
        XCTAssertTrue(commands.leReadBufferSizeV2)
        XCTAssertTrue(commands.reset && commands.disconnect && commands.leCreateConnection && commands.leConnectionUpdate)
        XCTAssertTrue(commands.leEncrypt && commands.leSetDataLength, "implemented, so claimed")
        _ = try LocalSupportedFeatures(returnParameters: returnParameters(&c, .readLocalSupportedFeatures))
        XCTAssertEqual(try BDAddressReturn(returnParameters: returnParameters(&c, .readBDADDR)).address, address)
        let v2 = try LEBufferSizeV2(returnParameters: returnParameters(&c, .leReadBufferSizeV2))
        XCTAssertEqual(v2.aclDataPacketLength, 27)
        XCTAssertEqual(v2.totalNumACLDataPackets, 8)
        let v1 = try LEBufferSizeV1(returnParameters: returnParameters(&c, .leReadBufferSizeV1))
        XCTAssertEqual(v1.aclDataPacketLength, 27)
        _ = try BufferSize(returnParameters: returnParameters(&c, .readBufferSize))
        XCTAssertEqual(returnParameters(&c, .setEventMask(EventMask.default)), [0x00])
        XCTAssertEqual(c.eventMask, EventMask.default.rawValue)
        XCTAssertEqual(returnParameters(&c, .leSetEventMask(LEEventMask.default)), [0x00])
        XCTAssertEqual(c.leEventMask, LEEventMask.default.rawValue)
        _ = try LESupportedFeatures(returnParameters: returnParameters(&c, .leReadLocalSupportedFeatures))
    }

    func testEachControllerHasItsOwnAddress() throws {
        var a = VirtualController(address: BDAddress(rawValue: 1))
        var b = VirtualController(address: BDAddress(rawValue: 2))
        XCTAssertEqual(try BDAddressReturn(returnParameters: returnParameters(&a, .readBDADDR)).address.rawValue, 1)
        XCTAssertEqual(try BDAddressReturn(returnParameters: returnParameters(&b, .readBDADDR)).address.rawValue, 2)
    }

    func testUnknownCommandIsAnsweredWithUnknownHCICommand() {
        var c = VirtualController(address: address)
        XCTAssertEqual(returnParameters(&c, HCICommand(opcode: HCIOpcode(ogf: 0x08, ocf: 0x7F))), [HCIStatus.unknownCommand.rawValue])
        XCTAssertEqual(returnParameters(&c, HCICommand(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x01))), [0x01])
    }

    func testShortParametersAreInvalid() {
        var c = VirtualController(address: address)
        XCTAssertEqual(returnParameters(&c, HCICommand(opcode: .setEventMask, parameters: [1, 2])), [HCIStatus.invalidHCICommandParameters.rawValue])
        let out = c.handle(HCICommand(opcode: .disconnect, parameters: [0x40]))
        XCTAssertEqual(out.toHost, [.event(.commandStatus(status: .invalidHCICommandParameters, numHCICommandPackets: 1, opcode: .disconnect))])
    }

    func testScanParametersWhileScanningAreDisallowed() {
        var c = VirtualController(address: address)
        let params = HCICommand.leSetScanParameters(type: .active, interval: 16, window: 16)
        XCTAssertEqual(returnParameters(&c, params), [0x00])
        XCTAssertEqual(returnParameters(&c, .leSetScanEnable(enable: true)), [0x00])
        XCTAssertEqual(returnParameters(&c, params), [HCIStatus.commandDisallowed.rawValue])
        XCTAssertEqual(returnParameters(&c, .leSetRandomAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01))), [0x0C])
        XCTAssertEqual(returnParameters(&c, .leSetScanEnable(enable: false)), [0x00])
        XCTAssertEqual(returnParameters(&c, params), [0x00])
    }

    func testAdvertisingParametersWhileAdvertisingAreDisallowedAndRandomNeedsAnAddress() {
        var c = VirtualController(address: address)
        let random = HCICommand.leSetAdvertisingParameters(intervalMin: 160, intervalMax: 160, ownAddressType: .random)
        XCTAssertEqual(returnParameters(&c, random), [0x00])
        XCTAssertEqual(returnParameters(&c, .leSetAdvertisingEnable(enable: true)), [HCIStatus.invalidHCICommandParameters.rawValue],
                       "own address random but no random address set")
        XCTAssertEqual(returnParameters(&c, .leSetRandomAddress(BDAddress(rawValue: 0xC1_00_00_00_00_02))), [0x00])
        XCTAssertEqual(returnParameters(&c, .leSetAdvertisingData([2, 1, 6])), [0x00])
        XCTAssertEqual(returnParameters(&c, .leSetAdvertisingEnable(enable: true)), [0x00])
        XCTAssertEqual(c.advertisement?.address, DeviceAddress(BDAddress(rawValue: 0xC1_00_00_00_00_02), type: .random))
        XCTAssertEqual(c.advertisement?.data, [2, 1, 6])
        XCTAssertEqual(c.advertisement?.interval, .milliseconds(100))
        XCTAssertEqual(returnParameters(&c, random), [HCIStatus.commandDisallowed.rawValue])
    }

    func testCreateConnectionCancelWithoutInitiatingIsDisallowed() {
        var c = VirtualController(address: address)
        XCTAssertEqual(returnParameters(&c, .leCreateConnectionCancel), [0x0C])
    }

    func testCancelEndsTheAttemptWithUnknownConnectionIdentifier() {
        var c = VirtualController(address: address)
        _ = c.handle(.setEventMask(EventMask.default))
        _ = c.handle(.leSetEventMask(LEEventMask.default))
        let peer = DeviceAddress(BDAddress(rawValue: 0xC1_00_00_00_00_09), type: .random)
        let create = HCICommand.leCreateConnection(scanInterval: 16, scanWindow: 16, peer: peer, connectionIntervalMin: 24,
                                                   connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400)
        let started = c.handle(create)
        XCTAssertEqual(started.toHost, [.event(.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection))])
        XCTAssertEqual(started.air, [.initiate])
        XCTAssertEqual(c.handle(create).toHost, [.event(.commandStatus(status: .commandDisallowed, numHCICommandPackets: 1, opcode: .leCreateConnection))])
        let cancelled = c.handle(.leCreateConnectionCancel)
        XCTAssertEqual(cancelled.toHost.count, 2)
        guard case let .event(.le(.connectionComplete(cc))) = cancelled.toHost[1] else { return XCTFail("\(cancelled.toHost)") }
        XCTAssertEqual(cc.status, .unknownConnectionIdentifier)
        XCTAssertEqual(cc.format, .enhanced, "the host unmasked LE Enhanced Connection Complete")
    }

    func testLEEventsAreMaskedUntilTheHostEnablesLEMeta() {
        var c = VirtualController(address: address)
        _ = c.handle(.leSetScanEnable(enable: true))
        let adv = VirtualAdvertisement(address: DeviceAddress(BDAddress(rawValue: 5), type: .public), type: .connectableUndirected,
                                       data: [2, 1, 6], scanResponse: [], interval: .milliseconds(100))
        XCTAssertEqual(c.hear(adv, rssi: -50), [], "LE Meta is off after reset (Set Event Mask default)")
        _ = c.handle(.setEventMask(EventMask.default))
        XCTAssertEqual(c.hear(adv, rssi: -50).count, 1)
    }
}

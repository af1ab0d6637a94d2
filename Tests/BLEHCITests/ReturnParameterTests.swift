import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

/// Return parameters of Command Complete, Core spec Vol 4 Part E §7.4 and §7.8.
final class ReturnParameterTests: XCTestCase {
    func testLocalVersionInformation() throws {
        let v = try LocalVersionInformation(returnParameters: hexBytes("00 0C 3412 0C 0200 7856"))
        XCTAssertEqual(v.hciVersion, 0x0C)
        XCTAssertEqual(v.hciSubversion, 0x1234)
        XCTAssertEqual(v.lmpVersion, 0x0C)
        XCTAssertEqual(v.companyIdentifier, 0x0002)
        XCTAssertEqual(v.lmpSubversion, 0x5678)
        XCTAssertEqual(v.coreVersionName, "5.3")
    }

    func testNonZeroStatusThrowsCommandFailed() {
        XCTAssertThrowsError(try LocalVersionInformation(returnParameters: hexBytes("01"))) { error in
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .readLocalVersionInformation, status: .unknownCommand))
        }
        XCTAssertThrowsError(try LEBufferSizeV2(returnParameters: hexBytes("01 000000000000"))) { error in
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .leReadBufferSizeV2, status: .unknownCommand))
        }
        XCTAssertThrowsError(try checkStatusReturnParameters(.reset, hexBytes("0C"))) { error in
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .reset, status: .commandDisallowed))
        }
        XCTAssertNoThrow(try checkStatusReturnParameters(.reset, hexBytes("00")))
    }

    func testTruncatedThrowsMalformed() {
        let samples: [([UInt8]) throws -> Any] = [
            { try LocalVersionInformation(returnParameters: $0) }, { try LocalSupportedCommands(returnParameters: $0) },
            { try LocalSupportedFeatures(returnParameters: $0) }, { try LESupportedFeatures(returnParameters: $0) },
            { try BufferSize(returnParameters: $0) }, { try LEBufferSizeV1(returnParameters: $0) },
            { try LEBufferSizeV2(returnParameters: $0) }, { try BDAddressReturn(returnParameters: $0) },
            { try LERandResult(returnParameters: $0) }, { try LEEncryptResult(returnParameters: $0) },
            { try LEMaximumDataLength(returnParameters: $0) }, { try LESuggestedDefaultDataLength(returnParameters: $0) },
            { try LEReadPHYResult(returnParameters: $0) }, { try LEAdvertisingTxPower(returnParameters: $0) },
            { try LEFilterAcceptListSize(returnParameters: $0) },
            { try ConnectionHandleReturn(opcode: .leSetDataLength, returnParameters: $0) },
        ]
        for decode in samples {
            XCTAssertThrowsError(try decode([])) { error in
                guard case .malformed = error as? HCIError else { return XCTFail("\(error)") }
            }
            XCTAssertThrowsError(try decode([0x00])) { error in
                guard case .malformed = error as? HCIError else { return XCTFail("\(error)") }
            }
        }
    }

    func testBufferSizes() throws {
        let shared = try BufferSize(returnParameters: hexBytes("00 FD03 40 0A00 0800"))
        XCTAssertEqual(shared, BufferSize(aclDataPacketLength: 1021, synchronousDataPacketLength: 64, totalNumACLDataPackets: 10, totalNumSynchronousDataPackets: 8))
        let v1 = try LEBufferSizeV1(returnParameters: hexBytes("00 1B00 0F"))
        XCTAssertEqual(v1.aclDataPacketLength, 27)
        XCTAssertEqual(v1.totalNumACLDataPackets, 15)
        XCTAssertFalse(v1.usesSharedBuffers)
        XCTAssertTrue(try LEBufferSizeV1(returnParameters: hexBytes("00 0000 00")).usesSharedBuffers)
        let v2 = try LEBufferSizeV2(returnParameters: hexBytes("00 FB00 0A 6400 04"))
        XCTAssertEqual(v2, LEBufferSizeV2(aclDataPacketLength: 251, totalNumACLDataPackets: 10, isoDataPacketLength: 100, totalNumISODataPackets: 4))
    }

    func testAddressRandAndEncrypt() throws {
        XCTAssertEqual(try BDAddressReturn(returnParameters: hexBytes("00 5544332211C0")).address.description, "C0:11:22:33:44:55")
        let rand = try LERandResult(returnParameters: hexBytes("00 0102030405060708"))
        XCTAssertEqual(rand.bytes, hexBytes("0102030405060708"))
        XCTAssertEqual(rand.value, 0x0807_0605_0403_0201)
        let enc = try LEEncryptResult(returnParameters: [0] + Array(UInt8(0x10)..<0x20))
        XCTAssertEqual(enc.encryptedData, Array(UInt8(0x10)..<0x20))
    }

    func testDataLengthAndPHY() throws {
        XCTAssertEqual(try LEMaximumDataLength(returnParameters: hexBytes("00 FB00 4808 FB00 4808")),
                       LEMaximumDataLength(supportedMaxTxOctets: 251, supportedMaxTxTime: 2120, supportedMaxRxOctets: 251, supportedMaxRxTime: 2120))
        XCTAssertEqual(try LESuggestedDefaultDataLength(returnParameters: hexBytes("00 1B00 4801")).suggestedMaxTxTime, 328)
        XCTAssertEqual(try LEReadPHYResult(returnParameters: hexBytes("00 4000 02 01")), LEReadPHYResult(handle: 0x40, txPHY: .le2M, rxPHY: .le1M))
        XCTAssertEqual(try LEAdvertisingTxPower(returnParameters: hexBytes("00 F6")).txPowerLevel, -10)
        XCTAssertEqual(try LEFilterAcceptListSize(returnParameters: hexBytes("00 08")).size, 8)
        XCTAssertEqual(try ConnectionHandleReturn(opcode: .leLongTermKeyRequestReply, returnParameters: hexBytes("00 4000")).handle, 0x40)
        XCTAssertThrowsError(try ConnectionHandleReturn(opcode: .leSetDataLength, returnParameters: hexBytes("01 4000"))) { error in
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .leSetDataLength, status: .unknownCommand))
        }
    }

    func testSupportedCommands() throws {
        var octets = [UInt8](repeating: 0, count: 64)
        octets[41] = 1 << 5
        octets[33] = 1 << 6
        octets[5] = 1 << 7
        let c = try LocalSupportedCommands(returnParameters: [0] + octets)
        XCTAssertTrue(c.leReadBufferSizeV2)
        XCTAssertTrue(c.leSetDataLength)
        XCTAssertTrue(c.reset)
        XCTAssertFalse(c.setEventMask)
        XCTAssertFalse(c.leSetPHY)
        XCTAssertTrue(c.supports(octet: 41, bit: 5))
        XCTAssertFalse(c.supports(octet: 64, bit: 0))
        XCTAssertFalse(c.supports(octet: -1, bit: 0))
        XCTAssertFalse(c.supports(octet: 0, bit: 8))
    }

    func testFeatureMasks() throws {
        let le = try LESupportedFeatures(returnParameters: hexBytes("00 2119000000000000"))
        XCTAssertTrue(le.contains(.leEncryption))
        XCTAssertTrue(le.contains(.leDataPacketLengthExtension))
        XCTAssertTrue(le.contains(.le2MPHY))
        XCTAssertTrue(le.contains(.leCodedPHY))
        XCTAssertTrue(le.contains(.leExtendedAdvertising))
        XCTAssertFalse(le.contains(.llPrivacy))
        XCTAssertEqual(LESupportedFeatures.llPrivacy.rawValue, 1 << 6)
        XCTAssertEqual(LESupportedFeatures.lePing.rawValue, 1 << 4)
        let lmp = try LocalSupportedFeatures(returnParameters: hexBytes("00 0000000060000000"))
        XCTAssertTrue(lmp.contains(.leSupportedController))
        XCTAssertTrue(lmp.contains(.brEdrNotSupported))
    }

    func testCommandResultHelpers() throws {
        let ok = CommandResult.complete(returnParameters: hexBytes("00 1B00 0F"))
        XCTAssertEqual(try ok.decode(LEBufferSizeV1.self).aclDataPacketLength, 27)
        XCTAssertEqual(ok.controllerStatus, .success)
        XCTAssertNoThrow(try ok.checkStatus(.leReadBufferSizeV1))
        let failed = CommandResult.complete(returnParameters: hexBytes("0C"))
        XCTAssertEqual(failed.controllerStatus, .commandDisallowed)
        XCTAssertThrowsError(try failed.checkStatus(.leSetScanEnable))
        XCTAssertThrowsError(try CommandResult.status.decode(LERandResult.self)) { error in
            XCTAssertEqual(error as? HCIError, .unexpectedReturnParameters(opcode: .leRand))
        }
        XCTAssertNoThrow(try CommandResult.status.checkStatus(.leCreateConnection))
    }
}

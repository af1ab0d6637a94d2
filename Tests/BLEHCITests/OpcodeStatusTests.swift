import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

final class OpcodeStatusTests: XCTestCase {
    func testOGFAndOCF() {
        XCTAssertEqual(HCIOpcode.leCreateConnection.ogf, 0x08)
        XCTAssertEqual(HCIOpcode.leCreateConnection.ocf, 0x000D)
        XCTAssertEqual(HCIOpcode.reset.ogf, 0x03)
        XCTAssertEqual(HCIOpcode.reset.ocf, 0x0003)
        XCTAssertEqual(HCIOpcode(ogf: 0x04, ocf: 0x0009), .readBDADDR)
        XCTAssertEqual(HCIOpcode(ogf: 0x08, ocf: 0x0060), .leReadBufferSizeV2)
        XCTAssertEqual(HCIOpcode(ogf: 0x01, ocf: 0x0006).rawValue, 0x0406)
    }

    func testRequiredOpcodeValues() {
        let expected: [(HCIOpcode, UInt16)] = [
            (.disconnect, 0x0406), (.readRemoteVersionInformation, 0x041D), (.setEventMask, 0x0C01),
            (.reset, 0x0C03), (.writeLEHostSupport, 0x0C6D), (.readLocalVersionInformation, 0x1001),
            (.readLocalSupportedCommands, 0x1002), (.readLocalSupportedFeatures, 0x1003),
            (.readBufferSize, 0x1005), (.readBDADDR, 0x1009), (.leSetEventMask, 0x2001),
            (.leReadBufferSizeV1, 0x2002), (.leReadLocalSupportedFeatures, 0x2003), (.leSetRandomAddress, 0x2005),
            (.leSetAdvertisingParameters, 0x2006), (.leReadAdvertisingPhysicalChannelTxPower, 0x2007),
            (.leSetAdvertisingData, 0x2008), (.leSetScanResponseData, 0x2009), (.leSetAdvertisingEnable, 0x200A),
            (.leSetScanParameters, 0x200B), (.leSetScanEnable, 0x200C), (.leCreateConnection, 0x200D),
            (.leCreateConnectionCancel, 0x200E), (.leReadFilterAcceptListSize, 0x200F),
            (.leClearFilterAcceptList, 0x2010), (.leConnectionUpdate, 0x2013), (.leReadRemoteFeatures, 0x2016),
            (.leEncrypt, 0x2017), (.leRand, 0x2018), (.leEnableEncryption, 0x2019),
            (.leLongTermKeyRequestReply, 0x201A), (.leLongTermKeyRequestNegativeReply, 0x201B),
            (.leRemoteConnectionParameterRequestReply, 0x2020), (.leRemoteConnectionParameterRequestNegativeReply, 0x2021),
            (.leSetDataLength, 0x2022), (.leReadSuggestedDefaultDataLength, 0x2023),
            (.leWriteSuggestedDefaultDataLength, 0x2024), (.leReadMaximumDataLength, 0x202F), (.leReadPHY, 0x2030),
            (.leSetDefaultPHY, 0x2031), (.leSetPHY, 0x2032), (.leReadBufferSizeV2, 0x2060),
        ]
        for (opcode, raw) in expected {
            XCTAssertEqual(opcode.rawValue, raw, "\(opcode)")
            XCTAssertFalse(opcode.description.hasPrefix("0x"), "\(opcode) has a name")
        }
        XCTAssertEqual(Set(expected.map(\.0)).count, expected.count)
    }

    func testOpcodeDescription() {
        XCTAssertEqual(HCIOpcode.leCreateConnection.description, "LE Create Connection")
        XCTAssertEqual(HCIOpcode.reset.description, "Reset")
        XCTAssertEqual(HCIOpcode(rawValue: 0xFC01).description, "0xFC01")
        XCTAssertEqual(HCIOpcode(rawValue: 0x0001).description, "0x0001")
        XCTAssertTrue(HCIOpcode.leCreateConnection.completesWithCommandStatus)
        XCTAssertTrue(HCIOpcode.disconnect.completesWithCommandStatus)
        XCTAssertFalse(HCIOpcode.reset.completesWithCommandStatus)
    }

    func testStatusValuesAndDescriptions() {
        XCTAssertEqual(HCIStatus.remoteUserTerminatedConnection.description, "Remote User Terminated Connection (0x13)")
        XCTAssertEqual(HCIStatus.success.description, "Success (0x00)")
        XCTAssertEqual(HCIStatus(0x31).description, "Unknown HCI Error (0x31)")
        XCTAssertEqual(HCIStatus(0xFF).description, "Unknown HCI Error (0xFF)")
        let expected: [(HCIStatus, UInt8)] = [
            (.unknownCommand, 0x01), (.unknownConnectionIdentifier, 0x02), (.hardwareFailure, 0x03),
            (.pageTimeout, 0x04), (.authenticationFailure, 0x05), (.pinOrKeyMissing, 0x06),
            (.memoryCapacityExceeded, 0x07), (.connectionTimeout, 0x08), (.commandDisallowed, 0x0C),
            (.invalidHCICommandParameters, 0x12), (.remoteDeviceTerminatedLowResources, 0x14),
            (.remoteDeviceTerminatedPowerOff, 0x15), (.connectionTerminatedByLocalHost, 0x16),
            (.unsupportedRemoteFeature, 0x1A), (.unspecifiedError, 0x1F), (.llResponseTimeout, 0x22),
            (.instantPassed, 0x28), (.unacceptableConnectionParameters, 0x3B), (.advertisingTimeout, 0x3C),
            (.connectionTerminatedMICFailure, 0x3D), (.connectionFailedToBeEstablished, 0x3E),
            (.unknownAdvertisingIdentifier, 0x42), (.limitReached, 0x43), (.operationCancelledByHost, 0x44),
        ]
        for (status, raw) in expected {
            XCTAssertEqual(status.rawValue, raw)
            XCTAssertNotNil(status.name, "0x\(raw) named")
        }
        // Every code from 0x01 to 0x47 except the reserved ones has a name.
        let reserved: Set<UInt8> = [0x2B, 0x31, 0x33, 0x3F]
        for raw in UInt8(0)...0x47 where !reserved.contains(raw) {
            XCTAssertNotNil(HCIStatus(raw).name, "0x\(String(raw, radix: 16))")
        }
    }

    func testErrorDescriptions() {
        XCTAssertEqual(HCIError.commandFailed(opcode: .leCreateConnection, status: .commandDisallowed).description,
                       "HCI command LE Create Connection failed: Command Disallowed (0x0C)")
        XCTAssertTrue(HCIError.commandTimeout(opcode: .reset).description.contains("Reset"))
        XCTAssertTrue(HCIError.hardwareError(code: 0x2A).description.contains("0x2A"))
        XCTAssertTrue(HCIError.malformed(.truncated(needed: 2, remaining: 1, "X")).description.contains("truncated"))
        XCTAssertTrue(HCIError.unexpectedReturnParameters(opcode: .leRand).description.contains("LE Rand"))
        XCTAssertEqual(HCIError.commandFailed(opcode: .reset, status: .hardwareFailure).status, .hardwareFailure)
        XCTAssertNil(HCIError.commandTimeout(opcode: .reset).status)
    }

    func testEventMaskBits() {
        XCTAssertEqual(EventMask.default.rawValue, 0x2000_8000_0200_8890)
        XCTAssertEqual(LEEventMask.default.rawValue, 0x0000_0000_0000_1A7F)
        XCTAssertEqual(HCICommand.setEventMask(.default).encode(), hexBytes("010C08 9088000200800020"))
        XCTAssertEqual(HCICommand.leSetEventMask(.default).encode(), hexBytes("012008 7F1A000000000000"))
        XCTAssertEqual(HCICommand.setEventMask(EventMask.default.rawValue), HCICommand.setEventMask(.default))
    }
}

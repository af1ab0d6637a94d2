import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

/// Golden command layouts, Core spec Vol 4 Part E §5.4.1 and §7.
final class CommandTests: XCTestCase {
    let peer = DeviceAddress(addr("C0:11:22:33:44:55"), type: .random)

    func testResetWithIndicator() {
        XCTAssertEqual(HCICommand.reset.h4Frame.bytes, hexBytes("01 030C 00"))
        XCTAssertEqual(HCICommand.reset.encode(), hexBytes("030C00"))
    }

    func testParameterlessCommands() {
        let cases: [(HCICommand, String)] = [
            (.readLocalVersionInformation, "011000"), (.readLocalSupportedCommands, "021000"),
            (.readLocalSupportedFeatures, "031000"), (.readBufferSize, "051000"), (.readBDADDR, "091000"),
            (.leReadBufferSizeV1, "022000"), (.leReadBufferSizeV2, "602000"), (.leReadLocalSupportedFeatures, "032000"),
            (.leReadAdvertisingPhysicalChannelTxPower, "072000"), (.leCreateConnectionCancel, "0E2000"),
            (.leReadFilterAcceptListSize, "0F2000"), (.leClearFilterAcceptList, "102000"), (.leRand, "182000"),
            (.leReadSuggestedDefaultDataLength, "232000"), (.leReadMaximumDataLength, "2F2000"),
        ]
        for (command, hex) in cases { XCTAssertEqual(command.encode(), hexBytes(hex), "\(command.opcode)") }
    }

    func testDisconnect() {
        XCTAssertEqual(HCICommand.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection).encode(), hexBytes("060403 4000 13"))
        // Upper handle bits are not sent.
        XCTAssertEqual(HCICommand.disconnect(handle: 0xF040).parameters, hexBytes("4000 13"))
        XCTAssertEqual(HCICommand.readRemoteVersionInformation(handle: 0x0001).encode(), hexBytes("1D0402 0100"))
    }

    func testHostSupportAndRandomAddress() {
        XCTAssertEqual(HCICommand.writeLEHostSupport().encode(), hexBytes("6D0C02 0100"))
        XCTAssertEqual(HCICommand.leSetRandomAddress(addr("C0:11:22:33:44:55")).encode(), hexBytes("052006 5544332211C0"))
    }

    func testLESetScanParameters() {
        let c = HCICommand.leSetScanParameters(type: .active, interval: 0x0010, window: 0x0010, ownAddressType: .random, filterPolicy: .acceptAll)
        XCTAssertEqual(c.encode(), hexBytes("0B2007 01 1000 1000 01 00"))
        XCTAssertEqual(HCICommand.leSetScanEnable(enable: true, filterDuplicates: true).encode(), hexBytes("0C2002 0101"))
        XCTAssertEqual(HCICommand.leSetScanEnable(enable: false).encode(), hexBytes("0C2002 0000"))
    }

    func testLECreateConnection() {
        let c = HCICommand.leCreateConnection(
            scanInterval: 0x0060, scanWindow: 0x0030, filterPolicy: .usePeerAddress, peer: peer,
            ownAddressType: .public, connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028,
            maxLatency: 0, supervisionTimeout: 0x01F4, minCELength: 0, maxCELength: 0)
        XCTAssertEqual(c.encode(), hexBytes("0D2019 6000 3000 00 01 5544332211C0 00 1800 2800 0000 F401 0000 0000"))
        XCTAssertEqual(c.parameters.count, 25)
    }

    func testAdvertisingCommands() {
        let params = HCICommand.leSetAdvertisingParameters(
            intervalMin: 0x00A0, intervalMax: 0x00A0, type: .connectableUndirected, ownAddressType: .random)
        XCTAssertEqual(params.encode(), hexBytes("06200F A000 A000 00 01 00 000000000000 07 00"))
        let directed = HCICommand.leSetAdvertisingParameters(
            intervalMin: 0x0020, intervalMax: 0x0030, type: .connectableDirectedLowDuty,
            peer: DeviceAddress(addr("11:22:33:44:55:66"), type: .randomIdentity), channelMap: .channel37)
        XCTAssertEqual(directed.parameters, hexBytes("2000 3000 04 00 01 665544332211 01 00"))

        let data = HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06])
        XCTAssertEqual(data.encode(), hexBytes("082020 03 020106") + [UInt8](repeating: 0, count: 28))
        XCTAssertEqual(data.parameters.count, 32)
        let long = HCICommand.leSetScanResponseData([UInt8](repeating: 0xAA, count: 40))
        XCTAssertEqual(long.parameters.count, 32)
        XCTAssertEqual(long.parameters[0], 31)
        XCTAssertEqual(long.opcode, .leSetScanResponseData)
        XCTAssertEqual(HCICommand.leSetAdvertisingEnable(enable: true).encode(), hexBytes("0A2001 01"))
    }

    func testConnectionCommands() {
        XCTAssertEqual(HCICommand.leConnectionUpdate(handle: 0x0040, intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 0x0048).encode(),
                       hexBytes("13200E 4000 0600 0C00 0000 4800 0000 0000"))
        XCTAssertEqual(HCICommand.leReadRemoteFeatures(handle: 0x0040).encode(), hexBytes("162002 4000"))
        XCTAssertEqual(HCICommand.leRemoteConnectionParameterRequestReply(handle: 1, intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 100).encode(),
                       hexBytes("20200E 0100 0600 0600 0000 6400 0000 0000"))
        XCTAssertEqual(HCICommand.leRemoteConnectionParameterRequestNegativeReply(handle: 1).encode(), hexBytes("212003 0100 3B"))
        XCTAssertEqual(HCICommand.leSetDataLength(handle: 0x0040, txOctets: 251, txTime: 2120).encode(), hexBytes("222006 4000 FB00 4808"))
        XCTAssertEqual(HCICommand.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120).encode(), hexBytes("242004 FB00 4808"))
        XCTAssertEqual(HCICommand.leReadPHY(handle: 0x0040).encode(), hexBytes("302002 4000"))
        XCTAssertEqual(HCICommand.leSetDefaultPHY(tx: [.le1M, .le2M], rx: nil).encode(), hexBytes("312003 02 03 00"))
        XCTAssertEqual(HCICommand.leSetPHY(handle: 0x0040, tx: .le2M, rx: .le2M, options: .noPreference).encode(), hexBytes("322007 4000 00 02 02 0000"))
        XCTAssertEqual(HCICommand.leSetPHY(handle: 0x0040, tx: nil, rx: .leCoded, options: .s8).parameters, hexBytes("4000 01 00 04 0200"))
    }

    func testSecurityCommands() {
        let key = Array(UInt8(0)..<16)
        let ltk = HCICommand.leLongTermKeyRequestReply(handle: 0x0040, longTermKey: key)
        XCTAssertEqual(ltk.encode(), hexBytes("1A2012 4000") + key)
        XCTAssertEqual(HCICommand.leLongTermKeyRequestNegativeReply(handle: 0x0040).encode(), hexBytes("1B2002 4000"))
        let enable = HCICommand.leEnableEncryption(handle: 0x0040, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0xBEEF, longTermKey: key)
        XCTAssertEqual(enable.encode(), hexBytes("19201C 4000 0807060504030201 EFBE") + key)
        let encrypt = HCICommand.leEncrypt(key: key, plaintext: [UInt8](repeating: 0xFF, count: 16))
        XCTAssertEqual(encrypt.parameters.count, 32)
        XCTAssertEqual(encrypt.encode().prefix(3), [0x17, 0x20, 0x20])
        // Wrong-sized keys are padded/truncated, never producing a bad length.
        XCTAssertEqual(HCICommand.leLongTermKeyRequestReply(handle: 1, longTermKey: [1, 2]).parameters.count, 18)
        XCTAssertEqual(HCICommand.leEncrypt(key: [UInt8](repeating: 1, count: 20), plaintext: []).parameters.count, 32)
    }

    func testDecodeRoundTrip() throws {
        let commands: [HCICommand] = [
            .reset, .setEventMask(.default), .leSetEventMask(.default), .leSetAdvertisingData([2, 1, 6]),
            .leCreateConnection(scanInterval: 16, scanWindow: 16, peer: peer, connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 42),
            .disconnect(handle: 3), HCICommand(opcode: HCIOpcode(rawValue: 0xFC00), parameters: [1, 2, 3]),
        ]
        for c in commands {
            XCTAssertEqual(try HCICommand.decode(c.encode()), c)
        }
    }

    func testDecodeRejectsBadLengths() {
        let good = HCICommand.leSetScanEnable(enable: true).encode()
        for n in 0..<good.count {
            XCTAssertThrowsError(try HCICommand.decode(Array(good.prefix(n))), "prefix \(n)")
        }
        XCTAssertThrowsError(try HCICommand.decode(good + [0]))
    }

    func testDescription() {
        XCTAssertEqual(HCICommand.reset.description, "Reset")
        XCTAssertEqual(HCICommand.leSetScanEnable(enable: true).description, "LE Set Scan Enable [0100]")
    }
}

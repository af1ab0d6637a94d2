import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

/// Golden layouts of Bluetooth 5's advertising, scanning and periodic-sync commands and events
/// (Core spec Vol 4 Part E §7.8.52-§7.8.92, §7.7.65.14-§7.7.65.24), their return parameters and
/// supported-command bits, and how advertising data is cut into commands.
final class ExtendedAdvertisingHCITests: XCTestCase {
    let peer = DeviceAddress(addr("C0:11:22:33:44:55"), type: .random)

    // MARK: - Commands

    func testAdvertisingSetCommands() {
        XCTAssertEqual(HCICommand.leSetAdvertisingSetRandomAddress(handle: 1, address: addr("C0:11:22:33:44:55")).encode(),
                       hexBytes("352007 01 5544332211C0"))
        let parameters = ExtendedAdvertisingParameters(
            handle: 0, properties: [.connectable, .scannable], ownAddressType: .random, secondaryPHY: .le2M, sid: 5,
            scanRequestNotifications: true)
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingParameters(parameters).encode(),
                       hexBytes("362019 00 0300 A00000 A00000 07 01 00 000000000000 00 7F 01 00 02 05 01"))
        let coded = ExtendedAdvertisingParameters(handle: 3, properties: [.includeTxPower], intervalMin: 0x01_0000, intervalMax: 0x01_0020,
                                                  peer: peer, txPower: -4, primaryPHY: .leCoded, secondaryPHY: .leCoded, sid: 0x1F)
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingParameters(coded).parameters,
                       hexBytes("03 4000 000001 200001 07 00 01 5544332211C0 00 FC 03 00 03 0F 00"),
                       "24-bit intervals, the peer's address type, the SID cut to four bits")
        let data = AdvertisingDataFragment(operation: .complete, bytes: [2, 1, 6])
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingData(handle: 0, data).encode(), hexBytes("372007 00 03 00 03 020106"))
        XCTAssertEqual(HCICommand.leSetExtendedScanResponseData(handle: 2, data, fragmentationAllowed: false).encode(),
                       hexBytes("382007 02 03 01 03 020106"))
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingEnable(enable: true, sets: [
            AdvertisingSetEnable(handle: 0), AdvertisingSetEnable(handle: 1, duration: 100, maxEvents: 5),
        ]).encode(), hexBytes("39200A 01 02 00 0000 00 01 6400 05"), "each set's fields together")
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingEnable(enable: false, sets: []).encode(), hexBytes("392002 00 00"))
        XCTAssertEqual(HCICommand.leRemoveAdvertisingSet(handle: 1).encode(), hexBytes("3C2001 01"))
        let parameterless: [(HCICommand, String)] = [
            (.leReadMaximumAdvertisingDataLength, "3A2000"), (.leReadNumberOfSupportedAdvertisingSets, "3B2000"),
            (.leClearAdvertisingSets, "3D2000"), (.lePeriodicAdvertisingCreateSyncCancel, "452000"),
            (.leClearPeriodicAdvertiserList, "492000"), (.leReadPeriodicAdvertiserListSize, "4A2000"),
        ]
        for (command, hex) in parameterless { XCTAssertEqual(command.encode(), hexBytes(hex), "\(command.opcode)") }
    }

    func testADataCommandCarriesAtMostOneCommandsWorth() {
        let long = AdvertisingDataFragment(operation: .first, bytes: [UInt8](repeating: 0xAB, count: 300))
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingData(handle: 0, long).parameters.count, 4 + 251)
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingData(handle: 0, long).parameters.count, 3 + 252)
    }

    func testPeriodicAdvertisingCommands() {
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingParameters(handle: 0, intervalMin: 80, intervalMax: 80, includeTxPower: true).encode(),
                       hexBytes("3E2007 00 5000 5000 4000"))
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingData(handle: 0, AdvertisingDataFragment(operation: .complete, bytes: [2, 1, 6])).encode(),
                       hexBytes("3F2006 00 03 03 020106"))
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingEnable(enable: true, handle: 0, includeADI: true).encode(), hexBytes("402002 03 00"))
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingEnable(enable: false, handle: 4, includeADI: true).encode(), hexBytes("402002 00 04"))
    }

    func testExtendedScanningAndInitiatingCommands() {
        XCTAssertEqual(HCICommand.leSetExtendedScanParameters(
            ownAddressType: .random, le1M: ExtendedScanPHYParameters(type: .active, interval: 0x60, window: 0x30),
            leCoded: ExtendedScanPHYParameters(type: .passive, interval: 0x120, window: 0x90)).encode(),
                       hexBytes("41200D 01 00 05 01 6000 3000 00 2001 9000"), "one entry per PHY, LE 1M first")
        XCTAssertEqual(HCICommand.leSetExtendedScanParameters(le1M: nil, leCoded: ExtendedScanPHYParameters(type: .active)).parameters,
                       hexBytes("00 00 04 01 6000 3000"))
        XCTAssertEqual(HCICommand.leSetExtendedScanEnable(enable: true, filterDuplicates: 1, duration: 500).encode(),
                       hexBytes("422006 01 01 F401 0000"))
        let entry = "6000 6000 1800 2800 0000 F401 0000 0000"
        XCTAssertEqual(HCICommand.leExtendedCreateConnection(peer: peer, le1M: ExtendedConnectionPHYParameters(),
                                                             leCoded: ExtendedConnectionPHYParameters()).encode(),
                       hexBytes("43202A 00 00 01 5544332211C0 05 \(entry) \(entry)"))
        XCTAssertEqual(HCICommand.leExtendedCreateConnection(peer: peer, le1M: ExtendedConnectionPHYParameters(),
                                                             le2M: ExtendedConnectionPHYParameters()).parameters.prefix(10),
                       hexBytes("00 00 01 5544332211C0 03")[...])
    }

    func testPeriodicSyncAndTransferCommands() {
        XCTAssertEqual(HCICommand.lePeriodicAdvertisingCreateSync(sid: 3, advertiser: peer, syncTimeout: 100).encode(),
                       hexBytes("44200E 00 03 01 5544332211C0 0000 6400 00"))
        let identity = DeviceAddress(addr("C0:11:22:33:44:55"), type: .randomIdentity)
        XCTAssertEqual(HCICommand.lePeriodicAdvertisingCreateSync(options: [.useAdvertiserList, .duplicateFiltering], sid: 1,
                                                                  advertiser: identity, skip: 2, syncTimeout: 0x4000).parameters,
                       hexBytes("05 01 01 5544332211C0 0200 0040 00"), "an identity address is sent as its peer type")
        XCTAssertEqual(HCICommand.lePeriodicAdvertisingTerminateSync(syncHandle: 0x0001).encode(), hexBytes("462002 0100"))
        XCTAssertEqual(HCICommand.leAddDeviceToPeriodicAdvertiserList(peer, sid: 3).encode(), hexBytes("472008 01 5544332211C0 03"))
        XCTAssertEqual(HCICommand.leRemoveDeviceFromPeriodicAdvertiserList(peer, sid: 3).encode(), hexBytes("482008 01 5544332211C0 03"))
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingReceiveEnable(syncHandle: 1, reports: true).encode(), hexBytes("592003 0100 01"))
        XCTAssertEqual(HCICommand.lePeriodicAdvertisingSyncTransfer(handle: 0x40, serviceData: 0x1234, syncHandle: 1).encode(),
                       hexBytes("5A2006 4000 3412 0100"))
        XCTAssertEqual(HCICommand.lePeriodicAdvertisingSetInfoTransfer(handle: 0x40, serviceData: 0x1234, advertisingHandle: 1).encode(),
                       hexBytes("5B2005 4000 3412 01"))
        XCTAssertEqual(HCICommand.leSetPeriodicAdvertisingSyncTransferParameters(handle: 0x40, mode: .syncWithReports, syncTimeout: 100).encode(),
                       hexBytes("5C2008 4000 02 0000 6400 00"))
        XCTAssertEqual(HCICommand.leSetDefaultPeriodicAdvertisingSyncTransferParameters(mode: .off, syncTimeout: 100).encode(),
                       hexBytes("5D2006 00 0000 6400 00"))
    }

    func testCommandsThatCompleteWithAStatusAndTheirNames() {
        XCTAssertTrue(HCIOpcode.leExtendedCreateConnection.completesWithCommandStatus)
        XCTAssertTrue(HCIOpcode.lePeriodicAdvertisingCreateSync.completesWithCommandStatus)
        XCTAssertFalse(HCIOpcode.leSetExtendedAdvertisingEnable.completesWithCommandStatus)
        XCTAssertEqual(HCIOpcode.leSetExtendedAdvertisingData.description, "LE Set Extended Advertising Data")
        XCTAssertEqual(HCIOpcode(rawValue: 0x205D).description, "LE Set Default Periodic Advertising Sync Transfer Parameters")
    }

    // MARK: - Cutting data into commands

    func testDataIsCutIntoFirstIntermediateAndLastFragments() {
        XCTAssertEqual(AdvertisingDataFragment.fragments(of: [], limit: 251), [AdvertisingDataFragment(operation: .complete, bytes: [])])
        let fits = [UInt8](repeating: 1, count: 251)
        XCTAssertEqual(AdvertisingDataFragment.fragments(of: fits, limit: 251).map(\.operation), [.complete])
        XCTAssertEqual(AdvertisingDataFragment.fragments(of: fits + [2], limit: 251).map(\.operation), [.first, .last])
        let data = (0..<600).map { UInt8($0 % 256) }
        let pieces = AdvertisingDataFragment.fragments(of: data, limit: 251)
        XCTAssertEqual(pieces.map(\.operation), [.first, .intermediate, .last])
        XCTAssertEqual(pieces.map(\.bytes.count), [251, 251, 98])
        XCTAssertEqual(pieces.flatMap(\.bytes), data, "the fragments put back together are the data")
        XCTAssertEqual(AdvertisingDataFragment.fragments(of: data, limit: AdvertisingDataFragment.periodicLimit).map(\.bytes.count), [252, 252, 96])
    }

    // MARK: - Return parameters and supported commands

    func testReturnParameters() throws {
        XCTAssertEqual(try LEMaximumAdvertisingDataLength(returnParameters: [0x00, 0x72, 0x06]).length, 1650)
        XCTAssertEqual(try LESupportedAdvertisingSets(returnParameters: [0x00, 0x10]).count, 16)
        XCTAssertEqual(try LESelectedTxPower(returnParameters: [0x00, 0xF8]).txPower, -8)
        XCTAssertEqual(try LEPeriodicAdvertiserListSize(returnParameters: [0x00, 0x08]).size, 8)
        XCTAssertThrowsError(try LESupportedAdvertisingSets(returnParameters: [0x01, 0x10]), "a failed command")
        XCTAssertThrowsError(try LEMaximumAdvertisingDataLength(returnParameters: [0x00, 0x72]), "short")
    }

    func testSupportedCommandBits() {
        var octets = [UInt8](repeating: 0, count: 64)
        XCTAssertFalse(LocalSupportedCommands(octets: octets).extendedAdvertising)
        octets[36] = 0b1111_1110 // set random address ... read number of sets
        XCTAssertTrue(LocalSupportedCommands(octets: octets).extendedAdvertising)
        XCTAssertFalse(LocalSupportedCommands(octets: octets).extendedScanning)
        octets[37] = 0b1110_0000 // extended scan parameters, enable, create connection
        XCTAssertTrue(LocalSupportedCommands(octets: octets).extendedScanning)
        XCTAssertFalse(LocalSupportedCommands(octets: octets).lePeriodicAdvertisingCreateSync)
        octets[38] = 0x01
        octets[40] = 0b1100_0000
        octets[41] = 0b0000_0011
        let all = LocalSupportedCommands(octets: octets)
        XCTAssertTrue(all.lePeriodicAdvertisingCreateSync && all.lePeriodicAdvertisingSyncTransfer && all.lePeriodicAdvertisingSetInfoTransfer
                      && all.leSetPeriodicAdvertisingSyncTransferParameters && all.leSetDefaultPeriodicAdvertisingSyncTransferParameters)
        XCTAssertFalse(all.leSetPeriodicAdvertisingReceiveEnable)
    }

    // MARK: - Events

    static let established = LEPeriodicSyncEstablished(
        status: .success, syncHandle: 1, sid: 3, advertiser: DeviceAddress(addr("C0:11:22:33:44:55"), type: .random),
        phy: .leCoded, interval: 80, clockAccuracy: 5)

    /// (event packet without indicator, expected decoding).
    static let goldens: [(String, HCIEvent)] = [
        ("3E10 0E 00 0100 03 01 5544332211C0 03 5000 05", .le(.periodicAdvertisingSyncEstablished(established))),
        ("3E0B 0F 0100 7F C4 FF 01 03 020106", .le(.periodicAdvertisingReport(LEPeriodicAdvertisingReport(
            syncHandle: 1, rssi: -60, dataStatus: .incompleteMoreToCome, data: [2, 1, 6])))),
        ("3E03 10 0100", .le(.periodicAdvertisingSyncLost(syncHandle: 1))),
        ("3E01 11", .le(.scanTimeout)),
        ("3E06 12 00 02 4000 05", .le(.advertisingSetTerminated(LEAdvertisingSetTerminated(
            status: .success, advertisingHandle: 2, connectionHandle: 0x40, completedEvents: 5)))),
        ("3E09 13 02 01 5544332211C0", .le(.scanRequestReceived(advertisingHandle: 2, scanner: DeviceAddress(addr("C0:11:22:33:44:55"), type: .random)))),
        ("3E04 14 4000 01", .le(.channelSelectionAlgorithm(handle: 0x40, algorithm: 1))),
        ("3E14 18 00 4000 3412 0100 03 01 5544332211C0 03 5000 05", .le(.periodicAdvertisingSyncTransferReceived(
            LEPeriodicSyncTransferReceived(connectionHandle: 0x40, serviceData: 0x1234, sync: established)))),
    ]

    func testGoldenEventsDecodeAndEncode() throws {
        for (hex, expected) in Self.goldens {
            let bytes = hexBytes(hex)
            XCTAssertEqual(try HCIEvent.decode(bytes), expected, hex)
            XCTAssertEqual(expected.encode(), bytes, hex)
        }
    }

    func testEveryShortenedEventThrows() {
        for (hex, _) in Self.goldens {
            let bytes = hexBytes(hex)
            let parameters = Array(bytes.dropFirst(2))
            for n in 0..<parameters.count {
                XCTAssertThrowsError(try HCIEvent.decode(code: bytes[0], parameters: Array(parameters.prefix(n))), "\(hex) cut to \(n)")
            }
        }
    }

    func testAReportWhoseLengthOverrunsTheEventThrows() {
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E0B 0F 0100 7F C4 FF 00 09 020106")))
    }

    func testAnUnknownAdvertiserTypeFailsOnlyASuccessfulSync() throws {
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E10 0E 00 0100 03 07 5544332211C0 03 5000 05")))
        let failed = try HCIEvent.decode(hexBytes("3E10 0E 3E 0000 00 07 000000000000 00 0000 00"))
        guard case let .le(.periodicAdvertisingSyncEstablished(sync)) = failed else { return XCTFail("\(failed)") }
        XCTAssertEqual(sync.status, HCIStatus(0x3E))
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E09 13 02 09 5544332211C0")), "a scanner address type not in the spec")
    }

    func testTheNewSubeventsHaveTheirMaskBits() {
        XCTAssertEqual(LEEventMask.periodicAdvertisingSyncEstablished.rawValue, 1 << (0x0E - 1))
        XCTAssertEqual(LEEventMask.advertisingSetTerminated.rawValue, 1 << (0x12 - 1))
        XCTAssertEqual(LEEventMask.channelSelectionAlgorithm.rawValue, 1 << (0x14 - 1))
        XCTAssertEqual(LEEventMask.periodicAdvertisingSyncTransferReceived.rawValue, 1 << (0x18 - 1))
    }
}

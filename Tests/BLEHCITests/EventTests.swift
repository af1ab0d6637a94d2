import BLEWire
@testable import BLEHCI
import XCTest
import BLETestSupport

/// Golden event layouts, Core spec Vol 4 Part E §7.7, and decoder robustness.
final class EventTests: XCTestCase {
    static let peer = DeviceAddress(addr("C0:11:22:33:44:55"), type: .random)

    /// (event packet without indicator, expected decoding).
    static let goldens: [(String, HCIEvent)] = [
        ("0E04 01 030C 00", .commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0x00])),
        ("0E03 01 0000", .commandComplete(numHCICommandPackets: 1, opcode: .noOperation, returnParameters: [])),
        ("0F04 00 01 0D20", .commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection)),
        ("0F04 0C 01 0604", .commandStatus(status: .commandDisallowed, numHCICommandPackets: 1, opcode: .disconnect)),
        ("0504 00 4000 13", .disconnectionComplete(status: .success, handle: 0x0040, reason: .remoteUserTerminatedConnection)),
        ("0804 00 4000 01", .encryptionChange(status: .success, handle: 0x0040, enabled: true)),
        ("3003 00 4000", .encryptionKeyRefreshComplete(status: .success, handle: 0x0040)),
        ("0C08 00 4000 0C 0200 3412", .readRemoteVersionInformationComplete(
            RemoteVersionInformation(handle: 0x0040, version: 0x0C, companyIdentifier: 0x0002, subversion: 0x1234))),
        ("1001 2A", .hardwareError(code: 0x2A)),
        ("1A01 01", .dataBufferOverflow(linkType: 1)),
        ("1309 02 4000 0100 4100 0300", .numberOfCompletedPackets([
            CompletedPackets(handle: 0x0040, count: 1), CompletedPackets(handle: 0x0041, count: 3)])),
        // LE Connection Complete: central, random peer C0:11:22:33:44:55, interval 24, timeout 500.
        ("3E13 01 00 4000 00 01 5544332211C0 1800 0000 F401 00", .le(.connectionComplete(LEConnectionComplete(
            handle: 0x0040, role: .central, peer: peer, interval: 24, latency: 0, supervisionTimeout: 500)))),
        // LE Enhanced Connection Complete v1, peripheral, with a local RPA.
        ("3E1F 0A 00 0100 01 02 665544332211 AABBCCDDEE4F 000000000000 2800 0200 C800 05",
         .le(.connectionComplete(LEConnectionComplete(
            handle: 0x0001, role: .peripheral, peer: DeviceAddress(addr("11:22:33:44:55:66"), type: .publicIdentity),
            localResolvablePrivateAddress: addr("4F:EE:DD:CC:BB:AA"), interval: 40, latency: 2,
            supervisionTimeout: 200, centralClockAccuracy: 5, format: .enhanced)))),
        // v2 appends Advertising_Handle and Sync_Handle.
        ("3E22 29 00 0100 01 01 5544332211C0 000000000000 000000000000 2800 0000 C800 00 03 FFFF",
         .le(.connectionComplete(LEConnectionComplete(
            handle: 0x0001, role: .peripheral, peer: peer, interval: 40, latency: 0, supervisionTimeout: 200,
            format: .enhancedV2(advertisingHandle: 3, syncHandle: 0xFFFF))))),
        // LE Advertising Report with two reports: ADV_IND with flags, then an empty SCAN_RSP.
        ("3E19 02 02 00 01 5544332211C0 03 020106 C5 04 00 665544332211 00 B0",
         .le(.advertisingReport([
            LEAdvertisingReport(legacy: .advInd, address: peer, data: [2, 1, 6], rssi: -59),
            LEAdvertisingReport(legacy: .scanRsp, address: DeviceAddress(addr("11:22:33:44:55:66"), type: .public), data: [], rssi: -80),
         ]))),
        ("3E0A 03 00 4000 0C00 0000 4800", .le(.connectionUpdateComplete(status: .success, handle: 0x0040, interval: 12, latency: 0, supervisionTimeout: 72))),
        ("3E0C 04 00 4000 3F01000000000000", .le(.readRemoteFeaturesComplete(
            status: .success, handle: 0x0040, features: [.leEncryption, .connectionParametersRequest, .extendedRejectIndication,
                                                         .peripheralInitiatedFeaturesExchange, .lePing, .leDataPacketLengthExtension, .le2MPHY]))),
        ("3E0D 05 4000 0807060504030201 EFBE", .le(.longTermKeyRequest(handle: 0x0040, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0xBEEF))),
        ("3E0B 06 4000 0600 0C00 0000 6400", .le(.remoteConnectionParameterRequest(handle: 0x0040, intervalMin: 6, intervalMax: 12, maxLatency: 0, timeout: 100))),
        ("3E0B 07 4000 FB00 4808 FB00 4808", .le(.dataLengthChange(handle: 0x0040, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120))),
        ("3E06 0C 00 4000 02 02", .le(.phyUpdateComplete(status: .success, handle: 0x0040, txPHY: .le2M, rxPHY: .le2M))),
        // LE Extended Advertising Report: one legacy ADV_IND (event type 0x0013), RSSI -60.
        ("3E1D 0D 01 1300 01 5544332211C0 01 00 FF 7F C4 0000 00 000000000000 03 020106",
         .le(.extendedAdvertisingReport([LEAdvertisingReport(legacy: .advInd, address: peer, data: [2, 1, 6], rssi: -60)]))),
    ]

    func testGoldenDecodeAndEncode() throws {
        for (hex, expected) in Self.goldens {
            let bytes = hexBytes(hex)
            XCTAssertEqual(try HCIEvent.decode(bytes), expected, hex)
            XCTAssertEqual(expected.encode(), bytes, hex)
        }
    }

    func testCommandCompleteWithIndicator() {
        let e = HCIEvent.commandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0])
        XCTAssertEqual(e.h4Frame.bytes, hexBytes("04 0E04 01030C00"))
    }

    func testEveryPrefixOfEveryGoldenThrows() {
        for (hex, _) in Self.goldens {
            let bytes = hexBytes(hex)
            for n in 0..<bytes.count {
                XCTAssertThrowsError(try HCIEvent.decode(Array(bytes.prefix(n))), "\(hex) prefix \(n)")
            }
            XCTAssertThrowsError(try HCIEvent.decode(bytes + [0x00]), "\(hex) with a trailing byte")
        }
    }

    /// Shortening the parameters (with a consistent length byte) must throw for every event with
    /// fixed fields; Command Complete's return parameters are opaque, so only its first 3 bytes
    /// are required.
    func testEveryParameterPrefixThrowsOrDecodes() {
        for (hex, expected) in Self.goldens {
            let bytes = hexBytes(hex)
            let params = Array(bytes.dropFirst(2))
            for n in 0..<params.count {
                let cut = Array(params.prefix(n))
                let result = Result { () throws(WireError) -> HCIEvent in try HCIEvent.decode(code: bytes[0], parameters: cut) }
                if case .commandComplete = expected, n >= 3 {
                    XCTAssertNoThrow(try result.get())
                } else {
                    XCTAssertThrowsError(try result.get(), "\(hex) parameters cut to \(n)")
                }
            }
        }
    }

    func testUnknownEventsNeverThrow() throws {
        XCTAssertEqual(try HCIEvent.decode(hexBytes("FF03 010203")), .unknown(code: 0xFF, parameters: [1, 2, 3]))
        XCTAssertEqual(try HCIEvent.decode(hexBytes("0300")), .unknown(code: 0x03, parameters: []))
        XCTAssertEqual(try HCIEvent.decode(hexBytes("3E03 3F01 02")), .le(.unknown(subevent: 0x3F, parameters: [1, 2])))
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E00")), "LE Meta without a subevent")
        for e in [HCIEvent.unknown(code: 0xFF, parameters: [9]), .le(.unknown(subevent: 0x22, parameters: [7, 8]))] {
            XCTAssertEqual(try HCIEvent.decode(e.encode()), e)
        }
    }

    /// An event's parameters are at most 255 octets (Vol 4 Part E §5.4.4: one length octet), so
    /// the code/parameters entry point refuses more, whatever the event; otherwise a Number Of
    /// Completed Packets event of 255 handles decoded, and encoding it kept only the 63 entries
    /// a length byte can describe (a fuzz finding).
    func testParametersLongerThanTheLengthByteAreRefused() throws {
        let handles = (0..<255).flatMap { i -> [UInt8] in [UInt8(i), 0x00, 0x01, 0x00] }
        XCTAssertThrowsError(try HCIEvent.decode(code: 0x13, parameters: [0xFF] + handles))
        XCTAssertThrowsError(try HCIEvent.decode(code: 0xFF, parameters: [UInt8](repeating: 7, count: 256)))
        XCTAssertThrowsError(try HCIEvent.decode(code: 0x0E, parameters: [1, 0x03, 0x0C] + [UInt8](repeating: 0, count: 253)))
        // 255 octets still decode: 63 handles, and the 2 octets past them ignored as usual.
        let most = try HCIEvent.decode(code: 0x13, parameters: [63] + handles.prefix(63 * 4) + [0, 0])
        guard case let .numberOfCompletedPackets(entries) = most else { return XCTFail("\(most)") }
        XCTAssertEqual(entries.count, 63)
        XCTAssertEqual(try HCIEvent.decode(most.encode()), most)
        XCTAssertEqual(try HCIEvent.decode(code: 0xFF, parameters: [UInt8](repeating: 7, count: 255)),
                       .unknown(code: 0xFF, parameters: [UInt8](repeating: 7, count: 255)))
    }

    func testExtraTrailingParametersAreIgnored() throws {
        // A later spec version may append fields; the known ones still decode.
        XCTAssertEqual(try HCIEvent.decode(hexBytes("0505 00 4000 13 99")),
                       .disconnectionComplete(status: .success, handle: 0x0040, reason: .remoteUserTerminatedConnection))
    }

    func testGarbledValuesThrow() {
        // Address type 0x07 in a successful connection complete.
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E13 01 00 4000 00 07 5544332211C0 1800 0000 F401 00")))
        // Role 0x05.
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E13 01 00 4000 05 01 5544332211C0 1800 0000 F401 00")))
        // Legacy advertising event type 0x09.
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E0C 02 01 09 00 5544332211C0 00 C5")))
        // Directed extended report with direct address type 0x09.
        XCTAssertThrowsError(try HCIEvent.decode(hexBytes("3E1A 0D 01 1500 01 5544332211C0 01 00 FF 7F C4 0000 09 000000000000 00")))
    }

    func testFailedConnectionCompleteToleratesGarbage() throws {
        let e = try HCIEvent.decode(hexBytes("3E13 01 02 0000 FF FF 000000000000 0000 0000 0000 00"))
        guard case let .le(.connectionComplete(c)) = e else { return XCTFail("\(e)") }
        XCTAssertEqual(c.status, .unknownConnectionIdentifier)
    }

    func testExtendedReportFields() throws {
        // Extended, connectable, directed, incomplete-more-to-come, on LE Coded / 2M, SID 3,
        // tx power -4, periodic interval 0x0050, target unresolved RPA (0xFE).
        let props = AdvertisingEventProperties(rawValue: 0x0025)
        XCTAssertEqual(props.dataStatus, .incompleteMoreToCome)
        let bytes = hexBytes("3E1C 0D 01 2500 FF 000000000000 03 02 03 FC B5 5000 FE 112233445566 02 AABB")
        let e = try HCIEvent.decode(bytes)
        guard case let .le(.extendedAdvertisingReport(reports)) = e, let r = reports.first else { return XCTFail("\(e)") }
        XCTAssertTrue(r.isAnonymous)
        XCTAssertTrue(r.isConnectable)
        XCTAssertFalse(r.isScannable)
        XCTAssertTrue(r.isDirected)
        XCTAssertFalse(r.isLegacy)
        XCTAssertNil(r.legacyEventType)
        XCTAssertEqual(r.dataStatus, .incompleteMoreToCome)
        XCTAssertEqual(r.primaryPHY, .leCoded)
        XCTAssertEqual(r.secondaryPHY, .le2M)
        XCTAssertEqual(r.advertisingSID, 3)
        XCTAssertEqual(r.txPower, -4)
        XCTAssertEqual(r.rssi, -75)
        XCTAssertEqual(r.periodicAdvertisingInterval, 0x50)
        XCTAssertEqual(r.directAddress, DeviceAddress(addr("66:55:44:33:22:11"), type: .random))
        XCTAssertEqual(r.data, [0xAA, 0xBB])
        // Re-encoding writes the unresolved target as plain random (documented loss).
        var expected = bytes
        expected[20] = 0x01
        XCTAssertEqual(e.encode(), expected)
    }

    func testLegacyTypeMapping() {
        for type in [LegacyAdvertisingEventType.advInd, .advDirectInd, .advScanInd, .advNonconnInd, .scanRsp] {
            let r = LEAdvertisingReport(legacy: type, address: Self.peer, data: [], rssi: 127)
            XCTAssertEqual(r.legacyEventType, type)
            XCTAssertNil(r.rssiValue)
        }
        XCTAssertEqual(LegacyAdvertisingEventType.advInd.properties.rawValue, 0x13)
        XCTAssertEqual(LegacyAdvertisingEventType.advDirectInd.properties.rawValue, 0x15)
        XCTAssertEqual(LegacyAdvertisingEventType.advScanInd.properties.rawValue, 0x12)
        XCTAssertEqual(LegacyAdvertisingEventType.advNonconnInd.properties.rawValue, 0x10)
        XCTAssertEqual(LegacyAdvertisingEventType.scanRsp.properties.rawValue, 0x1A)
    }

    func testRoundTripsOfBuiltEvents() throws {
        let events: [HCIEvent] = [
            .numberOfCompletedPackets([]),
            .encryptionChange(status: .pinOrKeyMissing, handle: 0x0EFF, enabled: false),
            .le(.connectionComplete(LEConnectionComplete(
                status: .success, handle: 2, role: .central, peer: Self.peer,
                localResolvablePrivateAddress: addr("40:00:00:00:00:01"), peerResolvablePrivateAddress: addr("50:00:00:00:00:02"),
                interval: 6, latency: 1, supervisionTimeout: 10, centralClockAccuracy: 7, format: .enhancedV2(advertisingHandle: 0xFF, syncHandle: 1)))),
            .le(.extendedAdvertisingReport([
                LEAdvertisingReport(properties: [.scannable, .scanResponse], address: Self.peer, primaryPHY: .le1M,
                                    secondaryPHY: .le2M, advertisingSID: 15, txPower: 8, rssi: -90, data: Array(repeating: 7, count: 100)),
                LEAdvertisingReport(legacy: .advNonconnInd, address: Self.peer, data: [], rssi: 127),
            ])),
            .le(.advertisingReport([])),
            .le(.phyUpdateComplete(status: .unsupportedRemoteFeature, handle: 1, txPHY: .le1M, rxPHY: LEPHY(rawValue: 9))),
        ]
        for e in events {
            XCTAssertEqual(try HCIEvent.decode(e.encode()), e)
        }
    }

    func testRandomBytesNeverTrap() {
        var rng = SeededGenerator(seed: 0xB1E)
        let codes: [UInt8] = [0x05, 0x08, 0x0C, 0x0E, 0x0F, 0x10, 0x13, 0x1A, 0x30, 0x3E, 0xFF]
        let subevents: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0A, 0x0C, 0x0D, 0x29]
        for _ in 0..<5000 {
            let length = Int.random(in: 0...40, using: &rng)
            var params = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let code = codes.randomElement(using: &rng) ?? 0x3E
            if code == 0x3E, !params.isEmpty { params[0] = subevents.randomElement(using: &rng) ?? 1 }
            // Small counts make the multi-report decoders go deeper.
            if code == 0x3E, params.count > 1, Bool.random(using: &rng) { params[1] = UInt8.random(in: 0...3, using: &rng) }
            if let e = try? HCIEvent.decode(code: code, parameters: params) {
                // Whatever decodes re-encodes without trapping and decodes to the same value
                // when the input was canonical.
                _ = e.encode()
            }
        }
    }
}

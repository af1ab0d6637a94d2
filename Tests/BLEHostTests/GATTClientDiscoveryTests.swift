import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// GATT client scripts for the GAC (MTU exchange) and GAD (discovery) test-suite categories.
/// Core spec Vol 3 Part G §4.3–§4.7.
final class GATTClientDiscoveryTests: XCTestCase {
    // MARK: GAC — Exchange MTU (§4.3.1)

    func testGAC_CL_BV_01_C_exchangeMTU() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(), [
            "C: 02 0502",  // client Rx MTU 517
            "S: 03 f700",  // server Rx MTU 247
        ])
        XCTAssertEqual(outcome.result, .success(.mtu(247)))
        XCTAssertEqual(outcome.events, [.mtuChanged(247)])
        XCTAssertEqual(outcome.bearer.mtu, 247)
        XCTAssertEqual(outcome.bearer.maximumWriteValueLength(withoutResponse: true), 244)
        XCTAssertEqual(outcome.bearer.maximumWriteValueLength(withoutResponse: false), 512)
    }

    func testGAC_exchangeMTU_serverSmaller() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(clientMTU: 100), [
            "C: 02 6400",
            "S: 03 4000",
        ])
        XCTAssertEqual(outcome.result, .success(.mtu(64)))
        XCTAssertEqual(outcome.bearer.mtu, 64)
    }

    func testGAC_exchangeMTU_clientSmaller() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(clientMTU: 100), ["C: 02 6400", "S: 03 0002"])
        XCTAssertEqual(outcome.result, .success(.mtu(100)))
    }

    func testGAC_exchangeMTU_serverBelowMinimumIsTakenAs23() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(), ["C: 02 0502", "S: 03 1000"])
        XCTAssertEqual(outcome.result, .success(.mtu(23)))
        XCTAssertEqual(outcome.events, [])
    }

    func testGAC_exchangeMTU_requestNotSupportedStays23() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(), [
            "C: 02 0502",
            "S: 01 02 0000 06",
        ])
        XCTAssertEqual(outcome.result, .success(.mtu(23)))
        XCTAssertEqual(outcome.events, [])
        XCTAssertEqual(outcome.bearer.mtu, 23)
    }

    func testGAC_exchangeMTU_otherErrorFails() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(), ["C: 02 0502", "S: 01 02 0000 0e"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .unlikelyError, handle: 0, request: .exchangeMTURequest)))
        XCTAssertEqual(outcome.bearer.mtu, 23)
    }

    func testGAC_exchangeMTU_clientMTUBelow23IsRejected() {
        let outcome = runGATTClientScript(ExchangeMTUProcedure(clientMTU: 20), [])
        XCTAssertEqual(outcome.result?.gattError, .invalidArgument("client Rx MTU 20 is outside 23...65535"))
    }

    func testGAC_exchangeMTU_onlyOncePerConnection() {
        var bearer = ATTClientBearer()
        XCTAssertEqual(bearer.submit(ExchangeMTUProcedure(), id: 1, now: .zero), [.send(hexBytes("02 0502"))])
        let second = bearer.submit(ExchangeMTUProcedure(), id: 2, now: .zero)
        XCTAssertEqual(second.count, 1)
        guard case let .complete(2, .failure(.invalidArgument(text)))? = second.first else {
            return XCTFail("second exchange should be refused: \(second)")
        }
        XCTAssertTrue(text.contains("once"))
    }

    func testGAC_proceduresQueuedBehindExchangeUseTheNewMTU() {
        var bearer = ATTClientBearer()
        _ = bearer.submit(ExchangeMTUProcedure(), id: 1, now: .zero)
        XCTAssertEqual(bearer.submit(ReadLongProcedure(handle: 3), id: 2, now: .zero), [])
        XCTAssertEqual(bearer.receive(hexBytes("03 f700"), now: .seconds(1)),
                       [.mtuChanged(247), .complete(id: 1, .success(.mtu(247))), .send(hexBytes("0a 0300"))])
        // 246 octets = ATT_MTU − 1 at the new MTU: a full part, so a blob follows.
        let full = [UInt8](repeating: 0xAB, count: 246)
        XCTAssertEqual(bearer.receive([0x0B] + full, now: .seconds(2)), [.send(hexBytes("0c 0300 f600"))])
        XCTAssertEqual(bearer.receive([0x0D, 0x01], now: .seconds(3)), [.complete(id: 2, .success(.value(full + [0x01])))])
    }

    // MARK: GAD — Discover All Primary Services (§4.4.1)

    func testGAD_CL_BV_01_C_discoverAllPrimaryServices() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018 0600 0900 0118",
            "C: 10 0a00 ffff 0028",
            "S: 11 14 0a00 1000 \(gattScriptUUID128Hex)",
            "C: 10 1100 ffff 0028",
            "S: 11 06 2000 2f00 0d18",
            "C: 10 3000 ffff 0028",
            "S: 01 10 3000 0a",
        ])
        XCTAssertEqual(outcome.result, .success(.services([
            GATTService(uuid: BluetoothUUID(0x1800), handleRange: 0x0001...0x0005),
            GATTService(uuid: BluetoothUUID(0x1801), handleRange: 0x0006...0x0009),
            GATTService(uuid: gattScriptUUID128, handleRange: 0x000A...0x0010),
            GATTService(uuid: BluetoothUUID(0x180D), handleRange: 0x0020...0x002F),
        ])))
    }

    func testGAD_discoverAllPrimaryServices_endsAtFFFF() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018 0600 ffff 0118",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.services?.map(\.endHandle), [0x0005, 0xFFFF])
    }

    func testGAD_discoverAllPrimaryServices_noneFound() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), ["C: 10 0100 ffff 0028", "S: 01 10 0100 0a"])
        XCTAssertEqual(outcome.result, .success(.services([])))
    }

    func testGAD_discoverAllPrimaryServices_handlesThatDoNotAdvanceFail() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018",
            "C: 10 0600 ffff 0028",
            "S: 11 06 0300 0400 0118",  // goes backwards: would loop forever
        ])
        guard case .protocolViolation? = outcome.result?.gattError else {
            return XCTFail("expected a protocol violation, got \(String(describing: outcome.result))")
        }
    }

    func testGAD_discoverAllPrimaryServices_sameHandleAgainFails() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), [
            "C: 10 0100 ffff 0028",
            "S: 11 06 0100 0500 0018",
            "C: 10 0600 ffff 0028",
            "S: 11 06 0100 0500 0018",
        ])
        guard case .protocolViolation? = outcome.result?.gattError else {
            return XCTFail("expected a protocol violation, got \(String(describing: outcome.result))")
        }
    }

    func testGAD_discoverAllPrimaryServices_endBeforeStartIsMalformed() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), ["C: 10 0100 ffff 0028", "S: 11 06 0500 0100 0018"])
        guard case .malformedResponse? = outcome.result?.gattError else {
            return XCTFail("expected malformed, got \(String(describing: outcome.result))")
        }
    }

    func testGAD_discoverAllPrimaryServices_32BitUUIDValueIsMalformed() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), ["C: 10 0100 ffff 0028", "S: 11 08 0100 0500 0d180000"])
        guard case .malformedResponse? = outcome.result?.gattError else {
            return XCTFail("expected malformed, got \(String(describing: outcome.result))")
        }
    }

    func testGAD_discoverAllPrimaryServices_otherErrorFails() {
        let outcome = runGATTClientScript(DiscoverAllPrimaryServicesProcedure(), ["C: 10 0100 ffff 0028", "S: 01 10 0100 05"])
        XCTAssertEqual(outcome.result, .failure(.att(code: .insufficientAuthentication, handle: 1, request: .readByGroupTypeRequest)))
    }

    // MARK: GAD — Discover Primary Service by UUID (§4.4.2)

    func testGAD_CL_BV_02_C_discoverPrimaryServiceByUUID() {
        let outcome = runGATTClientScript(DiscoverPrimaryServiceByUUIDProcedure(uuid: BluetoothUUID(0x180D)), [
            "C: 06 0100 ffff 0028 0d18",
            "S: 07 0100 0500 2000 2f00",
            "C: 06 3000 ffff 0028 0d18",
            "S: 01 06 3000 0a",
        ])
        XCTAssertEqual(outcome.result, .success(.services([
            GATTService(uuid: BluetoothUUID(0x180D), handleRange: 0x0001...0x0005),
            GATTService(uuid: BluetoothUUID(0x180D), handleRange: 0x0020...0x002F),
        ])))
    }

    func testGAD_discoverPrimaryServiceBy128BitUUID() {
        let outcome = runGATTClientScript(DiscoverPrimaryServiceByUUIDProcedure(uuid: gattScriptUUID128), [
            "C: 06 0100 ffff 0028 \(gattScriptUUID128Hex)",
            "S: 07 0a00 ffff",
        ])
        XCTAssertEqual(outcome.result, .success(.services([GATTService(uuid: gattScriptUUID128, handleRange: 0x000A...0xFFFF)])))
    }

    // MARK: GAD — Find Included Services (§4.5.1)

    func testGAD_CL_BV_03_C_findIncludedServices() {
        let service = GATTService(uuid: BluetoothUUID(0x180D), handleRange: 0x0001...0x0010)
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(service: service), [
            "C: 08 0100 1000 0228",
            "S: 09 08 0200 2000 2500 0f18",
            "C: 08 0300 1000 0228",
            "S: 09 06 0300 3000 3500",  // 128-bit included service: UUID absent
            "C: 0a 3000",                // read its declaration
            "S: 0b \(gattScriptUUID128Hex)",
            "C: 08 0400 1000 0228",
            "S: 01 08 0400 0a",
        ])
        XCTAssertEqual(outcome.result, .success(.includedServices([
            GATTIncludedService(declarationHandle: 2, serviceHandleRange: 0x0020...0x0025, uuid: BluetoothUUID(0x180F)),
            GATTIncludedService(declarationHandle: 3, serviceHandleRange: 0x0030...0x0035, uuid: gattScriptUUID128),
        ])))
    }

    func testGAD_findIncludedServices_readBackOfWrongLengthIsMalformed() {
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(range: 0x0001...0x0010), [
            "C: 08 0100 1000 0228",
            "S: 09 06 0300 3000 3500",
            "C: 0a 3000",
            "S: 0b 0d18",
        ])
        guard case .malformedResponse? = outcome.result?.gattError else {
            return XCTFail("expected malformed, got \(String(describing: outcome.result))")
        }
    }

    func testGAD_findIncludedServices_none() {
        let outcome = runGATTClientScript(FindIncludedServicesProcedure(range: 0x0001...0x0010), ["C: 08 0100 1000 0228", "S: 01 08 0100 0a"])
        XCTAssertEqual(outcome.result, .success(.includedServices([])))
    }

    // MARK: GAD — Discover Characteristics (§4.6)

    private let characteristicScript = [
        "C: 08 0100 1000 0328",
        "S: 09 07 0200 1a 0300 372a 0400 02 0500 382a",
        "C: 08 0500 1000 0328",
        "S: 09 15 0600 10 0700 \(gattScriptUUID128Hex)",
        "C: 08 0700 1000 0328",
        "S: 01 08 0700 0a",
    ]

    func testGAD_CL_BV_04_C_discoverAllCharacteristics() {
        let service = GATTService(uuid: BluetoothUUID(0x180D), handleRange: 0x0001...0x0010)
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(service: service), characteristicScript)
        XCTAssertEqual(outcome.result, .success(.characteristics([
            GATTCharacteristic(uuid: BluetoothUUID(0x2A37), declarationHandle: 2, valueHandle: 3,
                               properties: [.read, .write, .notify], endHandle: 3),
            GATTCharacteristic(uuid: BluetoothUUID(0x2A38), declarationHandle: 4, valueHandle: 5,
                               properties: [.read], endHandle: 5),
            GATTCharacteristic(uuid: gattScriptUUID128, declarationHandle: 6, valueHandle: 7,
                               properties: [.notify], endHandle: 0x10),
        ])))
    }

    func testGAD_CL_BV_05_C_discoverCharacteristicsByUUID() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0x0001...0x0010, uuid: BluetoothUUID(0x2A38)),
                                          characteristicScript)
        // The end handle still comes from the next declaration, whatever its UUID.
        XCTAssertEqual(outcome.result, .success(.characteristics([
            GATTCharacteristic(uuid: BluetoothUUID(0x2A38), declarationHandle: 4, valueHandle: 5,
                               properties: [.read], endHandle: 5),
        ])))
    }

    func testGAD_discoverCharacteristics_badDeclarationLengthIsMalformed() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0x0001...0x0010), [
            "C: 08 0100 1000 0328",
            "S: 09 06 0200 1a 0300 37",
        ])
        guard case .malformedResponse? = outcome.result?.gattError else {
            return XCTFail("expected malformed, got \(String(describing: outcome.result))")
        }
    }

    func testGAD_discoverCharacteristics_lastAtRangeEndStops() {
        let outcome = runGATTClientScript(DiscoverCharacteristicsProcedure(range: 0x0001...0x0003), [
            "C: 08 0100 0300 0328",
            "S: 09 07 0200 02 0300 372a",
            "C: 08 0300 0300 0328",
            "S: 01 08 0300 0a",
        ])
        XCTAssertEqual(outcome.result?.gattOutput?.characteristics?.map(\.endHandle), [3])
    }

    // MARK: GAD — Discover All Characteristic Descriptors (§4.7.1)

    func testGAD_CL_BV_06_C_discoverAllDescriptors() {
        let characteristic = GATTCharacteristic(uuid: BluetoothUUID(0x2A37), declarationHandle: 2, valueHandle: 3,
                                                properties: [.notify], endHandle: 6)
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(characteristic: characteristic), [
            "C: 04 0400 0600",
            "S: 05 01 0400 0229 0500 0129",
            "C: 04 0600 0600",
            "S: 05 02 0600 \(gattScriptUUID128Hex)",
        ])
        XCTAssertEqual(outcome.result, .success(.descriptors([
            GATTDescriptor(handle: 4, uuid: GATTUUID.clientCharacteristicConfiguration),
            GATTDescriptor(handle: 5, uuid: GATTUUID.characteristicUserDescription),
            GATTDescriptor(handle: 6, uuid: gattScriptUUID128),
        ])))
    }

    func testGAD_discoverDescriptors_endsOnAttributeNotFound() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0004...0x0010), [
            "C: 04 0400 1000",
            "S: 05 01 0400 0229",
            "C: 04 0500 1000",
            "S: 01 04 0500 0a",
        ])
        XCTAssertEqual(outcome.result, .success(.descriptors([GATTDescriptor(handle: 4, uuid: BluetoothUUID(0x2902))])))
    }

    func testGAD_discoverDescriptors_noRoomSendsNothing() {
        let characteristic = GATTCharacteristic(uuid: BluetoothUUID(0x2A38), declarationHandle: 4, valueHandle: 5,
                                                properties: [.read], endHandle: 5)
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(characteristic: characteristic), [])
        XCTAssertEqual(outcome.result, .success(.descriptors([])))
    }

    func testGAD_discoverDescriptors_badFormatIsMalformed() {
        let outcome = runGATTClientScript(DiscoverDescriptorsProcedure(range: 0x0004...0x0010), ["C: 04 0400 1000", "S: 05 03 0400 0229"])
        guard case .malformedResponse? = outcome.result?.gattError else {
            return XCTFail("expected malformed, got \(String(describing: outcome.result))")
        }
    }

    // MARK: Model types

    func testModelTypes() {
        XCTAssertEqual(CharacteristicProperties(rawValue: 0x1A).description, "[read, write, notify]")
        XCTAssertEqual(CharacteristicProperties(rawValue: 0xFF).names.count, 8)
        XCTAssertEqual(GATTUUID.serviceChanged, BluetoothUUID(0x2A05))
        XCTAssertEqual(ClientCharacteristicConfiguration.indications.bytes, [0x02, 0x00])
        XCTAssertEqual(try GATTServiceChanged.affectedRange([0x01, 0x00, 0xFF, 0xFF]), 0x0001...0xFFFF)
        XCTAssertThrowsError(try GATTServiceChanged.affectedRange([0x05, 0x00, 0x01, 0x00]))
        XCTAssertThrowsError(try GATTServiceChanged.affectedRange([0x05, 0x00]))
        let c = GATTCharacteristic(uuid: BluetoothUUID(0x2A37), declarationHandle: 2, valueHandle: 0xFFFF,
                                   properties: [], endHandle: 0xFFFF)
        XCTAssertNil(c.descriptorRange)
    }
}

import BLEVirtual
import CoreBluetooth
import XCTest

/// `advertisementData` beyond the name and service UUIDs: every key Apple documents for what a
/// legacy advertisement and its scan response can carry.
final class AdvertisementDataTests: XCTestCase {
    func testEveryAdvertisedFieldArrivesUnderApplesKeys() throws {
        let name = "CBAdv-\(UInt16.random(in: 0...0xFFFF))"
        let (manager, device) = try blocking { try await VirtualWorld.shared.addPeripheralManager(name: name) }
        defer { try? blocking { await VirtualWorld.shared.radio.remove(device.id); await manager.close() } }
        let advertisement = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
            .serviceUUIDs(["ADD0"]).txPowerLevel(-8).manufacturerData(companyID: 0x004C, data: [0x02, 0x15]).build()
        let response = AdvertisingData.Builder().localName(name).serviceData("ADD1", [0x2A, 0x2B])
            .solicitedServiceUUIDs(["ADD2"]).build()
        try blocking {
            try await manager.startAdvertising(advertisement, scanResponse: response,
                                               parameters: AdvertisingParameters(kind: .scannable))
        }

        let recorder = Recorder(queue: nil)
        let central = CBCentralManager(delegate: recorder, queue: nil, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [CBUUID(string: "ADD0")])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let data = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.data)

        XCTAssertEqual(data[CBAdvertisementDataLocalNameKey] as? String, name)
        XCTAssertEqual(data[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID], [CBUUID(string: "ADD0")])
        XCTAssertEqual((data[CBAdvertisementDataTxPowerLevelKey] as? NSNumber)?.intValue, -8)
        XCTAssertEqual(data[CBAdvertisementDataManufacturerDataKey] as? Data, Data([0x4C, 0x00, 0x02, 0x15]),
                       "the company identifier, little-endian, then the data")
        XCTAssertEqual(data[CBAdvertisementDataServiceDataKey] as? [CBUUID: Data], [CBUUID(string: "ADD1"): Data([0x2A, 0x2B])])
        XCTAssertEqual(data[CBAdvertisementDataSolicitedServiceUUIDsKey] as? [CBUUID], [CBUUID(string: "ADD2")])
        XCTAssertEqual((data[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue, false, "a scannable advertisement")
        XCTAssertNil(data[CBAdvertisementDataOverflowServiceUUIDsKey], "only iOS background advertisers have an overflow area")
        let timestamp = try XCTUnwrap(data["kCBAdvDataTimestamp"] as? Double)
        XCTAssertEqual(timestamp, Date().timeIntervalSinceReferenceDate, accuracy: 60)
        XCTAssertEqual(Set(data.keys), [CBAdvertisementDataLocalNameKey, CBAdvertisementDataServiceUUIDsKey,
                                        CBAdvertisementDataTxPowerLevelKey, CBAdvertisementDataManufacturerDataKey,
                                        CBAdvertisementDataServiceDataKey, CBAdvertisementDataSolicitedServiceUUIDsKey,
                                        CBAdvertisementDataIsConnectable, "kCBAdvDataTimestamp"])
    }
}

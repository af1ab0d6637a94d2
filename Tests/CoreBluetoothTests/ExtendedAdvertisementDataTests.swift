import BLE
import CoreBluetooth
import Foundation
import XCTest

/// An extended advertisement reaches `didDiscover` whole, as on iOS with a Bluetooth 5
/// controller: a `CBCentralManager` on rootcanal (which has the extended commands) hears our own
/// advertising set with 300 octets of manufacturer data, and `advertisementData` holds all of
/// them. Needs rootcanal (`scripts/test.sh` sets `BLE_TEST_ROOTCANAL`); skipped without it.
final class ExtendedAdvertisementDataTests: XCTestCase {
    func testLongExtendedDataArrivesWholeInAdvertisementData() throws {
        guard let rootcanal = ProcessInfo.processInfo.environment["BLE_TEST_ROOTCANAL"], !rootcanal.isEmpty else {
            throw XCTSkip("needs rootcanal: BLE_TEST_ROOTCANAL is not set (scripts/test.sh sets it)")
        }
        let name = "CBExt\(UInt16.random(in: 0...0xFFFF))"
        let payload = (0..<200).map { UInt8(truncatingIfNeeded: $0) }
        // Two structures: one AD structure holds at most 254 octets of data.
        let data = AdvertisingData.Builder().localName(name).manufacturerData(companyID: 0x0059, data: payload)
            .serviceData("FEAA", Array(repeating: 0x5A, count: 80)).build()
        let random = BDAddress(rawValue: 0xC7_00_00_00_00_00 | UInt64.random(in: 1...0xFF_FFFF))
        let manager = try blocking { try await PeripheralManager.open(spec: rootcanal, address: .staticRandom(random)) }
        defer { try? blocking { await manager.close() } }
        _ = try blocking { try await manager.startAdvertisingSet(data) }

        let recorder = Recorder(queue: nil)
        let central = CBCentralManager(delegate: recorder, queue: nil, options: [SwiftBLEManagerOptionHCIKey: rootcanal])
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: nil)
        wait("discovery") { recorder.discoveries.contains { $0.data[CBAdvertisementDataLocalNameKey] as? String == name } }
        central.stopScan()
        let found = try XCTUnwrap(recorder.discoveries.first { $0.data[CBAdvertisementDataLocalNameKey] as? String == name }?.data)
        XCTAssertEqual(found[CBAdvertisementDataManufacturerDataKey] as? Data, Data([0x59, 0x00] + payload))
        XCTAssertEqual(found[CBAdvertisementDataServiceDataKey] as? [CBUUID: Data], [CBUUID(string: "FEAA"): Data(repeating: 0x5A, count: 80)])
        XCTAssertEqual((found[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue, false)
        XCTAssertTrue(CBCentralManager.supports(.extendedScanAndConnect), "rootcanal has the extended commands")
    }
}

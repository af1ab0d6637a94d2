import BLEVirtual
import CoreBluetooth
import XCTest

/// `didDiscover` comes with the scan response merged, as on iOS, even when scan requests are lost
/// and the answer is reported after the peripheral's next advertisement (the shared virtual
/// radio's scan-response faults): a peripheral whose name is only in its scan response has it
/// in `peripheral.name` and `advertisementData` at its first discovery, and keeps it.
final class DiscoveryScanResponseTests: XCTestCase {
    func testTheFirstDiscoveryHasTheNameFromALateScanResponseAfterLostRequests() throws {
        let name = "CBLate-\(UInt16.random(in: 0...0xFFFF))"
        let service = CBUUID(string: UUID().uuidString)
        let (manager, device) = try blocking { try await VirtualWorld.shared.addPeripheralManager(name: name) }
        defer { try? blocking { await VirtualWorld.shared.radio.remove(device.id); await manager.close() } }
        let advertisement = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
            .serviceUUIDs([try XCTUnwrap(BluetoothUUID(string: service.uuidString))]).build()
        try blocking {
            await VirtualWorld.shared.radio.setScanResponseFault(device.id, VirtualMedium.ScanResponseFault(lostRequests: [0, 1], lateByEvents: 1))
            try await manager.startAdvertising(advertisement, scanResponse: AdvertisingData.Builder().localName(name).build())
        }

        let queue = DispatchQueue(label: "cb.discovery")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: CentralRoleTests.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [service])
        wait("the first discovery") { !recorder.discoveries.isEmpty }
        let first = try XCTUnwrap(recorder.discoveries.first)
        XCTAssertEqual(recorder.events.first { $0.hasPrefix("discover ") }, "discover \(name)", "\(recorder.events)")
        XCTAssertEqual(first.data[CBAdvertisementDataLocalNameKey] as? String, name)
        XCTAssertEqual(first.data[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID], [service])

        // The peer drops the name from its scan response: the name known stays.
        let before = recorder.discoveries.count
        try blocking {
            try await manager.stopAdvertising()
            try await manager.startAdvertising(advertisement, scanResponse: AdvertisingData.Builder().txPowerLevel(4).build())
        }
        wait("the discovery without the name") {
            recorder.discoveries.dropFirst(before).contains { $0.data[CBAdvertisementDataLocalNameKey] == nil }
        }
        central.stopScan()
        XCTAssertEqual(recorder.discoveries.last?.peripheral.name, name)
        XCTAssertEqual(recorder.callbacksOffQueue, [])
    }
}

import BLEVirtual
import CoreBluetooth
import XCTest

/// `peripheralDidUpdateName(_:)`: Apple calls it when a peripheral's name changes; here the name
/// comes from the advertised local name and from a read of the GAP Device Name (Core spec Vol 3
/// Part C §12.1), and the new name is in `peripheral.name` when the callback runs.
final class PeripheralNameTests: XCTestCase {
    /// A peripheral whose GAP Device Name is `gapName` and whose scan response says `advertised`.
    static func start(gapName: String, advertised: String) async throws -> (PeripheralManager, VirtualDevice) {
        let (manager, device) = try await VirtualWorld.shared.addPeripheralManager(name: gapName)
        try await advertise(manager, name: advertised)
        return (manager, device)
    }

    static func advertise(_ manager: PeripheralManager, name: String) async throws {
        try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
            .serviceUUIDs(["FFF0"]).build(),
            scanResponse: AdvertisingData.Builder().localName(name).build())
    }

    func testANewAdvertisedNameAndADeviceNameReadUpdateTheName() throws {
        let tag = UInt16.random(in: 0...0xFFFF)
        let (first, second, gap) = ("CBNameA-\(tag)", "CBNameB-\(tag)", "CBGap-\(tag)")
        let (manager, device) = try blocking { try await Self.start(gapName: gap, advertised: first) }
        defer { try? blocking { await VirtualWorld.shared.radio.remove(device.id); await manager.close() } }
        let queue = DispatchQueue(label: "cb.name")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: CentralRoleTests.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [CBUUID(string: "FFF0")])
        wait("discovery of \(first)") { recorder.discoveries.contains { $0.peripheral.name == first } }
        let peripheral = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == first }?.peripheral)
        peripheral.delegate = recorder
        XCTAssertFalse(recorder.events.contains { $0.hasPrefix("name ") }, "no change yet: \(recorder.events)")

        // The peer advertises a new name: the callback, with the new name already set, then the discovery.
        try blocking {
            try await manager.stopAdvertising()
            try await Self.advertise(manager, name: second)
        }
        wait("the new name and its discovery") { recorder.events.contains("name \(second)") && recorder.events.contains("discover \(second)") }
        central.stopScan()
        let renamed = recorder.events.drop { $0 != "name \(second)" }
        XCTAssertEqual(renamed.dropFirst().first, "discover \(second)", "the name callback comes before the discovery: \(recorder.events)")
        XCTAssertEqual(recorder.count("name \(second)"), 1)

        // A read of the GAP Device Name: the name follows it, before didUpdateValueFor.
        central.connect(peripheral)
        wait("didConnect") { recorder.events.contains("connect") }
        peripheral.discoverServices([CBUUID(string: "1800")])
        wait("GAP service") { recorder.events.contains("services") }
        let gapService = try XCTUnwrap(peripheral.services?.first { $0.uuid == CBUUID(string: "1800") })
        peripheral.discoverCharacteristics([CBUUID(string: "2A00")], for: gapService)
        wait("Device Name characteristic") { recorder.events.contains("characteristics 1800") }
        let deviceName = try XCTUnwrap(gapService.characteristics?.first { $0.uuid == CBUUID(string: "2A00") })
        peripheral.readValue(for: deviceName)
        wait("the read") { recorder.events.contains("value 2A00") }
        XCTAssertEqual(peripheral.name, gap)
        let read = recorder.events.drop { $0 != "name \(gap)" }
        XCTAssertEqual(Array(read.prefix(2)), ["name \(gap)", "value 2A00"], "\(recorder.events)")

        // Reading the same name again is no change.
        peripheral.readValue(for: deviceName)
        wait("the second read") { recorder.count("value 2A00") == 2 }
        XCTAssertEqual(recorder.count("name \(gap)"), 1)
        central.cancelPeripheralConnection(peripheral)
        wait("didDisconnect") { recorder.events.contains("disconnect") }
        XCTAssertEqual(recorder.callbacksOffQueue, [])
    }
}

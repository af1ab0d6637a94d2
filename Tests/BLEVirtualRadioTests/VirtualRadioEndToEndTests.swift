import BLE
import BLEHCI
import BLEHost
import BLEVirtualRadio
import BLEWire
import XCTest

/// Two unmodified host stacks on one virtual radio, in virtual time: a peripheral advertises a
/// readable characteristic; a central finds it by name, connects, discovers, reads, disconnects;
/// the peripheral sees the disconnect with the reason the central gave.
final class VirtualRadioEndToEndTests: XCTestCase {
    func testCentralFindsConnectsReadsAndDisconnectsFromAPeripheral() async throws {
        try await VirtualTime.run { time in
            let radio = VirtualRadio(clock: time)
            let peripheralAddress = BDAddress(rawValue: 0x00_1B_DC_00_00_01)
            let centralAddress = BDAddress(rawValue: 0x00_1B_DC_00_00_02)

            let peripheralHost = try await Central.open(transport: await radio.makeController(address: peripheralAddress), clock: time)
            let info = peripheralHost.controllerInfo
            XCTAssertEqual(info.address, peripheralAddress)
            let manager = PeripheralManager(sharingControllerWith: peripheralHost)
            let events = await manager.events
            let serviceUUID = BluetoothUUID(0x180F)
            let characteristicUUID = BluetoothUUID(0x2A19)
            let longUUID = BluetoothUUID(0x2A29)
            // Longer than one 27-byte ACL buffer and than the default ATT MTU: fragmentation both ways
            // and a long read.
            let longValue = (0..<120).map { UInt8($0) }
            try await manager.add(GATTServiceDefinition(uuid: serviceUUID, characteristics: [
                GATTCharacteristicDefinition(uuid: characteristicUUID, properties: [.read], permissions: [.read], value: [42]),
                GATTCharacteristicDefinition(uuid: longUUID, properties: [.read], permissions: [.read], value: longValue),
            ]))
            let advertisement = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("VRTest").build()
            try await manager.startAdvertising(advertisement, parameters: AdvertisingParameters(interval: .milliseconds(20)))

            let central = try await Central.open(transport: await radio.makeController(address: centralAddress), clock: time)
            XCTAssertEqual(central.controllerInfo.address, centralAddress)
            let found = try await central.find(filter: ScanFilter(nameContains: "VRTest"), timeout: .seconds(5))
            XCTAssertEqual(found.address, DeviceAddress(peripheralAddress, type: .public))
            XCTAssertEqual(found.rssi, -40, "0 dBm at the 1 m minimum distance: 40 dB path loss")
            XCTAssertTrue(found.isConnectable)

            let peripheral = try await central.connect(found.address, timeout: .seconds(5))
            let services = try await peripheral.discoverServices([serviceUUID])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics([characteristicUUID], for: service)
            let characteristic = try XCTUnwrap(characteristics.first)
            let value = try await peripheral.readValue(for: characteristic)
            XCTAssertEqual(value, [42])
            let all = try await peripheral.discoverCharacteristics(nil, for: service)
            let long = try XCTUnwrap(all.first { $0.uuid == longUUID })
            let longRead = try await peripheral.readValue(for: long)
            XCTAssertEqual(longRead, longValue)

            try await peripheral.disconnect()
            var iterator = events.makeAsyncIterator()
            var connectedSeen = false
            var reason: HCIStatus?
            while let e = await iterator.next() {
                if case let .connected(c) = e {
                    connectedSeen = true
                    XCTAssertEqual(c.address, DeviceAddress(centralAddress, type: .public))
                }
                if case let .disconnected(_, r) = e { reason = r; break }
            }
            XCTAssertTrue(connectedSeen)
            XCTAssertEqual(reason, .remoteUserTerminatedConnection)

            await central.close()
            await manager.close()
            await radio.shutdown()
        }
    }

    func testConnectingToAnAbsentDeviceTimesOutAndTheRadioStaysUsable() async throws {
        try await VirtualTime.run { time in
            let radio = VirtualRadio(clock: time)
            let central = try await Central.open(transport: await radio.makeController(), clock: time)
            let absent = DeviceAddress(BDAddress(rawValue: 0xC0_DE_AD_00_00_01), type: .random)
            do {
                _ = try await central.connect(absent, timeout: .milliseconds(200))
                XCTFail("connected to nobody")
            } catch {
                // The host cancels at its deadline; the controller ends the attempt (status 0x02).
            }
            let initiating = await radio.controller(0)?.initiation
            XCTAssertNil(initiating, "LE Create Connection Cancel stopped the initiator")

            // A peripheral appearing afterwards is found and connected to.
            let manager = try await PeripheralManager.open(transport: await radio.makeController(), address: .staticRandom(BDAddress(rawValue: 0xC1_00_00_00_00_07)), clock: time)
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Late").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let found = try await central.find(filter: ScanFilter(nameContains: "Late"), timeout: .seconds(5))
            XCTAssertEqual(found.address, DeviceAddress(BDAddress(rawValue: 0xC1_00_00_00_00_07), type: .random))
            let peripheral = try await central.connect(found.address, timeout: .seconds(5))
            XCTAssertEqual(peripheral.state, .connected)
            try await peripheral.disconnect()
            await central.close()
            await manager.close()
            await radio.shutdown()
        }
    }
}

import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEVirtualRadio
import BLEWire
import Synchronization
import XCTest

/// `PeripheralManager.updateValueWaiting(forHandle:makingValue:)`: the value is made when it is
/// queued, so after a wait for room the central gets what is current then.
final class UpdateValueMakingTests: XCTestCase {
    final class Counter: Sendable {
        let value = Mutex(0)
        func next() -> Int { value.withLock { $0 += 1; return $0 } }
    }

    func testAfterAWaitForRoomTheValueIsMadeAgain() async throws {
        try await VirtualWorld.run { world in
            var slow = VirtualControllerConfiguration()
            slow.maximumPDUsPerConnectionEvent = 1
            let (manager, _) = try await world.addPeripheralManager(name: "World", controller: slow)
            let handles = try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF2), properties: [.notify], permissions: [.read], value: [0]),
            ]))
            let handle = try XCTUnwrap(handles.valueHandle(for: BluetoothUUID(0xFFF2)))
            try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("World").build())
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "World"), timeout: .seconds(10))
            let peripheral = try await central.connect(found.address)
            let services = try await peripheral.discoverServices([BluetoothUUID(0xFFF0)])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics(nil, for: service)
            let characteristic = try XCTUnwrap(characteristics.first)
            let values = await peripheral.notifications(for: characteristic)
            try await peripheral.setNotifyValue(true, for: characteristic)

            var queued = 0
            while await manager.updateValue([0xFF], forHandle: handle) != .queueFull { queued += 1 }
            let made = Counter()
            let sent = try await manager.updateValueWaiting(forHandle: handle) { [UInt8(made.next())] }
            XCTAssertEqual(sent, 1)
            let attempts = made.value.withLock { $0 }
            XCTAssertGreaterThanOrEqual(attempts, 2, "made once when the queue was full, again when there was room")

            var received: [[UInt8]] = []
            for await value in values {
                received.append(value)
                if received.count == queued + 1 { break }
            }
            XCTAssertEqual(received.last, [UInt8(attempts)], "the value made last is the one sent")
            XCTAssertEqual(received.dropLast(), ArraySlice([[UInt8]](repeating: [0xFF], count: queued)))
            try await peripheral.disconnect()
            await central.close()
            await manager.close()
        }
    }
}

@testable import BLE
import BLEVirtual
import XCTest

/// Notification streams an application lets go of are forgotten even when their value never
/// notifies again (client review finding 1): they were dropped only at their own value's next
/// notification, so opening and dropping streams grew the link's list for ever, and every
/// notification of any value scanned it.
final class NotificationSinkCleanupWorldTests: XCTestCase {
    func testStreamsLetGoOfAreForgottenWhenTheNextIsOpened() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let (manager, device) = try await world.addPeripheralManager(name: "Sinks")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Sinks").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (c, _) = try await world.addCentral()
            let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            let kept = await p.notifications(valueHandle: 0x0003)
            for _ in 0..<20 {
                let dropped = await p.notifications(valueHandle: 0x0005)
                _ = dropped
            }
            let last = await p.notifications(valueHandle: 0x0005)
            let count = await p.host.run { [linkID = p.linkID] in $0.client.notificationSinkCount(onLink: linkID, $0) }
            XCTAssertEqual(count, 2, "the kept stream and the last one; the 20 dropped are gone")
            _ = (kept, last)
            await c.close()
            await manager.close()
        }
    }

    /// Several consumers of one value each get every notification, in order, beside a dropped
    /// one and a consumer of another value (client review finding 5: the sinks became one list
    /// per link).
    func testEveryLiveConsumerOfAValueGetsEveryNotificationInOrder() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let (manager, device) = try await world.addPeripheralManager(name: "Many")
            let handles = try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBE60), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xBE61), properties: [.notify], permissions: [.read], value: [0]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xBE62), properties: [.notify], permissions: [.read], value: [0]),
            ]))
            let events = await manager.events
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Many").build(),
                                               parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (c, _) = try await world.addCentral()
            let p = try await c.connect(DeviceAddress(device.address, type: .public), timeout: .seconds(5))
            let service = try await p.discoverServices([BluetoothUUID(0xBE60)]).first
            let found = try await p.discoverCharacteristics(nil, for: XCTUnwrap(service))
            let a = try XCTUnwrap(found.first { $0.uuid == BluetoothUUID(0xBE61) })
            let b = try XCTUnwrap(found.first { $0.uuid == BluetoothUUID(0xBE62) })
            let first = await p.notifications(for: a)
            do { let dropped = await p.notifications(for: a); _ = dropped }
            let second = await p.notifications(for: a)
            let other = await p.notifications(for: b)
            try await p.setNotifyValue(true, for: a)
            try await p.setNotifyValue(true, for: b)
            var subscribed = 0
            for await e in events {
                if case .subscriptionChanged(_, _, true, _) = e { subscribed += 1 }
                if subscribed == 2 { break }
            }
            let valueA = try XCTUnwrap(handles[BluetoothUUID(0xBE61)]?.valueHandle)
            let valueB = try XCTUnwrap(handles[BluetoothUUID(0xBE62)]?.valueHandle)
            for v: UInt8 in 1...3 {
                _ = await manager.updateValue([v], forHandle: valueA)
                _ = await manager.updateValue([0x80 | v], forHandle: valueB)
            }
            func take(_ s: NotificationStream, _ n: Int) async -> [[UInt8]] {
                var got: [[UInt8]] = []
                for await v in s {
                    got.append(v)
                    if got.count == n { break }
                }
                return got
            }
            let gotFirst = await take(first, 3)
            let gotSecond = await take(second, 3)
            let gotOther = await take(other, 3)
            XCTAssertEqual(gotFirst, [[1], [2], [3]])
            XCTAssertEqual(gotSecond, [[1], [2], [3]])
            XCTAssertEqual(gotOther, [[0x81], [0x82], [0x83]])
            await c.close()
            await manager.close()
        }
    }
}

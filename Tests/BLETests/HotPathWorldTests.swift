import BLERuntime
import BLEVirtual
import BLE
import BLEHCI
import BLEHost
import BLEVirtualRadio
import BLEWire
import XCTest

/// The notification and write paths end to end on the virtual radio, in virtual
/// time, with the controllers' 27-byte LE ACL buffers (every 244-byte value is ten ACL
/// fragments each way): values arrive whole and in order, fragments of two links interleave
/// without mixing, Write Without Response keeps its order, and a full controller holds the
/// server's bounded queue back until it drains.
final class HotPathWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFE10)
    static let stream = BluetoothUUID(0xFE11)
    static let inbox = BluetoothUUID(0xFE12)

    /// 27-byte ACL buffers, as controllers without LE Data Length Extension give.
    static var small: VirtualControllerConfiguration {
        var c = VirtualControllerConfiguration()
        c.leACLBufferLength = 27
        return c
    }

    /// A value of `size` bytes that says which one it is: its index in the first two bytes, then
    /// a pattern that depends on it, so a fragment in the wrong place changes the bytes.
    static func value(_ index: Int, size: Int = 244) -> [UInt8] {
        [UInt8(index & 0xFF), UInt8(index >> 8)] + (2..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
    }

    struct Rig {
        let manager: PeripheralManager
        let peripheralDevice: VirtualDevice
        let streamHandle: UInt16
        let inboxHandle: UInt16
    }

    static func peripheral(_ world: VirtualWorld) async throws -> Rig {
        let (manager, device) = try await world.addPeripheralManager(name: "Hot", controller: small)
        let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: stream, properties: [.notify, .indicate], permissions: [.read], value: [0]),
            GATTCharacteristicDefinition(uuid: inbox, properties: [.writeWithoutResponse], permissions: [.write], value: [0]),
        ]))
        let streamHandle = try XCTUnwrap(handles.valueHandle(for: stream))
        let inboxHandle = try XCTUnwrap(handles.valueHandle(for: inbox))
        try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("Hot").build(),
                                           parameters: AdvertisingParameters(interval: .milliseconds(20)))
        return Rig(manager: manager, peripheralDevice: device, streamHandle: streamHandle, inboxHandle: inboxHandle)
    }

    /// A central on 27-byte buffers, connected with ATT_MTU 517 asked for (so a 244-byte value
    /// fits one PDU), the stream characteristic found.
    static func central(_ world: VirtualWorld) async throws -> (Central, Peripheral, GATTCharacteristic, GATTCharacteristic) {
        let (central, _) = try await world.addCentral(controller: small)
        let advertiser = try await central.find(filter: ScanFilter(nameContains: "Hot"), timeout: .seconds(10))
        let peripheral = try await central.connect(advertiser.address)
        _ = try await peripheral.exchangeMTU(517)
        let services = try await peripheral.discoverServices([Self.service])
        let found = try XCTUnwrap(services.first)
        let characteristics = try await peripheral.discoverCharacteristics(nil, for: found)
        let streamCharacteristic = try XCTUnwrap(characteristics.first { $0.uuid == Self.stream })
        let inboxCharacteristic = try XCTUnwrap(characteristics.first { $0.uuid == Self.inbox })
        return (central, peripheral, streamCharacteristic, inboxCharacteristic)
    }

    func testNotificationsReassembledFromTenFragmentsEachArriveWholeAndInOrder() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let rig = try await Self.peripheral(world)
            let (central, peripheral, stream, _) = try await Self.central(world)
            let values = await peripheral.notifications(for: stream)
            try await peripheral.setNotifyValue(true, for: stream)
            let count = 300
            let sender = Task(executorPreference: world.clock.taskExecutor) {
                for i in 0..<count { try await rig.manager.updateValueWaiting(Self.value(i), forHandle: rig.streamHandle) }
            }
            var received = 0
            for await v in values {
                XCTAssertEqual(v, Self.value(received), "value \(received)")
                received += 1
                if received == count { break }
            }
            try await sender.value
            XCTAssertEqual(received, count)
            try await peripheral.disconnect()
            await central.close()
            await rig.manager.close()
        }
    }

    func testIndicationsWithSmallBuffersArriveWholeAndInOrder() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let rig = try await Self.peripheral(world)
            let (central, peripheral, stream, _) = try await Self.central(world)
            let values = await peripheral.notifications(for: stream)
            // Indications only: the CCCD's indication bit.
            guard let cccd = try await peripheral.discoverDescriptors(for: stream).first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else {
                throw BLEError.invalidArgument("no CCCD")
            }
            try await peripheral.writeValue([0x02, 0x00], handle: cccd.handle)
            let count = 40
            let sender = Task(executorPreference: world.clock.taskExecutor) {
                for i in 0..<count { try await rig.manager.updateValueWaiting(Self.value(i), forHandle: rig.streamHandle) }
            }
            var received = 0
            for await v in values {
                XCTAssertEqual(v, Self.value(received), "indication \(received)")
                received += 1
                if received == count { break }
            }
            try await sender.value
            try await peripheral.disconnect()
            await central.close()
            await rig.manager.close()
        }
    }

    /// Two centrals on one peripheral: the peripheral's controller takes the fragments of both
    /// links round-robin, so they interleave on the way out; each central gets its own values
    /// whole and in order.
    func testFragmentsOfTwoLinksInterleaveWithoutMixing() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let rig = try await Self.peripheral(world)
            let (centralA, peripheralA, streamA, _) = try await Self.central(world)
            // Advertising goes on while connected (the default), so a second central finds it.
            let (centralB, peripheralB, streamB, _) = try await Self.central(world)
            let valuesA = await peripheralA.notifications(for: streamA)
            let valuesB = await peripheralB.notifications(for: streamB)
            try await peripheralA.setNotifyValue(true, for: streamA)
            try await peripheralB.setNotifyValue(true, for: streamB)
            let count = 120
            let sender = Task(executorPreference: world.clock.taskExecutor) {
                for i in 0..<count {
                    let n = try await rig.manager.updateValueWaiting(Self.value(i), forHandle: rig.streamHandle)
                    XCTAssertEqual(n, 2, "queued for both centrals")
                }
            }
            for values in [valuesA, valuesB] {
                var received = 0
                for await v in values {
                    XCTAssertEqual(v, Self.value(received))
                    received += 1
                    if received == count { break }
                }
                XCTAssertEqual(received, count)
            }
            try await sender.value
            try await peripheralA.disconnect()
            try await peripheralB.disconnect()
            await centralA.close()
            await centralB.close()
            await rig.manager.close()
        }
    }

    func testWritesWithoutResponseFromTenFragmentsEachArriveInOrder() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let rig = try await Self.peripheral(world)
            let events = await rig.manager.events
            let (central, peripheral, _, inbox) = try await Self.central(world)
            let count = 200
            let writer = Task(executorPreference: world.clock.taskExecutor) {
                for i in 0..<count { try await peripheral.writeValue(Self.value(i, size: 240), for: inbox, type: .withoutResponse) }
            }
            var received = 0
            for await event in events {
                guard case let .valueWritten(_, handle, value) = event, handle == rig.inboxHandle else { continue }
                XCTAssertEqual(value, Self.value(received, size: 240), "write \(received)")
                received += 1
                if received == count { break }
            }
            try await writer.value
            XCTAssertEqual(received, count)
            try await peripheral.disconnect()
            await central.close()
            await rig.manager.close()
        }
    }

    /// The peripheral's HCI path stalls (its controller takes nothing more): ACL credits run
    /// out, the host keeps only a couple of PDUs waiting for them, and the server's bounded queue
    /// fills until `updateValue` says `.queueFull`. Once the path resumes, everything queued
    /// arrives in order and the ready signal follows.
    func testAFullControllerHoldsTheQueueBackUntilItDrains() async throws {
        try await VirtualWorld.run(airTimeModel: false) { world in
            let rig = try await Self.peripheral(world)
            let events = await rig.manager.events
            let (central, peripheral, stream, _) = try await Self.central(world)
            let values = await peripheral.notifications(for: stream)
            try await peripheral.setNotifyValue(true, for: stream)
            for await event in events {
                if case .subscriptionChanged(_, _, true, _) = event { break }
            }
            await world.radio.stallHCI(rig.peripheralDevice.id)
            var queued = 0
            while await rig.manager.updateValue(Self.value(queued), forHandle: rig.streamHandle) != .queueFull {
                queued += 1
                XCTAssertLessThan(queued, 1_000, "the queue is bounded")
                if queued >= 1_000 { break }
            }
            XCTAssertGreaterThan(queued, 0)
            await world.radio.resumeHCI(rig.peripheralDevice.id)
            var received = 0
            for await v in values {
                XCTAssertEqual(v, Self.value(received))
                received += 1
                if received == queued { break }
            }
            XCTAssertEqual(received, queued)
            var ready = false
            for await event in events {
                if case .readyToUpdateSubscribers = event { ready = true; break }
            }
            XCTAssertTrue(ready)
            try await peripheral.disconnect()
            await central.close()
            await rig.manager.close()
        }
    }
}

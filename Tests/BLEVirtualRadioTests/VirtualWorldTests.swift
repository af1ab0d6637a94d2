import BLERuntime
import BLEVirtual
import BLE
import BLEHCI
import BLEHost
import BLEVirtualRadio
import BLEWire
import XCTest

/// Both roles of the unmodified host stack on the virtual radio, in virtual time: the everyday
/// flows, and the faults (link loss during a long read, a long write and discovery; a controller
/// reset; a device out of range while scanning; power off; a slow or stalled HCI path).
final class VirtualWorldTests: XCTestCase {
    static let service = BluetoothUUID(0xFFF0)
    static let long = BluetoothUUID(0xFFF1)
    static let notify = BluetoothUUID(0xFFF2)
    static let longValue = (0..<512).map { UInt8($0 % 251) }

    /// A peripheral named "World" with a long readable/writable value and a notifying one, many
    /// services for a long discovery, advertising every 20 ms.
    static func peripheral(_ world: VirtualWorld, extraServices: Int = 0) async throws -> (PeripheralManager, VirtualDevice, GATTServiceHandles) {
        let (manager, device) = try await world.addPeripheralManager(name: "World")
        let handles = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: long, properties: [.read, .write], permissions: [.read, .write], value: longValue),
            GATTCharacteristicDefinition(uuid: notify, properties: [.notify], permissions: [.read], value: [0]),
        ]))
        for i in 0..<extraServices {
            try await manager.add(GATTServiceDefinition(uuid: BluetoothUUID(UInt16(0xA000 + i)), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(UInt16(0xB000 + i)), properties: [.read], permissions: [.read], value: [UInt8(i)]),
            ]))
        }
        let ad = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("World").build()
        try await manager.startAdvertising(ad, parameters: AdvertisingParameters(interval: .milliseconds(20)))
        return (manager, device, handles)
    }

    static func connect(_ central: Central) async throws -> (Peripheral, GATTCharacteristic, GATTCharacteristic) {
        let found = try await central.find(filter: ScanFilter(nameContains: "World"), timeout: .seconds(10))
        let peripheral = try await central.connect(found.address, timeout: .seconds(10))
        guard let service = try await peripheral.discoverServices([service]).first else { throw BLEError.notConnected }
        let characteristics = try await peripheral.discoverCharacteristics(nil, for: service)
        guard let long = characteristics.first(where: { $0.uuid == long }),
              let notify = characteristics.first(where: { $0.uuid == notify }) else { throw BLEError.notConnected }
        return (peripheral, long, notify)
    }

    func testVirtualTimeJumpsStraightToTheNextDeadline() async throws {
        let order = try await VirtualTime.run { time -> [Int] in
            try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                for (i, seconds) in [(1, 30), (2, 10), (3, 20)] {
                    group.addTask {
                        try await time.sleep(until: .seconds(seconds))
                        return (i, time.now())
                    }
                }
                var order: [Int] = []
                for try await (i, now) in group {
                    order.append(i)
                    XCTAssertEqual(now, .seconds([1: 30, 2: 10, 3: 20][i] ?? 0))
                }
                return order
            }
        }
        XCTAssertEqual(order, [2, 3, 1])
    }

    func testATenSecondScanTimeoutPassesInVirtualTime() async throws {
        let elapsed = try await VirtualWorld.run { world -> Duration in
            let (central, _) = try await world.addCentral()
            let start = world.clock.now()
            do {
                _ = try await central.find(filter: ScanFilter(nameContains: "nobody"), timeout: .seconds(10))
                XCTFail("found nobody")
            } catch let error as BLEError {
                guard case .timeout = error else { throw error }
            }
            return world.clock.now() - start
        }
        XCTAssertGreaterThanOrEqual(elapsed, .seconds(10))
        XCTAssertLessThan(elapsed, .seconds(11))
    }

    func testBothRolesReadWriteLongAndNotifyInVirtualTime() async throws {
        try await VirtualWorld.run { world in
            let (manager, _, handles) = try await Self.peripheral(world)
            let (central, _) = try await world.addCentral()
            let (peripheral, long, notify) = try await Self.connect(central)
            // 512 bytes over a 23-byte ATT_MTU: Read + 22 Read Blob, over 27-byte LL PDUs.
            let value = try await peripheral.readValue(for: long)
            XCTAssertEqual(value, Self.longValue)
            let written = (0..<300).map { UInt8(255 - $0 % 256) }
            try await peripheral.writeValue(written, for: long)
            let stored = await manager.value(forHandle: handles.characteristics[0].valueHandle)
            XCTAssertEqual(stored, written)
            // Notifications arrive in order.
            let stream = await peripheral.notifications(for: notify)
            try await peripheral.setNotifyValue(true, for: notify)
            for i in 1...20 {
                _ = try await manager.updateValueWaiting([UInt8(i)], forHandle: handles.characteristics[1].valueHandle)
            }
            var received: [UInt8] = []
            for await v in stream {
                received += v
                if received.count == 20 { break }
            }
            XCTAssertEqual(received, (1...20).map { UInt8($0) })
            try await peripheral.disconnect()
            await central.close()
            await manager.close()
        }
    }

    func testDataLengthAndPHYUpdateFromTheAPI() async throws {
        try await VirtualWorld.run { world in
            let (manager, _, _) = try await Self.peripheral(world)
            let (central, _) = try await world.addCentral()
            let (peripheral, _, _) = try await Self.connect(central)
            XCTAssertEqual(peripheral.phy, .le1M)
            try await peripheral.setDataLength(251)
            try await peripheral.setPHY(.le2M)
            try await world.clock.sleep(for: .milliseconds(10))
            XCTAssertEqual(peripheral.phy, .le2M)
            XCTAssertEqual(peripheral.dataLength.tx, 251)
            XCTAssertEqual(peripheral.dataLength.rx, 27, "the peripheral's own transmit length is still the default")
            await central.close()
            await manager.close()
        }
    }

    /// With LE 2M, 251-octet PDUs and a 7.5 ms interval, notifications stream at the air-time
    /// model's figure (5 PDUs per event, about 1.3 Mbit/s) and never faster.
    func testThroughputReachesButNeverExceedsTheAirTimeFigure() async throws {
        let perInterval = try await VirtualWorld.run { world -> [Int] in
            var controller = VirtualControllerConfiguration()
            controller.leACLBufferLength = 251
            var host = HostConfiguration()
            host.preferredDataLength = 251
            host.preferredPHY = .le2M
            host.connectionIntervalMin = 6
            host.connectionIntervalMax = 6
            let (manager, _) = try await world.addPeripheralManager(name: "World", configuration: host, controller: controller)
            let handles = try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.notify, properties: [.notify], permissions: [.read], value: [0]),
            ]))
            let ad = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported]).localName("World").build()
            try await manager.startAdvertising(ad, parameters: AdvertisingParameters(interval: .milliseconds(20)))
            let (central, _) = try await world.addCentral(configuration: host, controller: controller)
            let found = try await central.find(filter: ScanFilter(nameContains: "World"), timeout: .seconds(10))
            let peripheral = try await central.connect(found.address)
            _ = try await peripheral.exchangeMTU(517)
            guard let service = try await peripheral.discoverServices([Self.service]).first,
                  let characteristic = try await peripheral.discoverCharacteristics([Self.notify], for: service).first else {
                throw BLEError.notConnected
            }
            let values = await peripheral.notifications(for: characteristic)
            try await peripheral.setNotifyValue(true, for: characteristic)
            try await world.clock.sleep(for: .milliseconds(100))
            XCTAssertEqual(peripheral.phy, .le2M)
            let valueHandle = handles.characteristics[0].valueHandle
            let sender = Task(executorPreference: world.clock.taskExecutor) {
                for _ in 0..<200 { _ = try await manager.updateValueWaiting([UInt8](repeating: 1, count: 244), forHandle: valueHandle) }
            }
            var arrivals: [Duration] = []
            for await _ in values {
                arrivals.append(world.clock.now())
                if arrivals.count == 200 { break }
            }
            try await sender.value
            await central.close()
            await manager.close()
            // Notifications per 7.5 ms window, from the first arrival.
            let first = arrivals[0]
            var counts: [Int] = []
            for t in arrivals {
                let slot = Int((t - first) / .microseconds(7500))
                while counts.count <= slot { counts.append(0) }
                counts[slot] += 1
            }
            return counts
        }
        let perEvent = AirTime.packetsPerEvent(payload: 251, phy: .le2M, interval: .microseconds(7500))
        XCTAssertEqual(perEvent, 5)
        XCTAssertLessThanOrEqual(perInterval.max() ?? 0, perEvent, "never more than the air allows: \(perInterval)")
        XCTAssertEqual(perInterval.dropLast().filter { $0 == perEvent }.count, perInterval.count - 1, "every full interval carries 5: \(perInterval)")
    }

    // MARK: Faults

    static func assertDisconnected(_ error: (any Error)?, file: StaticString = #filePath, line: UInt = #line) {
        guard case let .disconnected(reason)? = error as? BLEError else {
            return XCTFail("expected a disconnect, got \(String(describing: error))", file: file, line: line)
        }
        XCTAssertEqual(reason, .connectionTimeout, file: file, line: line)
    }

    /// Starts `operation`, drops the link after `after` of virtual time, and returns its error.
    static func failsWhenTheLinkDrops(_ world: VirtualWorld, _ device: VirtualDevice, after: Duration,
                                      _ operation: @escaping @Sendable () async throws -> Void) async -> (any Error)? {
        let task = Task(executorPreference: world.clock.taskExecutor) { () -> (any Error)? in
            do { try await operation() } catch { return error }
            return nil
        }
        try? await world.clock.sleep(for: after)
        await world.radio.dropLinks(of: device.id)
        return await task.value
    }

    func testLinkLossDuringALongReadIsATypedDisconnect() async throws {
        try await VirtualWorld.run { world in
            let (manager, device, _) = try await Self.peripheral(world)
            let (central, _) = try await world.addCentral()
            let (peripheral, long, _) = try await Self.connect(central)
            let error = await Self.failsWhenTheLinkDrops(world, device, after: .milliseconds(200)) {
                _ = try await peripheral.readValue(for: long)
            }
            Self.assertDisconnected(error)
            XCTAssertEqual(peripheral.disconnectReason, .connectionTimeout)
            await central.close()
            await manager.close()
        }
    }

    func testLinkLossDuringALongWriteIsATypedDisconnect() async throws {
        try await VirtualWorld.run { world in
            let (manager, device, _) = try await Self.peripheral(world)
            let (central, _) = try await world.addCentral()
            let (peripheral, long, _) = try await Self.connect(central)
            let error = await Self.failsWhenTheLinkDrops(world, device, after: .milliseconds(200)) {
                try await peripheral.writeValue([UInt8](repeating: 9, count: 400), for: long)
            }
            Self.assertDisconnected(error)
            await central.close()
            await manager.close()
        }
    }

    func testLinkLossDuringDiscoveryIsATypedDisconnect() async throws {
        try await VirtualWorld.run { world in
            let (manager, device, _) = try await Self.peripheral(world, extraServices: 40)
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "World"), timeout: .seconds(10))
            let peripheral = try await central.connect(found.address)
            let error = await Self.failsWhenTheLinkDrops(world, device, after: .milliseconds(300)) {
                for service in try await peripheral.discoverServices() {
                    _ = try await peripheral.discoverCharacteristics(nil, for: service)
                }
            }
            Self.assertDisconnected(error)
            await central.close()
            await manager.close()
        }
    }

    func testAControllerResetFailsItsHostAndThePeerTimesOut() async throws {
        try await VirtualWorld.run { world in
            let (manager, _, _) = try await Self.peripheral(world)
            let events = await manager.events
            let (central, centralDevice) = try await world.addCentral()
            let (peripheral, long, _) = try await Self.connect(central)
            await world.radio.reset(centralDevice.id)
            do {
                _ = try await peripheral.readValue(for: long)
                XCTFail("read on a reset controller")
            } catch let error as BLEError {
                guard case .hci(.hardwareError) = error else { return XCTFail("\(error)") }
            }
            let start = world.clock.now()
            for await event in events {
                if case let .disconnected(_, reason) = event {
                    XCTAssertEqual(reason, .connectionTimeout)
                    break
                }
            }
            XCTAssertGreaterThanOrEqual(world.clock.now() - start, .milliseconds(4000), "after the 4.2 s supervision timeout")
            await central.close()
            await manager.close()
        }
    }

    func testADeviceOutOfRangeAgesOutOfTheScanList() async throws {
        try await VirtualWorld.run { world in
            let (manager, device, _) = try await Self.peripheral(world)
            let (central, _) = try await world.addCentral()
            var appearedAt: Duration?
            var movedAt: Duration?
            for try await change in central.watch(filter: ScanFilter(nameContains: "World"), maximumAge: .seconds(10)) {
                switch change {
                case let .appeared(d):
                    XCTAssertEqual(d.rssi, -40)
                    appearedAt = world.clock.now()
                case let .updated(d):
                    if movedAt == nil, let a = appearedAt, world.clock.now() - a > .seconds(1) {
                        await world.radio.move(device.id, to: VirtualMedium.Position(x: 50, y: 0))
                        movedAt = world.clock.now()
                    }
                    if let m = movedAt, d.lastSeen > m { XCTAssertEqual(d.rssi, -74, "0 dBm at 50 m: 40 + 20·log10(50) dB") }
                    if let m = movedAt, world.clock.now() - m > .seconds(1) {
                        await world.radio.move(device.id, to: VirtualMedium.Position(x: 100_000, y: 0))
                        movedAt = world.clock.now() + .seconds(3600)
                    }
                case .disappeared:
                    let silent = world.clock.now() - ((movedAt ?? .zero) - .seconds(3600))
                    XCTAssertGreaterThanOrEqual(silent, .seconds(10))
                    XCTAssertLessThan(silent, .seconds(12))
                    await central.close()
                    await manager.close()
                    return
                }
            }
            XCTFail("the scan ended without the device dropping off")
        }
    }

    func testPowerOffEndsTheLinkAndPowerOnStartsAfresh() async throws {
        try await VirtualWorld.run { world in
            let (manager, device, _) = try await Self.peripheral(world)
            let (central, _) = try await world.addCentral()
            let (peripheral, _, _) = try await Self.connect(central)
            await world.radio.setPower(device.id, on: false)
            for await state in peripheral.stateUpdates {
                if case let .disconnected(reason) = state {
                    XCTAssertEqual(reason, .connectionTimeout)
                    break
                }
            }
            await world.radio.setPower(device.id, on: true)
            let snapshot = await world.radio.controller(device.id)
            XCTAssertEqual(snapshot?.isAdvertising, false, "back in its reset state")
            await central.close()
            await manager.close()
        }
    }

    func testASlowHCIPathDelaysButDeliversAndAStalledOneTimesOut() async throws {
        try await VirtualWorld.run { world in
            let (manager, _, _) = try await Self.peripheral(world)
            var config = HostConfiguration()
            config.attTransactionTimeout = .seconds(5)
            let (central, centralDevice) = try await world.addCentral(configuration: config)
            let (peripheral, long, _) = try await Self.connect(central)
            let fast = world.clock.now()
            _ = try await peripheral.readShortValue(handle: long.valueHandle)
            let direct = world.clock.now() - fast
            await world.radio.setHCIDelay(centralDevice.id, .milliseconds(100))
            let slow = world.clock.now()
            _ = try await peripheral.readShortValue(handle: long.valueHandle)
            let delayed = world.clock.now() - slow
            XCTAssertGreaterThanOrEqual(delayed, .milliseconds(200), "100 ms each way")
            XCTAssertGreaterThan(delayed, direct)
            await world.radio.setHCIDelay(centralDevice.id, .zero)
            await world.radio.stallHCI(centralDevice.id)
            do {
                _ = try await peripheral.readShortValue(handle: long.valueHandle)
                XCTFail("a read through a stalled HCI path")
            } catch let error as BLEError {
                // The request never reached the controller: the ATT transaction times out (5 s here).
                guard case .gatt(.timeout) = error else { return XCTFail("\(error)") }
            }
            await world.radio.resumeHCI(centralDevice.id)
            await central.close()
            await manager.close()
        }
    }
}

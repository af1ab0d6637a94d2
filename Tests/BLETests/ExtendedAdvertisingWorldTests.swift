import BLE
import BLEHCI
import BLEHost
import BLEVirtual
import BLEVirtualRadio
import BLEWire
import XCTest

/// Bluetooth 5 advertising between two hosts on the virtual radio, in virtual time: long data
/// in auxiliary chains, the LE Coded PHY's longer reach, connections from extended sets, a lost
/// AUX_CHAIN_IND, periodic trains and their syncs, set durations, and the fallbacks a host takes
/// on a controller without extended advertising, with one set or with a 251-octet maximum.
final class ExtendedAdvertisingWorldTests: XCTestCase {
    /// Virtual time each world may run: a wait that never ends fails with `limitReached`
    /// instead of spinning through a day of advertising events.
    static let limit = Duration.seconds(120)

    /// A Bluetooth 4 controller: the legacy advertising commands only.
    static var bluetooth4: VirtualControllerConfiguration {
        var c = VirtualControllerConfiguration()
        c.extendedAdvertising = nil
        return c
    }

    /// A controller with Bluetooth 5 advertising.
    static func extended(sets: UInt8 = 4, maximumDataLength: UInt16 = 1650) -> VirtualControllerConfiguration {
        var c = VirtualControllerConfiguration()
        c.extendedAdvertising = ExtendedAdvertisingSupport(sets: sets, maximumDataLength: maximumDataLength)
        return c
    }

    /// `count` manufacturer-data structures of 200 octets each (company 0xFFFF), each octet
    /// telling its place, so a lost or reordered fragment shows.
    static func longData(_ count: Int, seed: UInt8 = 0) -> AdvertisingData {
        AdvertisingData(structures: (0..<count).map { s in
            AdvertisingData.Structure(type: .manufacturerSpecificData,
                                      data: [0xFF, 0xFF] + (0..<196).map { UInt8(truncatingIfNeeded: $0 + s * 7) &+ seed })
        })
    }

    /// Every device a scan on `phys` reports within `timeout`, by address (the last report of each).
    static func devices(_ central: Central, phys: LEPHYSet, active: Bool = false, timeout: Duration) async throws -> [DeviceAddress: ScannedDevice] {
        var seen: [DeviceAddress: ScannedDevice] = [:]
        for try await device in central.scan(filter: ScanFilter(allowDuplicates: true), active: active, timeout: timeout, phys: phys) {
            seen[device.address] = device
        }
        return seen
    }

    static func staticRandom(_ low: UInt64) -> BDAddress { BDAddress(rawValue: 0xC0_00_00_00_00_00 | low) }

    func testLongDataOnTheCodedPHYReachesAnExtendedScanWhole() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager(controller: Self.extended())
            let data = Self.longData(2)
            _ = try await manager.startAdvertisingSet(data, parameters: AdvertisingSetParameters(
                primaryPHY: .leCoded, secondaryPHY: .leCoded, includeTxPower: true, sid: 5))
            let (central, _) = try await world.addCentral(controller: Self.extended())
            let seen = try await Self.devices(central, phys: .leCoded, timeout: .seconds(2))
            let device = try XCTUnwrap(seen[DeviceAddress(peripheral.address, type: .public)])
            XCTAssertEqual(device.advertisement.structures, data.structures)
            XCTAssertFalse(device.isTruncated)
            XCTAssertEqual(device.extended?.advertisingSID, 5)
            XCTAssertEqual(device.extended?.primaryPHY, .leCoded)
            XCTAssertEqual(device.extended?.secondaryPHY, .leCoded)
            XCTAssertEqual(device.extended?.txPower, 0)
            await manager.close()
            await central.close()
        }
    }

    /// At 1 km with 0 dBm the signal is −100 dBm: under LE 1M's −95 dBm sensitivity, over LE
    /// Coded's −103 dBm.
    func testTheCodedPHYReachesFartherThanLE1M() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, _) = try await world.addPeripheralManager(controller: Self.extended())
            let near = Self.staticRandom(0x01), far = Self.staticRandom(0x02)
            _ = try await manager.startAdvertisingSet(Self.longData(1), parameters: AdvertisingSetParameters(
                primaryPHY: .le1M, secondaryPHY: .le2M, sid: 1, address: .random(near)))
            _ = try await manager.startAdvertisingSet(Self.longData(1, seed: 9), parameters: AdvertisingSetParameters(
                primaryPHY: .leCoded, secondaryPHY: .leCoded, sid: 2, address: .random(far)))
            let (central, _) = try await world.addCentral(controller: Self.extended(), at: VirtualMedium.Position(x: 1000, y: 0))
            let seen = try await Self.devices(central, phys: [.le1M, .leCoded], timeout: .seconds(2))
            XCTAssertNil(seen[DeviceAddress(near, type: .random)], "LE 1M does not reach 1 km")
            XCTAssertEqual(seen[DeviceAddress(far, type: .random)]?.extended?.advertisingSID, 2)
            XCTAssertEqual(seen[DeviceAddress(far, type: .random)]?.rssi, -100)
            await manager.close()
            await central.close()
        }
    }

    func testTwoSetsWithTheirOwnAddressesAreTwoDevicesAndALegacyScanHearsOnlyLegacyPDUs() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, _) = try await world.addPeripheralManager(controller: Self.extended())
            let a = Self.staticRandom(0x0A), b = Self.staticRandom(0x0B)
            _ = try await manager.startAdvertisingSet(Self.longData(2), parameters: AdvertisingSetParameters(sid: 3, address: .random(a)))
            let short = AdvertisingData.Builder().localName("legacy").build()
            _ = try await manager.startAdvertisingSet(short, parameters: AdvertisingSetParameters(legacyPDUs: true, address: .random(b)))
            let (central, _) = try await world.addCentral(controller: Self.extended())
            let seen = try await Self.devices(central, phys: .le1M, timeout: .seconds(1))
            XCTAssertEqual(seen[DeviceAddress(a, type: .random)]?.extended?.advertisingSID, 3)
            XCTAssertEqual(seen[DeviceAddress(a, type: .random)]?.advertisement.structures, Self.longData(2).structures)
            XCTAssertNil(seen[DeviceAddress(b, type: .random)]?.extended, "legacy PDUs come in legacy-flagged reports")
            XCTAssertEqual(seen[DeviceAddress(b, type: .random)]?.advertisement.localName, "legacy")
            // A Bluetooth 4 controller hears the legacy PDUs only.
            let (old, _) = try await world.addCentral(controller: Self.bluetooth4)
            let heardByOld = try await Self.devices(old, phys: .le1M, timeout: .seconds(1))
            XCTAssertNil(heardByOld[DeviceAddress(a, type: .random)])
            XCTAssertEqual(heardByOld[DeviceAddress(b, type: .random)]?.advertisement.localName, "legacy")
            await manager.close()
            await central.close()
            await old.close()
        }
    }

    /// 600 octets: AUX_ADV_IND carries 242, the AUX_CHAIN_IND lost would have carried 248.
    func testAFragmentedReportWhoseMiddleFragmentIsLostIsReportedTruncated() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager(controller: Self.extended())
            await world.radio.loseAuxiliaryPDU(peripheral.id, index: 1)
            let data = Self.longData(3)
            _ = try await manager.startAdvertisingSet(data, parameters: AdvertisingSetParameters(sid: 1))
            let (central, _) = try await world.addCentral(controller: Self.extended())
            let seen = try await Self.devices(central, phys: .le1M, timeout: .seconds(1))
            let device = try XCTUnwrap(seen[DeviceAddress(peripheral.address, type: .public)])
            XCTAssertTrue(device.isTruncated)
            XCTAssertEqual(device.advertisement.structures.first, data.structures.first)
            XCTAssertNotEqual(device.advertisement.structures, data.structures)
            // The fault put right, the whole data arrives.
            await world.radio.loseAuxiliaryPDU(peripheral.id, index: nil)
            let again = try await Self.devices(central, phys: .le1M, timeout: .seconds(1))
            XCTAssertEqual(again[DeviceAddress(peripheral.address, type: .public)]?.advertisement.structures, data.structures)
            XCTAssertEqual(again[DeviceAddress(peripheral.address, type: .public)]?.isTruncated, false)
            await manager.close()
            await central.close()
        }
    }

    func testACentralConnectsToAConnectableSetOnTheCodedPHYAtLongRange() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager(controller: Self.extended())
            let ended = Task(executorPreference: world.clock.taskExecutor) { () -> AdvertisingSetTermination? in
                for await event in await manager.events { if case let .advertisingSetTerminated(t) = event { return t } }
                return nil
            }
            let set = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("far").build(), parameters: AdvertisingSetParameters(
                kind: .connectable, primaryPHY: .leCoded, secondaryPHY: .leCoded, sid: 4))
            let (central, _) = try await world.addCentral(controller: Self.extended(), at: VirtualMedium.Position(x: 1000, y: 0))
            let p = try await central.connect(DeviceAddress(peripheral.address, type: .public), timeout: .seconds(5), phys: .leCoded)
            let termination = await ended.value
            XCTAssertEqual(termination?.set, set.handle)
            XCTAssertEqual(termination?.reason.isConnection, true)
            // The link holds at 1 km on LE Coded: a GATT discovery crosses it (and by then
            // the LE Read PHY the host sent at the connection has been answered).
            let services = try await p.discoverServices()
            XCTAssertFalse(services.isEmpty)
            XCTAssertEqual(p.phy, .leCoded)
            XCTAssertEqual(p.channelSelectionAlgorithm, 2, "AUX_CONNECT_REQ uses Channel Selection Algorithm #2")
            try await p.disconnect()
            await manager.close()
            await central.close()
        }
    }

    /// `startAdvertising`, on a host driving the extended commands, runs legacy PDUs on set 0;
    /// an extended initiator connects to it with LE Extended Create Connection.
    func testTheLegacyAdvertisingAPIOnExtendedControllersConnects() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager(controller: Self.extended())
            try await manager.startAdvertising(AdvertisingData.Builder().localName("set0").build())
            let (central, _) = try await world.addCentral(controller: Self.extended())
            let p = try await central.connect(DeviceAddress(peripheral.address, type: .public), timeout: .seconds(5))
            _ = try await p.discoverServices()
            XCTAssertEqual(p.phy, .le1M)
            XCTAssertEqual(p.channelSelectionAlgorithm, 2, "CONNECT_IND between two controllers with #2")
            try await p.disconnect()
            await manager.close()
            await central.close()
        }
    }

    func testASetWithADurationEndsWithAdvertisingTimeout() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, _) = try await world.addPeripheralManager(controller: Self.extended())
            let ended = Task(executorPreference: world.clock.taskExecutor) { () -> (AdvertisingSetTermination?, Duration) in
                for await event in await manager.events { if case let .advertisingSetTerminated(t) = event { return (t, world.clock.now()) } }
                return (nil, .zero)
            }
            let start = world.clock.now()
            _ = try await manager.startAdvertisingSet(Self.longData(1), parameters: AdvertisingSetParameters(duration: .seconds(1)))
            let (termination, at) = await ended.value
            XCTAssertEqual(termination?.reason, .timeout)
            XCTAssertEqual(termination?.completedEvents, 10, "100 ms events for 1 s")
            XCTAssertLessThan(at - start, .milliseconds(1200))
            await manager.close()
        }
    }

    func testAPeriodicTrainIsFollowedWholeAndItsSyncIsLostOutOfRange() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager(controller: Self.extended())
            let train = Self.longData(2, seed: 3)
            let set = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("train").build(),
                                                             parameters: AdvertisingSetParameters(sid: 6),
                                                             periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), train))
            let (central, _) = try await world.addCentral(controller: Self.extended())
            let sync = try await central.syncToPeriodicAdvertising(of: DeviceAddress(peripheral.address, type: .public), sid: set.sid,
                                                                   supervisionTimeout: .seconds(1))
            var iterator = sync.makeAsyncIterator()
            let first = try await iterator.next()
            XCTAssertEqual(first?.bytes, train.encode(), "400 octets in two periodic reports, reassembled")
            XCTAssertEqual(first?.truncated, false)
            await world.radio.move(peripheral.id, to: VirtualMedium.Position(x: 5000, y: 0))
            do {
                while try await iterator.next() != nil {}
                XCTFail("the sync ended without an error")
            } catch let error as BLEError {
                guard case .periodicSyncLost = error else { return XCTFail("\(error)") }
            }
            await manager.close()
            await central.close()
        }
    }

    /// A device the radio adds without a configuration has the default one, Bluetooth 5
    /// advertising included (an incremental build once ran a stale copy of the default-argument
    /// code and handed the controller a corrupt configuration: the radio's and the world's
    /// defaults are nil now, the configuration made inside).
    func testADeviceAddedWithTheDefaultConfigurationHasIt() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let device = await world.radio.addDevice()
            let configuration = await world.radio.controller(device.id)?.configuration
            XCTAssertEqual(configuration, VirtualControllerConfiguration())
            XCTAssertEqual(configuration?.extendedAdvertising, ExtendedAdvertisingSupport())
            let (central, centralDevice) = try await world.addCentral()
            let centralConfiguration = await world.radio.controller(centralDevice.id)?.configuration
            XCTAssertEqual(centralConfiguration, VirtualControllerConfiguration())
            await central.close()
        }
    }

    func testFallbacksWithoutExtendedAdvertisingWithOneSetAndWithA251OctetMaximum() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            // No Bluetooth 5 advertising: no sets, no coded scan.
            let (legacy, _) = try await world.addPeripheralManager(controller: Self.bluetooth4)
            let legacyCapacity = await legacy.advertisingSetCapacity
            XCTAssertNil(legacyCapacity)
            do {
                _ = try await legacy.startAdvertisingSet(Self.longData(1))
                XCTFail("a set on a Bluetooth 4 controller")
            } catch BLEError.unsupported {}
            let (old, _) = try await world.addCentral(controller: Self.bluetooth4)
            do {
                for try await _ in old.scan(timeout: .seconds(1), phys: .leCoded) {}
                XCTFail("a coded scan on a Bluetooth 4 controller")
            } catch BLEError.unsupported {}

            // One set: a second is refused; the first still advertises.
            let (single, singleDevice) = try await world.addPeripheralManager(controller: Self.extended(sets: 1))
            let singleCapacity = await single.advertisingSetCapacity
            XCTAssertEqual(singleCapacity?.sets, 1)
            _ = try await single.startAdvertisingSet(Self.longData(1), parameters: AdvertisingSetParameters(sid: 1))
            do {
                _ = try await single.startAdvertisingSet(Self.longData(1), parameters: AdvertisingSetParameters(sid: 2))
                XCTFail("a second set on a one-set controller")
            } catch is BLEError {}
            let (central, _) = try await world.addCentral(controller: Self.extended())
            let seen = try await Self.devices(central, phys: .le1M, timeout: .seconds(1))
            XCTAssertEqual(seen[DeviceAddress(singleDevice.address, type: .public)]?.extended?.advertisingSID, 1)

            // A 251-octet maximum: 400 octets are refused before anything is sent, 200 go out.
            let (small, _) = try await world.addPeripheralManager(controller: Self.extended(maximumDataLength: 251))
            let smallCapacity = await small.advertisingSetCapacity
            XCTAssertEqual(smallCapacity?.maximumDataLength, 251)
            do {
                _ = try await small.startAdvertisingSet(Self.longData(2))
                XCTFail("400 octets on a 251-octet controller")
            } catch BLEError.invalidArgument {}
            _ = try await small.startAdvertisingSet(Self.longData(1))
            await legacy.close()
            await old.close()
            await single.close()
            await small.close()
            await central.close()
        }
    }

    /// PAST from the central's side: a central synced to a train hands its sync to a peripheral
    /// it is connected to, which follows the train without scanning.
    func testACentralTransfersItsSyncToAPeripheral() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (advertiser, advertiserDevice) = try await world.addPeripheralManager()
            let train = Self.longData(1, seed: 5)
            let set = try await advertiser.startAdvertisingSet(AdvertisingData.Builder().localName("train").build(),
                                                                parameters: AdvertisingSetParameters(sid: 2),
                                                                periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(50)), train))
            let (receiver, receiverDevice) = try await world.addPeripheralManager()
            let transfers = try await receiver.periodicSyncTransfers(supervisionTimeout: .seconds(1))
            try await receiver.startAdvertising(AdvertisingData.Builder().localName("receiver").build())
            let (central, _) = try await world.addCentral()
            let sync = try await central.syncToPeriodicAdvertising(of: DeviceAddress(advertiserDevice.address, type: .public), sid: set.sid)
            let link = try await central.connect(DeviceAddress(receiverDevice.address, type: .public), timeout: .seconds(5))
            try await link.transferPeriodicSync(sync, serviceData: 0x1234)
            var iterator = transfers.makeAsyncIterator()
            let next = await iterator.next()
            let transfer = try XCTUnwrap(next)
            XCTAssertEqual(transfer.serviceData, 0x1234)
            XCTAssertEqual(transfer.sync.sid, 2)
            var reports = transfer.sync.makeAsyncIterator()
            let first = try await reports.next()
            XCTAssertEqual(first?.bytes, train.encode())
            try await link.disconnect()
            await advertiser.close()
            await receiver.close()
            await central.close()
        }
    }

    /// PAST from the advertiser's side: a peripheral hands a connected central the train of its
    /// own set (Set Info Transfer).
    func testAPeripheralTransfersItsOwnTrainToACentral() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager()
            let connected = Task(executorPreference: world.clock.taskExecutor) { () -> ConnectedCentral? in
                for await event in await manager.events { if case let .connected(c) = event { return c } }
                return nil
            }
            let train = Self.longData(2, seed: 1)
            let set = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("train").build(),
                                                             parameters: AdvertisingSetParameters(sid: 7),
                                                             periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), train))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("connect").build())
            let (central, _) = try await world.addCentral()
            let transfers = try await central.periodicSyncTransfers()
            let link = try await central.connect(DeviceAddress(peripheral.address, type: .public), timeout: .seconds(5))
            let connectedCentral = await connected.value
            let peer = try XCTUnwrap(connectedCentral)
            try await manager.transferAdvertisingSet(set, to: peer, serviceData: 7)
            var iterator = transfers.makeAsyncIterator()
            let next = await iterator.next()
            let transfer = try XCTUnwrap(next)
            XCTAssertEqual(transfer.serviceData, 7)
            XCTAssertEqual(transfer.sync.sid, 7)
            var reports = transfer.sync.makeAsyncIterator()
            let first = try await reports.next()
            XCTAssertEqual(first?.bytes, train.encode())
            try await link.disconnect()
            await manager.close()
            await central.close()
        }
    }

    /// A duty-cycled scan (§7.8.65): the controller listens 200 ms every 1.28 s, so of an
    /// advertiser's events every 100 ms only those in the first 200 ms of each period arrive.
    func testAScanCycleListensOnlyAtTheStartOfEachPeriod() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager()
            try await manager.startAdvertising(AdvertisingData.Builder().localName("beacon").build())
            let (central, _) = try await world.addCentral()
            let period = Duration.milliseconds(1280)
            var times: [Duration] = []
            for try await device in central.scan(filter: ScanFilter(allowDuplicates: true), active: false, timeout: .seconds(5),
                                                 cycle: ScanCycle(duration: .milliseconds(200), period: period))
            where device.address.address == peripheral.address {
                times.append(device.lastSeen)
            }
            let first = try XCTUnwrap(times.first)
            for t in times {
                let into = (t - first).components.attoseconds / 1_000_000_000_000 + (t - first).components.seconds * 1_000_000
                let r = Duration.microseconds(into % 1_280_000)
                XCTAssertTrue(r <= .milliseconds(200) || r >= period - .milliseconds(200), "a report \(r) into a period")
            }
            // Four periods in 5 s, two advertising events in each 200 ms window.
            XCTAssertGreaterThanOrEqual(times.count, 6)
            XCTAssertLessThanOrEqual(times.count, 10)
            await manager.close()
            await central.close()
        }
    }

    func testAScanCycleNeedsTheExtendedCommandsAndOneCycleAtATime() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (old, _) = try await world.addCentral(controller: Self.bluetooth4)
            do {
                for try await _ in old.scan(timeout: .seconds(1), cycle: ScanCycle(duration: .milliseconds(100), period: .milliseconds(1280))) {}
                XCTFail("a scan cycle on a Bluetooth 4 controller")
            } catch BLEError.unsupported {}
            let (central, _) = try await world.addCentral()
            let long = Task(executorPreference: world.clock.taskExecutor) {
                for try await _ in central.scan(timeout: .seconds(3), cycle: ScanCycle(duration: .milliseconds(100), period: .milliseconds(1280))) {}
            }
            try await world.clock.sleep(for: .milliseconds(100))
            do {
                for try await _ in central.scan(timeout: .seconds(1), cycle: ScanCycle(duration: .milliseconds(300), period: .milliseconds(2560))) {}
                XCTFail("a second cycle")
            } catch BLEError.busy {}
            do {
                for try await _ in central.scan(timeout: .seconds(1), cycle: ScanCycle(duration: .seconds(2), period: .milliseconds(1280))) {}
                XCTFail("a duration longer than its period")
            } catch BLEError.invalidArgument {}
            try await long.value
            await old.close()
            await central.close()
        }
    }

    /// A link made on LE Coded at 1 km holds there, and is lost when a PHY update takes it to
    /// LE 2M, whose reach is shorter; Read RSSI measures it on its PHY.
    func testALongRangeLinkIsLostWhenItLeavesTheCodedPHY() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager()
            _ = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("far").build(), parameters: AdvertisingSetParameters(
                kind: .connectable, primaryPHY: .leCoded, secondaryPHY: .leCoded))
            let (central, _) = try await world.addCentral(at: VirtualMedium.Position(x: 1000, y: 0))
            let p = try await central.connect(DeviceAddress(peripheral.address, type: .public), timeout: .seconds(5), phys: .leCoded)
            let rssi = try await p.readRSSI()
            XCTAssertEqual(rssi, -100)
            try await p.setPHY(.le2M)
            // Bounded: a link that held would keep the states coming; 20 s of virtual time end the wait.
            let states = Task(executorPreference: world.clock.taskExecutor) { () -> ConnectionState? in
                var last: ConnectionState?
                for await state in p.stateUpdates { last = state }
                return last
            }
            let watchdog = Task(executorPreference: world.clock.taskExecutor) {
                try await world.clock.sleep(for: .seconds(20))
                states.cancel()
            }
            let last = await states.value
            watchdog.cancel()
            XCTAssertEqual(last, .disconnected(reason: .connectionTimeout))
            await manager.close()
            await central.close()
        }
    }

    /// A consumer that stops reading its transfers stops them: the controller is told to refuse
    /// transfers (Mode off), so a set's train handed over afterwards leaves no sync behind.
    func testTransfersStopWhenTheirConsumerStopsReading() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (manager, peripheral) = try await world.addPeripheralManager()
            let connected = Task(executorPreference: world.clock.taskExecutor) { () -> ConnectedCentral? in
                for await event in await manager.events { if case let .connected(c) = event { return c } }
                return nil
            }
            let set = try await manager.startAdvertisingSet(AdvertisingData.Builder().localName("train").build(),
                                                             parameters: AdvertisingSetParameters(sid: 7),
                                                             periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), Self.longData(1)))
            try await manager.startAdvertising(AdvertisingData.Builder().localName("connect").build())
            let (central, centralDevice) = try await world.addCentral()
            do {
                let transfers = try await central.periodicSyncTransfers()
                _ = transfers
            }
            let link = try await central.connect(DeviceAddress(peripheral.address, type: .public), timeout: .seconds(5))
            let connectedCentral = await connected.value
            let peer = try XCTUnwrap(connectedCentral)
            try await manager.transferAdvertisingSet(set, to: peer)
            try await world.clock.sleep(for: .seconds(1))
            let controller = await world.radio.controller(centralDevice.id)
            XCTAssertEqual(controller?.defaultSyncTransfer.mode, 0, "transfers refused (Mode off)")
            XCTAssertEqual(controller?.connections.values.map(\.syncTransferMode), [0])
            XCTAssertEqual(controller?.syncs.isEmpty, true, "no sync is left on the controller")
            try await link.disconnect()
            await manager.close()
            await central.close()
        }
    }

    /// A cycled scan gets its cycle back when a scan that wanted the scanner listening all the
    /// time ends.
    func testACycledScanGetsItsCycleBackWhenTheContinuousScanBesideItEnds() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (central, device) = try await world.addCentral()
            let cycled = Task(executorPreference: world.clock.taskExecutor) {
                for try await _ in central.scan(timeout: .seconds(6), cycle: ScanCycle(duration: .milliseconds(200), period: .milliseconds(1280))) {}
            }
            try await world.clock.sleep(for: .milliseconds(100))
            for try await _ in central.scan(timeout: .seconds(1)) {}
            var period = await world.radio.controller(device.id)?.scanPeriod
            XCTAssertNil(period, "listening all the time while the second scan ran")
            try await world.clock.sleep(for: .seconds(1))
            period = await world.radio.controller(device.id)?.scanPeriod
            XCTAssertEqual(period, .milliseconds(1280))
            try await cycled.value
            await central.close()
        }
    }

    /// A consumer that stops while another's acceptance is on its way does not turn
    /// transfers off under the newer one.
    func testAnOldTransferConsumerStoppingDoesNotTurnOffTheNewOnes() async throws {
        try await VirtualWorld.run(limit: Self.limit) { world in
            let (central, device) = try await world.addCentral()
            var old: AsyncStream<TransferredPeriodicSync>? = try await central.periodicSyncTransfers()
            XCTAssertNotNil(old)
            old = nil
            let current = try await central.periodicSyncTransfers()
            try await world.clock.sleep(for: .milliseconds(100))
            let mode = await world.radio.controller(device.id)?.defaultSyncTransfer.mode
            XCTAssertEqual(mode, 2, "the newer consumer's Mode stands")
            _ = current
            await central.close()
        }
    }
}

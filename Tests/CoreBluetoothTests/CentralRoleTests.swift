import BLETransport
import BLEVirtual
import CoreBluetooth
import XCTest
import Synchronization

/// The states a peripheral manager reported.
final class PeripheralStates: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    private let lock = Mutex(())
    private var seen: [CBManagerState] = []
    var states: [CBManagerState] { lock.withLock { _ in seen } }
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        lock.withLock { _ in seen.append(peripheral.state) }
    }
}

/// The central role in delegate style against a peripheral on the shared virtual radio (real
/// time: every step waits for its callback, bounded).
final class CentralRoleTests: XCTestCase {
    static var options: [String: Any] { [SwiftBLEManagerOptionHCIKey: "virtual"] }

    func testUUIDsCompareAcrossFormsAndPrintSIGNames() {
        let short = CBUUID(string: "180D")
        let long = CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")
        let mid = CBUUID(string: "0000180d")
        XCTAssertEqual(short, long)
        XCTAssertEqual(short, mid)
        XCTAssertEqual(Set([short, long, mid]).count, 1)
        XCTAssertEqual(long.uuidString, "180D")
        XCTAssertEqual(short.data, Data([0x18, 0x0D]))
        XCTAssertEqual(CBUUID(data: Data([0x18, 0x0D])), short)
        XCTAssertEqual(short.description, "Heart Rate")
        XCTAssertEqual(CBUUID(string: "2A37").description, "Heart Rate Measurement")
        let custom = CBUUID(string: "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        XCTAssertEqual(custom.uuidString, "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        XCTAssertEqual(custom.description, custom.uuidString)
        XCTAssertEqual(custom.data.count, 16)
        XCTAssertEqual(CBUUID(data: custom.data), custom)
        XCTAssertEqual(CBUUID(nsuuid: UUID(uuidString: custom.uuidString)!), custom)
        XCTAssertNotEqual(short, custom)
    }

    func testErrorsHaveApplesDomainsCodesAndMessages() {
        let e: any Error = CBError(.connectionTimeout)
        XCTAssertEqual((e as NSError).domain, "CBErrorDomain")
        XCTAssertEqual((e as NSError).code, 6)
        XCTAssertEqual(e.localizedDescription, "The connection has timed out unexpectedly.")
        XCTAssertTrue(CBError.connectionTimeout ~= e)
        switch e {
        case CBError.connectionTimeout: break
        default: XCTFail("pattern")
        }
        let att: any Error = CBATTError(.readNotPermitted)
        XCTAssertEqual((att as NSError).domain, "CBATTErrorDomain")
        XCTAssertEqual((att as NSError).code, 2)
        XCTAssertEqual((att as? CBATTError)?.code, .readNotPermitted)
        XCTAssertEqual(CBManagerState.poweredOn.rawValue, 5)
        XCTAssertEqual(CBPeripheralState.connected.rawValue, 2)
        XCTAssertEqual(CBCharacteristicProperties.notify.rawValue, 0x10)
    }

    /// On the main queue (this test's thread), so the state cannot change before the run loop runs.
    func testCallsBeforePoweredOnAreIgnoredAndTheStateIsReported() throws {
        let recorder = Recorder(queue: nil)
        let central = CBCentralManager(delegate: recorder, queue: nil, options: Self.options)
        XCTAssertEqual(central.state, .unknown)
        central.scanForPeripherals(withServices: nil)
        XCTAssertFalse(central.isScanning, "a scan asked for before .poweredOn is ignored, as Apple does")
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        XCTAssertEqual(central.state, .poweredOn)
        XCTAssertEqual(CBCentralManager.authorization, .allowedAlways)
        XCTAssertEqual(recorder.callbacksOffQueue, [])
        // The virtual radio's controller has Bluetooth 5's extended scanning and connecting.
        XCTAssertTrue(CBCentralManager.supports(.extendedScanAndConnect))
        XCTAssertTrue(CBCentralManager.supports([]))
    }

    /// A controller that cannot be opened leaves the manager `.poweredOff` (the reason on stderr),
    /// reported through the delegate like any state.
    func testAControllerThatDoesNotOpenIsReported() {
        let queue = DispatchQueue(label: "cb.none")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: [SwiftBLEManagerOptionHCIKey: "tcp:127.0.0.1:1"])
        wait("a state") { recorder.events.contains { $0.hasPrefix("state ") } }
        XCTAssertEqual(recorder.events, ["state poweredOff"])
        XCTAssertEqual(central.state, .poweredOff)
        central.scanForPeripherals(withServices: nil)
        XCTAssertFalse(central.isScanning)
    }

    /// A controller lost (its TCP connection closed) takes the manager to `.poweredOff`; when it
    /// can be opened again the manager is `.poweredOn` again, and scans.
    func testAManagerFollowsItsControllerGoingAndComingBack() throws {
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("cb-bonds-\(UUID().uuidString)").path
        setenv("BLE_BONDS", bonds, 1)
        defer {
            unsetenv("BLE_BONDS")
            try? FileManager.default.removeItem(atPath: bonds)
        }
        let rig = try TCPControllerRig(baseAddress: 0xC0_DD_00_00_00_00)
        let world = rig.world
        defer { try? blocking { await rig.close() } }
        let queue = DispatchQueue(label: "cb.lost")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: [SwiftBLEManagerOptionHCIKey: rig.spec])
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        let states = PeripheralStates()
        let peripheralManager = CBPeripheralManager(delegate: states, queue: queue, options: [SwiftBLEManagerOptionHCIKey: rig.spec])
        wait("the peripheral manager on the same host") { states.states == [.poweredOn] }
        XCTAssertEqual(rig.accepted.count, 1, "both roles share the one controller")
        central.scanForPeripherals(withServices: nil)
        let first = try XCTUnwrap(rig.accepted.first)
        try blocking { await first.close() }
        wait("poweredOff") { recorder.events.contains("state poweredOff") }
        wait("the peripheral manager poweredOff") { states.states == [.poweredOn, .poweredOff] }
        XCTAssertEqual(peripheralManager.state, .poweredOff)
        XCTAssertFalse(central.isScanning, "leaving .poweredOn ends the scan")
        wait("poweredOn again") { recorder.count("state poweredOn") == 2 }
        wait("the peripheral manager poweredOn again") { states.states == [.poweredOn, .poweredOff, .poweredOn] }
        XCTAssertEqual(central.state, .poweredOn)
        XCTAssertEqual(rig.accepted.count, 2, "both roles on the one controller again")
        let (advertiser, _) = try blocking { try await world.addPeripheralManager(name: "Back") }
        try blocking { try await advertiser.startAdvertising(AdvertisingData.Builder().localName("Back").build()) }
        central.scanForPeripherals(withServices: nil)
        XCTAssertTrue(central.isScanning)
        wait("a discovery on the controller that came back") { recorder.discoveries.contains { $0.peripheral.name == "Back" } }
        central.stopScan()
        try blocking { await advertiser.close() }
    }

    /// Scan, connect, discover, read, write, notify, errors and disconnect, each callback on the
    /// queue given, in call order, with the same objects throughout.
    func testCentralFlowOnTheGivenQueue() throws {
        let name = "CBFlow-\(UInt16.random(in: 0...0xFFFF))"
        let peer = try blocking { try await TestPeripheral.start(name: name) }
        defer { try? blocking { await peer.stop() } }
        let queue = DispatchQueue(label: "cb.flow")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: Self.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }

        central.scanForPeripherals(withServices: [TestPeripheral.service])
        XCTAssertTrue(central.isScanning)
        wait("discovery of \(name)") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let found = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name })
        let peripheral = found.peripheral
        XCTAssertEqual(found.data[CBAdvertisementDataLocalNameKey] as? String, name, "the first discovery carries the scan response")
        XCTAssertEqual(found.data[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID], [TestPeripheral.service])
        XCTAssertEqual((found.data[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue, true)
        let timestamp = found.data["kCBAdvDataTimestamp"] as! Double
        XCTAssertEqual(timestamp, Date().timeIntervalSinceReferenceDate, accuracy: 60)
        XCTAssertLessThan(found.rssi.intValue, 0)
        XCTAssertEqual(peripheral.state, .disconnected)
        XCTAssertTrue(peripheral.description.hasPrefix("<CBPeripheral: 0x"))
        XCTAssertTrue(peripheral.description.contains("name = \(name)"))

        peripheral.delegate = recorder
        central.connect(peripheral)
        XCTAssertEqual(peripheral.state, .connecting)
        wait("didConnect") { recorder.events.contains("connect") }
        XCTAssertEqual(peripheral.state, .connected)
        XCTAssertTrue(peripheral.description.hasSuffix("state = connected>"))

        peripheral.discoverServices([TestPeripheral.service])
        wait("services") { recorder.events.contains("services") }
        let service = try XCTUnwrap(peripheral.services?.first)
        XCTAssertEqual(service.uuid, TestPeripheral.service)
        XCTAssertTrue(service.isPrimary)
        XCTAssertTrue(service.peripheral === peripheral)
        XCTAssertEqual(peripheral.maximumWriteValueLength(for: .withResponse), 512)
        XCTAssertGreaterThan(peripheral.maximumWriteValueLength(for: .withoutResponse), 20, "the MTU is exchanged before discovery")

        peripheral.discoverCharacteristics(nil, for: service)
        wait("characteristics") { recorder.events.contains("characteristics FFF0") }
        let characteristics = try XCTUnwrap(service.characteristics)
        XCTAssertEqual(characteristics.map(\.uuid.uuidString), ["FFF1", "FFF2", "FFF3", "FFF4", "FFF5"])
        let (c1, c2, c3, c4, c5) = (characteristics[0], characteristics[1], characteristics[2], characteristics[3], characteristics[4])
        XCTAssertTrue(c1.service === service)
        XCTAssertEqual(c2.properties, [.read, .write, .writeWithoutResponse])
        XCTAssertNil(c1.value)

        // Reads: a value, and an ATT error as CBATTError with the value kept.
        peripheral.readValue(for: c1)
        peripheral.readValue(for: c4)
        wait("reads") { recorder.events.contains("value FFF1") && recorder.events.contains("value error FFF4") }
        XCTAssertEqual(c1.value, Data("hello".utf8))
        XCTAssertEqual(c1.value?.startIndex, 0)
        XCTAssertEqual((recorder.error(for: "value error FFF4") as? CBATTError)?.code, .readNotPermitted)
        XCTAssertTrue(recorder.characteristicsSeen.first === c1, "the callback names the same object")
        XCTAssertTrue(c1.description.contains("value = {length = 5, bytes = 0x68656c6c6f}"))

        // Writes in call order, then a read that sees the last.
        peripheral.writeValue(Data("one".utf8), for: c2, type: .withResponse)
        peripheral.writeValue(Data("two".utf8), for: c2, type: .withoutResponse)
        peripheral.writeValue(Data("three".utf8), for: c2, type: .withResponse)
        peripheral.readValue(for: c2)
        wait("writes and read") { recorder.events.contains("value FFF2") }
        XCTAssertEqual(recorder.count("wrote FFF2"), 2)
        XCTAssertEqual(c2.value, Data("three".utf8))
        XCTAssertTrue(peripheral.canSendWriteWithoutResponse)

        // Notifications: not on a characteristic that cannot notify; on FFF3 each value arrives.
        peripheral.setNotifyValue(true, for: c5)
        wait("notify error") { recorder.events.contains("notify error FFF5") }
        XCTAssertEqual((recorder.error(for: "notify error FFF5") as? CBATTError)?.code, .requestNotSupported)
        peripheral.setNotifyValue(true, for: c3)
        wait("notifying") { recorder.events.contains("notifying FFF3 true") }
        XCTAssertTrue(c3.isNotifying)
        let handle = try XCTUnwrap(peer.handles.valueHandle(for: "FFF3"))
        // A read issued from inside didUpdateValueFor: the notifications still all arrive, and so do the reads.
        let readsBefore = recorder.count("value FFF1")
        recorder.onUpdateValue = { p, c in if c === c3 { p.readValue(for: c1) } }
        for v: UInt8 in 1...3 {
            _ = try blocking { try await peer.manager.updateValueWaiting([v, v], forHandle: handle) }
        }
        wait("three notifications") { recorder.count("value FFF3") == 3 }
        XCTAssertEqual(c3.value, Data([3, 3]))
        wait("the reads from the callbacks") { recorder.count("value FFF1") == readsBefore + 3 }
        recorder.onUpdateValue = nil
        XCTAssertEqual(recorder.values.filter { $0.count == 2 }, [Data([1, 1]), Data([2, 2]), Data([3, 3])])

        // Descriptors: the CCCD the server added, read as an NSNumber; the user description as a String.
        peripheral.discoverDescriptors(for: c3)
        peripheral.discoverDescriptors(for: c5)
        wait("descriptors") { recorder.events.contains("descriptors FFF3") && recorder.events.contains("descriptors FFF5") }
        let cccd = try XCTUnwrap(c3.descriptors?.first { $0.uuid == CBUUID(string: CBUUIDClientCharacteristicConfigurationString) })
        XCTAssertTrue(cccd.characteristic === c3)
        peripheral.readValue(for: cccd)
        let userDescription = try XCTUnwrap(c5.descriptors?.first { $0.uuid.uuidString == CBUUIDCharacteristicUserDescriptionString })
        peripheral.readValue(for: userDescription)
        wait("descriptor reads") { recorder.count("descriptor value 2902") == 1 && recorder.count("descriptor value 2901") == 1 }
        XCTAssertEqual((cccd.value as? NSNumber)?.intValue, 1)
        XCTAssertEqual(userDescription.value as? String, "five")
        peripheral.writeValue(Data([0, 0]), for: cccd)
        wait("CCCD write refused") { recorder.events.contains("descriptor write error") }

        // RSSI of the link (both ends at the origin: −40 dBm).
        peripheral.readRSSI()
        wait("RSSI") { recorder.events.contains("rssi") }
        XCTAssertEqual(recorder.rssi?.intValue, -40)

        // Services discovered again keep their objects.
        peripheral.discoverServices(nil)
        wait("all services") { recorder.count("services") == 2 }
        XCTAssertTrue(peripheral.services?.contains { $0 === service } == true)
        XCTAssertGreaterThan(peripheral.services?.count ?? 0, 1)

        // Cancel: didDisconnect with no error; then operations report notConnected.
        central.cancelPeripheralConnection(peripheral)
        wait("didDisconnect") { recorder.events.contains("disconnect") }
        XCTAssertEqual(peripheral.state, .disconnected)
        XCTAssertNil(peripheral.services)
        XCTAssertFalse(c3.isNotifying)
        peripheral.readValue(for: c1)
        wait("read after disconnect") { recorder.events.contains("value error FFF1") }
        XCTAssertEqual((recorder.error(for: "value error FFF1") as? CBError)?.code, .notConnected)
        XCTAssertEqual(c1.value, Data("hello".utf8), "a failed read keeps the value")

        XCTAssertEqual(recorder.callbacksOffQueue, [])
        let order = recorder.events.filter { ["state poweredOn", "connect", "services", "characteristics FFF0", "disconnect"].contains($0) }
        XCTAssertEqual(order, ["state poweredOn", "connect", "services", "characteristics FFF0", "services", "disconnect"])
    }

    /// Two managers share the controller and agree on identifiers; identifiers come back through
    /// `retrievePeripherals`; a restarted scan reports the device again; calls from inside a
    /// callback work (connect from `didDiscover`).
    func testTwoManagersAgreeAndCallbacksMayCallIn() throws {
        let name = "CBTwo-\(UInt16.random(in: 0...0xFFFF))"
        let peer = try blocking { try await TestPeripheral.start(name: name) }
        defer { try? blocking { await peer.stop() } }
        let q1 = DispatchQueue(label: "cb.one"), q2 = DispatchQueue(label: "cb.two")
        let r1 = Recorder(queue: q1, label: "one"), r2 = Recorder(queue: q2, label: "two")
        let m1 = CBCentralManager(delegate: r1, queue: q1, options: Self.options)
        let m2 = CBCentralManager(delegate: r2, queue: q2, options: Self.options)
        wait("both powered on") { r1.events.contains("state poweredOn") && r2.events.contains("state poweredOn") }
        m1.scanForPeripherals(withServices: [TestPeripheral.service])
        m2.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        wait("both discover") {
            r1.discoveries.contains { $0.peripheral.name == name } && r2.discoveries.filter { $0.peripheral.name == name }.count >= 2
        }
        let p1 = try XCTUnwrap(r1.discoveries.first { $0.peripheral.name == name }?.peripheral)
        let p2 = try XCTUnwrap(r2.discoveries.first { $0.peripheral.name == name }?.peripheral)
        XCTAssertEqual(p1.identifier, p2.identifier)
        XCTAssertFalse(p1 === p2, "each manager has its own objects")
        XCTAssertTrue(r2.discoveries.filter { $0.peripheral.name == name }.allSatisfy { $0.peripheral === p2 })
        XCTAssertTrue(m1.retrievePeripherals(withIdentifiers: [p1.identifier]).first === p1)
        XCTAssertEqual(Set([p1, p1]).count, 1)

        // Restarting the scan with the same filter reports the device again.
        let before = r1.discoveries.filter { $0.peripheral === p1 }.count
        m1.stopScan()
        m1.scanForPeripherals(withServices: [TestPeripheral.service])
        wait("rediscovery") { r1.discoveries.filter { $0.peripheral === p1 }.count > before }

        // Connect from inside didDiscover; scanning goes on (m2 still hears it... or others).
        r1.onDiscover = { central, peripheral in
            if peripheral === p1, peripheral.state == .disconnected { central.connect(peripheral) }
        }
        m1.stopScan()
        m1.scanForPeripherals(withServices: [TestPeripheral.service])
        wait("connected from the callback") { r1.events.contains("connect") }
        m1.stopScan()
        m2.stopScan()
        XCTAssertTrue(m1.retrieveConnectedPeripherals(withServices: [TestPeripheral.service]).isEmpty, "no services discovered yet")
        m1.cancelPeripheralConnection(p1)
        wait("disconnect") { r1.events.contains("disconnect") }
        XCTAssertEqual(r1.callbacksOffQueue + r2.callbacksOffQueue, [])
    }

    /// Scanning goes on while a connection is pending (to a device never heard) and while one is open.
    func testScanningGoesOnWhileAConnectionIsPendingOrOpen() throws {
        let queue = DispatchQueue(label: "cb.scan")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: Self.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        let absent = try XCTUnwrap(central.retrievePeripherals(withIdentifiers: [UUID(uuidString: "53424C45-0000-8001-8000-C0FFEE000002")!]).first)
        central.connect(absent)
        let first = "CBScanA-\(UInt16.random(in: 0...0xFFFF))"
        let a = try blocking { try await TestPeripheral.start(name: first) }
        defer { try? blocking { await a.stop() } }
        central.scanForPeripherals(withServices: [TestPeripheral.service])
        wait("a discovery while a connection is pending") { recorder.discoveries.contains { $0.peripheral.name == first } }
        let pa = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == first }?.peripheral)
        central.connect(pa)
        wait("connected") { recorder.events.contains("connect") }
        XCTAssertTrue(central.isScanning)
        let second = "CBScanB-\(UInt16.random(in: 0...0xFFFF))"
        let b = try blocking { try await TestPeripheral.start(name: second) }
        defer { try? blocking { await b.stop() } }
        wait("a discovery while a connection is open") { recorder.discoveries.contains { $0.peripheral.name == second } }
        central.stopScan()
        central.cancelPeripheralConnection(absent)
        central.cancelPeripheralConnection(pa)
        wait("both ended") { recorder.count("disconnect") == 2 }
        XCTAssertEqual(absent.state, .disconnected)
        XCTAssertEqual(pa.state, .disconnected)
    }

    /// A link lost (the device gone out of range) reports `CBError.connectionTimeout`, and a read
    /// in flight when it went reports a `CBError` rather than hanging; a missing service is an
    /// empty discovery, not an error.
    func testLinkLossMidOperationAndAMissingService() throws {
        let name = "CBLoss-\(UInt16.random(in: 0...0xFFFF))"
        let peer = try blocking { try await TestPeripheral.start(name: name) }
        defer { try? blocking { await peer.stop() } }
        let queue = DispatchQueue(label: "cb.loss")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: Self.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [TestPeripheral.service])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let peripheral = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        peripheral.delegate = recorder
        central.connect(peripheral)
        wait("didConnect") { recorder.events.contains("connect") }
        peripheral.discoverServices([CBUUID(string: "ABCD")])
        wait("empty discovery") { recorder.events.contains("services") }
        XCTAssertEqual(peripheral.services?.count, 0)
        peripheral.discoverServices([TestPeripheral.service])
        wait("discovery") { recorder.count("services") == 2 }
        let service = try XCTUnwrap(peripheral.services?.first)
        peripheral.discoverCharacteristics([CBUUID(string: "FFF1")], for: service)
        wait("characteristics") { recorder.events.contains("characteristics FFF0") }
        let characteristic = try XCTUnwrap(service.characteristics?.first)
        XCTAssertEqual(service.characteristics?.count, 1)

        _ = try blocking { await VirtualWorld.shared.radio.dropLinks(of: peer.device.id) }
        peripheral.readValue(for: characteristic)
        wait("didDisconnect with an error", seconds: 30) { recorder.events.contains("disconnect error") }
        XCTAssertEqual((recorder.error(for: "disconnect error") as? CBError)?.code, .connectionTimeout)
        XCTAssertEqual(peripheral.state, .disconnected)
        wait("the read in flight ends") { recorder.events.contains("value error FFF1") }
        XCTAssertNotNil(recorder.error(for: "value error FFF1") as? CBError, "\(String(describing: recorder.error(for: "value error FFF1")))")
        XCTAssertNil(characteristic.value)
    }

    /// A pending connection (to a device never heard) stays pending until cancelled; the cancel
    /// reports didDisconnect with no error and no didConnect or didFailToConnect.
    func testPendingConnectNeverTimesOutAndCancels() throws {
        let queue = DispatchQueue(label: "cb.pending")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: Self.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        let absent = UUID(uuidString: "53424C45-0000-8001-8000-C0FFEE000001")!
        let peripheral = try XCTUnwrap(central.retrievePeripherals(withIdentifiers: [absent, UUID()]).first)
        XCTAssertEqual(central.retrievePeripherals(withIdentifiers: [absent, UUID()]).count, 1)
        XCTAssertEqual(peripheral.identifier, absent)
        central.connect(peripheral)
        XCTAssertEqual(peripheral.state, .connecting)
        central.cancelPeripheralConnection(peripheral)
        wait("didDisconnect") { recorder.events.contains("disconnect") }
        XCTAssertEqual(peripheral.state, .disconnected)
        XCTAssertFalse(recorder.events.contains("connect"))
        XCTAssertFalse(recorder.events.contains("fail"))

        // A connection cancelled at once and asked for again: one didConnect, for the second.
        let name = "CBAgain-\(UInt16.random(in: 0...0xFFFF))"
        let peer = try blocking { try await TestPeripheral.start(name: name) }
        defer { try? blocking { await peer.stop() } }
        central.scanForPeripherals(withServices: [TestPeripheral.service])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let present = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        central.connect(present)
        central.cancelPeripheralConnection(present)
        central.connect(present)
        wait("didConnect") { recorder.events.contains("connect") }
        XCTAssertEqual(present.state, .connected)
        XCTAssertEqual(recorder.count("disconnect"), 2)
        central.cancelPeripheralConnection(present)
        wait("didDisconnect") { recorder.count("disconnect") == 3 }
        XCTAssertEqual(recorder.count("connect"), 1)
    }

    /// `queue: nil` delivers on the main queue, driven here by `RunLoop.main.run(until:)` as a
    /// command-line program drives it.
    func testMainQueueWithRunLoop() throws {
        let recorder = Recorder(queue: nil)
        let central = CBCentralManager(delegate: recorder, queue: nil, options: Self.options)
        let deadline = Date().addingTimeInterval(15)
        while !recorder.events.contains("state poweredOn"), Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.05))
        }
        XCTAssertEqual(central.state, .poweredOn)
        XCTAssertEqual(recorder.callbacksOffQueue, [])
    }
}

import CoreBluetooth
import XCTest
import Synchronization

/// A delegate-style peripheral: one static and one dynamic characteristic.
final class Thermometer: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    private let lock = Mutex(())
    private var lines: [String] = []
    private(set) var written: [Data] = []
    var manager: CBPeripheralManager!
    let name: String
    let queue: DispatchQueue
    let dynamic = CBMutableCharacteristic(type: CBUUID(string: "EEE2"), properties: [.read, .write, .notify],
                                          value: nil, permissions: [.readable, .writeable])
    let fixed = CBMutableCharacteristic(type: CBUUID(string: "EEE1"), properties: [.read], value: Data("static".utf8),
                                        permissions: [.readable])
    var subscriber: CBCentral?

    init(name: String) {
        self.name = name
        self.queue = DispatchQueue(label: "cb.peripheral")
        super.init()
        fixed.descriptors = [CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "fixed")]
        manager = CBPeripheralManager(delegate: self, queue: queue, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
    }

    private func record(_ line: String) {
        lock.withLock { _ in lines.append(line) }
        TestEvents.happened()
    }
    var events: [String] { lock.withLock { _ in lines } }
    var writes: [Data] { lock.withLock { _ in written } }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        record("state \(peripheral.state)")
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: CBUUID(string: "EEE0"), primary: true)
        service.characteristics = [fixed, dynamic]
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        record(error == nil ? "added" : "add error")
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [service.uuid]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        record(error == nil ? "advertising" : "advertising error")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        record("read \(request.characteristic.uuid.uuidString) at \(request.offset)")
        request.value = Data("dynamic".utf8).dropFirst(request.offset)
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        lock.withLock { _ in written += requests.compactMap(\.value) }
        record("write \(requests.count)")
        peripheral.respond(to: requests[0], withResult: requests[0].value == Data("bad".utf8) ? .writeNotPermitted : .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        lock.withLock { _ in subscriber = central }
        record("subscribed \(characteristic.uuid.uuidString)")
        peripheral.updateValue(Data([0x01]), for: dynamic, onSubscribedCentrals: [central])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        record("unsubscribed \(characteristic.uuid.uuidString)")
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) { record("ready") }
}

final class PeripheralRoleTests: XCTestCase {
    /// A CoreBluetooth peripheral and a CoreBluetooth central in one process on the virtual radio.
    func testPeripheralManagerServesACentralInTheSameProcess() throws {
        let name = "CBThermo-\(UInt16.random(in: 0...0xFFFF))"
        let thermometer = Thermometer(name: name)
        wait("advertising") { thermometer.events.contains("advertising") }
        XCTAssertEqual(thermometer.events.prefix(3), ["state poweredOn", "added", "advertising"])
        XCTAssertTrue(thermometer.manager.isAdvertising)

        let queue = DispatchQueue(label: "cb.central")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [CBUUID(string: "EEE0")])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let peripheral = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        peripheral.delegate = recorder
        central.connect(peripheral)
        wait("connect") { recorder.events.contains("connect") }
        peripheral.discoverServices([CBUUID(string: "EEE0")])
        wait("services") { recorder.events.contains("services") }
        let service = try XCTUnwrap(peripheral.services?.first)
        peripheral.discoverCharacteristics(nil, for: service)
        wait("characteristics") { recorder.events.contains("characteristics EEE0") }
        let remote = try XCTUnwrap(service.characteristics)
        XCTAssertEqual(remote.map(\.uuid.uuidString), ["EEE1", "EEE2"])
        let (fixed, dynamic) = (remote[0], remote[1])

        peripheral.readValue(for: fixed)
        peripheral.readValue(for: dynamic)
        wait("reads") { recorder.events.contains("value EEE1") && recorder.events.contains("value EEE2") }
        XCTAssertEqual(fixed.value, Data("static".utf8))
        XCTAssertEqual(dynamic.value, Data("dynamic".utf8))
        XCTAssertTrue(thermometer.events.contains("read EEE2 at 0"))
        XCTAssertFalse(thermometer.events.contains("read EEE1 at 0"), "a static value is answered by the stack")

        peripheral.writeValue(Data("set".utf8), for: dynamic, type: .withResponse)
        peripheral.writeValue(Data("bad".utf8), for: dynamic, type: .withResponse)
        wait("writes") { recorder.events.contains("wrote EEE2") && recorder.events.contains("write error EEE2") }
        XCTAssertEqual(thermometer.writes, [Data("set".utf8), Data("bad".utf8)])
        XCTAssertEqual((recorder.error(for: "write error EEE2") as? CBATTError)?.code, .writeNotPermitted)

        peripheral.setNotifyValue(true, for: dynamic)
        wait("subscribed") { recorder.events.contains("notifying EEE2 true") && thermometer.events.contains("subscribed EEE2") }
        XCTAssertEqual(thermometer.dynamic.subscribedCentrals?.count, 1)
        wait("the value sent on subscription") { recorder.values.contains(Data([0x01])) }
        let notifying = try XCTUnwrap(recorder.events.firstIndex(of: "notifying EEE2 true"))
        XCTAssertEqual(recorder.events[..<notifying].filter { $0 == "value EEE2" }.count, 1, "only the read comes before the state callback")
        let subscriber = try XCTUnwrap(thermometer.subscriber)
        XCTAssertGreaterThanOrEqual(subscriber.maximumUpdateValueLength, 20)
        XCTAssertTrue(thermometer.manager.updateValue(Data([0x2A]), for: thermometer.dynamic, onSubscribedCentrals: nil))
        wait("notification") { recorder.values.last == Data([0x2A]) }

        // A burst: updateValue says false once its queue is full, isReady follows, and every
        // value it took arrives, in order. The burst goes on until the first false (bounded),
        // not for a fixed count: how many fit depends on how fast the stack drains the queue
        // on the other threads, and a fixed count of 40 sometimes all fitted.
        let before = recorder.values.count
        let burstBound: UInt16 = 5_000
        let taken = thermometer.queue.sync { () -> [Data] in
            var taken: [Data] = []
            for n in 0..<burstBound {
                let value = Data([0xB0, UInt8(n >> 8), UInt8(n & 0xFF)])
                guard thermometer.manager.updateValue(value, for: thermometer.dynamic, onSubscribedCentrals: nil) else { break }
                taken.append(value)
            }
            return taken
        }
        guard taken.count < Int(burstBound) else { return XCTFail("the queue never said full") }
        XCTAssertGreaterThanOrEqual(taken.count, 1)
        wait("isReady") { thermometer.events.contains("ready") }
        wait("the burst") { recorder.values.count == before + taken.count }
        XCTAssertEqual(Array(recorder.values.suffix(taken.count)), taken)

        central.cancelPeripheralConnection(peripheral)
        wait("unsubscribed on disconnect") { thermometer.events.contains("unsubscribed EEE2") }
        XCTAssertEqual(thermometer.dynamic.subscribedCentrals?.count, 0)
        thermometer.manager.stopAdvertising()
        XCTAssertFalse(thermometer.manager.isAdvertising)
    }
}

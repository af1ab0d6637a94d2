import BLETransport
import BLEVirtual
import CoreBluetooth
import BLETestSupport
import XCTest
import Synchronization

/// A peripheral on the process's shared virtual radio (what `SwiftBLEManagerOptionHCIKey:
/// "virtual"` opens), with a test service: FFF1 readable ("hello"), FFF2 writable both ways,
/// FFF3 notifying, FFF4 never readable, FFF5 read only (no notify); `extra` characteristics
/// follow them.
struct TestPeripheral: Sendable {
    let manager: PeripheralManager
    let device: VirtualDevice
    let name: String
    let handles: GATTServiceHandles

    static let service = CBUUID(string: "FFF0")

    static func start(name: String, extra: [GATTCharacteristicDefinition] = []) async throws -> TestPeripheral {
        let (manager, device) = try await VirtualWorld.shared.addPeripheralManager(name: name)
        let handles = try await manager.add(GATTServiceDefinition(uuid: "FFF0", characteristics: [
            GATTCharacteristicDefinition(uuid: "FFF1", properties: [.read], permissions: [.read], value: Array("hello".utf8)),
            GATTCharacteristicDefinition(uuid: "FFF2", properties: [.read, .write, .writeWithoutResponse], permissions: [.read, .write], value: []),
            GATTCharacteristicDefinition(uuid: "FFF3", properties: [.read, .notify], permissions: [.read], value: [0]),
            GATTCharacteristicDefinition(uuid: "FFF4", properties: [.read], permissions: [], value: [1]),
            GATTCharacteristicDefinition(uuid: "FFF5", properties: [.read], permissions: [.read], value: [2],
                                         userDescription: "five"),
        ] + extra))
        try await manager.startAdvertising(AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
            .serviceUUIDs(["FFF0"]).build(),
            scanResponse: AdvertisingData.Builder().localName(name).build())
        return TestPeripheral(manager: manager, device: device, name: name, handles: handles)
    }

    func stop() async {
        await VirtualWorld.shared.radio.remove(device.id)
        await manager.close()
    }
}

/// Records every delegate callback as a line, checks each runs on the expected queue, and keeps
/// the objects the callbacks named.
final class Recorder: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    private let lock = Mutex(())
    private var lines: [String] = []
    private var offQueue: [String] = []
    private(set) var discovered: [(peripheral: CBPeripheral, data: [String: Any], rssi: NSNumber)] = []
    private(set) var errors: [String: any Error] = [:]
    private(set) var updatedValues: [Data] = []
    private(set) var seenCharacteristics: [CBCharacteristic] = []
    let queueKey = DispatchSpecificKey<String>()
    let queue: DispatchQueue?
    let label: String
    var onDiscover: ((CBCentralManager, CBPeripheral) -> Void)?
    var onUpdateValue: ((CBPeripheral, CBCharacteristic) -> Void)?

    /// `queue` nil: callbacks are expected on the main thread.
    init(queue: DispatchQueue?, label: String = "test") {
        self.queue = queue
        self.label = label
        super.init()
        queue?.setSpecific(key: queueKey, value: label)
    }

    private func record(_ line: String, error: (any Error)? = nil) {
        let onQueue = queue == nil ? Thread.isMainThread : DispatchQueue.getSpecific(key: queueKey) == label
        lock.withLock { _ in
            lines.append(line)
            if !onQueue { offQueue.append(line) }
            if let error { errors[line] = error }
        }
        TestEvents.happened()
    }

    var events: [String] { lock.withLock { _ in lines } }
    var callbacksOffQueue: [String] { lock.withLock { _ in offQueue } }
    func error(for line: String) -> (any Error)? { lock.withLock { _ in errors[line] } }
    func count(_ line: String) -> Int { events.filter { $0 == line }.count }
    var values: [Data] { lock.withLock { _ in updatedValues } }
    var characteristicsSeen: [CBCharacteristic] { lock.withLock { _ in seenCharacteristics } }
    var discoveries: [(peripheral: CBPeripheral, data: [String: Any], rssi: NSNumber)] { lock.withLock { _ in discovered } }

    func centralManagerDidUpdateState(_ central: CBCentralManager) { record("state \(central.state)") }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        // The device and its line under one lock: a wait on either sees both.
        let line = "discover \(peripheral.name ?? "?")"
        let onQueue = queue == nil ? Thread.isMainThread : DispatchQueue.getSpecific(key: queueKey) == label
        lock.withLock { _ in
            discovered.append((peripheral, advertisementData, RSSI))
            lines.append(line)
            if !onQueue { offQueue.append(line) }
        }
        TestEvents.happened()
        onDiscover?(central, peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) { record("connect") }
    func peripheralDidUpdateName(_ peripheral: CBPeripheral) { record("name \(peripheral.name ?? "?")") }
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) { record("fail", error: error) }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        record(error == nil ? "disconnect" : "disconnect error", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) { record(error == nil ? "services" : "services error", error: error) }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        record(error == nil ? "characteristics \(service.uuid.uuidString)" : "characteristics error", error: error)
    }
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?) {
        record(error == nil ? "descriptors \(characteristic.uuid.uuidString)" : "descriptors error", error: error)
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        lock.withLock { _ in
            if error == nil, let v = characteristic.value { updatedValues.append(v) }
            seenCharacteristics.append(characteristic)
        }
        record(error == nil ? "value \(characteristic.uuid.uuidString)" : "value error \(characteristic.uuid.uuidString)", error: error)
        onUpdateValue?(peripheral, characteristic)
    }
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        record(error == nil ? "wrote \(characteristic.uuid.uuidString)" : "write error \(characteristic.uuid.uuidString)", error: error)
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        record(error == nil ? "notifying \(characteristic.uuid.uuidString) \(characteristic.isNotifying)" : "notify error \(characteristic.uuid.uuidString)", error: error)
    }
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {
        record(error == nil ? "descriptor value \(descriptor.uuid.uuidString)" : "descriptor error", error: error)
    }
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?) {
        record(error == nil ? "descriptor wrote" : "descriptor write error", error: error)
    }
    private(set) var lastRSSI: NSNumber?
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        lock.withLock { _ in lastRSSI = RSSI }
        record(error == nil ? "rssi" : "rssi error", error: error)
    }
    var rssi: NSNumber? { lock.withLock { _ in lastRSSI } }
}

/// What a `wait` on the main thread sleeps until: a delegate callback (on the main queue it runs
/// there; on another queue its recorder says `happened()`, which puts an empty block on the main
/// queue), or another source of the main run loop.
enum TestEvents {
    /// Something a test may be waiting for happened off the main thread: wakes a waiting `wait`.
    static func happened() {
        DispatchQueue.main.async {}
    }

    /// The longest a `wait` sleeps without an event before it looks at its condition again: for
    /// conditions on state that changes with no callback (a property the stack sets on its own
    /// queue), so they are seen within this much, not at the deadline.
    static let recheck: TimeInterval = 0.2
}

extension XCTestCase {
    /// Waits (in real time, at most `seconds`) until `condition` holds; the virtual radio here runs
    /// in real time, so each step waits for its explicit event rather than for a fixed time. The
    /// main run loop runs until it has handled something (a delegate callback, `TestEvents`'
    /// wake-up) and then the condition is looked at again; never more than `TestEvents.recheck`
    /// without a look.
    func wait(_ what: String, seconds: Double = 15, file: StaticString = #filePath, line: UInt = #line, until condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline {
                XCTFail("timed out waiting for \(what)", file: file, line: line)
                return
            }
            _ = RunLoop.current.run(mode: .default, before: min(deadline, Date().addingTimeInterval(TestEvents.recheck)))
        }
    }
}

/// Runs an async set-up step from a synchronous test (the delegate style is synchronous).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = SharedValue<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do { result.set(.success(try await body())) } catch { result.set(.failure(error)) }
        done.signal()
    }
    done.wait()
    return try result.get()!.get()
}

/// A virtual radio reached over TCP, as a controller a manager opens with `tcp:HOST:PORT`: each
/// connection accepted is served as a new controller (address `baseAddress` + its number), and
/// closing one is a controller lost.
final class TCPControllerRig: Sendable {
    let world = VirtualWorld()
    let listener: TCPListener
    private let connections = SharedValue<[TCPHostConnection]>([])
    private let server: Task<Void, Never>

    init(baseAddress: UInt64) throws {
        let listener = try TCPListener.listen(host: "127.0.0.1", port: 0)
        let (world, connections) = (self.world, self.connections)
        self.listener = listener
        server = Task {
            for await connection in listener.connections {
                let n = connections.withLock { a in a.append(connection); return a.count }
                Task { _ = await world.radio.serve(hostTransport: connection, address: BDAddress(rawValue: baseAddress + UInt64(n))) }
            }
        }
    }

    /// What a manager names to open it.
    var spec: String { "tcp:127.0.0.1:\(listener.port)" }
    /// The connections accepted so far, oldest first.
    var accepted: [TCPHostConnection] { connections.get() }

    func close() async {
        server.cancel()
        await listener.close()
    }
}

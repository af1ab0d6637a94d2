import BLEVirtual
import CoreBluetooth
import XCTest
import Synchronization

/// Pacing writes without response as Apple documents it: write while
/// `canSendWriteWithoutResponse` is true; once it is false, `peripheralIsReady(toSendWriteWithoutResponse:)`
/// follows when there is room again, with the property already true; every write arrives, in order.
final class WriteWithoutResponseTests: XCTestCase {
    /// A recorder that also notes each ready callback with the property's value then.
    final class Writer: NSObject, CBPeripheralDelegate, @unchecked Sendable {
        private let lock = Mutex(())
        private var lines: [String] = []
        var events: [String] { lock.withLock { _ in lines } }
        func record(_ line: String) {
            lock.withLock { _ in lines.append(line) }
            TestEvents.happened()
        }
        func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
            record("ready, canSend \(peripheral.canSendWriteWithoutResponse)")
        }
        func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) { record("services") }
        func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) { record("characteristics") }
        func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
            record(error == nil ? "value \(characteristic.value.map { [UInt8]($0) } ?? [])" : "value error")
        }
    }

    /// A central connected to a `TestPeripheral`, with its FFF2 characteristic discovered.
    struct Connected {
        let central: CBCentralManager
        let recorder: Recorder
        let queue: DispatchQueue
        let peripheral: CBPeripheral
        let writer: Writer
        let characteristic: CBCharacteristic
        let service: CBService
    }

    /// Connects and discovers FFF2 and the `also` characteristics.
    private func connect(to peer: TestPeripheral, named name: String, also: [CBUUID] = []) throws -> Connected {
        let queue = DispatchQueue(label: "cb.wwr")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: CentralRoleTests.options)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [TestPeripheral.service])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let peripheral = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        let writer = Writer()
        peripheral.delegate = writer
        central.connect(peripheral)
        wait("connect") { recorder.events.contains("connect") }
        peripheral.discoverServices([TestPeripheral.service])
        wait("services") { writer.events.contains("services") }
        let service = try XCTUnwrap(peripheral.services?.first)
        peripheral.discoverCharacteristics([CBUUID(string: "FFF2")] + also, for: service)
        wait("characteristics") { writer.events.contains("characteristics") }
        let characteristic = try XCTUnwrap(service.characteristics?.first { $0.uuid == CBUUID(string: "FFF2") })
        return Connected(central: central, recorder: recorder, queue: queue, peripheral: peripheral, writer: writer,
                         characteristic: characteristic, service: service)
    }

    private func disconnect(_ c: Connected) {
        c.central.cancelPeripheralConnection(c.peripheral)
        wait("disconnect") { c.recorder.events.contains("disconnect") }
    }

    func testAFullQueueSaysSoAndTheReadyCallbackFollows() throws {
        let name = "CBWWR-\(UInt16.random(in: 0...0xFFFF))"
        let peer = try blocking { try await TestPeripheral.start(name: name) }
        defer { try? blocking { await peer.stop() } }
        let c = try connect(to: peer, named: name)
        let (peripheral, writer, characteristic) = (c.peripheral, c.writer, c.characteristic)

        // On the delegate queue, so no ready callback runs while the queue fills.
        let sent = c.queue.sync { () -> Int in
            var n = 0
            while peripheral.canSendWriteWithoutResponse, n < 10_000 {
                n += 1
                peripheral.writeValue(Data([UInt8(n & 0xFF), UInt8(n >> 8)]), for: characteristic, type: .withoutResponse)
            }
            return n
        }
        XCTAssertLessThan(sent, 10_000, "the queue filled")
        wait("the ready callback") { writer.events.contains { $0.hasPrefix("ready") } }
        XCTAssertEqual(writer.events.filter { $0.hasPrefix("ready") }, ["ready, canSend true"])
        // A read behind the writes sees the last one.
        peripheral.readValue(for: characteristic)
        wait("the read") { writer.events.contains { $0.hasPrefix("value") } }
        XCTAssertEqual(writer.events.last { $0.hasPrefix("value") }, "value \([UInt8(sent & 0xFF), UInt8(sent >> 8)])")
        XCTAssertEqual(writer.events.filter { $0.hasPrefix("ready") }.count, 1, "one ready per full queue")
        disconnect(c)
    }

    /// Writes past the window that the app made without asking owe the callback too (as on
    /// Apple platforms), and only once, when there is room: not once per write that found the
    /// queue full, and never while the property is still false. The writes queue behind a read
    /// the peripheral holds unanswered, so the queue is full whatever the threads' speeds.
    func testWritesPastTheWindowOweOneReadyCallbackWithRoom() throws {
        let name = "CBWWR-\(UInt16.random(in: 0...0xFFFF))"
        let held = AsyncStream<Void>.makeStream()
        let peer = try blocking {
            try await TestPeripheral.start(name: name, extra: [
                GATTCharacteristicDefinition(uuid: "FFF6", properties: [.read], permissions: [.read], value: nil),
            ])
        }
        defer { try? blocking { await peer.stop() } }
        let heldHandle = try XCTUnwrap(peer.handles["FFF6"]?.valueHandle)
        try blocking {
            await peer.manager.setReadHandler(forHandle: heldHandle) { _ in
                for await _ in held.stream {}
                return .success([6])
            }
        }
        defer { held.continuation.finish() }
        let c = try connect(to: peer, named: name, also: [CBUUID(string: "FFF6")])
        let (peripheral, writer, characteristic) = (c.peripheral, c.writer, c.characteristic)
        let heldCharacteristic = try XCTUnwrap(c.service.characteristics?.first { $0.uuid == CBUUID(string: "FFF6") })

        peripheral.readValue(for: heldCharacteristic)
        let count = 24 // three times the queue's window of 8
        c.queue.sync {
            for n in 1...count {
                peripheral.writeValue(Data([UInt8(n), 0]), for: characteristic, type: .withoutResponse)
            }
        }
        // (Not asked here: asking would owe the callback on its own.)
        held.continuation.finish()
        wait("the held read") { writer.events.contains("value [6]") }
        peripheral.readValue(for: characteristic)
        wait("the read behind the writes") { writer.events.last { $0.hasPrefix("value") } == "value \([UInt8(count), 0])" }
        // The read ran after every write's completion on the same serial lane, so each ready
        // callback they owed was queued on the delegate queue before the read's value.
        XCTAssertEqual(writer.events.filter { $0.hasPrefix("ready") }, ["ready, canSend true"])
        disconnect(c)
    }
}

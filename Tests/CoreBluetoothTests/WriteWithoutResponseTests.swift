import CoreBluetooth
import XCTest

/// Pacing writes without response as Apple documents it: write while
/// `canSendWriteWithoutResponse` is true; once it is false, `peripheralIsReady(toSendWriteWithoutResponse:)`
/// follows when there is room again, with the property already true; every write arrives, in order.
final class WriteWithoutResponseTests: XCTestCase {
    /// A recorder that also notes each ready callback with the property's value then.
    final class Writer: NSObject, CBPeripheralDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        var events: [String] { lock.lock(); defer { lock.unlock() }; return lines }
        func record(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
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
    }

    private func connect(to peer: TestPeripheral, named name: String) throws -> Connected {
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
        peripheral.discoverCharacteristics([CBUUID(string: "FFF2")], for: service)
        wait("characteristics") { writer.events.contains("characteristics") }
        let characteristic = try XCTUnwrap(service.characteristics?.first)
        return Connected(central: central, recorder: recorder, queue: queue, peripheral: peripheral, writer: writer,
                         characteristic: characteristic)
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

    /// The callback answers a false `canSendWriteWithoutResponse`: writes that filled the queue
    /// while nobody asked owe none. (It used to follow any completion that found the queue full,
    /// so a loop that saw true, true, …, then false could get two: one for a fill it never saw.)
    func testAQueueThatFilledUnobservedOwesNoReadyCallback() throws {
        let name = "CBWWR-\(UInt16.random(in: 0...0xFFFF))"
        let peer = try blocking { try await TestPeripheral.start(name: name) }
        defer { try? blocking { await peer.stop() } }
        let c = try connect(to: peer, named: name)
        let (peripheral, writer, characteristic) = (c.peripheral, c.writer, c.characteristic)

        let count = 24 // three times the queue's window of 8
        c.queue.sync {
            for n in 1...count {
                peripheral.writeValue(Data([UInt8(n), 0]), for: characteristic, type: .withoutResponse)
            }
        }
        peripheral.readValue(for: characteristic)
        wait("the read") { writer.events.contains { $0.hasPrefix("value") } }
        XCTAssertEqual(writer.events.last { $0.hasPrefix("value") }, "value \([UInt8(count), 0])", "every write went first")
        // The read ran after every write's completion on the same serial lane, so a ready
        // callback owed by them was queued on the delegate queue before the read's value.
        XCTAssertEqual(writer.events.filter { $0.hasPrefix("ready") }, [], "nobody saw false")
        disconnect(c)
    }
}

import CoreBluetooth
import XCTest
import Synchronization

/// `remove(_:)` and `removeAllServices()` withdraw a service also when called before the
/// `add(_:)` of that service finished: a central then finds only what is still published.
final class ServiceRemovalTests: XCTestCase {
    /// Records states and `didAdd` callbacks.
    final class Publisher: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
        private let lock = Mutex(())
        private var lines: [String] = []
        var events: [String] { lock.withLock { _ in lines } }
        private func record(_ line: String) {
            lock.withLock { _ in lines.append(line) }
            TestEvents.happened()
        }

        func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) { record("state \(peripheral.state)") }
        func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
            record("\(error == nil ? "added" : "add error") \(service.uuid.uuidString)")
        }
        func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
            record(error == nil ? "advertising" : "advertising error")
        }
    }

    static func service(_ uuid: String) -> CBMutableService {
        let service = CBMutableService(type: CBUUID(string: uuid), primary: true)
        service.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "DDD1"), properties: [.read], value: Data([1]), permissions: [.readable])]
        return service
    }

    /// Adds, removes (with `withdraw`) and adds again on the delegate queue, so no add can have
    /// reported before the removal; then returns the services a central discovers.
    func servicesAfter(_ withdraw: @escaping (CBPeripheralManager, CBMutableService) -> Void) throws -> [String] {
        let queue = DispatchQueue(label: "cb.publisher")
        let publisher = Publisher()
        let manager = CBPeripheralManager(delegate: publisher, queue: queue, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
        wait("poweredOn") { publisher.events.contains("state poweredOn") }
        let (gone, kept) = (Self.service("DDD0"), Self.service("CCC0"))
        queue.sync {
            manager.add(gone)
            withdraw(manager, gone)
            manager.add(kept)
        }
        wait("both adds") { publisher.events.contains("added DDD0") && publisher.events.contains("added CCC0") }
        let name = "CBRemove-\(UInt16.random(in: 0...0xFFFF))"
        manager.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [kept.uuid]])
        wait("advertising") { publisher.events.contains("advertising") }
        defer { manager.stopAdvertising() }

        let centralQueue = DispatchQueue(label: "cb.remove.central")
        let recorder = Recorder(queue: centralQueue)
        let central = CBCentralManager(delegate: recorder, queue: centralQueue, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
        wait("central poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [kept.uuid])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let peripheral = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        peripheral.delegate = recorder
        central.connect(peripheral)
        wait("connect") { recorder.events.contains("connect") }
        peripheral.discoverServices(nil)
        wait("services") { recorder.events.contains("services") }
        let uuids = (peripheral.services ?? []).map(\.uuid.uuidString)
        central.cancelPeripheralConnection(peripheral)
        wait("disconnect") { recorder.events.contains("disconnect") }
        return uuids
    }

    func testAServiceRemovedBeforeItsAddFinishedIsNotPublished() throws {
        let uuids = try servicesAfter { manager, service in manager.remove(service) }
        XCTAssertTrue(uuids.contains("CCC0"), "\(uuids)")
        XCTAssertFalse(uuids.contains("DDD0"), "the removed service is not served: \(uuids)")
    }

    func testRemoveAllServicesAlsoWithdrawsOneWhoseAddIsRunning() throws {
        let uuids = try servicesAfter { manager, _ in manager.removeAllServices() }
        XCTAssertTrue(uuids.contains("CCC0"), "added after the removal: \(uuids)")
        XCTAssertFalse(uuids.contains("DDD0"), "the removed service is not served: \(uuids)")
    }
}

import BLEVirtual
import CoreBluetooth
import XCTest
import Synchronization

/// A peripheral manager whose one dynamic characteristic remembers the central that read it.
final class LatencyPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    private let lock = Mutex(())
    private var reader: CBCentral?
    private var advertising = false
    var manager: CBPeripheralManager!
    let name: String

    init(name: String) {
        self.name = name
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: DispatchQueue(label: "cb.latency"), options: [SwiftBLEManagerOptionHCIKey: "virtual"])
    }

    var central: CBCentral? { lock.withLock { _ in reader } }
    var isAdvertising: Bool { lock.withLock { _ in advertising } }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: CBUUID(string: "DDD0"), primary: true)
        service.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "DDD1"), properties: [.read], value: nil, permissions: [.readable])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        lock.withLock { _ in advertising = error == nil }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        lock.withLock { _ in reader = request.central }
        request.value = Data([1])
        peripheral.respond(to: request, withResult: .success)
    }
}

/// `setDesiredConnectionLatency(_:for:)` asks the central for Apple's kind of link timing: the
/// central (here one on the raw API, which grants what is asked) applies it.
final class ConnectionLatencyTests: XCTestCase {
    func testDesiredLatencyRequestsConnectionParametersTheCentralApplies() throws {
        let name = "CBLat-\(UInt16.random(in: 0...0xFFFF))"
        let peripheral = LatencyPeripheral(name: name)
        wait("advertising") { peripheral.isAdvertising }
        let (central, device) = try blocking { try await VirtualWorld.shared.addCentral() }
        defer { try? blocking { await VirtualWorld.shared.radio.remove(device.id); await central.close() } }
        let link = try blocking { () -> Peripheral in
            for try await found in central.scan(filter: ScanFilter(nameContains: name), timeout: .seconds(20)) {
                return try await central.connect(found.address)
            }
            throw CBError(.unknownDevice)
        }
        let initial = link.connectionParameters
        try blocking {
            let service = try await link.discoverServices(["DDD0"])
            guard let first = service.first else { throw CBError(.invalidHandle) }
            let characteristics = try await link.discoverCharacteristics(["DDD1"], for: first)
            guard let c = characteristics.first else { throw CBError(.invalidHandle) }
            _ = try await link.readValue(for: c)
        }
        let cbCentral = try XCTUnwrap(peripheral.central)

        peripheral.manager.setDesiredConnectionLatency(.high, for: cbCentral)
        wait("the high-latency interval") { (120...240).contains(link.connectionParameters.interval) }
        XCTAssertEqual(link.connectionParameters.latency, 2)
        XCTAssertEqual(link.connectionParameters.supervisionTimeout, 600)
        XCTAssertNotEqual(link.connectionParameters, initial)

        peripheral.manager.setDesiredConnectionLatency(.low, for: cbCentral)
        wait("the low-latency interval") { (12...24).contains(link.connectionParameters.interval) }
        XCTAssertEqual(link.connectionParameters.latency, 0)

        peripheral.manager.setDesiredConnectionLatency(.medium, for: cbCentral)
        wait("the medium-latency interval") { (24...48).contains(link.connectionParameters.interval) && link.connectionParameters.supervisionTimeout == 400 }
        try blocking { try await link.disconnect() }
    }
}

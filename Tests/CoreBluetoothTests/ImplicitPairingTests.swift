import BLEVirtual
import CoreBluetooth
import XCTest
import Synchronization

/// A peripheral manager with a characteristic only an encrypted link may read.
final class SecretPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    private let lock = Mutex(())
    private var advertising = false
    var manager: CBPeripheralManager!
    let name: String
    let secret = CBMutableCharacteristic(type: CBUUID(string: "5EC1"), properties: [.read], value: Data("secret".utf8),
                                         permissions: [.readEncryptionRequired])
    let open = CBMutableCharacteristic(type: CBUUID(string: "5EC2"), properties: [.read], value: Data("open".utf8),
                                       permissions: [.readable])

    init(name: String) {
        self.name = name
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: DispatchQueue(label: "cb.secret"), options: [SwiftBLEManagerOptionHCIKey: "virtual"])
    }

    var isAdvertising: Bool { lock.withLock { _ in advertising } }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: CBUUID(string: "5EC0"), primary: true)
        service.characteristics = [open, secret]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [service.uuid]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        lock.withLock { _ in advertising = error == nil }
    }
}

/// Reading a characteristic that needs encryption pairs on the spot, as iOS does: the read the
/// app made gets the value, with no pairing call of its own (Just Works on the virtual radio;
/// iOS would show its pairing alert here).
final class ImplicitPairingTests: XCTestCase {
    func testReadingAnEncryptedCharacteristicPairsAndThenReads() throws {
        let name = "CBSec-\(UInt16.random(in: 0...0xFFFF))"
        let peripheral = SecretPeripheral(name: name)
        wait("advertising") { peripheral.isAdvertising }
        // The characteristic is protected: a central that does not pair on demand is refused.
        var configuration = HostConfiguration()
        configuration.security.raisesSecurityOnDemand = false
        let noPairing = configuration
        let refusal = try blocking { () -> String in
            let (raw, device) = try await VirtualWorld.shared.addCentral(configuration: noPairing)
            defer { Task { await VirtualWorld.shared.radio.remove(device.id); await raw.close() } }
            for try await found in raw.scan(filter: ScanFilter(nameContains: name), timeout: .seconds(20)) {
                let link = try await raw.connect(found.address)
                defer { Task { try? await link.disconnect() } }
                guard let service = try await link.discoverServices(["5EC0"]).first,
                      let c = try await link.discoverCharacteristics(["5EC1"], for: service).first else { return "no characteristic" }
                do {
                    _ = try await link.readValue(for: c)
                    return "read without encryption"
                } catch {
                    return "\(error)"
                }
            }
            return "not found"
        }
        XCTAssertTrue(refusal.contains("nsufficient"), "the read is refused for want of security: \(refusal)")

        let queue = DispatchQueue(label: "cb.secret.central")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue, options: [SwiftBLEManagerOptionHCIKey: "virtual"])
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [CBUUID(string: "5EC0")])
        wait("discovery") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let remote = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        remote.delegate = recorder
        central.connect(remote)
        wait("connect") { recorder.events.contains("connect") }
        remote.discoverServices([CBUUID(string: "5EC0")])
        wait("services") { recorder.events.contains("services") }
        let service = try XCTUnwrap(remote.services?.first)
        remote.discoverCharacteristics(nil, for: service)
        wait("characteristics") { recorder.events.contains("characteristics 5EC0") }
        let characteristics = try XCTUnwrap(service.characteristics)
        let open = try XCTUnwrap(characteristics.first { $0.uuid == CBUUID(string: "5EC2") })
        let secret = try XCTUnwrap(characteristics.first { $0.uuid == CBUUID(string: "5EC1") })

        remote.readValue(for: open)
        remote.readValue(for: secret)
        wait("both reads", seconds: 30) { recorder.events.contains("value 5EC2") && recorder.events.contains { $0.hasSuffix("5EC1") } }
        XCTAssertEqual(open.value, Data("open".utf8))
        XCTAssertTrue(recorder.events.contains("value 5EC1"), "the encrypted read succeeded: \(recorder.events) \(String(describing: recorder.error(for: "value error 5EC1")))")
        XCTAssertEqual(secret.value, Data("secret".utf8))
        XCTAssertFalse(recorder.events.contains("disconnect error"), "\(recorder.events)")

        // Encrypted now: a second read needs no pairing and still works.
        remote.readValue(for: secret)
        wait("the second read") { recorder.count("value 5EC1") == 2 }
        central.cancelPeripheralConnection(remote)
        wait("disconnect") { recorder.events.contains("disconnect") }
    }
}
